"""Chromatin models: chromatin-human (default, char) and chromatin-human-kmer6.

Outputs: the 919 DeepSEA features in published order (`../shared/data/chromatin/
deepsea_919_feature_names.tsv`). Only features with labels here are learned: the ENCODE-DREAM
conservative TF ChIP-seq peaks on chr20 (`encode_dream_tf_peaks_hg19_chr20.bed.gz`, 109 (cell,
TF) pairs). Each pair is mapped onto the DeepSEA features of the same cell line and factor
(ENCODE names differ from HGNC symbols: MYC = c-Myc, EP300 = p300, REST = NRSF, ...; every
treatment of that cell and factor); one learned output per pair feeds all of its features.
Features without a pair (all DNase and histone marks, most TFs) are outputs of the module that
are exactly 0.0, so no threshold (the worker reports features strictly above it) ever reports
them.

Labels follow DeepSEA: a 1,000 bp window is positive for a pair when more than half of its
central 200 bp bin lies in one of the pair's peaks. Windows step 200 bp. Fit on FIT (all windows
with a positive label plus as many drawn from the rest, fresh each epoch), epoch chosen on
VALIDATION (median AUROC), evaluated on every window of HELD_OUT with at most 5% N.
"""

import gzip
import json
import os
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from training import cards, common, metrics, nets, plots

TASK = "chromatin"
CONTEXT, STRIDE, BIN = 1000, 200, 200
MAX_N_FRACTION = 0.05
NAMES_FILE = os.path.join(common.SHARED_DATA, "chromatin", "deepsea_919_feature_names.tsv")
PEAKS_FILE = os.path.join(common.SHARED_DATA, "chromatin", "encode_dream_tf_peaks_hg19_chr20.bed.gz")
DEEPSEA_FEATURES = 919

# ENCODE-DREAM cell names -> DeepSEA cell names (where they differ).
CELL_ALIASES = {"HCT116": "HCT-116", "IMR-90": "IMR90", "Panc1": "PANC-1"}
# HGNC symbols of ENCODE-DREAM -> ENCODE antibody target names used by DeepSEA (where they
# differ). Epitope-tagged constructs (HA-E2F1, eGFP-JunD) are different experiments: not mapped.
TF_ALIASES = {"MYC": "c-Myc", "MAX": "Max", "EP300": "p300", "SPI1": "PU.1", "REST": "NRSF",
              "ZNF143": "Znf143", "MAFK": "MafK", "JUND": "JunD", "GABPA": "GABP",
              "EGR1": "Egr-1"}


def deepsea_names(path: str = NAMES_FILE) -> List[str]:
    names = []
    with open(common.require_shared(path), encoding="utf-8") as handle:
        for line in handle:
            fields = line.rstrip("\n").split("\t")
            if len(fields) == 2 and fields[1].count("|") == 2:
                names.append(fields[1])
    if len(names) != DEEPSEA_FEATURES:
        raise common.DataError(f"{path}: {len(names)} feature names, expected {DEEPSEA_FEATURES}")
    return names


def read_peaks(path: str = PEAKS_FILE) -> Dict[str, np.ndarray]:
    """`CELL|TF` -> int64 array [n, 2] of peak (start, end), chr20 only."""
    by_pair: Dict[str, List[Tuple[int, int]]] = {}
    with gzip.open(common.require_shared(path), "rt", encoding="ascii") as handle:
        for line in handle:
            cols = line.split("\t")
            if len(cols) < 4 or cols[0] != "chr20":
                continue
            by_pair.setdefault(cols[3], []).append((int(cols[1]), int(cols[2])))
    return {k: np.array(sorted(v), dtype=np.int64) for k, v in by_pair.items()}


@dataclass
class Mapping:
    pairs: List[str]              # learned outputs, `CELL|TF` of ENCODE-DREAM
    feature_pair: List[int]       # per DeepSEA feature: index into pairs, or -1 (not learned)
    unmapped_pairs: List[str]     # pairs with labels but no DeepSEA feature


