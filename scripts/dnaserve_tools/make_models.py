#!/usr/bin/env python3
"""Writes the dnaserve model packages: one small, UNTRAINED transformer encoder per task.

Each package is a directory <out>/<model_id>/ holding manifest.json, model.pt (TorchScript) and
MODEL_CARD.md; worker/README.md documents the format. The weights are a fixed-seed random
initialisation, so every run writes the same models. They exist to exercise the serving pipeline
end to end with the real input and output shapes of each task; they predict nothing biological.

Usage (LibTorch for Python lives in the Debian interpreter, not in pyenv's):
    /usr/bin/python3 scripts/make_models.py --out build/models
"""

import argparse
import json
import math
import os
import shutil
import sys
import time
from typing import List, Tuple

import warnings

import torch
import torch.nn.functional as F
from torch import nn

# torch 1.13 warns about TransformerEncoderLayer's unused `batch_first` constant when scripting.
warnings.filterwarnings("ignore", message=".*batch_first.*ScriptModule constants.*")

FORMAT_VERSION = 1
# The shared reference data sits beside the repository (../shared/data from the project root); it
# is read, never copied into the repository.
DEFAULT_DEEPSEA_NAMES = os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "data", "chromatin",
    "deepsea_919_feature_names.tsv"))
DEEPSEA_FEATURES = 919

# Single-nucleotide vocabulary (tokenizer type "char"). Padding added by the worker is N, so PAD
# is reserved and never produced from a sequence.
CHAR_VOCAB_SIZE = 6  # PAD=0 A=1 C=2 G=3 T=4 N=5
# Non-overlapping k-mers (tokenizer type "kmer"): PAD=0, UNK=1 (any k-mer containing N), then the
# 4^k ACGT k-mers in lexicographic order (A<C<G<T), i.e. id = 2 + base-4 value of the k-mer.
SPLICE_K = 6
KMER_VOCAB_SIZE = 2 + 4 ** SPLICE_K
# Byte-level text encoder of the expression model: PAD=0, byte b -> b + 1.
TEXT_VOCAB_SIZE = 257
TEXT_MAX_TOKENS = 256

ANNOTATION_LABELS = [
    "intergenic",
    "exon_plus", "intron_plus", "CDS_plus", "UTR_plus", "TSS_plus", "transcript_end_plus",
    "exon_minus", "intron_minus", "CDS_minus", "UTR_minus", "TSS_minus", "transcript_end_minus",
]
TRANSCRIPT_TYPES = ["mRNA", "lnc_RNA"]


def untrained_sentence(seed: int) -> str:
    return (f"Untrained weights (random initialisation, seed {seed}): outputs are not biological "
            "predictions; for pipeline testing only.")


def sinusoid_table(length: int, dim: int) -> torch.Tensor:
    position = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(position * freq)
    table[:, 1::2] = torch.cos(position * freq)
    return table


def make_encoder(d_model: int, layers: int = 2, heads: int = 4) -> nn.TransformerEncoder:
    layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=2 * d_model, dropout=0.0,
                                       batch_first=True)
    # enable_nested_tensor=False keeps output shapes equal to input shapes (see toolchain notes).
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


