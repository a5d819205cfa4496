#!/usr/bin/env python3
"""Python peers of the large-model suite (BENCHMARKS.md, table O): the window tensors the worker's
runner sent (written by dnaserve-bench as <prefix>.bin / <prefix>.json, see python_peer.py), run
from Debian's python3-torch with the same intra-op thread count, by one of:

  --mode script  the package's model.pt (torch.jit.load), as python_peer.py does;
  --mode eager   the eager module a user would write from the Hugging Face layout: the plain
                 PyTorch BERT of scripts/dnaserve_models/hf_bert.py (nn.Linear, nn.LayerNorm,
                 nn.Embedding; what the exporter scripts), built from the checkpoint's
                 config.json, weights and tokenizer.json, never scripted. `transformers` is not
                 installed on this machine, so its BertModel is not the peer.
  --dtype bf16   the eager module cast to bfloat16 (weights and activations);
  --dtype int8   the eager module with torch's dynamic int8 quantisation of its nn.Linear layers.

The warm-up is one window (a 100 kb request of a base-size model is minutes per round).
Prints one JSON object: {"median_s", "all_s", "load_s", "calls", "threads", "max_abs_diff",
"mode", "dtype"}; max_abs_diff (reduced precision only) is the largest difference of the
module's outputs from the fp32 eager module's over every call of the first round (NaN outputs
left out of it and flagged by "nan_outputs").
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy
import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))


def read_calls(index, data):
    ids = numpy.fromfile(data, dtype="<i8")
    calls = []
    for call in index["calls"]:
        tensors = []
        for item in call:
            count = int(numpy.prod(item["shape"]))
            chunk = ids[item["offset"]:item["offset"] + count]
            tensors.append(torch.from_numpy(chunk.copy()).reshape(item["shape"]))
        calls.append(tensors)
    return calls


def eager_module(checkpoint):
    """The exporter's eager BERT (promoter head) with the checkpoint's weights."""
    from dnaserve_models.checkpoint_io import load_state_dict
    from dnaserve_models.hf_bert import BertSpec, SequenceTaskModel, SpecialTokens, map_state_dict
    from dnaserve_models.hf_tokenizer_json import read_tokenizer_json
    with open(os.path.join(checkpoint, "config.json"), encoding="utf-8") as handle:
        spec = BertSpec.from_config(json.load(handle))
    facts = read_tokenizer_json(os.path.join(checkpoint, "tokenizer.json"))
    if facts.pad_id is not None:
        spec.pad_token_id = facts.pad_id
    specials = SpecialTokens(facts.prefix_ids, facts.suffix_ids, spec.pad_token_id)
    state, _ = load_state_dict(checkpoint)
    # The bench packages are binary promoter heads reporting class 1 through a softmax.
    model = SequenceTaskModel(spec, specials, 2, "softmax", 1)
    mapped, _ = map_state_dict(spec, "sequence", state, model)
    model.load_state_dict(mapped, strict=True)
    return model.eval()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--mode", choices=["script", "eager"], required=True)
    parser.add_argument("--checkpoint", help="Hugging Face checkpoint dir (eager)")
    parser.add_argument("--dtype", choices=["fp32", "bf16", "int8"], default="fp32")
    parser.add_argument("--reps", type=int, help="timed rounds (default: the index's)")
    args = parser.parse_args()
    with open(args.index, encoding="utf-8") as handle:
        index = json.load(handle)
    torch.set_num_threads(max(1, int(index["threads"])))
    calls = read_calls(index, args.data)

    started = time.perf_counter()
    reference = None
    if args.mode == "script":
        module = torch.jit.load(index["model"])
        module.eval()
    else:
        if not args.checkpoint:
            parser.error("--mode eager needs --checkpoint")
        module = eager_module(args.checkpoint)
        if args.dtype != "fp32":
            reference = module
            if args.dtype == "bf16":
                module = eager_module(args.checkpoint).to(torch.bfloat16)
                # The module masks padded keys with float32's lowest value, which rounds to -inf
                # in bfloat16, and 0 x -inf is NaN for every unpadded key: a bf16 module needs
                # bfloat16's own lowest value there (as Hugging Face takes finfo(dtype).min).
                module.encoder.masked = float(torch.finfo(torch.bfloat16).min)
            else:
                module = torch.ao.quantization.quantize_dynamic(
                    eager_module(args.checkpoint), {torch.nn.Linear}, dtype=torch.qint8)
    load_s = time.perf_counter() - started

    timings, worst, nan_outputs = [], 0.0, False
    with torch.inference_mode():
        module(*[t[:1] for t in calls[0]])  # warm-up: one window
        for rep in range(max(1, args.reps or int(index["reps"]))):
            started = time.perf_counter()
            outputs = [module(*tensors) for tensors in calls]
            timings.append(time.perf_counter() - started)
            if reference is not None and rep == 0:
                for tensors, out in zip(calls, outputs):
                    ref = reference(*tensors)
                    nan_outputs = nan_outputs or bool(torch.isnan(out.float()).any())
                    worst = max(worst, float((out.float() - ref).abs().nan_to_num(0.0).max()))
    json.dump({"median_s": statistics.median(timings), "all_s": timings, "load_s": load_s,
               "calls": len(calls), "threads": torch.get_num_threads(), "mode": args.mode,
               "dtype": args.dtype, "max_abs_diff": worst if reference is not None else None,
               "nan_outputs": nan_outputs},
              sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
