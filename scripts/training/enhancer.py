"""Enhancer packages: DeepSTARR-style architectures shipped UNTRAINED.

The enhancer task follows DeepSTARR (Drosophila S2 UMI-STARR-seq, developmental and housekeeping
activity per 249 bp). No STARR-seq data is reachable here, and nothing else measures enhancer
activity, so these packages are not trained on anything: their weights are a fixed-seed random
initialisation, their manifests say `"trained": false` and their descriptions and cards say so.
They serve the task's shapes until an operator packages real weights: scripts/package_deepstarr.py
turns a DeepSTARR state_dict into a package the worker serves (tests/unit/worker/
deepstarr_test.cpp checks that path against eager PyTorch over gRPC).

- enhancer-fly-untrained (default): the DeepSTARR network itself (dnaserve_models.deepstarr).
- enhancer-fly-kmer6-untrained: the same convolutional trunk over learned 6-mer embeddings
  (k-mer tokenizer, stride 1, 244 tokens per window).
"""

import json
import os
from typing import Dict, List

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from dnaserve_models.deepstarr import OUTPUT_LABELS, WINDOW_BP, ConvBlock, DeepSTARR
from dnaserve_tools.package_deepstarr import manifest_for
from training import cards, common, nets

DEFAULT_ID = "enhancer-fly-untrained"
KMER_ID = "enhancer-fly-kmer6-untrained"
KMER = 6
SEEDS = {DEFAULT_ID: 3001, KMER_ID: 3002}


class KmerDeepSTARR(nn.Module):
    """6-mer ids [B, 244] -> (dev, hk) [B, 2]: embedding (4,098 x 32), then DeepSTARR's conv
    blocks (k 7/3/5/3, 128/60/60/120 channels, each with max-pool 2: 244 -> 15) and dense
    layers."""

    def __init__(self):
        super().__init__()
        self.embed = nets.KmerEmbedding(KMER, 32)
        self.blocks = nn.ModuleList([ConvBlock(i, o, k) for i, o, k in
                                     [(32, 128, 7), (128, 60, 3), (60, 60, 5), (60, 120, 3)]])
        self.dense1 = nn.Linear(120 * 15, 256)
        self.norm1 = nn.BatchNorm1d(256)
        self.dense2 = nn.Linear(256, 256)
        self.norm2 = nn.BatchNorm1d(256)
        self.out = nn.Linear(256, 2)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        x = F.relu(self.norm1(self.dense1(x.flatten(1))))
        x = F.relu(self.norm2(self.dense2(x)))
        return self.out(x)


UNTRAINED = ("UNTRAINED: random weights (seed {seed}); its dev/hk outputs are noise, not enhancer "
             "activity. No STARR-seq data was available to train it.")


def _description(model_id: str) -> str:
    what = ("DeepSTARR architecture (249 bp windows -> developmental and housekeeping enhancer "
            "activity)" if model_id == DEFAULT_ID else
            "DeepSTARR-style network over 6-mer tokens (249 bp windows -> dev and hk)")
    return (f"{UNTRAINED.format(seed=SEEDS[model_id])} {what}, shipped so the task has its "
            "shapes; operators can package trained DeepSTARR weights with "
            "scripts/package_deepstarr.py.")


def _card(model_id: str, manifest: Dict, parameters: int) -> str:
    arch = ("DeepSTARR (de Almeida et al. 2022) as written in scripts/dnaserve_models/"
            "deepstarr.py: one-hot -> 4 conv blocks (Conv1d k7 246 ch, k3 60, k5 60, k3 120; "
            "BatchNorm, ReLU, max-pool 2) -> dense 256 -> dense 256 -> dev, hk." if model_id ==
            DEFAULT_ID else
            "Overlapping 6-mer embedding (4,098 x 32) -> 4 conv blocks (k7 128 ch, k3 60, k5 60, "
            "k3 120; BatchNorm, ReLU, max-pool 2) -> dense 256 -> dense 256 -> (dev, hk).")
    return cards.card(
        model_id,
        f"**{UNTRAINED.format(seed=SEEDS[model_id])}**\n\n{_description(model_id)}",
        manifest,
        [("parameters", f"{parameters:,}"),
         ("exported with", f"torch {torch.__version__}, torch.jit.script + freeze, float32")],
        [("Architecture", arch),
         ("Data and provenance",
          "None. The task's setting (DeepSTARR) is Drosophila S2 UMI-STARR-seq; no STARR-seq or "
          "other enhancer-activity measurements are reachable from this project (Debian "
          "packages and ../shared/data), and labels were not invented from anything else. The "
          "weights are `torch.manual_seed"
          f"({SEEDS[model_id]})` initialisation; batch-norm statistics are the defaults."),
         ("Held-out evaluation", "None: there is nothing to evaluate an enhancer model against "
                                 "here."),
         ("Metrics", "None (untrained)."),
         ("Known limits",
          "- Outputs are noise with the right shape: do not use them.\n"
          "- To serve a real model: `scripts/package_deepstarr.py --state-dict W.pt --out "
          "MODELS_DIR/<id> --description ... [--is-default]` packages a DeepSTARR state_dict "
          "(its keys and how to port the published Keras weights: "
          "scripts/dnaserve_models/deepstarr.py)."),
         ("Reproduce", "```\nscripts/train-models --only enhancer\n```")])


def train(out_dir: str, seed: int) -> List[str]:
    """Writes the two untrained packages (their own fixed seeds; `seed` is not used: nothing is
    trained)."""
    written = []
    for model_id, factory, tokenizer in (
            (DEFAULT_ID, DeepSTARR, {"type": "char"}),
            (KMER_ID, KmerDeepSTARR, {"type": "kmer", "k": KMER, "stride": 1})):
        torch.manual_seed(SEEDS[model_id])
        model = factory().eval()
        example_ids = np.random.default_rng(0).integers(1, 6, (2, WINDOW_BP)).astype(np.uint8)
        scripted = nets.export(model, (torch.from_numpy(nets.tokenize(tokenizer, example_ids)),))
        manifest = manifest_for(model_id, _description(model_id), trained=False,
                                is_default=model_id == DEFAULT_ID, seed=SEEDS[model_id])
        manifest["tokenizer"] = tokenizer
        package = common.write_package(out_dir, manifest, scripted,
                                       _card(model_id, manifest, nets.parameter_count(model)))
        cards.complete(package, {}, None)  # front matter: untrained, no metrics, no figures
        written.append(model_id)
    return written


NOT_COMPARED = {"forward_ms_one_window_one_thread"}


def evaluate(package_dir: str) -> Dict[str, float]:
    """No metrics (no enhancer data); the forward time only, informative."""
    with open(os.path.join(package_dir, "manifest.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    if manifest.get("trained"):
        raise common.DataError(f"{manifest['id']}: a trained enhancer package, but no enhancer "
                               "data is reachable to evaluate it")
    module = torch.jit.load(os.path.join(package_dir, manifest["weights"])).eval()
    example = torch.from_numpy(nets.tokenize(manifest["tokenizer"],
                                             np.full((1, WINDOW_BP), 1, dtype=np.uint8)))
    return {"forward_ms_one_window_one_thread": nets.time_forward(module, (example,))}
