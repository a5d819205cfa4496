"""The expression network: (char ids [B, 9198], description byte ids [B, D]) -> [B] ln(TPM + 1).

- Sequence encoder: one-hot bases, four per step -> three convolution + max-pool stages (x4
  each: one position per 256 bp, 36 positions) -> a learnt weight per position and channel sums
  them into a vector, so where a motif sits relative to the TSS matters (the promoter is at the
  centre).
- Text encoder: byte embedding -> two convolutions -> max over the bytes of the description
  (padding masked). Byte-level, so unseen wordings still share sub-words ("liver", "fetal") with
  the training wordings.
- Head: softplus(gene(s) + context(t) + <A s, B t>): a per-gene level from the sequence, a
  per-context level from the description, and an interaction that lets the description reorder
  genes, so different wording can change the prediction for the same window.
"""

import torch
import torch.nn.functional as F
from torch import nn

WINDOW_BP = 9198
TEXT_VOCAB = 257  # PAD=0, byte b -> b + 1
PADDED_BP = 9216
PAD_EACH_SIDE = (PADDED_BP - WINDOW_BP) // 2


class SequenceEncoder(nn.Module):
    def __init__(self, out: int = 32):
        super().__init__()
        onehot = torch.cat([torch.zeros(1, 4), torch.eye(4), torch.full((1, 4), 0.25)])
        self.register_buffer("onehot", onehot)
        self.padded_bp = PADDED_BP
        self.pad_each_side = PAD_EACH_SIDE
        # 4 bases per step (their one-hot vectors side by side): 9,198 bp padded to 9,216 with
        # PAD (a zero vector), 9 bp each side, is 2,304 steps.
        self.conv1 = nn.Conv1d(16, 32, 5, padding=2)
        self.conv2 = nn.Conv1d(32, 48, 7, padding=3)
        self.conv3 = nn.Conv1d(48, 48, 5, padding=2)
        self.positions = PADDED_BP // 256  # 36 after pooling by 4, 4 and 4
        self.place = nn.Parameter(torch.full((48, self.positions), 1.0 / self.positions))
        self.project = nn.Linear(48, out)
        self.dropout = nn.Dropout(0.3)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        batch = ids.size(0)
        x = self.onehot[F.pad(ids, (self.pad_each_side, self.pad_each_side))]
        x = x.reshape(batch, self.padded_bp // 4, 16).transpose(1, 2)
        x = F.max_pool1d(F.relu(self.conv1(x)), 4)
        x = F.max_pool1d(F.relu(self.conv2(x)), 4)
        x = F.max_pool1d(F.relu(self.conv3(x)), 4)
        x = (x * self.place).sum(dim=2)
        return self.project(self.dropout(x))


class TextEncoder(nn.Module):
    def __init__(self, embed: int = 24, channels: int = 64, out: int = 32):
        super().__init__()
        self.embed = nn.Embedding(TEXT_VOCAB, embed, padding_idx=0)
        self.conv1 = nn.Conv1d(embed, channels, 5, padding=2)
        self.conv2 = nn.Conv1d(channels, channels, 5, padding=2)
        self.project = nn.Linear(channels, out)

    def forward(self, text: torch.Tensor) -> torch.Tensor:
        x = self.embed(text).transpose(1, 2)
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        pad = (text == 0).unsqueeze(1)
        x = x.masked_fill(pad, -1e4).max(dim=2).values
        return self.project(x)


class ExpressionNet(nn.Module):
    def __init__(self, dim: int = 32, rank: int = 8):
        super().__init__()
        self.sequence = SequenceEncoder(out=dim)
        self.text = TextEncoder(out=dim)
        self.gene_level = nn.Linear(dim, 1)
        self.context_level = nn.Linear(dim, 1)
        self.gene_factors = nn.Linear(dim, rank, bias=False)
        self.context_factors = nn.Linear(dim, rank, bias=False)

    def combine(self, s: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """Sequence vectors [B, d] and description vectors [B, d] -> [B] raw scores."""
        interaction = (self.gene_factors(s) * self.context_factors(t)).sum(dim=1)
        return (self.gene_level(s) + self.context_level(t)).squeeze(1) + interaction

    def forward(self, ids: torch.Tensor, text: torch.Tensor) -> torch.Tensor:
        return F.softplus(self.combine(self.sequence(ids), self.text(text)))
