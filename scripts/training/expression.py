"""expression-human: ln(TPM + 1) of a chr20 gene's 9,198 bp TSS window in the Roadmap context
(of 56 epigenomes) a free-text description matches, fitted to Roadmap Epigenomics RNA-seq.

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
from dataclasses import asdict, dataclass
from typing import Dict, List, Sequence, Tuple

import numpy as np

# Before torch loads (it is imported lazily): OpenMP threads that sleep while they wait. On a
# machine shared with other work, spinning threads made 2-thread training steps 4x slower.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from training import cards, common, plots  # noqa: E402
from training.scripting import (card_head, freeze_checked,  # noqa: E402
                                module_cli)
from training import expression_data as data  # noqa: E402

MODEL_ID = "expression-human"
TEXT_MAX_TOKENS = 256
DEFAULT_SEED = 2026
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

# (lo, hi, k): k-mer spectra of window bases [lo, hi); the TSS is at index 4,599. Chosen by
# 5-fold cross-validation on the training genes (never the held-out ones) among five sets (this
# one; without the whole-window 4-mers; with 2-mers in 512 bp bins; with 5-mers of +-500 bp;
# with 2-mers near the TSS): the best sum of all-pairs and within-gene Spearman.
REGIONS = ((4099, 5099, 3), (3599, 4599, 3), (4599, 5599, 3), (0, 9198, 3), (2599, 6599, 3),
           (3599, 5599, 4), (0, 9198, 4))
# Ridge penalties, the number of context components and the loadings' mix, chosen by
# cross-validation on the training genes: the level penalty by all-pairs Spearman, the rest by
# the within-gene (across-context) Spearman median (which the level and spread cannot change).
LEVEL_ALPHAS = (100.0, 300.0, 1000.0, 3000.0)
LOADING_ALPHAS = (1000.0, 3000.0, 10000.0, 30000.0)       # loadings on the k-mer spectra
CHROMATIN_ALPHAS = (100.0, 300.0, 1000.0, 3000.0)         # loadings on the binding features
KMER_SHARES = (0.0, 0.2, 0.35, 0.5, 0.75, 1.0)            # loadings = share * k-mer ridge + ...
COMPONENTS = (4, 8, 12, 16)
# Folds are contiguous blocks of chr20 (training genes ordered by TSS), and a fold's model is
# fitted without the genes within BLOCK_BUFFER_BP of its block: neighbouring genes share
# chromatin domains and tissue profiles (and overlapping windows share sequence), so randomly
# drawn folds leaked and overestimated the within-gene figure (0.357 on random folds against
# 0.312 on buffered blocks for the previous package's form; held out it scored 0.291). Blocks
# are what the held-out region (the last 10 Mb) is to the training genes.
FOLDS = 5
BLOCK_BUFFER_BP = 500_000

# Predicted TF binding at the promoter (features beside the k-mer spectra). The k-mer spectra
# mostly carry CpG content (broad vs restricted expression); which tissue a gene is on in is
# closer to which factors bind its promoter, and the chromatin-human network predicts 81
# ENCODE-DREAM (cell line, TF) ChIP-seq pairs, several of them lineage factors (HNF4A, FOXA,
# CEBPB in HepG2; SPI1, EGR1 in GM12878; GATA in K562). It runs on 1,000 bp windows centred at
# TSS-1,900, -1,700, ..., +1,900 (20 windows, TSS +-2.4 kb covered); per pair the mean and
# the max of ln(p + CHROMATIN_FLOOR) over them. On the blocked folds the binding features alone
# gave within-gene 0.370 against the spectra's 0.348 (windows every 400 bp: 0.366; the whole
# 9 kb window's mean: 0.342).
CHROMATIN_ID = "chromatin-human"
CHROMATIN_CENTRES = tuple(range(-1900, 1901, 200))
CHROMATIN_FLOOR = 1e-3
# Interleaved placements of the windows (PromoterChromatin's `placements`; 1: one placement).
CHROMATIN_PLACEMENTS = 1

# Second round (2026-11-27, nothing shipped): variants of the binding features, each scored by
# the same blocked CV and grid as `cross_validate` (level penalty by all-pairs, the rest by the
# within-gene median; figures: within-gene median / all-pairs of the grid's best form). Rule,
# written before the grids: a variant replaces the package only if it beats this package's
# 0.368 by >= 0.01 within-gene with all-pairs >= 0.68, costs at most twice this forward (<= 40
# chromatin windows), AND, because a 50 bp shift of the windows alone moves the figure by
# about 0.01, its mean over the window placements shifted by 0, 50, 100 and 150 bp beats this
# package's form's mean over the same shifts (0.368, 0.374, 0.374, 0.374: 0.3724) by >= 0.01.
# - Windows every 100 bp over TSS+-1,900 (39; 2x cost): 0.372 / 0.692; shift mean 0.3743.
#   Every 50 bp (77, reference): 0.371 / 0.689. The 4 shifted 200 bp placements' mean/max
#   averaged (80, reference): 0.377 / 0.692.
# - Beyond the promoter (binding ridge on both blocks): + downstream block, 10 windows
#   TSS+2,100..+3,900: 0.373 / 0.683; + upstream and downstream blocks: 0.367 / 0.685; one block
#   TSS-1,900..+3,900: 0.375 / 0.682; + downstream every 400 bp (5): 0.381 / 0.683 at shift 0
#   but 0.374, 0.370, 0.365 shifted (mean 0.3724: placement noise); + downstream means only
#   0.367; + TSS+2,100..+2,900: 0.365; + the two TSS windows' means: 0.373 / 0.691.
# - Ensemble of the fits at placements 0 and +100 bp (2x cost): 0.373 / 0.694. Per-component
#   spectra share (16 shares by coordinate ascent, in-sample, optimistic): 0.373 / 0.687. One
#   ridge on both blocks with per-block penalties: 0.367 / 0.687. K up to 56: 0.369 (K 24).
#   Binding x promoter CpG interaction: 0.368 / 0.677.
# - Statistics: floor 1e-4 0.368, 1e-2 0.365; mean only 0.359; max only 0.368; + std 0.367.
#   Distance-decay sums (ExPecto-like, TSS+-3,900, e^(-|d|/500) and e^(-|d|/2000)): up/down
#   separately 0.376 / 0.696, pooled 0.372; of p rather than ln p 0.372.
# - The whole window (40 windows every 200 bp, TSS-3,900..+3,900; 2x cost): 0.379, 0.376,
#   0.379, 0.376 over the shifts (mean 0.3774, +0.005). 20 windows every 400 bp (this cost):
#   -3,900..+3,700 mean 0.3728, -3,700..+3,900 mean 0.3789. Their two placements' mean/max
#   averaged (40 windows, 2x cost): 0.386 / 0.687, 0.373, 0.381, 0.382 (mean 0.3805, +0.008;
#   below this package at one shift): the best lead, short of the rule.
#
# Confirmation of that lead (2026-11-27, third round), protocol written before any run. The
# 0.386 was the best of ~35 variants scored on the same 5 blocks, so in part a lucky draw; it
# is re-scored on a partition of the training genes fixed here, never used before:
# - Partition (`CONFIRM_FOLDS`): the 411 training genes ordered by TSS cut into 7 contiguous
#   blocks of equal gene count (np.array_split: 59 x 5, 58 x 2), each block predicted by a fit
#   without the genes within BLOCK_BUFFER_BP (500 kb) of it. 7 is coprime with 5, so none of
#   its 6 interior boundaries (genes 59, 118, 177, 236, 295, 353) is one of the 5-fold ones
#   (83, 165, 247, 329). Held-out genes are not touched.
# - Configurations, everything else the same (spectra, floor, the grid and `cross_validate`'s
#   choice: level penalty by all-pairs, the rest by the within-gene median, on this partition):
#   P, the package's: 20 windows centred TSS-1,900..+1,900 every 200 bp, mean and max per pair;
#   I, interleaved placements: A = 20 windows centred TSS-3,900..+3,700 every 400 bp and
#   B = 20 centred -3,700..+3,900, mean and max per pair per placement, A's and B's averaged
#   (40 chromatin windows, the same 2P features).
# - Check of the implementation, not a decision figure: on the old 5 blocks I must reproduce
#   the recorded 0.386 / 0.687 and P 0.368 / 0.687 (to +-0.002).
# - Ship rule: I replaces the package only if, on the 7-block partition, its cross-validated
#   within-gene median >= P's + 0.005 AND its all-pairs >= P's - 0.01 AND the exported
#   model's bare forward (one window, one description, one thread, `forward_ms`) is at most
#   2x the current package's. Otherwise nothing ships and the figures are recorded here.
#   Informative only (not deciding): the paired per-gene gain (mean, standard error) and the
#   number of the 7 blocks whose median improves.
# Figures (`confirm_placements`; within-gene median / all-pairs of the form each grid chose):
# - Check, old 5 blocks: P 0.368 / 0.687 (level 300, spectra 10000, binding 1000, share 0.5,
#   K 16: the package's form), I 0.386 / 0.687 (300, 10000, 100, 0.2, K 8): both reproduced.
#   Paired I - P per gene +0.0052 (standard error 0.0043), 4 of 5 blocks better.
# - Decision, 7 blocks: P 0.3753 / 0.6886 (level 1000, 10000, 1000, share 0.5, K 16; spectra
#   alone 0.358, binding alone 0.357; mean-profile baseline 0.256), I 0.3909 / 0.6917 (1000,
#   10000, 300, share 0.35, K 8; binding alone 0.383): within-gene +0.0156 (>= 0.005),
#   all-pairs +0.003 (no fall). Paired I - P per gene +0.0066 (standard error 0.0029), 6 of 7
#   blocks better. Forward (`forward_ms`, the same first training window, three runs side by
#   side, 2026-11-27 05:52 UTC): current package 6.05, 5.85, 6.17 ms; I exported 11.30, 11.32,
#   11.01 ms: 1.78x to 1.93x (<= 2x). All three conditions held, so I was trained as a package
#   (penalties and K chosen by `cross_validate` on the 5 blocks as before) and read on held-out
#   once: within-gene 0.3146 (the package's 0.3435), all-pairs 0.4925 (0.5133; below the
#   issue's 0.5, which the package meets). **Not shipped**: the rule's CV gain did not carry to
#   held-out genes, and I costs about 2x the forward (served C++ bare forward 21 ms against
#   11 ms). This decision used the held-out reading (as a final gate, not for tuning): the
#   package stays the one with CHROMATIN_CENTRES / CHROMATIN_PLACEMENTS above, and its
#   held-out figures are the ones it was shipped with. The held-out genes (about 100) move the
#   within-gene median by a few hundredths between CV-equivalent variants, so the binding
#   features are now at the limit of what CV on 411 training genes can tell apart.
#   Measured on the way, as BENCHMARKS does, I's served C++ bare forward was first 30.4 ms
#   against 11.0 ms (2.7x): the chromatin network's activations for 40 windows in one call
#   exceed glibc's largest dynamic mmap threshold (32 MB), so each forward mapped and faulted
#   them in (the network alone: 20 windows 4.1 ms, 40 windows 22 ms, 40 with the threshold
#   lifted 9.7 ms). PromoterChromatin runs the network on at most `chunk` (20) windows per call
#   since (the same features; the package's 20 windows are one call as before).


@dataclass(frozen=True)
class Form:
    """How a Fit is made: penalties, K, the within-gene shape and the loadings' mix
    (kmer_share * ridge on the spectra + (1 - kmer_share) * ridge on the binding features)."""
    level_alpha: float
    kmer_alpha: float
    chromatin_alpha: float
    kmer_share: float
    components: int
    shape: str = "rank"


# The previous package's form (5686cf1: k-mer spectra only, rank profiles), scored on the same
# folds for the card.
PREVIOUS_FORM = Form(level_alpha=300.0, kmer_alpha=10000.0, chromatin_alpha=0.0, kmer_share=1.0,
                     components=8)

def window_ids(chr20: str, genes: Sequence[data.Gene], shift: int = 0) -> np.ndarray:
    return np.stack([np.array(common.char_ids(data.window_sequence(chr20, g, shift)),
                              dtype=np.int64) for g in genes])


def spectra(windows: np.ndarray) -> np.ndarray:
    """[genes, features]: the exported model's own k-mer spectra (so training and serving
    compute identical features)."""
    import torch
    from training.expression_net import KmerSpectrum
    ids = torch.from_numpy(windows)
    with torch.no_grad():
        return torch.cat([KmerSpectrum(lo, hi, k)(ids) for lo, hi, k in REGIONS],
                         dim=1).numpy().astype(np.float64)


def chromatin_package(out_dir: str) -> str:
    """The chromatin package the expression module embeds: the one trained into `out_dir` by the
    same run when there is one (scripts/train-models trains chromatin first), else the
    committed one (`--only expression`)."""
    for root in (out_dir, os.path.join(common.ROOT, "worker", "packages")):
        path = os.path.join(root, CHROMATIN_ID)
        if os.path.isfile(os.path.join(path, "manifest.json")):
            return path
    raise FileNotFoundError(f"no {CHROMATIN_ID} package in {out_dir} or worker/packages")


def learned_columns() -> List[int]:
    """The chromatin outputs read: the first DeepSEA feature of each learned (cell, TF) pair
    (the others of a pair are copies of it), in the chromatin module's pair order."""
    from training import chromatin
    mapping = chromatin.map_pairs(chromatin.deepsea_names(), list(chromatin.read_peaks()))
    return [mapping.feature_pair.index(p) for p in range(len(mapping.pairs))]


