#!/usr/bin/env python3
"""Converts the published OpenSpliceAI checkpoints into one dnaserve splice model package.

The package holds a single TorchScript module that runs the whole ensemble the published way:
character ids [B, 15000] (the worker's char tokenizer: PAD=0 A=1 C=2 G=3 T=4 N=5) are one-hot
encoded inside the module (A, C, G, T channels; N and PAD all zeros), every checkpoint's softmax
is computed and the mean is returned as [B, 5000, 3] (neither, acceptor, donor) for the central
5,000 bases. The worker feeds it flanked windows (manifest `flank_bp` 5000, `output_window_bp`
5000): 5,000 bp of real neighbouring sequence on each side of the scored bases, N only beyond the
ends of the submitted sequence, which is the published N-padding and chunking.

The network is rebuilt in scripts/openspliceai_reference.py. The exported module computes the
same function with "valid" convolutions: each residual block drops the positions whose receptive
field would reach past the window, so the trunk shrinks from 15,000 to the 5,000 scored positions
instead of being cropped only at the end. Every scored position sees exactly the inputs it sees in
the reference network (its receptive field is +-5,000 bp), so only float rounding differs; the
export is checked against the eager reference before the package is written.

The checkpoints are GPL-3.0. The package (weights, manifest, model card) is derived from them:
write it to a build or temporary directory, NEVER into the repository.

Usage:
  /usr/bin/python3 scripts/convert_openspliceai.py \
      --checkpoints ../shared/data/published-models/openspliceai-mane-10000nt \
      --out build/models/splice-openspliceai-mane
The package id is the name of the --out directory (default name: splice-openspliceai-mane).
"""

import argparse
import json
import os
import re
import shutil
import sys
import time
from typing import List, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
from dnaserve_tools import openspliceai_reference as ref  # the architecture and the published usage
from training.common import sha256_file

FORMAT_VERSION = 1
DEFAULT_ID = "splice-openspliceai-mane"
# The worker's char tokenizer ids (worker/README.md) -> one-hot rows: PAD, A, C, G, T, N.
CHAR_IDS = "_ACGTN"
ID_PATTERN = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$")
# The export must match the eager reference this closely (the service's parity bound is 1e-4).
EXPORT_TOLERANCE = 1e-5


class ValidBlock(nn.Module):
    """A reference ResidualBlock with unpadded convolutions: the output is 2 * trim shorter."""

    def __init__(self, block: ref.ResidualBlock):
        super().__init__()
        self.batchnorm1 = block.batchnorm1
        self.batchnorm2 = block.batchnorm2
        self.weight1 = block.conv1.weight
        self.bias1 = block.conv1.bias
        self.weight2 = block.conv2.weight
        self.bias2 = block.conv2.bias
        self.dilation = block.conv1.dilation[0]
        self.trim = self.dilation * (block.conv1.kernel_size[0] - 1)  # per side, both convs
        self.slope = block.slope

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        h = F.conv1d(F.leaky_relu(self.batchnorm1(x), self.slope), self.weight1, self.bias1,
                     dilation=self.dilation)
        h = F.conv1d(F.leaky_relu(self.batchnorm2(h), self.slope), self.weight2, self.bias2,
                     dilation=self.dilation)
        return x[:, :, self.trim:x.shape[2] - self.trim] + h, skip


class ValidTap(nn.Module):
    """A reference SkipTap whose accumulator is cut to the (shorter) trunk before adding."""

    def __init__(self, tap: ref.SkipTap):
        super().__init__()
        self.conv = tap.conv

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        cut = (skip.shape[2] - x.shape[2]) // 2
        return x, skip[:, :, cut:skip.shape[2] - cut] + self.conv(x)


class ValidNet(nn.Module):
    """One checkpoint: one-hot [B, 4, L] -> softmax [B, 3, L - 2 * 5000], valid convolutions."""

    def __init__(self, net: ref.SpliceNet):
        super().__init__()
        self.initial_conv = net.initial_conv
        self.initial_tap = net.initial_skip.conv
        units: List[nn.Module] = []
        for unit in net.residual_units:
            is_block = isinstance(unit, ref.ResidualBlock)
            units.append(ValidBlock(unit) if is_block else ValidTap(unit))
        self.units = nn.ModuleList(units)
        self.final_conv = net.final_conv

    def forward(self, onehot: torch.Tensor) -> torch.Tensor:
        x = self.initial_conv(onehot)
        skip = self.initial_tap(x)
        for unit in self.units:
            x, skip = unit(x, skip)
        return torch.softmax(self.final_conv(skip), dim=1)


