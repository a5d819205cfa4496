#!/usr/bin/env python3
"""Packages a DeepSTARR-style enhancer checkpoint for the dnaserve enhancer worker.

The checkpoint is a torch.save'd state_dict of `dnaserve_models.deepstarr.DeepSTARR` (the
published DeepSTARR layers in PyTorch; its docstring lists the keys, the shapes and how to port
the Keras weights). The script loads it strictly (every key, every shape), exports a frozen
TorchScript module that takes the worker's char ids [B, 249] and returns [B, 2] = (dev, hk),
checks the export against the eager module, and writes the package directory (manifest.json,
model.pt, MODEL_CARD.md with the checkpoint's sha256). The package id is the directory name.

    /usr/bin/python3 scripts/package_deepstarr.py --state-dict deepstarr.pt \\
        --out MODELS_DIR/enhancer-fly-deepstarr \\
        --description "DeepSTARR (de Almeida 2022), Drosophila S2 UMI-STARR-seq, dev and hk" \\
        [--is-default] [--untrained] [--card-note "where the weights come from"]
"""

import argparse
import json
import os
import shutil
import sys

import torch

from dnaserve_models.deepstarr import (OUTPUT_LABELS, STATE_DICT_SHAPES, WINDOW_BP,
                                       DeepSTARR)
from training.common import FORMAT_VERSION, sha256_file, write_package


class PackagingError(Exception):
    pass


def load_state_dict(path: str) -> DeepSTARR:
    if not os.path.isfile(path):
        raise PackagingError(f"{path}: no such file")
    try:
        state = torch.load(path, map_location="cpu")
    except Exception as error:  # torch raises many kinds for a file that is not a checkpoint
        raise PackagingError(f"{path}: not a torch checkpoint ({error})") from None
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise PackagingError(f"{path}: expected a state_dict (name -> tensor)")
    missing = sorted(set(STATE_DICT_SHAPES) - set(state))
    unexpected = sorted(set(state) - set(STATE_DICT_SHAPES))
    wrong = sorted(f"{k}: {tuple(state[k].shape)}, expected {STATE_DICT_SHAPES[k]}"
                   for k in STATE_DICT_SHAPES if k in state
                   and tuple(state[k].shape) != STATE_DICT_SHAPES[k])
    if missing or unexpected or wrong:
        parts = []
        if missing:
            parts.append("missing " + ", ".join(missing))
        if unexpected:
            parts.append("unexpected " + ", ".join(unexpected))
        if wrong:
            parts.append("wrong shapes " + "; ".join(wrong))
        raise PackagingError(f"{path} is not a DeepSTARR state_dict: " + " | ".join(parts))
    model = DeepSTARR()
    model.load_state_dict({k: v.float() for k, v in state.items()})
    for name, tensor in model.state_dict().items():
        if tensor.is_floating_point() and not torch.isfinite(tensor).all():
            raise PackagingError(f"{path}: {name} holds non-finite values")
    return model.eval()


def export(model: DeepSTARR):
    example = torch.randint(1, 6, (4, WINDOW_BP), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        eager = model(example)
        scripted = torch.jit.freeze(torch.jit.script(model))
        exported = scripted(example)
    diff = float((eager - exported).abs().max())
    if exported.shape != (4, 2) or diff > 1e-4:
        raise PackagingError(f"the TorchScript export differs from the eager module (max {diff})")
    return scripted, diff


def manifest_for(model_id: str, description: str, trained: bool, is_default: bool,
                 seed=None) -> dict:
    manifest = {
        "format_version": FORMAT_VERSION,
        "id": model_id,
        "task": "enhancer",
        "description": description,
        "is_default": is_default,
        "tokenizer": {"type": "char"},
        "context_window_bp": WINDOW_BP,
        "trained_window_bp": None,
        "stride_bp": WINDOW_BP,
        "output_labels": OUTPUT_LABELS,
        "trained": trained,
        "weights": "model.pt",
        "model_card": "MODEL_CARD.md",
    }
    if seed is not None:
        manifest["seed"] = seed
    return manifest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state-dict", required=True, help="torch.save'd DeepSTARR state_dict")
    parser.add_argument("--out", required=True, help="package directory (its name is the id)")
    parser.add_argument("--description", required=True,
                        help="what the weights are (published in the models list)")
    parser.add_argument("--is-default", action="store_true")
    parser.add_argument("--untrained", action="store_true",
                        help="the weights are not trained (manifest trained: false)")
    parser.add_argument("--card-note", default="", help="provenance text for the model card")
    args = parser.parse_args()

    out = os.path.abspath(args.out)
    model_id = os.path.basename(out.rstrip("/"))
    try:
        model = load_state_dict(args.state_dict)
        scripted, diff = export(model)
    except PackagingError as error:
        print(f"package_deepstarr: {error}", file=sys.stderr)
        return 2
    manifest = manifest_for(model_id, args.description, not args.untrained, args.is_default)
    card = "\n".join([
        f"# {model_id}", "", args.description, "",
        "| | |", "|---|---|",
        f"| task | enhancer: dev and hk activity per 249 bp window |",
        f"| trained | {'no' if args.untrained else 'yes (operator-supplied weights)'} |",
        f"| architecture | DeepSTARR (scripts/dnaserve_models/deepstarr.py) |",
        f"| checkpoint | `{os.path.basename(args.state_dict)}`, sha256 "
        f"{sha256_file(args.state_dict)} |",
        f"| export | torch {torch.__version__}, torch.jit.script + freeze; max diff to eager "
        f"{diff:.2e} |", "",
        "## Provenance", "", args.card_note or "Not stated by the operator.", "",
        "## Use", "",
        "Submit the coding strand. Windows are 249 bp, non-overlapping; the last one is padded "
        "with N (all-zero one-hot columns), which the published model never saw.", ""])
    os.makedirs(os.path.dirname(out), exist_ok=True)
    write_package(os.path.dirname(out), manifest, scripted, card)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
