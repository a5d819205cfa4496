"""expression-human: ln(TPM + 1) of a chr20 gene's 9,198 bp TSS window in a sample described in
free text, trained on Roadmap Epigenomics RNA-seq (56 epigenomes).

    train(out_dir, seed) -> ["expression-human"]
    evaluate(package_dir) -> {metric: value}

Data, gene placement, targets and descriptions: `expression_data`. Genes whose window touches
HELD_OUT (the last 10 Mb of chr20) are evaluation-only; training genes have their whole window in
TRAIN. Every metric is computed on the held-out genes from the package alone (TorchScript module
plus the manifest's text tokenizer), with the fixed evaluation wording of each epigenome.

Run with Debian's interpreter: /usr/bin/python3 -m training.expression {train,evaluate} ...
(from scripts/).
"""

import json
import os
import sys
import time
import warnings
from typing import Dict, List, Sequence

import numpy as np

# Before torch loads (it is imported lazily): OpenMP threads that sleep while they wait. On a
# machine shared with other work, spinning threads made 2-thread training steps 4x slower.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from training import cards, common, plots  # noqa: E402
from training.scripting import (Optimisation, card_head, freeze_checked,  # noqa: E402
                                module_cli)
from training import expression_data as data  # noqa: E402

MODEL_ID = "expression-human"
TEXT_MAX_TOKENS = 256
DEFAULT_SEED = 2026
STEPS = 800
GENES_PER_STEP = 32
CONTEXTS_PER_GENE = 8
WEIGHT_DECAY = 0.05
SHIFTS = (-40, -20, 0, 20, 40)  # bp; the TSS stays within 40 bp of the window centre
LABEL = "expression_log_tpm"


# --- metrics -------------------------------------------------------------------------------

def ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties averaged."""
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    out = np.empty(len(values), dtype=np.float64)
    start = 0
    while start < len(values):
        stop = start + 1
        while stop < len(values) and sorted_values[stop] == sorted_values[start]:
            stop += 1
        out[order[start:stop]] = (start + stop + 1) / 2.0
        start = stop
    return out


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation; NaN when either side is constant."""
    ra, rb = ranks(np.asarray(a, dtype=np.float64)), ranks(np.asarray(b, dtype=np.float64))
    ra -= ra.mean()
    rb -= rb.mean()
    denominator = np.sqrt((ra * ra).sum() * (rb * rb).sum())
    return float((ra * rb).sum() / denominator) if denominator > 0 else float("nan")


def correlation_report(prefix: str, predicted: np.ndarray, truth: np.ndarray) -> Dict[str, float]:
    """[genes, contexts] predictions against truth: Spearman over all pairs, within each
    context (across genes; median and mean over contexts) and within each gene (across
    contexts; median)."""
    within_context = [spearman(predicted[:, j], truth[:, j]) for j in range(truth.shape[1])]
    within_gene = [spearman(predicted[i], truth[i]) for i in range(truth.shape[0])]
    within_context = [x for x in within_context if np.isfinite(x)]
    within_gene = [x for x in within_gene if np.isfinite(x)]
    nan = float("nan")
    return {
        f"{prefix}spearman_all_pairs": spearman(predicted.ravel(), truth.ravel()),
        f"{prefix}spearman_within_tissue_median":
            float(np.median(within_context)) if within_context else nan,
        f"{prefix}spearman_within_tissue_mean":
            float(np.mean(within_context)) if within_context else nan,
        f"{prefix}spearman_within_gene_median":
            float(np.median(within_gene)) if within_gene else nan,
        f"{prefix}mse": float(np.mean((predicted - truth) ** 2)),
    }


# --- training ------------------------------------------------------------------------------

def window_ids(chr20: str, genes: Sequence[data.Gene], shift: int = 0) -> np.ndarray:
    return np.stack([np.array(common.char_ids(data.window_sequence(chr20, g, shift)),
                              dtype=np.int64) for g in genes])


def pad_texts(rows: List[List[int]]) -> np.ndarray:
    width = max(len(r) for r in rows)
    out = np.zeros((len(rows), width), dtype=np.int64)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


