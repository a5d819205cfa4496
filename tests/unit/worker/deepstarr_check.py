#!/usr/bin/env python3
"""Helper of tests/unit/worker/deepstarr_test.cpp: DeepSTARR checkpoints and the eager reference.

  deepstarr_check.py checkpoint --seed N --out FILE
      a DeepSTARR state_dict with random weights and random batch-norm statistics (so the
      normalisation matters), torch.save'd as an operator would supply it.
  deepstarr_check.py wrong-shape --out FILE
      the same with one tensor of the wrong shape (dense1.weight transposed).
  deepstarr_check.py reference --state-dict FILE --sequence-file SEQ --out TSV
      eager PyTorch on SEQ windowed as the enhancer task windows it (249 bp, non-overlapping, the
      last window padded with N): one "<window>\t<dev>\t<hk>" line per window.
"""

import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "scripts"))

from dnaserve_models.deepstarr import WINDOW_BP, DeepSTARR  # noqa: E402
from training.nets import char_ids  # noqa: E402


def random_model(seed: int) -> DeepSTARR:
    torch.manual_seed(seed)
    model = DeepSTARR()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm1d):
                module.weight.uniform_(0.5, 1.5)
                module.bias.normal_(0.0, 0.1)
                module.running_mean.normal_(0.0, 0.1)
                module.running_var.uniform_(0.5, 2.0)
    return model


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ckpt = sub.add_parser("checkpoint")
    ckpt.add_argument("--seed", type=int, default=7)
    ckpt.add_argument("--out", required=True)
    wrong = sub.add_parser("wrong-shape")
    wrong.add_argument("--out", required=True)
    ref = sub.add_parser("reference")
    ref.add_argument("--state-dict", required=True)
    ref.add_argument("--sequence-file", required=True)
    ref.add_argument("--out", required=True)
    args = parser.parse_args()

    if args.command == "checkpoint":
        torch.save(random_model(args.seed).state_dict(), args.out)
    elif args.command == "wrong-shape":
        state = random_model(1).state_dict()
        state["dense1.weight"] = state["dense1.weight"].t().contiguous()
        torch.save(state, args.out)
    else:
        model = DeepSTARR()
        model.load_state_dict(torch.load(args.state_dict))
        model.eval()
        with open(args.sequence_file, encoding="ascii") as handle:
            seq = handle.read().strip()
        windows = []
        for start in range(0, len(seq), WINDOW_BP):
            piece = seq[start:start + WINDOW_BP]
            windows.append(char_ids(piece + "N" * (WINDOW_BP - len(piece))))
        with torch.no_grad():
            out = model(torch.from_numpy(np.stack(windows).astype(np.int64))).numpy()
        with open(args.out, "w", encoding="ascii") as handle:
            for i, (dev, hk) in enumerate(out):
                handle.write(f"{i}\t{dev:.9g}\t{hk:.9g}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