def promoter_chromatin(package_dir: str, centres: Sequence[int] = CHROMATIN_CENTRES,
                       placements: int = CHROMATIN_PLACEMENTS):
    """The eager PromoterChromatin of a chromatin package (its frozen module inside) on windows
    centred at TSS + `centres` (evenly spaced), as `placements` interleaved placements."""
    from training import nets
    from training.expression_net import PromoterChromatin
    manifest_json, module = nets.load_package(package_dir)
    if manifest_json["tokenizer"] != {"type": "char"}:
        raise ValueError(f"{package_dir}: the expression window is char ids, the chromatin "
                         f"package reads {manifest_json['tokenizer']}")
    width = int(manifest_json["context_window_bp"])
    step = centres[1] - centres[0]
    first = data.HALF_WINDOW + centres[0] - width // 2
    return PromoterChromatin(module, first, len(centres), step, width,
                             learned_columns(), CHROMATIN_FLOOR, placements).eval()


def binding_features(module, windows: np.ndarray, batch: int = 16) -> np.ndarray:
    """[genes, 2P]: the exported model's own binding features (`promoter_chromatin`)."""
    import torch
    out = []
    with torch.no_grad():
        for start in range(0, len(windows), batch):
            out.append(module(torch.from_numpy(windows[start:start + batch])).numpy())
    return np.concatenate(out).astype(np.float64)