def fit(dataset: data.Dataset, gene_rows: Sequence[int], seed: int, steps: int = STEPS,
        log=print, every=None):
    """Trains an ExpressionNet on the given genes (all epigenomes); returns it in eval mode.
    `every(step, model)`, when given, is called every 200 steps (in eval mode; for tuning)."""
    import torch
    import torch.nn.functional as F
    from training.expression_net import ExpressionNet

    rng = common.seeded(seed)
    np_rng = np.random.default_rng(seed)
    chr20 = common.chr20()
    genes = [dataset.genes[i] for i in gene_rows]
    windows = {s: window_ids(chr20, genes, s) for s in SHIFTS}
    targets = dataset.targets[list(gene_rows)]
    wordings = [[data.text_ids(d, TEXT_MAX_TOKENS) for d in data.training_descriptions(e)]
                for e in dataset.epigenomes]
    model = ExpressionNet()
    optimisation = Optimisation(model, steps, WEIGHT_DECAY, "expression", log, 200)
    model.train()
    for step in range(steps):
        rows = np_rng.choice(len(genes), size=GENES_PER_STEP, replace=False)
        shift = SHIFTS[rng.randrange(len(SHIFTS))]
        contexts = np.stack([np_rng.choice(len(dataset.epigenomes), size=CONTEXTS_PER_GENE,
                                           replace=False) for _ in rows])
        texts = pad_texts([wordings[c][rng.randrange(len(wordings[c]))]
                           for c in contexts.ravel()])
        y = torch.from_numpy(targets[rows[:, None], contexts].ravel())
        s = model.sequence(torch.from_numpy(windows[shift][rows]))
        t = model.text(torch.from_numpy(texts))
        predicted = F.softplus(model.combine(s.repeat_interleave(CONTEXTS_PER_GENE, dim=0), t))
        if optimisation.update(step, F.mse_loss(predicted, y)) and every is not None and step:
            every(step, model.eval())
            model.train()
    return model.eval()


def export(model):
    import torch
    warnings.filterwarnings("ignore", message=".*TorchScript.*")
    example = (torch.randint(1, 6, (1, data.WINDOW_BP)),
               torch.tensor([data.text_ids("Liver, liver", TEXT_MAX_TOKENS)]))
    return freeze_checked(model, example, MODEL_ID)


def manifest(seed: int, metrics: Dict[str, float], genes: int) -> Dict:
    return {
        "format_version": common.FORMAT_VERSION,
        "id": MODEL_ID,
        "task": "expression",
        "description": (
            "Expression regressor trained on Roadmap Epigenomics RNA-seq (56 epigenomes, "
            f"{genes} chr20 genes): ln(TPM+1) of one 9,198 bp TSS-centred window, conditioned on "
            "a free-text description of the sample (byte-level text encoder). On held-out chr20 "
            f"genes Spearman {metrics['model_spearman_all_pairs']:.2f} over gene-sample pairs, "
            f"{metrics['model_spearman_within_tissue_median']:.2f} across genes within a sample. "
            "Small training set: a rough, chr20-only estimate."),
        "is_default": True,
        "tokenizer": {"type": "char"},
        "context_window_bp": data.WINDOW_BP,
        "trained_window_bp": data.WINDOW_BP,
        "output_labels": [LABEL],
        "trained": True,
        "seed": seed,
        "weights": "model.pt",
        "model_card": "MODEL_CARD.md",
        "text_tokenizer": {"type": "bytes", "max_tokens": TEXT_MAX_TOKENS},
    }


def train(out_dir: str, seed: int = DEFAULT_SEED, log=print) -> List[str]:
    import torch
    torch.set_num_threads(int(os.environ.get("DNASERVE_TRAIN_THREADS", "2")))
    started = time.monotonic()
    dataset = data.load()
    train_rows, held_rows = dataset.split()
    log(f"expression: {len(dataset.genes)} chr20 genes x {len(dataset.epigenomes)} epigenomes; "
        f"{len(train_rows)} train, {len(held_rows)} held out")
    scripted = export(fit(dataset, train_rows, seed, log=log))
    seconds = time.monotonic() - started
    with plots.capture() as captured:
        metrics = evaluate_module(scripted, TEXT_MAX_TOKENS, dataset)
    final = manifest(seed, metrics, len(train_rows))
    card = model_card(final, metrics, dataset, train_rows, held_rows, seconds)
    written = common.write_package(out_dir, final, scripted, card)
    cards.complete(written, metrics, captured, NOT_COMPARED)
    log(f"expression: wrote {os.path.join(out_dir, MODEL_ID)} ({seconds:.0f} s training)")
    return [MODEL_ID]


# --- evaluation ----------------------------------------------------------------------------