class FlankedEnsemble(nn.Module):
    """Char ids [B, L] -> mean of the members' softmax, [B, L - 2 * flank, 3]."""

    def __init__(self, members: List[ref.SpliceNet]):
        super().__init__()
        table = torch.zeros(len(CHAR_IDS), 4)
        for channel, base in enumerate(ref.BASES):
            table[CHAR_IDS.index(base), channel] = 1.0
        self.register_buffer("onehot_table", table)
        self.members = nn.ModuleList([ValidNet(m) for m in members])
        self.flank = ref.FLANK_BP

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if ids.dim() != 2 or ids.shape[1] <= 2 * self.flank:
            raise ValueError("expected char ids [B, L] with L > 2 * flank")
        onehot = F.embedding(ids, self.onehot_table).transpose(1, 2)  # [B, 4, L]
        scores: List[torch.Tensor] = []
        for member in self.members:
            scores.append(member(onehot))
        return torch.stack(scores).mean(dim=0).transpose(1, 2).contiguous()


def char_ids(bases: str) -> torch.Tensor:
    return torch.tensor([CHAR_IDS.index(b) for b in bases], dtype=torch.int64)


def check_export(module, members: List[ref.SpliceNet]) -> float:
    """Max |exported - reference| over two windows of random bases with an N run."""
    rng = np.random.default_rng(20)
    bases = "".join(rng.choice(list("ACGT"), size=2 * ref.OUTPUT_BP - 700))
    bases = bases[:3000] + "N" * 200 + bases[3200:]
    expected = ref.predict(members, bases)  # [len, 3], the published way
    padded = "N" * ref.FLANK_BP + bases + "N" * (2 * ref.OUTPUT_BP - len(bases) + ref.FLANK_BP)
    windows = torch.stack([char_ids(padded[i * ref.OUTPUT_BP:i * ref.OUTPUT_BP + ref.CONTEXT_BP])
                           for i in range(2)])
    with torch.no_grad():
        got = module(windows).reshape(-1, 3).numpy()[:len(bases)]
    return float(np.abs(got - expected).max())



def description() -> str:
    return ("OpenSpliceAI MANE 10000nt ensemble (published checkpoints, GPL-3.0): the 5 released "
            "models of the SpliceAI residual CNN trained by the OpenSpliceAI authors on human MANE "
            "transcripts, averaged as published. Per-base acceptor and donor probabilities; "
            "each 5,000 bp scored window sees 5,000 bp of flanking sequence on each side "
            "(15,000 bp input). Trained weights, not retrained by dnaserve.")


def manifest_for(model_id: str, is_default: bool) -> dict:
    return {
        "format_version": FORMAT_VERSION,
        "id": model_id,
        "task": "splice",
        "description": description(),
        "is_default": is_default,
        "tokenizer": {"type": "char"},
        "context_window_bp": ref.CONTEXT_BP,
        "trained_window_bp": None,
        "flank_bp": ref.FLANK_BP,
        "output_window_bp": ref.OUTPUT_BP,
        "output_labels": list(ref.CLASSES),
        "trained": True,
        "weights": "model.pt",
        "model_card": "MODEL_CARD.md",
    }