class PooledEncoder(nn.Module):
    """Token embedding -> strided convolution (pool) -> positional encoding -> encoder.

    The strided convolution shortens long windows before attention so a 15,000 bp window costs a
    few hundred attention positions; heads that need per-token output upsample afterwards.
    """

    def __init__(self, vocab: int, d_model: int, pool: int, max_positions: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model, padding_idx=0)
        self.pool = nn.Conv1d(d_model, d_model, kernel_size=pool, stride=pool)
        self.register_buffer("positions", sinusoid_table(max_positions, d_model))
        self.encoder = make_encoder(d_model)

    def forward(self, ids: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        tokens = self.embed(ids)                                       # [B, L, d]
        pooled = self.pool(tokens.transpose(1, 2)).transpose(1, 2)     # [B, L/pool, d]
        pooled = pooled + self.positions[: pooled.size(1)]
        return tokens, self.encoder(pooled)


def upsample(hidden: torch.Tensor, length: int) -> torch.Tensor:
    """[B, P, d] -> [B, length, d] by nearest-neighbour repetition."""
    out = F.interpolate(hidden.transpose(1, 2), size=[length], mode="nearest")
    return out.transpose(1, 2)


class PromoterModel(nn.Module):
    """[B, L] nucleotide ids -> [B] promoter probability."""

    def __init__(self):
        super().__init__()
        self.body = PooledEncoder(CHAR_VOCAB_SIZE, 32, pool=8, max_positions=512)
        self.head = nn.Linear(32, 1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        _, hidden = self.body(ids)
        return torch.sigmoid(self.head(hidden.mean(dim=1))).squeeze(-1)


class SpliceModel(nn.Module):
    """[B, T] 6-mer ids -> [B, T, 3] per-token softmax over (neither, acceptor, donor)."""

    def __init__(self):
        super().__init__()
        self.body = PooledEncoder(KMER_VOCAB_SIZE, 32, pool=4, max_positions=1024)
        self.head = nn.Linear(32, 3)
        # Start from the class prior (splice sites are rare): a "neither" bias keeps the random
        # model's site calls sparse at the default threshold, as a real model's would be.
        with torch.no_grad():
            self.head.bias.copy_(torch.tensor([3.0, 0.0, 0.0]))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        tokens, hidden = self.body(ids)
        per_token = upsample(hidden, ids.size(1)) + tokens
        return torch.softmax(self.head(per_token), dim=-1)


class EnhancerModel(nn.Module):
    """[B, 249] nucleotide ids -> [B, 2] (developmental, housekeeping) activity."""

    def __init__(self):
        super().__init__()
        self.body = PooledEncoder(CHAR_VOCAB_SIZE, 32, pool=3, max_positions=128)
        self.head = nn.Linear(32, 2)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        _, hidden = self.body(ids)
        return self.head(hidden.mean(dim=1))


class ChromatinModel(nn.Module):
    """[B, 1000] nucleotide ids -> [B, 919] independent feature probabilities."""

    def __init__(self, features: int):
        super().__init__()
        self.body = PooledEncoder(CHAR_VOCAB_SIZE, 32, pool=8, max_positions=256)
        self.head = nn.Linear(32, features)
        # Chromatin profiles are sparse: per-feature biases from N(-2, 1) leave a few percent of
        # the features above 0.5, as a real model's calls would be, instead of half of them.
        with torch.no_grad():
            self.head.bias.normal_(-2.0, 1.0)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        _, hidden = self.body(ids)
        return torch.sigmoid(self.head(hidden.mean(dim=1)))


class AnnotationModel(nn.Module):
    """[B, L] nucleotide ids -> ([B, L, 13] per-position label probabilities, [B, 2] type)."""

    def __init__(self):
        super().__init__()
        self.body = PooledEncoder(CHAR_VOCAB_SIZE, 32, pool=8, max_positions=512)
        self.positions_head = nn.Linear(32, len(ANNOTATION_LABELS))
        self.type_head = nn.Linear(32, len(TRANSCRIPT_TYPES))

    def forward(self, ids: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        tokens, hidden = self.body(ids)
        per_position = upsample(hidden, ids.size(1)) + tokens
        labels = torch.sigmoid(self.positions_head(per_position))
        transcript_type = torch.softmax(self.type_head(hidden.mean(dim=1)), dim=-1)
        return labels, transcript_type


class ExpressionModel(nn.Module):
    """([B, 9198] nucleotide ids, [B, D] description byte ids) -> [B] log(TPM+1).

    The description tokens attend jointly with the pooled sequence, so different wording changes
    the prediction.
    """

    def __init__(self):
        super().__init__()
        d = 48
        self.seq_embed = nn.Embedding(CHAR_VOCAB_SIZE, d, padding_idx=0)
        self.seq_pool = nn.Conv1d(d, d, kernel_size=32, stride=32)
        self.text_embed = nn.Embedding(TEXT_VOCAB_SIZE, d, padding_idx=0)
        self.segment = nn.Embedding(2, d)
        self.register_buffer("positions", sinusoid_table(1024, d))
        self.encoder = make_encoder(d)
        self.head = nn.Linear(d, 1)

    def forward(self, ids: torch.Tensor, text: torch.Tensor) -> torch.Tensor:
        seq = self.seq_pool(self.seq_embed(ids).transpose(1, 2)).transpose(1, 2)
        seq = seq + self.positions[: seq.size(1)] + self.segment.weight[0]
        txt = self.text_embed(text) + self.positions[: text.size(1)] + self.segment.weight[1]
        hidden_in = torch.cat([seq, txt], dim=1)
        seq_pad = torch.zeros(seq.size(0), seq.size(1), dtype=torch.bool, device=ids.device)
        mask = torch.cat([seq_pad, text == 0], dim=1)
        hidden = self.encoder(hidden_in, src_key_padding_mask=mask)
        hidden = hidden.masked_fill(mask.unsqueeze(-1), 0.0)
        keep = (~mask).sum(dim=1, keepdim=True).clamp(min=1).to(hidden.dtype)
        pooled = hidden.sum(dim=1) / keep
        return F.softplus(self.head(pooled)).squeeze(-1)


def read_deepsea_names(path: str) -> Tuple[List[str], bool]:
    """The 919 DeepSEA names in output order, or placeholders when the file is unavailable."""
    names: List[str] = []
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                fields = line.rstrip("\n").split("\t")
                # Data rows are "<index>\t<cell>|<assay>|<treatment>"; other rows are headers.
                if len(fields) == 2 and fields[1].count("|") == 2:
                    names.append(fields[1])
        if len(names) == DEEPSEA_FEATURES:
            return names, True
        print(f"warning: {path} holds {len(names)} feature names, expected {DEEPSEA_FEATURES}; "
              "using placeholder names", file=sys.stderr)
    else:
        print(f"warning: DeepSEA feature names not found at {path!r}; using placeholder names "
              "'feature_<i>|unknown|None'", file=sys.stderr)
    return [f"feature_{i}|unknown|None" for i in range(DEEPSEA_FEATURES)], False


def spec_list(names_path: str):
    """One entry per package: manifest fields, model factory, example inputs, card notes."""
    chromatin_names, real_names = read_deepsea_names(names_path)
    names_note = ("Output labels are the 919 DeepSEA feature names (Zhou & Troyanskaya 2015) in "
                  "model output order." if real_names else
                  "The DeepSEA feature-name file was not available when this package was "
                  "generated, so the output labels are placeholders 'feature_<i>|unknown|None' "
                  "and every feature falls in the category Other.")
    char = {"type": "char"}
    return [
        dict(id="promoter-human-tiny", task="promoter", seed=1001, factory=PromoterModel,
             summary="Tiny transformer promoter classifier: promoter probability per 2,000 bp "
                     "window, windows every 1,000 bp.",
             tokenizer=char, context=2000, trained_window=None, stride=1000,
             labels=["promoter"], inputs=lambda: (torch.randint(1, 6, (2, 2000)),),
             shapes="input ids [B, 2000] int64 -> [B] float32 probability (sigmoid)",
             arch="embedding(6, 32) -> conv1d(k=8, stride=8) -> 2-layer transformer encoder "
                  "(d_model 32, 4 heads) -> mean pool -> linear -> sigmoid",
             notes=""),
        dict(id="splice-human-tiny", task="splice", seed=1002, factory=SpliceModel,
             summary="Tiny transformer splice-site tagger: (neither, acceptor, donor) scores per "
                     "non-overlapping 6-mer token over 15,000 bp windows.",
             tokenizer={"type": "kmer", "k": SPLICE_K, "stride": SPLICE_K}, context=15000,
             trained_window=None, stride=15000, labels=["neither", "acceptor", "donor"],
             inputs=lambda: (torch.randint(0, KMER_VOCAB_SIZE, (1, 2500)),),
             shapes="input ids [B, 2500] int64 (6-mer tokens) -> [B, 2500, 3] float32 softmax",
             arch="embedding(4098, 32) -> conv1d(k=4, stride=4) -> 2-layer transformer encoder "
                  "(d_model 32, 4 heads) -> nearest upsampling to tokens + token embedding -> "
                  "linear -> softmax (the output bias starts at the class prior: +3 on neither)",
             notes="Sites are reported as 6 bp token spans, not base-resolution junctions."),
        dict(id="enhancer-tiny", task="enhancer", seed=1003, factory=EnhancerModel,
             summary="Tiny transformer enhancer-activity regressor: developmental and "
                     "housekeeping scores per 249 bp window.",
             tokenizer=char, context=249, trained_window=None, stride=249, labels=["dev", "hk"],
             inputs=lambda: (torch.randint(1, 6, (4, 249)),),
             shapes="input ids [B, 249] int64 -> [B, 2] float32 (dev, hk)",
             arch="embedding(6, 32) -> conv1d(k=3, stride=3) -> 2-layer transformer encoder "
                  "(d_model 32, 4 heads) -> mean pool -> linear",
             notes="The DeepSTARR setting this task follows is Drosophila S2 STARR-seq; these "
                   "weights saw no data at all."),
        dict(id="chromatin-human-tiny", task="chromatin", seed=1004,
             factory=lambda: ChromatinModel(DEEPSEA_FEATURES),
             summary="Tiny transformer chromatin-profile classifier: 919 DeepSEA feature "
                     "probabilities per 1,000 bp window, windows every 200 bp.",
             tokenizer=char, context=1000, trained_window=None, stride=200,
             labels=chromatin_names, inputs=lambda: (torch.randint(1, 6, (2, 1000)),),
             shapes="input ids [B, 1000] int64 -> [B, 919] float32 probabilities (sigmoid)",
             arch="embedding(6, 32) -> conv1d(k=8, stride=8) -> 2-layer transformer encoder "
                  "(d_model 32, 4 heads) -> mean pool -> linear -> sigmoid (output biases drawn "
                  "from N(-2, 1): most features start off)",
             notes=names_note),
        dict(id="annotation-human-tiny", task="annotation", seed=1005, factory=AnnotationModel,
             summary="Tiny transformer gene annotator: per-position labels on both strands and a "
                     "transcript type per 2,000 bp window.",
             tokenizer=char, context=2000, trained_window=None, stride=2000,
             labels=ANNOTATION_LABELS, inputs=lambda: (torch.randint(1, 6, (2, 2000)),),
             shapes="input ids [B, 2000] int64 -> ([B, 2000, 13] float32 per-position label "
                    "probabilities (sigmoid), [B, 2] float32 transcript-type softmax "
                    "(mRNA, lnc_RNA))",
             arch="embedding(6, 32) -> conv1d(k=8, stride=8) -> 2-layer transformer encoder "
                  "(d_model 32, 4 heads) -> nearest upsampling + token embedding -> linear -> "
                  "sigmoid; mean pool -> linear -> softmax for the transcript type",
             notes="Per-position labels: " + ", ".join(ANNOTATION_LABELS) + "."),
        dict(id="expression-human-tiny", task="expression", seed=1006, factory=ExpressionModel,
             summary="Tiny transformer expression regressor: log(TPM+1) of one 9,198 bp "
                     "TSS-centred window, conditioned on a free-text description.",
             tokenizer=char, context=9198, trained_window=9198, stride=None,
             labels=["expression_log_tpm"],
             inputs=lambda: (torch.randint(1, 6, (1, 9198)),
                             torch.tensor([list(b"liver tissue, adult")]) + 1),
             shapes="input ids [1, 9198] int64, description byte ids [1, D] int64 (byte + 1, "
                    f"D <= {TEXT_MAX_TOKENS}) -> [1] float32 log(TPM+1) (softplus)",
             arch="nucleotide embedding(6, 48) -> conv1d(k=32, stride=32); byte embedding(257, "
                  "48); segment + positional embeddings; 2-layer transformer encoder over the "
                  "concatenation (d_model 48, 4 heads) -> masked mean pool -> linear -> softplus",
             notes="The description is model input: different wording changes the output. The "
                   "manifest carries the trained expression-human package's 56 Roadmap "
                   "contexts (`description_contexts`), so the worker reports which one a "
                   "description matches; this untrained model itself ignores them.",
             text_tokenizer={"type": "bytes", "max_tokens": TEXT_MAX_TOKENS},
             description_contexts_from=os.path.join(
                 os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                 "worker", "packages", "expression-human", "manifest.json")),
    ]


def manifest_for(spec) -> dict:
    description = spec["summary"] + " " + untrained_sentence(spec["seed"])
    manifest = {
        "format_version": FORMAT_VERSION,
        "id": spec["id"],
        "task": spec["task"],
        "description": description,
        "is_default": True,
        "tokenizer": spec["tokenizer"],
        "context_window_bp": spec["context"],
        "trained_window_bp": spec["trained_window"],
        "output_labels": spec["labels"],
        "trained": False,
        "seed": spec["seed"],
        "weights": "model.pt",
        "model_card": "MODEL_CARD.md",
    }
    if spec["stride"] is not None:
        manifest["stride_bp"] = spec["stride"]
    if spec["task"] == "annotation":
        manifest["transcript_types"] = TRANSCRIPT_TYPES
    if "text_tokenizer" in spec:
        manifest["text_tokenizer"] = spec["text_tokenizer"]
    if "description_contexts_from" in spec:
        # The committed trained package's contexts (ids, names, wordings), copied as they are.
        with open(spec["description_contexts_from"], encoding="utf-8") as handle:
            manifest["description_contexts"] = json.load(handle)["description_contexts"]
    return manifest


def model_card_for(spec, manifest: dict, parameters: int) -> str:
    labels = manifest["output_labels"]
    shown = ", ".join(labels) if len(labels) <= 16 else (
        ", ".join(labels[:5]) + f", ... ({len(labels)} labels)")
    lines = [
        f"# {spec['id']}",
        "",
        f"**{untrained_sentence(spec['seed'])}**",
        "",
        spec["summary"],
        "",
        "| field | value |",
        "|---|---|",
        f"| task | {spec['task']} |",
        f"| tokenizer | {json.dumps(spec['tokenizer'])} |",
        f"| context_window_bp | {spec['context']} |",
        f"| trained_window_bp | {json.dumps(spec['trained_window'])} |",
        f"| stride_bp | {json.dumps(spec['stride'])} |",
        f"| parameters | {parameters:,} |",
        f"| seed | {spec['seed']} |",
        f"| trained | false |",
        f"| exported with | torch {torch.__version__}, torch.jit.script + freeze |",
        "",
        "## Architecture",
        "",
        spec["arch"] + ".",
        "",
        "## Inputs and outputs",
        "",
        spec["shapes"] + ".",
        "",
        f"Output labels: {shown}.",
        "",
        "## Training data and evaluation",
        "",
        "None. The weights are the random initialisation drawn with `torch.manual_seed("
        f"{spec['seed']})`; no data was seen and no evaluation was run. Any score this model "
        "produces is noise with the right shape.",
        "",
        "## Intended use",
        "",
        "Testing the dnaserve serving pipeline (tokenisation, windowing, stitching, output "
        "formats, cold and warm starts). Do not use its outputs for any biological conclusion.",
        "",
    ]
    if spec["notes"]:
        lines += ["## Notes", "", spec["notes"], ""]
    lines += [
        "## Reproduce",
        "",
        "```",
        "/usr/bin/python3 scripts/make_models.py --out <models_dir>",
        "```",
        "",
    ]
    return "\n".join(lines)


def export(spec, out_dir: str) -> float:
    started = time.monotonic()
    torch.manual_seed(spec["seed"])
    model = spec["factory"]().eval()
    parameters = sum(p.numel() for p in model.parameters())
    inputs = spec["inputs"]()
    with torch.no_grad():
        eager = model(*inputs)
        scripted = torch.jit.freeze(torch.jit.script(model))
        exported = scripted(*inputs)
    eager_list = list(eager) if isinstance(eager, tuple) else [eager]
    exported_list = list(exported) if isinstance(exported, tuple) else [exported]
    for a, b in zip(eager_list, exported_list):
        if a.shape != b.shape or not torch.allclose(a, b, atol=1e-5):
            raise RuntimeError(f"{spec['id']}: TorchScript output differs from eager")

    manifest = manifest_for(spec)
    final_dir = os.path.join(out_dir, spec["id"])
    staging = os.path.join(out_dir, f".{spec['id']}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    scripted.save(os.path.join(staging, "model.pt"))
    with open(os.path.join(staging, "manifest.json"), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=2)
        handle.write("\n")
    with open(os.path.join(staging, "MODEL_CARD.md"), "w", encoding="utf-8") as handle:
        handle.write(model_card_for(spec, manifest, parameters))
    # Swap in the finished package so a reader never sees a half-written one.
    shutil.rmtree(final_dir, ignore_errors=True)
    os.rename(staging, final_dir)
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="models directory to write packages into")
    parser.add_argument("--deepsea-names", default=DEFAULT_DEEPSEA_NAMES,
                        help="TSV of the 919 DeepSEA feature names (index<TAB>cell|assay|treatment)")
    args = parser.parse_args()

    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    for spec in spec_list(args.deepsea_names):
        seconds = export(spec, args.out)
        print(f"wrote {os.path.join(args.out, spec['id'])} ({seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
