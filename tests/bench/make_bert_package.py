#!/usr/bin/env python3
"""Makes the BPE packages of dnaserve-bench: random BERT checkpoints in the Hugging Face layout
(promoter head, the project's BPE tokenizer.json), exported with scripts/export_hf_bert.py.

--shape small (the default): the BPE rows of tables A/B (hidden 64, 2 layers, 4 heads, 512
positions), built with the helpers of tests/unit/worker/hf_export_check.py.
--shape base / large: production-size encoders for the large-model suite (BENCHMARKS.md, table
O): GENA-LM-base's shape (12 layers, hidden 768, 12 heads, intermediate 3072) and GENA-LM-large's
(24 x 1024, 16 heads, 4096), 512 positions. Nothing is downloaded: the weights are random
(normal, standard deviation 0.02 as Hugging Face initialises BERT), the package says it is
untrained, and it is written outside the repository (scripts/bench puts it under the build dir).
Beside manifest.json the package gets bench-architecture.json (the shape the FLOP count of the
large-model suite needs; the worker reads only what the manifest names).

Usage:
    /usr/bin/python3 tests/bench/make_bert_package.py --out MODELS_DIR [--work DIR]
        [--shape small|base|large]
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "worker"))

import hf_export_check as fixtures  # noqa: E402

# shape: (package id, config overrides, context bp, stride bp)
# The project's chr20 BPE vocabulary cuts random sequence into ~4.3 bp tokens: 1,800 bp windows
# are ~420 tokens and 2,100 bp ones ~490, under the 510 that 512 positions leave beside
# [CLS]/[SEP]. The large shapes' windows do not overlap, so a 10 kb request is 5 windows of about
# 512 tokens each, the "one 512-token window" unit GENA-LM is run in.
SHAPES = {
    "small": ("promoter-bert-bench",
              dict(hidden_size=64, num_attention_heads=4, intermediate_size=256,
                   _name_or_path="dnaserve-bench/random-bert-64"), 1800, 900),
    "base": ("promoter-bert-base-untrained",
             dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                  intermediate_size=3072, _name_or_path="dnaserve-bench/random-gena-lm-base-shape"),
             2100, 2100),
    "large": ("promoter-bert-large-untrained",
              dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                   intermediate_size=4096,
                   _name_or_path="dnaserve-bench/random-gena-lm-large-shape"), 2100, 2100),
}


def hf_init_scale(state):
    """Rescales the fixture's weights (std 0.2) to BERT's initialisation (std 0.02), so that
    activations in a deep, wide encoder stay in the range trained ones have."""
    for name, tensor in state.items():
        if name.endswith(".weight") and tensor.dim() == 2 and "embeddings" not in name:
            tensor.mul_(0.1)
    return state


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="models dir to write the package into")
    parser.add_argument("--work", help="where the checkpoint goes (default: <out>/.checkpoints)")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="small")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                        help="bf16: the same weights exported as a whole-bf16 module (its own "
                             "package id, measured beside the fp32 one)")
    args = parser.parse_args()
    work = args.work or os.path.join(args.out, ".checkpoints")
    package_id, shape, context_bp, stride_bp = SHAPES[args.shape]
    bf16 = args.precision == "bf16"
    tok, _ = fixtures.tokenizer_source()
    pad = fixtures.special_id(tok, "[PAD]")
    config = fixtures.base_config(fixtures.vocab_size_of(tok), pad, **shape)
    config["id2label"] = {"0": "background", "1": "promoter"}
    state = fixtures.hf_state_dict(config, "sequence", 2, seed=7)
    if args.shape != "small":
        state = hf_init_scale(state)
    checkpoint = os.path.join(work, package_id)
    fixtures.write_checkpoint(checkpoint, config, state, tok,
                              "safetensors" if args.shape == "small" else "bin")
    del state
    package = os.path.join(args.out, package_id.replace("-untrained", "-bf16-untrained")
                           if bf16 else package_id)
    command = [sys.executable, os.path.join(ROOT, "scripts", "export_hf_bert.py"),
               "--checkpoint", checkpoint, "--task", "promoter", "--out", package,
               "--context-bp", str(context_bp), "--stride-bp", str(stride_bp), "--untrained",
               "--seed", "7", "--precision", args.precision]
    status = subprocess.run(command).returncode
    if status == 0 and args.shape != "small":
        architecture = {
            "shape": args.shape, "checkpoint": checkpoint,
            "layers": config["num_hidden_layers"], "hidden": config["hidden_size"],
            "heads": config["num_attention_heads"], "intermediate": config["intermediate_size"],
            "max_positions": config["max_position_embeddings"],
            "template_tokens": 2,  # [CLS] ... [SEP]
            # The lengths the large-model suite measures, and whether it adds the precision and
            # concurrency rows (the base shape; the large one is there for memory and cold start).
            "bench_lengths": [10000, 100000] if args.shape == "base" and not bf16 else [10000],
            "full_suite": args.shape == "base" and not bf16,
            # The Python eager peer builds its module in this precision.
            "dtype": args.precision,
        }
        with open(os.path.join(package, "bench-architecture.json"), "w",
                  encoding="utf-8") as handle:
            json.dump(architecture, handle, indent=2)
            handle.write("\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
