"""The annotation network: char ids [B, L] -> (per-base label probabilities [B, L, 13],
transcript-type probabilities [B, 2]).

A fully convolutional encoder that works at a quarter of base resolution: each group of
BASES_PER_STEP bases is one step whose input is their four one-hot vectors side by side, and the
output layer emits BASES_PER_STEP x 13 logits per step that are unfolded back into one row per
base ("pixel shuffle"). Every base keeps its own output, so exon boundaries stay exact to the
base, while the convolutions run over 4x fewer positions with wider channels, which is what a CPU
does fastest. A second, 4x coarser trunk of dilated convolutions sees about +-4 kb, the whole
window, for the context that tells introns from intergenic sequence; it is added back to the fine
features before the output block and mean-pooled for the transcript type.
"""

import torch
import torch.nn.functional as F
from torch import nn

BASES_PER_STEP = 4
COARSE = 4  # steps per coarse position (16 bases)
LABEL_COUNT = 13
TYPE_COUNT = 2


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
        # Row per char id: PAD and N carry no base information (N: a flat 1/4).
        onehot = torch.cat([torch.zeros(1, 4), torch.eye(4), torch.full((1, 4), 0.25)])
        self.register_buffer("onehot", onehot)
        self.stem = nn.Conv1d(4 * BASES_PER_STEP, fine, 7, padding=3)
        self.stem_norm = nn.BatchNorm1d(fine)
        self.local = nn.Sequential(Residual(fine, 5, 1, 2), Residual(fine, 5, 4, 8))
        self.down = nn.Conv1d(fine, coarse, COARSE, stride=COARSE)
        self.down_norm = nn.BatchNorm1d(coarse)
        self.trunk = nn.Sequential(Residual(coarse, 5, 1, 2), Residual(coarse, 5, 4, 8),
                                   Residual(coarse, 5, 16, 32))
        self.up = nn.Conv1d(coarse, fine, 1)
        self.head = Residual(fine, 5, 1, 1)
        self.out = nn.Conv1d(fine, LABEL_COUNT * BASES_PER_STEP, 1)
        self.type_head = nn.Linear(coarse, TYPE_COUNT)

    def logits(self, ids: torch.Tensor):
        """([B, L, 13] label logits, [B, 2] type logits). L must be a multiple of 16."""
        batch, length = ids.size(0), ids.size(1)
        steps = length // self.bases_per_step
        x = self.onehot[ids].reshape(batch, steps, 4 * self.bases_per_step).transpose(1, 2)
        x = self.local(F.relu(self.stem_norm(self.stem(x))))
        h = self.trunk(F.relu(self.down_norm(self.down(x))))
        y = self.head(x + self.up(h).repeat_interleave(self.coarse, dim=2))
        out = self.out(y).reshape(batch, self.bases_per_step, self.label_count, steps)
        out = out.permute(0, 3, 1, 2).reshape(batch, length, self.label_count)
        return out, self.type_head(h.mean(dim=2))

    def forward(self, ids: torch.Tensor):
        labels, kind = self.logits(ids)
        return torch.sigmoid(labels), torch.softmax(kind, dim=-1)