def predict_all(module, max_tokens: int, windows: np.ndarray,
                descriptions: Sequence[str]) -> np.ndarray:
    """[genes, descriptions] predictions, one description at a time over all windows (what the
    worker computes for each (window, description) request; batch rows are independent)."""
    import torch
    out = np.zeros((len(windows), len(descriptions)), dtype=np.float32)
    ids = torch.from_numpy(windows)
    with torch.no_grad():
        for j, d in enumerate(descriptions):
            text = torch.tensor([data.text_ids(d, max_tokens)] * len(windows))
            out[:, j] = module(ids, text).numpy()
    return out


def evaluate_module(module, max_tokens: int, dataset: data.Dataset = None) -> Dict[str, float]:
    dataset = dataset or data.load()
    train_rows, held_rows = dataset.split()
    truth = dataset.targets[held_rows]
    windows = window_ids(common.chr20(), [dataset.genes[i] for i in held_rows])
    metrics: Dict[str, float] = {"held_out_genes": float(len(held_rows)),
                                 "train_genes": float(len(train_rows)),
                                 "epigenomes": float(len(dataset.epigenomes))}
    canonical = predict_all(module, max_tokens, windows,
                            [data.canonical_description(e) for e in dataset.epigenomes])
    metrics.update(correlation_report("model_", canonical, truth))
    unseen = predict_all(module, max_tokens, windows,
                         [data.unseen_description(e) for e in dataset.epigenomes])
    metrics.update(correlation_report("model_unseen_wording_", unseen, truth))
    # Per-tissue mean: each sample's mean over the training genes (no held-out data used).
    tissue_mean = np.broadcast_to(dataset.targets[train_rows].mean(axis=0), truth.shape)
    metrics.update(correlation_report("baseline_tissue_mean_", tissue_mean, truth))
    plots.offer_expression(canonical, truth, tissue_mean)
    # Per-gene mean (an oracle): the gene's own mean over the other 55 samples, i.e. it knows
    # each held-out gene's measured expression elsewhere, which the model never sees.
    # Within one gene this leave-one-out mean is a falling function of the left-out value (its
    # within-gene Spearman is -1 by construction), so that entry is left out.
    n = truth.shape[1]
    gene_mean = (truth.sum(axis=1, keepdims=True) - truth) / (n - 1)
    oracle = correlation_report("baseline_gene_mean_oracle_", gene_mean, truth)
    del oracle["baseline_gene_mean_oracle_spearman_within_gene_median"]
    metrics.update(oracle)
    # How much the wording moves a prediction: mean |canonical - unseen| over all pairs.
    metrics["wording_mean_abs_change"] = float(np.mean(np.abs(canonical - unseen)))
    metrics["forward_ms_one_window_one_thread"] = forward_ms(module, windows[:1], max_tokens)
    # Undefined correlations (a constant prediction) are left out rather than reported as NaN.
    return {name: value for name, value in metrics.items() if np.isfinite(value)}


def evaluate(package_dir: str) -> Dict[str, float]:
    import torch
    with open(os.path.join(package_dir, "manifest.json"), encoding="utf-8") as handle:
        manifest_json = json.load(handle)
    module = torch.jit.load(os.path.join(package_dir, manifest_json["weights"]))
    module.eval()
    return evaluate_module(module, manifest_json["text_tokenizer"]["max_tokens"])


def forward_ms(module, window: np.ndarray, max_tokens: int) -> float:
    """CPU milliseconds of one forward pass (one window, one description, one thread)."""
    import torch
    from training import nets
    text = torch.tensor([data.text_ids("Liver, liver", max_tokens)])
    return nets.time_forward(module, (torch.from_numpy(window), text))


# Informative, machine-dependent: printed by scripts/evaluate-models, not compared with the card.
NOT_COMPARED = {"forward_ms_one_window_one_thread"}


# --- model card ----------------------------------------------------------------------------

def metrics_table(metrics: Dict[str, float]) -> List[str]:
    """The card's metrics in training/cards.py's format (scripts/evaluate-models compares them)."""
    return cards.metrics_table({k: metrics[k] for k in sorted(metrics) if k not in NOT_COMPARED},
                               {}).split("\n")


