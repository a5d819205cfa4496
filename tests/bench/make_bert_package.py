#!/usr/bin/env python3
"""Makes the BPE rows of dnaserve-bench: a random BERT checkpoint in the Hugging Face layout
(promoter head, BPE tokenizer.json), exported with scripts/export_hf_bert.py.

The checkpoint is built with the helpers of tests/unit/worker/hf_export_check.py; its size is
closer to a small real model than the test's (hidden 64, 2 layers, 4 heads, 512 positions).
Random weights: the package says so. Usage:
    /usr/bin/python3 tests/bench/make_bert_package.py --out MODELS_DIR [--work DIR]
"""

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "worker"))

import hf_export_check as fixtures  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="models dir to write the package into")
    parser.add_argument("--work", help="where the checkpoint goes (default: <out>/.checkpoints)")
    args = parser.parse_args()
    work = args.work or os.path.join(args.out, ".checkpoints")
    tok, _ = fixtures.tokenizer_source()
    pad = fixtures.special_id(tok, "[PAD]")
    config = fixtures.base_config(fixtures.vocab_size_of(tok), pad, hidden_size=64,
                                  num_attention_heads=4, intermediate_size=256,
                                  _name_or_path="dnaserve-bench/random-bert-64")
    config["id2label"] = {"0": "background", "1": "promoter"}
    state = fixtures.hf_state_dict(config, "sequence", 2, seed=7)
    checkpoint = os.path.join(work, "promoter-bert-bench")
    fixtures.write_checkpoint(checkpoint, config, state, tok, "safetensors")
    package = os.path.join(args.out, "promoter-bert-bench")
    # The project's chr20 BPE vocabulary cuts random sequence into ~4.3 bp tokens, so 1,800 bp
    # windows are ~420 tokens, safely under the 510 that 512 positions leave beside [CLS]/[SEP].
    command = [sys.executable, os.path.join(ROOT, "scripts", "export_hf_bert.py"),
               "--checkpoint", checkpoint, "--task", "promoter", "--out", package,
               "--context-bp", "1800", "--stride-bp", "900", "--untrained", "--seed", "7"]
    return subprocess.run(command).returncode


if __name__ == "__main__":
    sys.exit(main())