def model_card(model_id: str, checkpoints: List[str], max_diff: float) -> str:
    rows = "\n".join(f"| `{os.path.basename(p)}` | `{sha256_file(p)}` |" for p in checkpoints)
    return f"""# {model_id}

**Published weights, GPL-3.0.** This package is a conversion of the OpenSpliceAI checkpoints
released by the OpenSpliceAI authors (Kuan-Hao Chao et al., github.com/Kuanhao-Chao/OpenSpliceAI,
licence GPL-3.0; a copy of the licence is in this package as `LICENSE`). The weights are theirs,
unchanged; dnaserve did not train or fine-tune them. Because the package is derived from GPL-3.0
files it is distributed under GPL-3.0 and is never committed to the dnaserve repository: it is
generated into a build or temporary directory by `scripts/convert_openspliceai.py`.

## What it is

The OpenSpliceAI "MANE, 10000nt flank" release: five models of the SpliceAI architecture
(Jaganathan et al., Cell 2019; residual dilated CNN, 32 channels, 16 residual blocks with kernel
sizes 11/11/21/41 and dilations 1/4/10/25, LeakyReLU 0.1) trained by the OpenSpliceAI authors on
human MANE transcripts (the files are named rs10-rs14, one per training seed). Each model sees
5,000 bp on each side of the 5,000 bp it scores and outputs softmax probabilities for neither /
acceptor / donor per base.

| checkpoint | sha256 |
|---|---|
{rows}

## How dnaserve runs it

* One TorchScript module runs all five models and returns the mean of their softmax outputs,
  the published ensembling.
* Input: the worker's char ids `[B, 15000]`; one-hot inside the module (A, C, G, T; N all zeros).
* The worker cuts the submitted sequence into 5,000 bp scored windows, each given 5,000 bp of the
  real neighbouring sequence on each side and N beyond the sequence ends (manifest `flank_bp`,
  `output_window_bp`): exactly the published N-padding and chunking. The last window is padded
  with N.
* Output `[B, 5000, 3]` (neither, acceptor, donor), one row per scored base; splice sites are
  single bases (token = 1 bp).
* Labels follow SpliceAI: a donor is the last exonic base before the intron (refGene `exonEnd - 1`,
  0-based, on the transcript's strand), an acceptor the first exonic base after it (`exonStart`).
  Submit the transcript's strand (reverse-complement minus-strand genes).
* Export check: max |TorchScript - eager reference| = {max_diff:.2e} on two windows of random
  sequence with an N run (the conversion refuses anything above {EXPORT_TOLERANCE:g}).

## Intended use and limits

Research use: per-base splice-site probabilities for human pre-mRNA sequence in transcript
orientation. Performance figures are the OpenSpliceAI authors' (see their paper and repository);
dnaserve's tests check only that the served scores equal the reference PyTorch model's and that
calls on chr20 genes fall on refGene junctions. Float32 on CPU.

## Reproduce

```
/usr/bin/python3 scripts/convert_openspliceai.py --checkpoints <dir with model_10000nt_rs1*.pt> \\
    --out <models_dir>/{model_id}
```
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoints", required=True,
                        help="directory holding the published model_10000nt_rs*.pt files")
    parser.add_argument("--out", required=True,
                        help="package directory to write; its name is the model id")
    parser.add_argument("--is-default", action="store_true",
                        help="mark the package as the splice task's default model")
    args = parser.parse_args()

    out = os.path.abspath(args.out)
    model_id = os.path.basename(out)
    if not ID_PATTERN.match(model_id):
        print(f"the package directory name '{model_id}' is not a valid model id "
              "(1-128 of [A-Za-z0-9._-], not starting with '.')", file=sys.stderr)
        return 2
    started = time.monotonic()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    paths = ref.checkpoint_paths(args.checkpoints)
    members = [ref.load_member(p) for p in paths]
    ensemble = FlankedEnsemble(members).eval()
    with torch.no_grad():
        exported = torch.jit.freeze(torch.jit.script(ensemble))
    max_diff = check_export(exported, members)
    if not max_diff <= EXPORT_TOLERANCE:
        print(f"the TorchScript ensemble differs from the eager reference by {max_diff:.3g}",
              file=sys.stderr)
        return 1

    os.makedirs(os.path.dirname(out), exist_ok=True)
    staging = os.path.join(os.path.dirname(out), f".{model_id}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    exported.save(os.path.join(staging, "model.pt"))
    with open(os.path.join(staging, "manifest.json"), "w", encoding="utf-8") as handle:
        json.dump(manifest_for(model_id, args.is_default), handle, indent=2)
        handle.write("\n")
    with open(os.path.join(staging, "MODEL_CARD.md"), "w", encoding="utf-8") as handle:
        handle.write(model_card(model_id, paths, max_diff))
    # The package is a GPL-3.0 work: it travels with the licence text shipped beside the weights.
    licence = os.path.join(args.checkpoints, "LICENSE")
    if os.path.isfile(licence):
        shutil.copyfile(licence, os.path.join(staging, "LICENSE"))
    # Swap the finished package in so a worker scanning the directory never sees half of one.
    shutil.rmtree(out, ignore_errors=True)
    os.rename(staging, out)
    print(f"wrote {out} ({len(members)} checkpoints, export max diff {max_diff:.2e}, "
          f"{time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
