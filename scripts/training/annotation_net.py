"""The annotation network: char ids [B, L] -> (per-base label probabilities [B, L, 17],
transcript-type probabilities [B, 2]).

Fully convolutional, at three resolutions:
- base: one-hot bases -> a convolution (k=11) of per-base motif detectors (splice sites, codons
  do not care which of four bases they start on, so this is learnt once rather than per phase);
- step (4 bases): the base features folded 4:1, two residual blocks (+-240 bp);
- coarse (16 bases): a trunk of dilated residual blocks seeing about +-4 kb, the whole window,
  for the context that tells introns from intergenic sequence; mean-pooled for the type.
The coarse features are added back at step resolution, a residual block mixes them, and each
step unfolds into 4 bases x 16 channels, which meet the base features again (skip) in a
base-resolution residual convolution, so exon edges and splice sites stay exact to the base.
"""

import torch
import torch.nn.functional as F
from torch import nn

BASES_PER_STEP = 4
COARSE = 4  # steps per coarse position (16 bases)
LABEL_COUNT = 17  # the 13 channels the worker requires + 4 splice-site channels
TYPE_COUNT = 2
BASE_CHANNELS = 32
OUT_CHANNELS = 16


class Residual(nn.Module):
    """x -> relu(x + bn(conv(relu(bn(conv(x)))))); BatchNorm folds into the convs at export."""

    def __init__(self, channels: int, kernel: int, dilation1: int, dilation2: int):
        super().__init__()
        self.conv1 = nn.Conv1d(channels, channels, kernel, dilation=dilation1,
                               padding=dilation1 * (kernel // 2))
        self.norm1 = nn.BatchNorm1d(channels)
        self.conv2 = nn.Conv1d(channels, channels, kernel, dilation=dilation2,
                               padding=dilation2 * (kernel // 2))
        self.norm2 = nn.BatchNorm1d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x + self.norm2(self.conv2(F.relu(self.norm1(self.conv1(x))))))


class AnnotationNet(nn.Module):
    def __init__(self, fine: int = 48, coarse: int = 64):
        super().__init__()
        self.bases_per_step = BASES_PER_STEP
        self.coarse = COARSE
        self.label_count = LABEL_COUNT
        self.out_channels = OUT_CHANNELS
        # Row per char id: PAD and N carry no base information (N: a flat 1/4).
        onehot = torch.cat([torch.zeros(1, 4), torch.eye(4), torch.full((1, 4), 0.25)])
        self.register_buffer("onehot", onehot)
        self.base_stem = nn.Conv1d(4, BASE_CHANNELS, 11, padding=5)
        self.fold = nn.Conv1d(BASE_CHANNELS, fine, BASES_PER_STEP, stride=BASES_PER_STEP)
        self.fold_norm = nn.BatchNorm1d(fine)
        self.local = nn.Sequential(Residual(fine, 5, 1, 2), Residual(fine, 5, 4, 8))
        self.down = nn.Conv1d(fine, coarse, COARSE, stride=COARSE)
        self.down_norm = nn.BatchNorm1d(coarse)
        self.trunk = nn.Sequential(Residual(coarse, 5, 1, 2), Residual(coarse, 5, 4, 8),
                                   Residual(coarse, 5, 16, 32))
        self.up = nn.Conv1d(coarse, fine, 1)
        self.head = Residual(fine, 5, 1, 1)
        self.unfold = nn.Conv1d(fine, OUT_CHANNELS * BASES_PER_STEP, 1)
        self.skip = nn.Conv1d(BASE_CHANNELS, OUT_CHANNELS, 1)
        self.base_head = nn.Conv1d(OUT_CHANNELS, OUT_CHANNELS, 11, padding=5)
        self.base_norm = nn.BatchNorm1d(OUT_CHANNELS)
        self.out = nn.Conv1d(OUT_CHANNELS, LABEL_COUNT, 1)
        self.type_head = nn.Linear(coarse, TYPE_COUNT)

    def logits(self, ids: torch.Tensor):
        """([B, L, 17] label logits, [B, 2] type logits). L must be a multiple of 16."""
        batch, length = ids.size(0), ids.size(1)
        steps = length // self.bases_per_step
        b = F.relu(self.base_stem(self.onehot[ids].transpose(1, 2)))       # [B, 32, L]
        x = self.local(F.relu(self.fold_norm(self.fold(b))))              # [B, 48, L/4]
        h = self.trunk(F.relu(self.down_norm(self.down(x))))              # [B, 64, L/16]
        y = self.head(x + self.up(h).repeat_interleave(self.coarse, dim=2))
        # Step s, channel p * 16 + c -> base 4 s + p, channel c.
        u = self.unfold(y).reshape(batch, self.bases_per_step, self.out_channels, steps)
        u = u.permute(0, 2, 3, 1).reshape(batch, self.out_channels, length)
        z = F.relu(u + self.skip(b))
        z = F.relu(z + self.base_norm(self.base_head(z)))
        return self.out(z).transpose(1, 2), self.type_head(h.mean(dim=2))

    def forward(self, ids: torch.Tensor):
        labels, kind = self.logits(ids)
        return torch.sigmoid(labels), torch.softmax(kind, dim=-1)
