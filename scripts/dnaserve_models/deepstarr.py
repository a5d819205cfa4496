"""The DeepSTARR architecture (de Almeida et al. 2022, Nature Genetics) in PyTorch.

DeepSTARR predicts developmental (dev) and housekeeping (hk) enhancer activity from 249 bp of
Drosophila S2 sequence (UMI-STARR-seq). The published network, layer by layer:

    one-hot (249, 4) -> [Conv1d k7 246 ch, BN, ReLU, MaxPool 2] -> [Conv1d k3 60, BN, ReLU, MaxPool 2]
    -> [Conv1d k5 60, BN, ReLU, MaxPool 2] -> [Conv1d k3 120, BN, ReLU, MaxPool 2]   (249 -> 15)
    -> flatten (120 x 15) -> [Dense 256, BN, ReLU, Dropout 0.4] x 2 -> Dense 1 (dev), Dense 1 (hk)

`DeepSTARR` takes the worker's char ids ([B, 249], A=1 C=2 G=3 T=4, N and padding all-zero
one-hot columns) and returns [B, 2] = (dev, hk). Convolutions use "same" padding (k // 2), as the
Keras original does. A checkpoint for scripts/package_deepstarr.py is a torch.save'd state_dict
of this module; its keys and shapes are `STATE_DICT_SHAPES`. Porting the published Keras weights
needs two layout changes: Conv1D kernels (k, in, out) -> (out, in, k), and the first dense layer's
input order, which Keras flattens position-major (pos * 120 + channel) and this module
channel-major (channel * 15 + position).
"""

from typing import Dict, Tuple

import torch
import torch.nn.functional as F
from torch import nn

WINDOW_BP = 249
OUTPUT_LABELS = ["dev", "hk"]
_CONVS = [(4, 246, 7), (246, 60, 3), (60, 60, 5), (60, 120, 3)]
_FLAT = 120 * 15


class ConvBlock(nn.Module):
    """Conv1d ("same" padding) -> BatchNorm -> ReLU -> MaxPool 2."""

    def __init__(self, in_channels: int, out_channels: int, kernel: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel, padding=kernel // 2)
        self.norm = nn.BatchNorm1d(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.max_pool1d(F.relu(self.norm(self.conv(x))), 2)


class DeepSTARR(nn.Module):
    def __init__(self):
        super().__init__()
        table = torch.zeros(6, 4)
        table[1:5] = torch.eye(4)
        self.register_buffer("onehot", table, persistent=False)
        self.blocks = nn.ModuleList([ConvBlock(i, o, k) for i, o, k in _CONVS])
        self.dense1 = nn.Linear(_FLAT, 256)
        self.norm1 = nn.BatchNorm1d(256)
        self.dense2 = nn.Linear(256, 256)
        self.norm2 = nn.BatchNorm1d(256)
        self.dropout = nn.Dropout(0.4)
        self.dev = nn.Linear(256, 1)
        self.hk = nn.Linear(256, 1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = F.embedding(ids, self.onehot).transpose(1, 2)          # [B, 4, 249]
        for block in self.blocks:
            x = block(x)
        x = x.flatten(1)                                            # [B, 120 * 15]
        x = self.dropout(F.relu(self.norm1(self.dense1(x))))
        x = self.dropout(F.relu(self.norm2(self.dense2(x))))
        return torch.cat([self.dev(x), self.hk(x)], dim=1)


def state_dict_shapes() -> Dict[str, Tuple[int, ...]]:
    return {k: tuple(v.shape) for k, v in DeepSTARR().state_dict().items()}


STATE_DICT_SHAPES = state_dict_shapes()