def map_pairs(names: List[str], pairs: List[str]) -> Mapping:
    feature_pair = [-1] * len(names)
    learned, unmapped = [], []
    for pair in sorted(pairs):
        cell, tf = pair.split("|")
        want_cell, want_tf = CELL_ALIASES.get(cell, cell), TF_ALIASES.get(tf, tf)
        hits = [i for i, n in enumerate(names)
                if n.split("|")[0] == want_cell and n.split("|")[1] == want_tf]
        if not hits:
            unmapped.append(pair)
            continue
        for i in hits:
            feature_pair[i] = len(learned)
        learned.append(pair)
    return Mapping(learned, feature_pair, unmapped)


def bin_labels(peaks: Dict[str, np.ndarray], pairs: List[str], length: int) -> np.ndarray:
    """[length // BIN, len(pairs)] uint8: bin j ([j*BIN, (j+1)*BIN)) is positive for a pair when
    more than half of it lies in one of the pair's peaks."""
    bins = length // BIN
    out = np.zeros((bins, len(pairs)), dtype=np.uint8)
    for p, pair in enumerate(pairs):
        for a, b in peaks[pair]:
            for j in range(a // BIN, min((b - 1) // BIN, bins - 1) + 1):
                overlap = min(b, (j + 1) * BIN) - max(a, j * BIN)
                if 2 * overlap > BIN:
                    out[j, p] = 1
    return out


# ---------------------------------------------------------------------------------------------
# The network


K = 5
VOCAB = 4 ** K + 2  # builtin k-mer ids: PAD 0, UNK 1, then 2 + the k-mer in base 4
# Char id -> id of the complementary base (PAD and N stay).
CHAR_COMPLEMENT = [0, 4, 3, 2, 1, 5]


def reverse_complement_kmer_index() -> List[int]:
    """Builtin k-mer id -> id of its reverse complement (PAD and UNK map to themselves)."""
    out = [0, 1]
    for value in range(4 ** K):
        digits = [(value >> (2 * (K - 1 - j))) & 3 for j in range(K)]
        rc = 0
        for d in reversed(digits):
            rc = rc * 4 + (3 - d)
        out.append(rc + 2)
    return out


class ChromatinNet(nn.Module):
    """Window tokens [B, T] -> 919 DeepSEA feature probabilities [B, 919].

    A small DeepSEA/Basset-like CNN: input encoding (char: one-hot, N and PAD all-zero; k-mer:
    an embedding of the 5-mer tokens) -> three conv + batch-norm + ReLU stages, the first two
    max-pooled (x8, x4: 1,000 bp -> 31 positions of ~32 bp) -> mean and max over the whole
    window and over its central ~224 bp (the label is the central 200 bp bin, so a peak near
    the window's edge must not count as much as one in its middle) -> linear + ReLU -> one
    logit per learned (cell, TF) pair -> sigmoid, averaged over the window and its reverse
    complement (strand-symmetric) -> gathered into the 919 outputs; a feature without a learned
    pair reads a constant 0 column."""

    def __init__(self, kmer: int, feature_pair: List[int], pairs: int,
                 channels: Sequence[int] = (48, 64, 96), kernels: Sequence[int] = (15, 9, 7),
                 pools: Sequence[int] = (8, 4), embed: int = 16, hidden: int = 256,
                 dropout: float = 0.2):
        super().__init__()
        self.kmer = kmer
        if kmer:
            if kmer != K:
                raise ValueError(f"the k-mer variant reads builtin {K}-mers")
            self.embed = nn.Embedding(VOCAB, embed, padding_idx=0)
            rc = reverse_complement_kmer_index()
            inputs = embed
            onehot = torch.zeros(1, 1)
        else:
            self.embed = nn.Embedding(1, 1)  # unused (TorchScript needs the attribute)
            rc = CHAR_COMPLEMENT
            inputs = 4
            onehot = torch.zeros(6, 4)
            onehot[1:5] = torch.eye(4)
        self.register_buffer("onehot", onehot)
        self.register_buffer("rc_index", torch.tensor(rc, dtype=torch.int64))
        # A 5-mer token already spans 5 bases: the k-mer variant's first kernel is 4 tokens
        # shorter, so both variants' first filters see the same stretch of sequence.
        first = kernels[0] - (K - 1) if kmer else kernels[0]
        self.conv1 = nn.Conv1d(inputs, channels[0], first, padding=first // 2)
        self.norm1 = nn.BatchNorm1d(channels[0])
        self.conv2 = nn.Conv1d(channels[0], channels[1], kernels[1], padding=kernels[1] // 2)
        self.norm2 = nn.BatchNorm1d(channels[1])
        self.conv3 = nn.Conv1d(channels[1], channels[2], kernels[2], padding=kernels[2] // 2)
        self.norm3 = nn.BatchNorm1d(channels[2])
        self.pool1, self.pool2 = pools
        self.dropout = nn.Dropout(dropout)
        self.hidden = nn.Linear(4 * channels[2], hidden)
        self.head = nn.Linear(hidden, pairs)
        gather = [p if p >= 0 else pairs for p in feature_pair]
        self.register_buffer("gather", torch.tensor(gather, dtype=torch.int64))

    def reverse_complement(self, ids: torch.Tensor) -> torch.Tensor:
        """Tokens of the reverse-complement window (for 5-mers: the reversed token order, each
        token its reverse complement)."""
        return F.embedding(ids.flip(1), self.rc_index.unsqueeze(1)).squeeze(2)

    def logits(self, ids: torch.Tensor) -> torch.Tensor:
        """[B, T] tokens -> [B, pairs] logits of this strand only."""
        if self.kmer:
            x = self.embed(ids).transpose(1, 2)
        else:
            x = F.embedding(ids, self.onehot).transpose(1, 2)
        x = F.max_pool1d(F.relu(self.norm1(self.conv1(x))), self.pool1)
        x = F.max_pool1d(F.relu(self.norm2(self.conv2(x))), self.pool2)
        x = F.relu(self.norm3(self.conv3(x)))
        length = x.size(2)
        centre = x[:, :, length // 2 - length // 8:length // 2 + length // 8 + 1]
        h = torch.cat([x.mean(dim=2), x.amax(dim=2), centre.mean(dim=2), centre.amax(dim=2)],
                      dim=1)
        return self.head(self.dropout(F.relu(self.hidden(self.dropout(h)))))

    def pair_probabilities(self, ids: torch.Tensor) -> torch.Tensor:
        """[B, pairs] probabilities, the mean over both strands."""
        return 0.5 * (torch.sigmoid(self.logits(ids))
                      + torch.sigmoid(self.logits(self.reverse_complement(ids))))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        probs = self.pair_probabilities(ids)
        off = torch.zeros(probs.size(0), 1, dtype=probs.dtype, device=probs.device)
        return torch.cat([probs, off], dim=1).index_select(1, self.gather)


class _PairView(nn.Module):
    """Validation view: per-pair probabilities, both strands."""

    def __init__(self, net: ChromatinNet):
        super().__init__()
        self.net = net

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.net.pair_probabilities(ids)


# ---------------------------------------------------------------------------------------------
# Data


class ChromatinData:
    def __init__(self):
        self.names = deepsea_names()
        self.peaks = read_peaks()
        self.mapping = map_pairs(self.names, list(self.peaks))
        self.genome = common.chr20_ids()
        self.labels = bin_labels(self.peaks, self.mapping.pairs, len(self.genome))
        n = (self.genome == 5).astype(np.int64)
        self.n_prefix = np.concatenate(([0], np.cumsum(n)))

    def windows(self, region: Tuple[int, int]) -> np.ndarray:
        """Window starts (multiples of STRIDE, bins aligned to BIN) inside `region` with at most
        5% N; the window's label row is its central bin."""
        first = -(-region[0] // STRIDE) * STRIDE
        starts = np.arange(first, region[1] - CONTEXT + 1, STRIDE, dtype=np.int64)
        n = self.n_prefix[starts + CONTEXT] - self.n_prefix[starts]
        return starts[n <= MAX_N_FRACTION * CONTEXT]

    def label_rows(self, starts: np.ndarray) -> np.ndarray:
        return self.labels[(starts + (CONTEXT - BIN) // 2) // BIN]

    def inputs(self, starts: np.ndarray) -> np.ndarray:
        return self.genome[starts[:, None] + np.arange(CONTEXT)[None, :]]


# ---------------------------------------------------------------------------------------------
# Training


@dataclass
class Spec:
    model_id: str
    kmer: int             # 0 = char tokenizer (one-hot), else the builtin k-mer tokenizer's k
    is_default: bool
    epochs: int
    lr: float
    negatives: int        # windows without any positive label added to the labelled ones
    jitter: int           # training windows shift by up to this many bases either way


SPECS = [
    Spec("chromatin-human", 0, True, 12, 3e-3, 60000, 0),
    Spec("chromatin-human-kmer5", K, False, 6, 3e-3, 60000, 0),
]


def tokenizer_of(spec: Spec) -> Dict:
    return {"type": "kmer", "k": spec.kmer, "stride": 1} if spec.kmer else {"type": "char"}


def per_pair_auroc(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    return np.array([metrics.auroc(scores[:, p], labels[:, p]) for p in range(labels.shape[1])])


def _bce(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.binary_cross_entropy_with_logits(outputs, targets.float())


def _train_one(spec: Spec, data: ChromatinData, out_dir: str, seed: int) -> str:
    log = nets.Log(spec.model_id)
    rng = np.random.default_rng(seed)
    augment = np.random.default_rng(seed + 1)
    common.seeded(seed)
    fit_starts = data.windows(common.FIT)
    # Jittered windows read `jitter` bases either side, which must stay inside FIT too.
    fit_starts = fit_starts[(fit_starts >= common.FIT[0] + spec.jitter)
                            & (fit_starts + CONTEXT + spec.jitter <= common.FIT[1])]
    has_label = data.label_rows(fit_starts).any(axis=1)
    labelled, unlabelled = fit_starts[has_label], fit_starts[~has_label]
    chosen = np.sort(np.concatenate([labelled, rng.choice(unlabelled, spec.negatives,
                                                          replace=False)]))
    model = ChromatinNet(spec.kmer, data.mapping.feature_pair, len(data.mapping.pairs))
    span = CONTEXT + 2 * spec.jitter
    x = data.genome[(chosen - spec.jitter)[:, None] + np.arange(span)[None, :]]
    y = data.label_rows(chosen).astype(np.float32)
    log(f"{len(fit_starts)} fit windows, {len(labelled)} with a positive label; training on "
        f"{len(chosen)}; {len(data.mapping.pairs)} learned pairs; "
        f"{nets.parameter_count(model):,} parameters")
    val_starts = data.windows(common.VALIDATION)
    val_x = nets.tokenize(tokenizer_of(spec), data.inputs(val_starts))
    val_labels = data.label_rows(val_starts)
    tokenizer = tokenizer_of(spec)

    def to_input(rows: np.ndarray) -> torch.Tensor:
        # Augmentation: one shift per batch, and each window on a random strand.
        shift = int(augment.integers(0, 2 * spec.jitter + 1))
        rows = rows[:, shift:shift + CONTEXT]
        flip = augment.random(len(rows)) < 0.5
        rows = np.where(flip[:, None], nets.reverse_complement_ids(rows), rows)
        return torch.from_numpy(nets.tokenize(tokenizer, rows))

    view = _PairView(model)

    def validate(_: nn.Module) -> float:
        scores = nets.predict_batches(view, val_x, 512)
        return float(np.nanmedian(per_pair_auroc(scores, val_labels)))

    summary = nets.fit(nets.LogitView(model), lambda epoch: (x, y), _bce, to_input,
                       spec.epochs, spec.lr, 128, rng, log, validate=validate)
    summary["train_seconds"] = log.elapsed()
    summary["train_cpu_seconds"] = log.cpu()
    summary["windows"] = len(chosen)
    summary["threads"] = torch.get_num_threads()
    write(spec, model, data, out_dir, seed, summary)
    log(f"written; best validation median AUROC {summary['validation']:.4f} at epoch "
        f"{summary['best_epoch']}")
    return spec.model_id


def train(out_dir: str, seed: int) -> List[str]:
    # One thread: on a shared two-core machine a second OpenMP thread mostly waits (measured
    # 1.1 ms CPU per window and step on one thread, 1.5 ms on two).
    nets.set_threads(1)
    data = ChromatinData()
    return [_train_one(spec, data, out_dir, seed) for spec in SPECS
            if common.wanted(spec.model_id)]


# ---------------------------------------------------------------------------------------------
# Evaluation



def heldout_scores(manifest: Dict, module, data: ChromatinData):
    """(feature probabilities [N, 919], pair labels [N, P]) of every held-out window."""
    starts = data.windows(common.HELD_OUT)
    labels = data.label_rows(starts)
    scores = []
    for s in range(0, len(starts), 2048):
        rows = data.inputs(starts[s:s + 2048])
        scores.append(nets.predict_batches(module, nets.tokenize(manifest["tokenizer"], rows), 256))
    return np.concatenate(scores), labels


# The package whose variant background (issue 25 quantiles) evaluate-models recomputes and ships:
# the task's default (training/scorer_backgrounds.py).
VARIANT_BACKGROUND = {"chromatin-human"}


def evaluate(package_dir: str) -> Dict[str, float]:
    return evaluate_with_table(package_dir)[0]


def evaluate_with_table(package_dir: str):
    """(metrics, markdown table of every learned feature) from one pass over the held-out
    windows."""
    nets.set_threads(2)
    manifest, module = nets.load_package(package_dir)
    data = ChromatinData()
    if manifest["output_labels"] != data.names:
        raise common.DataError(f"{manifest['id']}: output labels are not the 919 DeepSEA names "
                               "in published order")
    scores, labels = heldout_scores(manifest, module, data)
    mapping = data.mapping
    learned = [i for i, p in enumerate(mapping.feature_pair) if p >= 0]
    unlearned = [i for i, p in enumerate(mapping.feature_pair) if p < 0]
    # One AUROC per learned DeepSEA feature (features sharing a pair share its labels).
    feature_auroc = np.array([metrics.auroc(scores[:, i], labels[:, mapping.feature_pair[i]])
                              for i in learned])
    pair_counts = labels.sum(axis=0)
    pairs = [mapping.feature_pair[i] for i in learned]
    plots.offer_binary(manifest["id"], {
        f"{len(learned)} learned features pooled": (scores[:, learned].ravel(),
                                                    labels[:, pairs].ravel())})
    out = {
        "heldout_windows": len(labels),
        "learned_features": len(learned),
        "learned_pairs": len(mapping.pairs),
        "features_with_heldout_positives": int(np.sum(~np.isnan(feature_auroc))),
        "median_auroc_learned_features": float(np.nanmedian(feature_auroc)),
        "mean_auroc_learned_features": float(np.nanmean(feature_auroc)),
        "min_auroc_learned_features": float(np.nanmin(feature_auroc)),
        "share_features_auroc_ge_0.85": float(np.nanmean(feature_auroc >= 0.85)),
        "median_auprc_learned_features": float(np.nanmedian(
            [metrics.average_precision(scores[:, i], labels[:, mapping.feature_pair[i]])
             for i in learned if pair_counts[mapping.feature_pair[i]] > 0])),
        "max_output_unlearned_features": float(scores[:, unlearned].max()) if unlearned else 0.0,
    }
    example = torch.from_numpy(nets.tokenize(manifest["tokenizer"],
                                             np.full((1, CONTEXT), 1, dtype=np.uint8)))
    out["forward_ms_one_window_one_thread"] = nets.time_forward(module, (example,))
    rows = ["| index | DeepSEA feature | labels from (ENCODE-DREAM) | held-out positive windows "
            "| held-out AUROC |", "|---:|---|---|---:|---:|"]
    for i, auc in zip(learned, feature_auroc):
        p = mapping.feature_pair[i]
        rows.append(f"| {i} | {data.names[i]} | {mapping.pairs[p]} | {int(pair_counts[p])} "
                    f"| {cards.format_value(auc)} |")
    return out, "\n".join(rows)


METRIC_MEANINGS = {
    "heldout_windows": "held-out windows (1,000 bp every 200 bp, at most 5% N)",
    "learned_features": "DeepSEA features with labels here (the rest output exactly 0)",
    "learned_pairs": "ENCODE-DREAM (cell, TF) pairs behind them",
    "features_with_heldout_positives": "learned features with at least one held-out positive",
    "median_auroc_learned_features": "median held-out AUROC over the learned features",
    "mean_auroc_learned_features": "mean held-out AUROC over the learned features",
    "min_auroc_learned_features": "lowest held-out AUROC of a learned feature",
    "share_features_auroc_ge_0.85": "share of learned features with AUROC >= 0.85",
    "median_auprc_learned_features": "median held-out average precision (positives are rare: "
                                     "compare with each feature's positive rate)",
    "max_output_unlearned_features": "largest output of any unlearned feature on any held-out "
                                     "window (must be 0)",
}
NOT_COMPARED = {"forward_ms_one_window_one_thread"}


# ---------------------------------------------------------------------------------------------
# Package


def _description(spec: Spec, learned: int) -> str:
    tok = ("5-mer tokens (k-mer tokenizer, stride 1), embedded" if spec.kmer else
           "one-hot nucleotides")
    return (f"Human chromatin model, small strand-symmetric CNN over {tok}: the 919 DeepSEA "
            f"outputs over 1,000 bp windows every 200 bp, of which only {learned} TF ChIP-seq "
            "features are learned (ENCODE-DREAM peaks on GRCh37 chr20); every DNase, histone and "
            "other unlearned feature outputs 0 and is never reported. The model card lists the "
            "learned features and their held-out AUROC.")


def write(spec: Spec, model: ChromatinNet, data: ChromatinData, out_dir: str, seed: int,
          summary: Dict) -> str:
    tokenizer = tokenizer_of(spec)
    example_ids = np.random.default_rng(0).integers(1, 6, size=(2, CONTEXT)).astype(np.uint8)
    scripted = nets.export(model, (torch.from_numpy(nets.tokenize(tokenizer, example_ids)),))
    learned = sum(1 for p in data.mapping.feature_pair if p >= 0)
    manifest = common.trained_manifest(spec.model_id, TASK, _description(spec, learned),
                                       spec.is_default, tokenizer, CONTEXT, data.names, seed,
                                       stride_bp=STRIDE)
    package = common.write_package(out_dir, manifest, scripted, "(card pending)\n")
    with plots.capture() as captured:
        results, table = evaluate_with_table(package)
    compared = {k: v for k, v in results.items() if k not in NOT_COMPARED}
    arch = ("one-hot nucleotides [4, 1,000] (N and padding all-zero)" if not spec.kmer else
            "the worker's overlapping 5-mer tokens (stride 1, 996 per window) -> a learned "
            f"{model.embed.embedding_dim}-dimensional embedding per 5-mer (padding zero)")
    convs = [model.conv1, model.conv2, model.conv3]
    stages = " -> ".join(f"conv {c.out_channels} x k{c.kernel_size[0]} + batch norm + ReLU"
                         + (f" + max-pool /{p}" if p else "")
                         for c, p in zip(convs, [model.pool1, model.pool2, 0]))
    body = cards.card(
        spec.model_id,
        f"{_description(spec, learned)}\n\n**Trained on real public data** (seed {seed}) for "
        f"{learned} of the 919 outputs; **the other {919 - learned} outputs are not trained and "
        "are constant 0**. Every metric below is recomputed from this package by "
        "`scripts/evaluate-models`.",
        manifest,
        [("parameters", f"{nets.parameter_count(model):,}"),
         ("training time", f"{summary['train_seconds'] / 60:.1f} min wall, "
                           f"{summary['train_cpu_seconds'] / 60:.1f} min CPU, {summary['threads']} thread(s) "
                           f"({summary['epochs']} epochs over {summary['windows']:,} windows, best "
                           f"validation epoch {summary['best_epoch']}, validation median AUROC "
                           f"{summary['validation']:.4f})"),
         ("forward, one window, one thread",
          f"{results['forward_ms_one_window_one_thread']:.1f} ms CPU (TorchScript, Python)"),
         ("exported with", f"torch {torch.__version__}, torch.jit.script + freeze, float32")],
        [("Architecture",
          f"{arch} -> {stages} (31 positions of ~32 bp) -> mean and max over the whole window "
          "and over its central 7 positions (~224 bp: the label is the central 200 bp bin, so "
          "where a motif sits matters) -> dropout 0.2 -> linear "
          f"{model.hidden.in_features} -> {model.hidden.out_features} + ReLU + dropout 0.2 -> "
          f"linear to {len(data.mapping.pairs)} logits (one per learned cell/TF pair) -> "
          "sigmoid, averaged over the window and its reverse complement (strand-symmetric by "
          "construction) -> gathered into the 919 DeepSEA outputs in published order; a "
          "feature without a pair reads a constant 0. Binary cross-entropy per pair, AdamW, "
          f"one-cycle learning rate (peak {spec.lr:g}), batches of 128 windows, each on a random "
          "strand" + (f" and shifted by up to {spec.jitter} bp" if spec.jitter else "") + "."),
         ("Data and provenance",
          "- Genome: GRCh37 chr20 from Debian's `vt-examples` package (`apt-get download`; "
          "MIT).\n"
          "- Outputs: the 919 DeepSEA features (Zhou & Troyanskaya 2015) in model output order, "
          "from `../shared/data/chromatin/deepsea_919_feature_names.tsv` (YosefLab/epitome).\n"
          "- Labels: ENCODE-DREAM challenge conservative TF ChIP-seq peaks on chr20 "
          "(`../shared/data/chromatin/encode_dream_tf_peaks_hg19_chr20.bed.gz`, via "
          f"uci-cbcl/FactorNet, MIT): {len(data.peaks)} (cell, TF) pairs, of which "
          f"{len(data.mapping.pairs)} match DeepSEA features (same cell line and factor under "
          "ENCODE's names: " + ", ".join(f"{k} = {v}" for k, v in TF_ALIASES.items()) + "; "
          + ", ".join(f"{k} = {v}" for k, v in CELL_ALIASES.items()) + "). A pair feeds every "
          "DeepSEA feature of that cell and factor, whatever its treatment column (the ENCODE-"
          "DREAM files do not record the treatment).\n"
          "- Pairs with labels but no DeepSEA feature (not learned, not output): "
          + (", ".join(data.mapping.unmapped_pairs) or "none") + ".\n"
          "- Window label (DeepSEA's rule): positive for a pair when more than half of the "
          "central 200 bp bin lies in one of its peaks.\n"
          f"- Fit on chr20:0-{common.FIT[1]:,}: every window with a positive label for any "
          f"pair plus {spec.negatives:,} drawn from the rest. Epoch chosen on every window of "
          f"the validation slice chr20:{common.VALIDATION[0]:,}-{common.VALIDATION[1]:,}."),
         ("Held-out evaluation",
          f"Every window of chr20:{common.HELD_OUT[0]:,}-{common.HELD_OUT[1]:,} (the last 10 "
          "Mb; 1,000 bp every 200 bp, at most 5% N), never used in training or model choice. "
          "AUROC per learned DeepSEA feature against its pair's labels."),
         ("Metrics", cards.metrics_table(compared, METRIC_MEANINGS)),
         ("Learned features", table),
         ("Known limits",
          f"- {919 - learned} of the 919 outputs (all 125 DNase, all 104 histone marks, TFs "
          "without ENCODE-DREAM labels) are not trained: they output 0 and are never reported "
          "as present. Their categories (DNase, H3K27ac, H3K27me3, H3K4me1) therefore never "
          "appear in results.\n"
          "- Labels come from one chromosome; AUROC over all windows is flattered by the many "
          "easy negatives (see the average precision).\n"
          "- Cell-type specificity is weak: a sequence-only model mostly learns where a factor "
          "binds in any cell; pairs of the same factor score alike.\n"
          "- A small CNN trained for minutes on one chromosome: DeepSEA's far larger network "
          "saw the whole genome and reaches a median TF AUROC near 0.96 on its own test set; "
          "more labelled chromosomes would help this one more than more epochs."),
         ("Reproduce",
          "```\nscripts/train-models --only chromatin\nscripts/evaluate-models --only chromatin\n"
          "```")])
    with open(os.path.join(package, manifest["model_card"]), "w", encoding="utf-8") as handle:
        handle.write(body)
    cards.complete(package, results, captured, NOT_COMPARED)
    return package
