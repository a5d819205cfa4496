#!/usr/bin/env python3
"""Reference (eager PyTorch) runner for the published OpenSpliceAI checkpoints.

The OpenSpliceAI releases are PyTorch state_dicts of the SpliceAI residual CNN (Jaganathan et al.,
Cell 2019) retrained by the OpenSpliceAI authors. This module rebuilds that network from its
public description and the checkpoints' parameter names and shapes, loads the weights and runs
them the published way, so dnaserve's TorchScript package (scripts/convert_openspliceai.py) can be
checked against it position by position.

Network (10,000 nt flank variant, 32 channels everywhere):
  one-hot [B, 4, 5000 + 10000] -> 1x1 conv (initial_conv) -> trunk x; skip = 1x1 conv(x)
  16 pre-activation residual blocks, x + conv(act(bn(conv(act(bn(x)))))), "same" dilated convs:
    blocks 1-4 kernel 11 dilation 1, 5-8 kernel 11 dilation 4, 9-12 kernel 21 dilation 10,
    13-16 kernel 41 dilation 25; after every 4th block skip += 1x1 conv(x)
  skip cropped by 5,000 on each side -> 1x1 conv to 3 logits (neither, acceptor, donor) -> softmax
  act = LeakyReLU with slope 0.1 (OpenSpliceAI's choice; the original SpliceAI used ReLU).
In module order the state_dict holds residual_units.0-3 (blocks), .4 (skip tap), .5-8, .9, ...

Published usage, reproduced by `predict`:
  * bases A, C, G, T one-hot in that channel order; anything else (N) is all zeros;
  * the sequence gets 5,000 N on each side, and is cut into windows of 15,000 bp every 5,000 bp
    (the last one right-padded with N), each window scoring its central 5,000 bases;
  * every checkpoint's softmax output is computed and the ensemble is their mean.

The checkpoints are GPL-3.0 (see the LICENSE beside them): nothing derived from them may be
written into the dnaserve repository.

Usage:
  /usr/bin/python3 scripts/openspliceai_reference.py --checkpoints DIR --sequence-file SEQ \
      --out SCORES.tsv
SEQ holds the bases (whitespace ignored); SCORES.tsv gets one line per base:
`<position>\t<neither>\t<acceptor>\t<donor>` (0-based position, scores with 9 significant digits).
"""

import argparse
import glob
import os
import sys
import time
from typing import List, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

CHANNELS = 32
# (kernel, dilation) of each residual block, in order.
BLOCKS: List[Tuple[int, int]] = ([(11, 1)] * 4 + [(11, 4)] * 4 + [(21, 10)] * 4 + [(41, 25)] * 4)
BLOCKS_PER_TAP = 4  # a skip tap follows every 4th block
LEAKY_SLOPE = 0.1
CLASSES = ("neither", "acceptor", "donor")
OUTPUT_BP = 5000
# Each "same" dilated conv widens the receptive field by dilation * (kernel - 1) / 2 per side;
# two convs per block.
FLANK_BP = sum(d * (k - 1) for k, d in BLOCKS)  # 5,000 per side = 10,000 nt of context in total
CONTEXT_BP = OUTPUT_BP + 2 * FLANK_BP
BASES = "ACGT"


class ResidualBlock(nn.Module):
    """Pre-activation residual block: x + conv2(act(bn2(conv1(act(bn1(x))))))."""

    def __init__(self, kernel: int, dilation: int, slope: float):
        super().__init__()
        pad = dilation * (kernel - 1) // 2
        self.batchnorm1 = nn.BatchNorm1d(CHANNELS)
        self.conv1 = nn.Conv1d(CHANNELS, CHANNELS, kernel, dilation=dilation, padding=pad)
        self.batchnorm2 = nn.BatchNorm1d(CHANNELS)
        self.conv2 = nn.Conv1d(CHANNELS, CHANNELS, kernel, dilation=dilation, padding=pad)
        self.slope = slope

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        h = self.conv1(F.leaky_relu(self.batchnorm1(x), self.slope))
        h = self.conv2(F.leaky_relu(self.batchnorm2(h), self.slope))
        return x + h, skip