def model_card(manifest_json: Dict, metrics: Dict[str, float], dataset: data.Dataset,
               train_rows: Sequence[int], held_rows: Sequence[int], seconds: float) -> str:
    symbol = sum(1 for g in dataset.genes if g.how == "symbol")
    lines = card_head(MODEL_ID, manifest_json["description"], "expression") + [
        f"| inputs | char ids [B, {data.WINDOW_BP}] (sense strand, TSS at index "
        f"{data.HALF_WINDOW}); description byte ids [B, D] (byte + 1, D <= {TEXT_MAX_TOKENS}) |",
        "| output | [B] ln(TPM + 1) (softplus, so >= 0) |",
        f"| seed | {manifest_json['seed']} |",
        f"| training time | {seconds:.0f} s ({os.environ.get('DNASERVE_TRAIN_THREADS', '2')} "
        "thread(s)) |",
        "| forward, one window, one thread | "
        f"{metrics.get('forward_ms_one_window_one_thread', float('nan')):.1f} ms CPU (TorchScript, "
        "Python) |",
        f"| code revision | {common.git_revision()} |",
        "",
        "## Data and provenance",
        "",
        "- Expression: Roadmap Epigenomics consortium RNA-seq, `roadmap_57epigenomes.RPKM.pc.gz` "
        "(RPKM of 19,795 protein-coding genes x 57 columns); the 56 epigenomes with a row in "
        "`roadmap_epigenome_summary.tsv` are used (E000 has none and no description, so it is "
        "left out).",
        "- Target: ln(TPM + 1), TPM = RPKM / (column sum of RPKM over all 19,795 genes) x 10^6 "
        "(within one sample RPKM and TPM differ only by that factor).",
        f"- Genes: {len(dataset.genes)} chr20 genes placed through APPRIS principal isoforms -> "
        f"Ensembl-to-RefSeq one-to-one table -> hg19 refGene ({symbol} by APPRIS symbol when "
        "no isoform maps); TSS = 5' end of the chosen NM_ transcript.",
        "- Sequence: GRCh37 chr20 from Debian `vt-examples`; window = 9,198 bp of the sense "
        "strand, TSS base at index 4,599 (the worker's and the find-genes workflow's window).",
        "- Descriptions: wordings built from each epigenome's standardized name, EDACC name, "
        "anatomy, sample type and donor sex (e.g. `Liver`, `RNA-seq of Liver`, "
        "`liver tissue: Liver`, `Adult Liver`); one is drawn at random per training example.",
        "",
        "## Held-out region and split",
        "",
        f"Held out: genes whose window touches chr20:{common.HELD_OUT[0]:,}-"
        f"{common.HELD_OUT[1]:,} (the last 10 Mb; `HELD_OUT` in scripts/training/common.py): "
        f"{len(held_rows)} genes, evaluation only. Training: the {len(train_rows)} genes whose "
        "whole window lies before it. Nothing was tuned on the held-out genes.",
        "",
        "## Metrics (held-out genes x 56 epigenomes)",
        "",
        "Descriptions in evaluation: `<standardized name>, <anatomy>` (a training wording); "
        "`model_unseen_wording_*` uses `Sample from <anatomy>; epigenome <name>`, a wording no "
        "training example had. Spearman `all_pairs` ranks every (gene, sample) pair together; "
        "`within_tissue` ranks genes inside one sample (median/mean over the 56); "
        "`within_gene` ranks samples inside one gene (median over genes). Baselines: "
        "`baseline_tissue_mean_` predicts each sample's mean over the training genes (the same "
        "for every gene, so its within-tissue correlation is undefined and left out); "
        "`baseline_gene_mean_oracle_` predicts each held-out gene's own mean over its other 55 "
        "samples: it uses measured expression of the held-out gene, which the model never has, "
        "so it is a ceiling for the gene-level part rather than a competitor (its within-gene "
        "correlation is -1 by construction and left out).",
        "",
    ]
    lines += metrics_table(metrics)
    lines += [
        "",
        "## Known limits",
        "",
        f"- {len(train_rows)} training genes from one chromosome: the sequence encoder learns "
        "coarse promoter features (CpG content and the like); it cannot know enhancers beyond "
        "+-4.6 kb, mRNA stability, or anything about a gene's function.",
        "- The description encoder knows only the 56 Roadmap samples' vocabulary. An unseen "
        "tissue name maps to whatever training wording shares its bytes; there is no "
        "understanding of biology in it. Different wording does change the output (see "
        "`wording_mean_abs_change`), and near-synonyms of a training sample give similar output.",
        "- Protein-coding genes only; chr20 only; RPKM from the Roadmap uniform pipeline.",
        "",
        "## Reproduce",
        "",
        "```",
        f"scripts/train-models --only expression --seed {manifest_json['seed']}   # or: cd "
        "scripts && /usr/bin/python3 -m training.expression train --out DIR",
        "scripts/evaluate-models --only expression",
        "```",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(module_cli(__doc__, MODEL_ID, train, evaluate, DEFAULT_SEED))