def rank_rows(matrix: np.ndarray) -> np.ndarray:
    """Ranks within each row, ties averaged (vectorised `ranks` for many rows)."""
    out = np.empty(matrix.shape, dtype=np.float64)
    for i, row in enumerate(matrix):
        _, inverse, counts = np.unique(row, return_inverse=True, return_counts=True)
        ends = np.cumsum(counts)
        out[i] = ((ends - counts + ends + 1) / 2.0)[inverse]
    return out


def row_spearman(predicted: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Spearman of each row pair; rows where either side is constant are dropped."""
    a, b = rank_rows(predicted), rank_rows(truth)
    a -= a.mean(axis=1, keepdims=True)
    b -= b.mean(axis=1, keepdims=True)
    denominator = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    keep = denominator > 0
    return (a * b).sum(axis=1)[keep] / denominator[keep]


# Added to each gene's across-context spread before profiles are scaled to unit spread, so
# nearly flat (or all-zero) genes do not dominate the components with noise.
SPREAD_FLOOR = 0.1


def within_gene_shapes(targets: np.ndarray, shape: str = "rank") -> np.ndarray:
    """[genes, contexts] the within-gene profiles the context components and loadings are fitted
    to, each row of unit spread (a constant row stays 0):
    - "rank": the gene's ranks over the contexts (ties averaged), centred and standardised. What
      the within-gene Spearman scores, and robust: one extreme context (a testis- or
      brain-only gene) counts as one rank, not as most of the row's variance. Chosen by
      cross-validation (0.348 against 0.312 for "scaled" on the blocked folds).
    - "scaled": ln(TPM+1) centred per gene and divided by its spread + SPREAD_FLOOR (the
      previous package's targets)."""
    if shape == "rank":
        r = rank_rows(targets)
        r -= r.mean(axis=1, keepdims=True)
        spread = r.std(axis=1, keepdims=True)
        return r / np.where(spread > 1e-9, spread, 1.0)
    if shape == "scaled":
        centred = targets - targets.mean(axis=1, keepdims=True)
        return centred / (centred.std(axis=1, keepdims=True) + SPREAD_FLOOR)
    raise ValueError(f"unknown within-gene shape {shape!r}")


def standardiser(features: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(mean, scale) per feature column; a constant column keeps scale 1."""
    spread = features.std(axis=0)
    return features.mean(axis=0), np.where(spread > 1e-9, spread, 1.0)


def ridge(x: np.ndarray, y: np.ndarray, alpha: float) -> np.ndarray:
    """[F + 1, outputs] ridge weights with an unpenalised intercept (the last row)."""
    design = np.c_[x, np.ones(len(x))]
    penalty = np.eye(design.shape[1])
    penalty[-1, -1] = 0.0
    return np.linalg.solve(design.T @ design + alpha * penalty, design.T @ y)


def context_basis(targets: np.ndarray, shape: str) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(context mean [C], components [C, C] (rows, by falling variance), the training genes'
    loadings on them [genes, C]) of the within-gene shapes."""
    shapes = within_gene_shapes(targets, shape)
    context_mean = shapes.mean(axis=0)
    _, _, vt = np.linalg.svd(shapes - context_mean, full_matrices=False)
    return context_mean, vt, (shapes - context_mean) @ vt.T


def level_targets(targets: np.ndarray) -> np.ndarray:
    """[genes, 2]: each gene's mean over the contexts and ln of its spread (+ SPREAD_FLOOR)."""
    level = targets.mean(axis=1)
    return np.c_[level, np.log((targets - level[:, None]).std(axis=1) + SPREAD_FLOOR)]


def profiles_of(out: np.ndarray, context_mean: np.ndarray, components: np.ndarray) -> np.ndarray:
    """[genes, 2 + K] (level, ln spread, loadings) -> [genes, contexts]."""
    return out[:, :1] + np.exp(out[:, 1:2]) * (context_mean + out[:, 2:] @ components)


class Fit:
    """The closed-form model (numpy; `build_module` makes the TorchScript side):
    standardised features -> ridge -> (level, ln spread, K loadings); the within-gene profile is
    level + spread * (context mean + loadings @ components), where the context mean and
    components come from the training genes' within-gene shapes (`within_gene_shapes`, unit
    spread, so every gene counts alike in them). The level and spread are one ridge on all
    features; the loadings are kmer_share x a ridge on the first `kmer_columns` features (the
    k-mer spectra) + (1 - kmer_share) x a ridge on the rest (the binding features), i.e. one
    linear map with each block's rows scaled by its share."""

    def __init__(self, features: np.ndarray, targets: np.ndarray, kmer_columns: int, form: Form):
        self.mean, self.scale = standardiser(features)
        x = (features - self.mean) / self.scale
        self.context_mean, basis, loadings = context_basis(targets, form.shape)
        k = form.components
        self.components = basis[:k]
        level_w = ridge(x, level_targets(targets), form.level_alpha)
        loading_w = np.zeros((x.shape[1] + 1, k))
        share = form.kmer_share
        if share > 0:
            w = ridge(x[:, :kmer_columns], loadings[:, :k], form.kmer_alpha)
            loading_w[:kmer_columns] += share * w[:-1]
            loading_w[-1] += share * w[-1]
        if share < 1:
            w = ridge(x[:, kmer_columns:], loadings[:, :k], form.chromatin_alpha)
            loading_w[kmer_columns:-1] += (1 - share) * w[:-1]
            loading_w[-1] += (1 - share) * w[-1]
        full = np.c_[level_w, loading_w]
        self.weights, self.bias = full[:-1], full[-1]

    def profiles(self, features: np.ndarray) -> np.ndarray:
        out = ((features - self.mean) / self.scale) @ self.weights + self.bias
        return profiles_of(out, self.context_mean, self.components)


def block_folds(positions: np.ndarray, folds: int = FOLDS,
                buffer_bp: int = BLOCK_BUFFER_BP) -> List:
    """[(fit rows, test rows)]: the genes ordered by position (TSS) cut into `folds` contiguous
    blocks; each block is tested by a fit on the genes more than `buffer_bp` away from it."""
    positions = np.asarray(positions)
    out = []
    for block in np.array_split(np.argsort(positions, kind="mergesort"), folds):
        lo, hi = positions[block].min() - buffer_bp, positions[block].max() + buffer_bp
        out.append((np.flatnonzero((positions < lo) | (positions > hi)), block))
    return out


def out_of_fold(folds: List, features: np.ndarray, targets: np.ndarray, kmer_columns: int,
                form: Form) -> np.ndarray:
    """[genes, contexts] each training gene predicted by the Fit of its fold."""
    predicted = np.zeros_like(targets, dtype=np.float64)
    for fit_rows, test_rows in folds:
        model = Fit(features[fit_rows], targets[fit_rows], kmer_columns, form)
        predicted[test_rows] = model.profiles(features[test_rows])
    return predicted


def cv_scores(predicted: np.ndarray, targets: np.ndarray):
    """(all-pairs Spearman, within-gene Spearman median) over the pooled out-of-fold genes."""
    return (spearman(predicted.ravel(), targets.ravel()),
            float(np.median(row_spearman(predicted, targets))))


class FoldParts:
    """Every fold's ridge solutions for each penalty (all 56 loading columns at once: a ridge
    solves each output column alone, so K components are the first K columns), so that every
    Form of the grid is assembled from them without refitting. Matches `out_of_fold` exactly."""

    def __init__(self, folds: List, features: np.ndarray, targets: np.ndarray,
                 kmer_columns: int):
        self.folds, self.targets = folds, targets
        self.parts = []
        for fit_rows, test_rows in folds:
            mean, scale = standardiser(features[fit_rows])
            x = (features[fit_rows] - mean) / scale
            x_test = np.c_[(features[test_rows] - mean) / scale, np.ones(len(test_rows))]
            context_mean, basis, loadings = context_basis(targets[fit_rows], "rank")
            level = {a: x_test @ ridge(x, level_targets(targets[fit_rows]), a)
                     for a in LEVEL_ALPHAS}
            kmer_test = np.c_[x_test[:, :kmer_columns], x_test[:, -1:]]
            kmer = {a: kmer_test @ ridge(x[:, :kmer_columns], loadings, a)
                    for a in LOADING_ALPHAS}
            binding = {a: x_test[:, kmer_columns:] @ ridge(x[:, kmer_columns:], loadings, a)
                       for a in CHROMATIN_ALPHAS}
            self.parts.append((test_rows, context_mean, basis, level, kmer, binding))

    def predict(self, form: Form) -> np.ndarray:
        predicted = np.zeros_like(self.targets, dtype=np.float64)
        k, share = form.components, form.kmer_share
        for test_rows, context_mean, basis, level, kmer, binding in self.parts:
            loadings = np.zeros((len(test_rows), k))
            if share > 0:
                loadings += share * kmer[form.kmer_alpha][:, :k]
            if share < 1:
                loadings += (1 - share) * binding[form.chromatin_alpha][:, :k]
            predicted[test_rows] = profiles_of(np.c_[level[form.level_alpha], loadings],
                                               context_mean, basis[:k])
        return predicted


def cross_validate(features: np.ndarray, targets: np.ndarray, positions: np.ndarray,
                   kmer_columns: int, log=print, fold_count: int = FOLDS) -> Dict:
    """Chooses the Form on the training genes alone (`block_folds` of their TSS positions;
    deterministic, no seed involved). `features`: the k-mer spectra (first `kmer_columns`
    columns), then the binding features."""
    folds = block_folds(positions, fold_count)
    parts = FoldParts(folds, features, targets, kmer_columns)
    # Level: all-pairs Spearman (the level and spread do not depend on the loadings' settings,
    # which barely move all-pairs); the loadings' settings: within-gene, which the level and
    # the (positive) spread cannot change.
    first = Form(LEVEL_ALPHAS[0], LOADING_ALPHAS[0], CHROMATIN_ALPHAS[0], 1.0, COMPONENTS[0])
    level_scores = {a: cv_scores(parts.predict(Form(a, first.kmer_alpha, first.chromatin_alpha,
                                                    1.0, first.components)), targets)[0]
                    for a in LEVEL_ALPHAS}
    level_alpha = max(LEVEL_ALPHAS, key=lambda a: level_scores[a])
    grid = []
    for k in COMPONENTS:
        for share in KMER_SHARES:
            for kmer_alpha in (LOADING_ALPHAS if share > 0 else LOADING_ALPHAS[:1]):
                for chromatin_alpha in (CHROMATIN_ALPHAS if share < 1 else CHROMATIN_ALPHAS[:1]):
                    grid.append(Form(level_alpha, kmer_alpha, chromatin_alpha, share, k))
    scores = {form: cv_scores(parts.predict(form), targets) for form in grid}
    form = max(grid, key=lambda f: scores[f][1])  # first of equals: the grid's order
    best = scores[form]
    log(f"expression: cross-validation chose {form}: all-pairs {best[0]:.3f}, within-gene "
        f"median {best[1]:.3f}")
    spectra_only = max((f for f in grid if f.kmer_share == 1.0), key=lambda f: scores[f][1])
    binding_only = max((f for f in grid if f.kmer_share == 0.0), key=lambda f: scores[f][1])
    chosen_predicted = parts.predict(form)
    previous_predicted = out_of_fold(folds, features[:, :kmer_columns], targets, kmer_columns,
                                     PREVIOUS_FORM)
    previous = cv_scores(previous_predicted, targets)
    # Paired against the previous form: per gene (a gene with a constant observed profile is
    # dropped from both alike; predictions are never constant) and per fold (the fold's median).
    gain = row_spearman(chosen_predicted, targets) - row_spearman(previous_predicted, targets)
    folds_better = sum(
        int(np.median(row_spearman(chosen_predicted[rows], targets[rows]))
            > np.median(row_spearman(previous_predicted[rows], targets[rows])))
        for _, rows in folds)
    # Mean-profile baseline on the same folds, for the card.
    baseline = np.zeros_like(targets, dtype=np.float64)
    for fit_rows, test_rows in folds:
        baseline[test_rows] = targets[fit_rows].mean(axis=0)
    baseline_within = cv_scores(baseline, targets)[1]
    log(f"expression: best with the spectra alone {scores[spectra_only][1]:.3f} within-gene, "
        f"the binding features alone {scores[binding_only][1]:.3f}; the previous package's "
        f"form {previous[0]:.3f} all-pairs, {previous[1]:.3f} within-gene; the mean-profile "
        f"baseline {baseline_within:.3f} within-gene")
    return {**asdict(form),
            "cv_spearman_all_pairs": best[0], "cv_spearman_within_gene_median": best[1],
            "cv_spectra_only_spearman_within_gene_median": scores[spectra_only][1],
            "cv_binding_only_spearman_within_gene_median": scores[binding_only][1],
            "cv_previous_form_spearman_all_pairs": previous[0],
            "cv_previous_form_spearman_within_gene_median": previous[1],
            "cv_gain_over_previous_mean": float(gain.mean()),
            "cv_gain_over_previous_standard_error": float(gain.std() / np.sqrt(len(gain))),
            "cv_folds_better_than_previous": folds_better,
            "cv_baseline_tissue_mean_spearman_within_gene_median": baseline_within}


# The third round's confirmation (protocol in the comments above `Form`).
CONFIRM_FOLDS = 7
CONFIRM_CENTRES = tuple(range(-3900, 3901, 200))   # A: every other one from -3,900; B: the rest
CONFIRM_PLACEMENTS = 2


def confirm_placements(out_path: str, log=print) -> Dict:
    """Scores the package's binding windows (P) and the interleaved placements (I) with
    `cross_validate` on the old 5 blocks (a check) and on CONFIRM_FOLDS blocks (the decision);
    writes every figure to `out_path` (JSON). Training genes only."""
    import torch
    torch.set_num_threads(int(os.environ.get("DNASERVE_TRAIN_THREADS", "1")))
    dataset = data.load()
    train_rows, _ = dataset.split()
    windows = window_ids(common.chr20(), [dataset.genes[i] for i in train_rows])
    kmer = spectra(windows)
    targets = dataset.targets[train_rows].astype(np.float64)
    positions = np.array([dataset.genes[i].tss for i in train_rows])
    chromatin_dir = chromatin_package(os.path.join(common.ROOT, "worker", "packages"))
    configs = {"P": promoter_chromatin(chromatin_dir),
               "I": promoter_chromatin(chromatin_dir, CONFIRM_CENTRES, CONFIRM_PLACEMENTS)}
    result: Dict = {}
    per_gene: Dict = {}
    for name, module in configs.items():
        started = time.monotonic()
        features = np.c_[kmer, binding_features(module, windows)]
        log(f"confirm: {name} features in {time.monotonic() - started:.0f} s")
        for fold_count in (FOLDS, CONFIRM_FOLDS):
            chosen = cross_validate(features, targets, positions, kmer.shape[1],
                                    lambda m: log(f"confirm {name} {fold_count}: {m}"),
                                    fold_count)
            form = Form(**{f: chosen[f] for f in Form.__dataclass_fields__})
            folds = block_folds(positions, fold_count)
            predicted = out_of_fold(folds, features, targets, kmer.shape[1], form)
            per_gene[(name, fold_count)] = (folds, predicted)
            result[f"{name}_{fold_count}"] = chosen
    for fold_count in (FOLDS, CONFIRM_FOLDS):
        folds, p_pred = per_gene[("P", fold_count)]
        _, i_pred = per_gene[("I", fold_count)]
        gain = row_spearman(i_pred, targets) - row_spearman(p_pred, targets)
        result[f"I_over_P_{fold_count}"] = {
            "gain_mean": float(gain.mean()),
            "gain_standard_error": float(gain.std() / np.sqrt(len(gain))),
            "blocks_better": sum(
                int(np.median(row_spearman(i_pred[rows], targets[rows]))
                    > np.median(row_spearman(p_pred[rows], targets[rows])))
                for _, rows in folds),
            "blocks": len(folds)}
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=1, sort_keys=True)
    return result


def context_wordings(dataset: data.Dataset) -> List[List[str]]:
    return [data.training_descriptions(e) for e in dataset.epigenomes]


def build_module(fit: Fit, dataset: data.Dataset, chromatin):
    """The eager ExpressionModel of a fit (scripted by `export`); `chromatin`: the
    PromoterChromatin the fit's binding features came from."""
    from training import expression_context as matching
    from training.expression_net import ContextMatcher, ExpressionModel
    vocab, entry_wording, entry_vocab, entry_value, per_context = matching.sparse_wordings(
        context_wordings(dataset))
    matcher = ContextMatcher(vocab, entry_wording, entry_vocab, entry_value, per_context,
                             matching.THRESHOLD)
    return ExpressionModel(REGIONS, chromatin, fit.mean, fit.scale, fit.weights, fit.bias,
                           fit.components, fit.context_mean, matcher).eval()


def export(model):
    import torch
    warnings.filterwarnings("ignore", message=".*TorchScript.*")
    example = (torch.randint(1, 6, (2, data.WINDOW_BP)),
               torch.tensor([data.text_ids("Liver, liver", TEXT_MAX_TOKENS),
                             data.text_ids("heart muscle", TEXT_MAX_TOKENS)]))
    return freeze_checked(model, example, MODEL_ID)


def manifest(seed: int, metrics: Dict[str, float], genes: int, dataset: data.Dataset) -> Dict:
    from training import expression_context as matching
    from training import expression_ontology as ontology
    return {
        "format_version": common.FORMAT_VERSION,
        "id": MODEL_ID,
        "task": "expression",
        "description": (
            "Expression regressor trained on Roadmap Epigenomics RNA-seq (56 epigenomes, "
            f"{genes} chr20 genes): ln(TPM+1) of one 9,198 bp TSS-centred window in the "
            "training context a free-text description matches (character-trigram similarity; "
            "the response names it). Gene level plus context deviations: k-mer spectra of the "
            "window and the promoter's TF binding as predicted by the bundled chromatin-human "
            "network (embedded) -> ridge regressions onto the level and the loadings of the "
            "training matrix's context components. On held-out chr20 genes Spearman "
            f"{metrics['model_spearman_all_pairs']:.2f} over gene-sample pairs, "
            f"{metrics['model_spearman_within_gene_median']:.2f} across samples within a gene "
            "(median). Small training set: a rough, chr20-only estimate."),
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
        # With the curated ontology terms and the served free-text rule (expression_ontology).
        "description_contexts": ontology.with_ontology({
            "method": matching.METHOD,
            "threshold": matching.THRESHOLD,
            "contexts": [{"id": e.eid, "name": e.name, "wordings": wordings}
                         for e, wordings in zip(dataset.epigenomes, context_wordings(dataset))],
        }, ontology.read_table()),
    }


def train(out_dir: str, seed: int = DEFAULT_SEED, log=print) -> List[str]:
    import torch
    torch.set_num_threads(int(os.environ.get("DNASERVE_TRAIN_THREADS", "2")))
    common.seeded(seed)
    started = time.monotonic()
    dataset = data.load()
    train_rows, held_rows = dataset.split()
    log(f"expression: {len(dataset.genes)} chr20 genes x {len(dataset.epigenomes)} epigenomes; "
        f"{len(train_rows)} train, {len(held_rows)} held out")
    chromatin_dir = chromatin_package(out_dir)
    chromatin = promoter_chromatin(chromatin_dir)
    log(f"expression: binding features from {chromatin_dir}")
    windows = window_ids(common.chr20(), [dataset.genes[i] for i in train_rows])
    kmer = spectra(windows)
    features = np.c_[kmer, binding_features(chromatin, windows)]
    targets = dataset.targets[train_rows].astype(np.float64)
    positions = np.array([dataset.genes[i].tss for i in train_rows])
    chosen = cross_validate(features, targets, positions, kmer.shape[1], log)
    form = Form(**{name: chosen[name] for name in Form.__dataclass_fields__})
    fit = Fit(features, targets, kmer.shape[1], form)
    scripted = export(build_module(fit, dataset, chromatin))
    seconds = time.monotonic() - started
    with plots.capture() as captured:
        metrics = evaluate_module(scripted, TEXT_MAX_TOKENS, dataset)
    final = manifest(seed, metrics, len(train_rows), dataset)
    card = model_card(final, metrics, dataset, train_rows, held_rows, seconds, chosen)
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


def held_out_arrays(module, max_tokens: int, dataset: data.Dataset = None) -> Dict:
    """The held-out predictions and observations behind every card figure (also for plots):
    `observed`, `predicted` (canonical wordings), `unseen` (unseen wordings) and
    `baseline_tissue_mean`, each [held-out genes, epigenomes]; `genes` and `epigenomes` name the
    rows and columns."""
    dataset = dataset or data.load()
    train_rows, held_rows = dataset.split()
    windows = window_ids(common.chr20(), [dataset.genes[i] for i in held_rows])
    observed = dataset.targets[held_rows]
    return {
        "observed": observed,
        "predicted": predict_all(module, max_tokens, windows,
                                 [data.canonical_description(e) for e in dataset.epigenomes]),
        "unseen": predict_all(module, max_tokens, windows,
                              [data.unseen_description(e) for e in dataset.epigenomes]),
        # Each sample's mean over the training genes (no held-out data used).
        "baseline_tissue_mean": np.broadcast_to(dataset.targets[train_rows].mean(axis=0),
                                                observed.shape),
        "genes": [dataset.genes[i].symbol for i in held_rows],
        "epigenomes": [e.eid for e in dataset.epigenomes],
        "windows": windows,
        "train_genes": len(train_rows),
    }


def match_accuracy(descriptions: Sequence[str], dataset: data.Dataset) -> float:
    """Share of the epigenomes whose description's best match (expression_context) is itself."""
    from training import expression_context as matching
    wordings = context_wordings(dataset)
    hits = 0
    for j, description in enumerate(descriptions):
        sims = matching.similarities(description, wordings)
        hits += int(int(np.argmax(sims)) == j)
    return hits / len(descriptions)


# Free-text probes for the model-vs-reference agreement check (besides the 112 evaluation
# wordings); the unmatched ones check the fallback to the mean over contexts.
PROBES = ("liver", "heart", "brain", "blood", "lung tissue", "adult heart", "T cells",
          "fetal brain tissue", "H1 Cells, esc", "qwzx kcdj vbnm", "xylophone", "")


def model_agreement(arrays: Dict, dataset: data.Dataset, module, max_tokens: int) -> float:
    """Share of descriptions for which the exported model predicts exactly what the reference
    rule (expression_context) says: the best context's prediction (tied contexts averaged), or
    the mean over all contexts when unmatched. Checked on every held-out window."""
    from training import expression_context as matching
    wordings = context_wordings(dataset)
    canonical = arrays["predicted"]  # [genes, contexts], one per context (its own wording)
    descriptions = ([data.canonical_description(e) for e in dataset.epigenomes]
                    + [data.unseen_description(e) for e in dataset.epigenomes] + list(PROBES))
    # The model's predictions for the canonical and unseen wordings are already in `arrays`
    # (the same module on the same inputs, `predict_all`): only the probes are run again, which
    # halves the cost of this check (each forward runs the embedded chromatin network).
    served = np.c_[canonical, arrays["unseen"]]
    agree = 0
    for index, d in enumerate(descriptions):
        sims = np.array(matching.similarities(d, wordings))
        if sims.max() >= matching.THRESHOLD:
            chosen = sims >= sims.max() - 1e-9
        else:
            chosen = np.ones(len(sims), dtype=bool)
        # Outputs are clamped at 0 after mixing; compare where no clamp can have acted.
        expected = canonical[:, chosen].mean(axis=1)
        got = (served[:, index] if index < served.shape[1]
               else predict_all(module, max_tokens, arrays["windows"], [d])[:, 0])
        keep = canonical[:, chosen].min(axis=1) > 0
        agree += int(np.allclose(got[keep], expected[keep], atol=1e-4))
    return agree / len(descriptions)


def evaluate_module(module, max_tokens: int, dataset: data.Dataset = None) -> Dict[str, float]:
    dataset = dataset or data.load()
    arrays = held_out_arrays(module, max_tokens, dataset)
    truth, canonical, unseen = arrays["observed"], arrays["predicted"], arrays["unseen"]
    metrics: Dict[str, float] = {"held_out_genes": float(len(truth)),
                                 "train_genes": float(arrays["train_genes"]),
                                 "epigenomes": float(len(dataset.epigenomes))}
    metrics.update(correlation_report("model_", canonical, truth))
    metrics.update(correlation_report("model_unseen_wording_", unseen, truth))
    metrics.update(correlation_report("baseline_tissue_mean_", arrays["baseline_tissue_mean"],
                                      truth))
    plots.offer_expression(canonical, truth, arrays["baseline_tissue_mean"])
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
    metrics["description_match_canonical_accuracy"] = match_accuracy(
        [data.canonical_description(e) for e in dataset.epigenomes], dataset)
    metrics["description_match_unseen_accuracy"] = match_accuracy(
        [data.unseen_description(e) for e in dataset.epigenomes], dataset)
    metrics["description_match_model_agreement"] = model_agreement(arrays, dataset, module,
                                                                    max_tokens)
    metrics["forward_ms_one_window_one_thread"] = forward_ms(module, arrays["windows"][:1],
                                                             max_tokens)
    # Undefined correlations (a constant prediction) are left out rather than reported as NaN.
    return {name: value for name, value in metrics.items() if np.isfinite(value)}


def load_package(package_dir: str):
    """(TorchScript module in eval mode, text max_tokens) of a package."""
    import torch
    with open(os.path.join(package_dir, "manifest.json"), encoding="utf-8") as handle:
        manifest_json = json.load(handle)
    module = torch.jit.load(os.path.join(package_dir, manifest_json["weights"]))
    module.eval()
    return module, manifest_json["text_tokenizer"]["max_tokens"]


# The package whose variant background (issue 25 quantiles) evaluate-models recomputes and ships:
# the task's default (training/scorer_backgrounds.py).
VARIANT_BACKGROUND = {"expression-human"}


def evaluate(package_dir: str) -> Dict[str, float]:
    return evaluate_module(*load_package(package_dir))


def package_arrays(package_dir: str) -> Dict:
    """`held_out_arrays` of a package (predicted vs observed, for plots)."""
    return held_out_arrays(*load_package(package_dir))


def forward_ms(module, window: np.ndarray, max_tokens: int) -> float:
    """CPU milliseconds of one forward pass (one window, one description, one thread)."""
    import torch
    from training import nets
    text = torch.tensor([data.text_ids("Liver, liver", max_tokens)])
    return nets.time_forward(module, (torch.from_numpy(window), text))


# Informative, machine-dependent: printed by scripts/evaluate-models, not compared with the card.
NOT_COMPARED = {"forward_ms_one_window_one_thread"}


# --- model card ----------------------------------------------------------------------------

# What each card metric means (the `meaning` column).
MEANINGS = {
    "held_out_genes": "genes whose TSS window touches the held-out region (evaluation only)",
    "train_genes": "genes used for fitting and cross-validation",
    "epigenomes": "Roadmap contexts (columns) in training and evaluation",
    "model_spearman_all_pairs": "rank agreement over every (held-out gene, context) pair",
    "model_spearman_within_tissue_median":
        "ranking genes inside one context, median over the 56 contexts",
    "model_spearman_within_tissue_mean": "as above, mean over the 56 contexts",
    "model_spearman_within_gene_median":
        "ranking the 56 contexts inside one gene (tissue specificity), median over genes",
    "model_mse": "mean squared error of ln(TPM+1) over all pairs",
    "model_unseen_wording_spearman_all_pairs":
        "all-pairs Spearman with a wording no training example had",
    "model_unseen_wording_spearman_within_tissue_median": "within-context, unseen wording",
    "model_unseen_wording_spearman_within_tissue_mean": "within-context mean, unseen wording",
    "model_unseen_wording_spearman_within_gene_median": "within-gene, unseen wording",
    "model_unseen_wording_mse": "mean squared error, unseen wording",
    "baseline_tissue_mean_spearman_all_pairs":
        "mean-profile baseline: each context's mean over the training genes",
    "baseline_tissue_mean_spearman_within_gene_median":
        "mean-profile baseline, within-gene (the figure to beat for tissue specificity)",
    "baseline_tissue_mean_mse": "mean-profile baseline, mean squared error",
    "baseline_gene_mean_oracle_spearman_all_pairs":
        "oracle: the held-out gene's own mean over its other 55 contexts (uses held-out data)",
    "baseline_gene_mean_oracle_spearman_within_tissue_median": "oracle, within-context median",
    "baseline_gene_mean_oracle_spearman_within_tissue_mean": "oracle, within-context mean",
    "baseline_gene_mean_oracle_mse": "oracle, mean squared error",
    "wording_mean_abs_change":
        "mean absolute change of a prediction between the canonical and the unseen wording",
    "description_match_canonical_accuracy":
        "share of the 56 canonical wordings matched to their own context",
    "description_match_unseen_accuracy":
        "share of the 56 unseen wordings matched to their own context",
    "description_match_model_agreement":
        "share of 124 descriptions for which the model predicts for the context(s) the "
        "reference matching rule picks (1 = the served prediction is the reported context's)",
}

# The previous package (code revision c910525, committed in 5686cf1: k-mer spectra only, rank
# profiles, penalties and K chosen on the blocked folds), as its card reported on the same
# held-out genes.
PREVIOUS_REVISION = "c910525"
PREVIOUS = {
    "model_spearman_all_pairs": 0.5215,
    "model_spearman_within_gene_median": 0.3240,
    "model_spearman_within_tissue_median": 0.5051,
    "model_mse": 2.7406,
    "model_unseen_wording_spearman_all_pairs": 0.5215,
    "model_unseen_wording_spearman_within_gene_median": 0.3240,
}
COMPARED = (("model_spearman_all_pairs", "baseline_tissue_mean_spearman_all_pairs", ">= 0.5"),
            ("model_spearman_within_gene_median",
             "baseline_tissue_mean_spearman_within_gene_median", ">= 0.35 and above baseline"),
            ("model_spearman_within_tissue_median", None, ""),
            ("model_mse", "baseline_tissue_mean_mse", ""),
            ("model_unseen_wording_spearman_all_pairs", None, ""),
            ("model_unseen_wording_spearman_within_gene_median", None, ""))


def metrics_table(metrics: Dict[str, float]) -> List[str]:
    """The card's metrics in training/cards.py's format (scripts/evaluate-models compares them)."""
    return cards.metrics_table({k: metrics[k] for k in sorted(metrics) if k not in NOT_COMPARED},
                               MEANINGS).split("\n")


def comparison_table(metrics: Dict[str, float]) -> List[str]:
    fmt = cards.format_value
    rows = [f"| figure (held-out genes) | this package | previous package ({PREVIOUS_REVISION}) | "
            "mean-profile baseline | target (issue 15) |", "|---|---|---|---|---|"]
    for name, baseline, target in COMPARED:
        rows.append(f"| {name.replace('model_', '')} | {fmt(metrics[name])} | "
                    f"{fmt(PREVIOUS[name])} | "
                    f"{fmt(metrics[baseline]) if baseline else 'n/a'} | {target} |")
    return rows


def model_card(manifest_json: Dict, metrics: Dict[str, float], dataset: data.Dataset,
               train_rows: Sequence[int], held_rows: Sequence[int], seconds: float,
               chosen: Dict) -> str:
    from training import expression_context as matching
    from training import expression_ontology as ontology
    symbol = sum(1 for g in dataset.genes if g.how == "symbol")
    regions = ", ".join(f"{k}-mers of [{lo - data.HALF_WINDOW:+}, {hi - data.HALF_WINDOW:+})"
                        for lo, hi, k in REGIONS)
    lines = card_head(MODEL_ID, manifest_json["description"], "expression") + [
        f"| inputs | char ids [B, {data.WINDOW_BP}] (sense strand, TSS at index "
        f"{data.HALF_WINDOW}); description byte ids [B, D] (byte + 1, D <= {TEXT_MAX_TOKENS}) |",
        "| output | [B] ln(TPM + 1) in the matched context (clamped at 0) |",
        f"| seed | {manifest_json['seed']} |",
        f"| training time | {seconds:.0f} s ({os.environ.get('DNASERVE_TRAIN_THREADS', '2')} "
        "thread(s)) |",
        "| forward, one window, one thread | "
        f"{metrics.get('forward_ms_one_window_one_thread', float('nan')):.1f} ms CPU (TorchScript, "
        "Python) |",
        f"| code revision | {common.git_revision()} |",
        "",
        "## Model",
        "",
        "prediction = level(x) + spread(x) * (m[c] + sum_k u_k(x) V[k, c]) for the context c the "
        "description matches:",
        "",
        f"- x: normalised k-mer spectra of the window ({regions}; positions relative to the TSS) "
        "and the promoter's predicted TF binding: the bundled chromatin-human network (its "
        "frozen module is part of this package) on 1,000 bp windows centred every "
        f"{CHROMATIN_CENTRES[1] - CHROMATIN_CENTRES[0]} bp from TSS{CHROMATIN_CENTRES[0]:+} to "
        f"TSS{CHROMATIN_CENTRES[-1]:+} ({len(CHROMATIN_CENTRES)} windows), and per learned "
        f"(cell line, TF) ChIP-seq pair (81: HepG2, K562, GM12878, ... with lineage factors "
        f"such as FOXA, HNF4A, CEBPB, SPI1, GATA) the mean and the max of ln(p + "
        f"{CHROMATIN_FLOOR:g}) over the windows. All standardised with the training genes' "
        "mean and spread.",
        "- level (the gene's mean ln(TPM+1) over the 56 contexts) and ln spread (its "
        "across-context standard deviation) are one ridge regression on x; the loadings u are "
        f"{chosen['kmer_share']:g} x a ridge on the spectra + {1 - chosen['kmer_share']:g} x a "
        "ridge on the binding features (one linear map); all fitted in closed form. The "
        "k-mer spectra mostly carry promoter CpG content (broad against restricted "
        "expression); which lineage factors bind a promoter is closer to which tissues use it.",
        f"- m and V (K = {chosen['components']}) are per-context parameters from the training "
        "matrix: the mean and the top principal components of the training genes' within-gene "
        "profiles as ranks (each gene's 56 values ranked, ties averaged, centred and scaled to "
        "unit spread). The loadings are fitted to those rank profiles, which is what the "
        "within-gene Spearman scores, and one extreme context counts as one rank rather than as "
        "most of a gene's variance.",
        f"- Ridge penalties and K chosen by cross-validation on the training genes: {FOLDS} "
        "contiguous blocks of chr20 (training genes ordered by TSS), each block predicted by a "
        f"fit without the genes within {BLOCK_BUFFER_BP // 1000:,} kb of it (neighbouring genes "
        "share chromatin domains and tissue profiles; this is how the held-out region stands to "
        f"the training genes). Level penalty {chosen['level_alpha']:g} (by all-pairs Spearman); "
        f"by within-gene Spearman: loading penalties {chosen['kmer_alpha']:g} (spectra) and "
        f"{chosen['chromatin_alpha']:g} (binding), spectra share {chosen['kmer_share']:g} (of "
        f"{', '.join(f'{x:g}' for x in KMER_SHARES)}) and K {chosen['components']}; scored "
        "over the pooled out-of-fold genes. Cross-validated: "
        f"all-pairs {chosen['cv_spearman_all_pairs']:.3f}, within-gene median "
        f"{chosen['cv_spearman_within_gene_median']:.3f} (best with the spectra alone "
        f"{chosen['cv_spectra_only_spearman_within_gene_median']:.3f}, with the binding "
        f"features alone {chosen['cv_binding_only_spearman_within_gene_median']:.3f}); on the "
        f"same folds the previous package's fitting (spectra only, penalties and K of "
        f"{PREVIOUS_REVISION}) scores {chosen['cv_previous_form_spearman_all_pairs']:.3f} and "
        f"{chosen['cv_previous_form_spearman_within_gene_median']:.3f}, the mean-profile "
        f"baseline {chosen['cv_baseline_tissue_mean_spearman_within_gene_median']:.3f} "
        "within-gene. The within-gene median of 411 genes moves by about 0.01 with nuisance "
        "choices (shifting the binding windows by 50 bp moved the binding-only figure between "
        "0.35 and 0.37, the mix of both 0.353 to 0.378, always above the spectra alone). "
        "Paired with the previous form, the chosen one's per-gene within-gene Spearman is "
        f"{chosen['cv_gain_over_previous_mean']:+.3f} on average (standard error "
        f"{chosen['cv_gain_over_previous_standard_error']:.3f}), its median higher in "
        f"{chosen['cv_folds_better_than_previous']} of the {FOLDS} folds.",
        "",
        "## Description matching",
        "",
        "The package's manifest carries the 56 contexts (`description_contexts`: Roadmap id, "
        "standardized name and the wordings that describe it, built from the Roadmap summary "
        "table). A description is "
        "matched by character-trigram cosine similarity (`char-trigram-cosine`: ASCII letters "
        "lower-cased, other bytes than [a-z0-9] turned into spaces, one space added at each "
        "end; a context scores its best wording). The model predicts for the best context (tied "
        "contexts averaged); when the best similarity is below "
        f"{matching.THRESHOLD} the description is not matched: the model then predicts the mean "
        "over all 56 contexts and the worker reports `description_match.matched = false` "
        "(flagged, not refused: the prediction is still the gene-level estimate). This is the "
        "model's own rule; the worker resolves the context first, by the rule of the next "
        "section, and returns the best 3 contexts with their score in every expression "
        "response.",
        "",
        *ontology.card_lines(manifest_json["description_contexts"]["contexts"]),
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
        "`liver tissue: Liver`, `Adult Liver`).",
        "",
        "## Held-out region and split",
        "",
        f"Held out: genes whose window touches chr20:{common.HELD_OUT[0]:,}-"
        f"{common.HELD_OUT[1]:,} (the last 10 Mb; `HELD_OUT` in scripts/training/common.py): "
        f"{len(held_rows)} genes, evaluation only. Training: the {len(train_rows)} genes whose "
        "whole window lies before it. Penalties and K were chosen on blocked folds of the "
        "training genes; "
        "nothing was tuned on the held-out genes.",
        "",
        "## Against the previous package and the baseline",
        "",
    ]
    lines += comparison_table(metrics)
    all_pairs = metrics["model_spearman_all_pairs"]
    within = metrics["model_spearman_within_gene_median"]
    baseline = metrics["baseline_tissue_mean_spearman_within_gene_median"]
    lines += [
        "",
        f"Against issue 15's targets: all-pairs Spearman {all_pairs:.3f} "
        f"({'meets' if all_pairs >= 0.5 else 'misses'} >= 0.5); within-gene, across-context "
        f"median {within:.3f}, {'above' if within > baseline else 'not above'} the mean-profile "
        f"baseline's {baseline:.3f}; it {'meets' if within >= 0.35 else 'misses'} the 0.35 "
        "target. Cross-validation on blocked folds of the training genes estimated "
        f"{chosen['cv_spearman_within_gene_median']:.3f} (previous package's fitting "
        f"{chosen['cv_previous_form_spearman_within_gene_median']:.3f}, mean-profile baseline "
        f"{chosen['cv_baseline_tissue_mean_spearman_within_gene_median']:.3f} on the same "
        f"folds); held out, the median over {len(held_rows)} genes is a noisy figure. The "
        "within-tissue ranking (which genes are high in one context) is where the model is "
        "strong; how one gene varies across the 56 contexts comes mostly from promoter "
        "composition (CpG-island promoters are broadly expressed, CpG-poor ones "
        "tissue-restricted) and, less, from the predicted binding of lineage factors.",
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
        f"- {len(train_rows)} training genes from one chromosome: a linear model of k-mer "
        "spectra and predicted promoter binding learns coarse promoter composition (CpG content "
        "and the like) and some lineage-factor signal; it cannot know enhancers beyond "
        "+-4.6 kb, mRNA stability, or anything about a gene's function. The binding features "
        "are the chromatin-human network's predictions (held-out median AUROC 0.87, in cell "
        "lines), not measured binding in the 56 contexts.",
        "- Contexts are the 56 Roadmap epigenomes only. A description is mapped to one of them "
        "by shared letter trigrams, not by meaning: `hepatocyte` reaches the HepG2 cell line, "
        "not `Liver`; `adult heart` reaches `Liver` (through the wording `Adult Liver`); "
        "`T cells` reaches `H1 Cells`; a word shared by several contexts (`brain`) picks the one "
        "whose wording is closest in letters. The response names the context used, so a caller "
        "can see it and rephrase.",
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