class SkipTap(nn.Module):
    """Adds a 1x1 projection of the trunk to the skip accumulator; the trunk passes unchanged."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(CHANNELS, CHANNELS, 1)

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return x, skip + self.conv(x)


class SpliceNet(nn.Module):
    """One OpenSpliceAI checkpoint: one-hot [B, 4, L] -> softmax [B, 3, L - 2 * FLANK_BP]."""

    def __init__(self, slope: float = LEAKY_SLOPE):
        super().__init__()
        self.initial_conv = nn.Conv1d(4, CHANNELS, 1)
        self.initial_skip = SkipTap()
        units: List[nn.Module] = []
        for i, (kernel, dilation) in enumerate(BLOCKS):
            units.append(ResidualBlock(kernel, dilation, slope))
            if (i + 1) % BLOCKS_PER_TAP == 0:
                units.append(SkipTap())
        self.residual_units = nn.ModuleList(units)
        self.final_conv = nn.Conv1d(CHANNELS, len(CLASSES), 1)
        self.flank = FLANK_BP

    def logits(self, onehot: torch.Tensor) -> torch.Tensor:
        x = self.initial_conv(onehot)
        x, skip = self.initial_skip(x, torch.zeros_like(x))
        for unit in self.residual_units:
            x, skip = unit(x, skip)
        return self.final_conv(skip[:, :, self.flank:skip.shape[2] - self.flank])

    def forward(self, onehot: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.logits(onehot), dim=1)


def checkpoint_paths(directory: str) -> List[str]:
    paths = sorted(glob.glob(os.path.join(directory, "*.pt")))
    if not paths:
        raise FileNotFoundError(f"no *.pt checkpoints in {directory}")
    return paths


def load_member(path: str, slope: float = LEAKY_SLOPE) -> SpliceNet:
    """Loads one checkpoint strictly: every parameter name and shape must match."""
    state = torch.load(path, map_location="cpu")
    if not isinstance(state, dict):
        raise ValueError(f"{path}: expected a state_dict, got {type(state).__name__}")
    net = SpliceNet(slope)
    net.load_state_dict(state, strict=True)
    return net.eval()


def load_ensemble(directory: str, slope: float = LEAKY_SLOPE) -> List[SpliceNet]:
    return [load_member(p, slope) for p in checkpoint_paths(directory)]


def one_hot(bases: str) -> np.ndarray:
    """[4, len] float32; A, C, G, T one-hot, every other character (N) all zeros."""
    codes = np.frombuffer(bases.upper().encode("ascii"), dtype=np.uint8)
    out = np.zeros((4, len(bases)), dtype=np.float32)
    for channel, base in enumerate(BASES):
        out[channel, codes == ord(base)] = 1.0
    return out


def published_windows(sequence: str) -> np.ndarray:
    """The published chunking: [windows, 4, CONTEXT_BP] one-hot inputs."""
    padded = "N" * FLANK_BP + sequence + "N" * FLANK_BP
    count = max(1, -(-len(sequence) // OUTPUT_BP))
    padded += "N" * (count * OUTPUT_BP + 2 * FLANK_BP - len(padded))
    return np.stack([one_hot(padded[i * OUTPUT_BP:i * OUTPUT_BP + CONTEXT_BP])
                     for i in range(count)])


def predict(members: Sequence[SpliceNet], sequence: str, batch: int = 1) -> np.ndarray:
    """Per-base ensemble scores [len(sequence), 3] (neither, acceptor, donor)."""
    windows = torch.from_numpy(published_windows(sequence))
    pieces = []
    with torch.no_grad():
        for first in range(0, windows.shape[0], batch):
            x = windows[first:first + batch]
            mean = torch.mean(torch.stack([m(x) for m in members]), dim=0)  # [b, 3, OUTPUT_BP]
            pieces.append(mean.transpose(1, 2).reshape(-1, len(CLASSES)))
    return torch.cat(pieces).numpy()[:len(sequence)]


def read_bases(path: str) -> str:
    with open(path, "r", encoding="ascii") as handle:
        return "".join(handle.read().split())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoints", required=True, help="directory of model_*.pt files")
    parser.add_argument("--sequence-file", required=True, help="file holding the bases")
    parser.add_argument("--out", required=True, help="TSV of per-base scores to write")
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: keep)")
    args = parser.parse_args()

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    sequence = read_bases(args.sequence_file)
    if not sequence:
        print("the sequence file holds no bases", file=sys.stderr)
        return 2
    members = load_ensemble(args.checkpoints)
    started = time.monotonic()
    scores = predict(members, sequence)
    seconds = time.monotonic() - started
    with open(args.out, "w", encoding="ascii") as handle:
        for position, row in enumerate(scores):
            handle.write(f"{position}\t{row[0]:.9g}\t{row[1]:.9g}\t{row[2]:.9g}\n")
    windows = -(-len(sequence) // OUTPUT_BP)
    print(f"scored {len(sequence)} bp in {windows} windows with {len(members)} checkpoints "
          f"in {seconds:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
