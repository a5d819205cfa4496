"""Promoter models: human (default, char), human k-mer, Drosophila and yeast.

Each model maps one window of sense-strand sequence to a promoter probability.

- promoter-human, promoter-human-kmer6: GRCh37 chr20 (Debian vt-examples) + hg19 refGene. Positives
  are 2,000 bp windows around each distinct annotated TSS on the transcript's strand (during
  training the TSS sits anywhere within +-400 bp of the centre, so every window of the served
  2,000/1,000 grid that has a TSS near its middle looks like a training positive); negatives are
  chr20 windows that hold no annotated TSS at all, either orientation. Fit on FIT, epochs chosen
  on VALIDATION, scored on HELD_OUT (common.py).
- promoter-fly: dm3 2 kb upstream sequences (Debian r-bioc-biostrings). Positives are the 1 kb
  directly upstream of each distinct TSS; negatives are (a) the 1 kb further upstream
  (-2,000..-1,001) when no annotated TSS falls in it and (b) dinucleotide shuffles of positives.
  Split by chromosome arm: chr2L held out, chr2R validation, the rest fitted.
- promoter-yeast: S. cerevisiae EPDnew promoters, -200..+199 around the TSS (../shared/data).
  Negatives are dinucleotide shuffles of promoters (no other yeast sequence is reachable here).
  The file has no coordinates, so the split is by EPDnew id (FP number mod 10: 0-1 held out,
  2 validation).

No Arabidopsis model: no labelled Arabidopsis promoter data is reachable here (no Debian package
or shared file holds any).
"""

import gzip
import json
import os
import random
import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from training import cards, common, metrics, nets, plots
from training.shuffle import dinucleotide_shuffle

TASK = "promoter"
HUMAN_CONTEXT, HUMAN_STRIDE = 2000, 1000
HUMAN_JITTER = 400
FLY_CONTEXT, FLY_STRIDE = 1000, 500
YEAST_CONTEXT, YEAST_STRIDE = 400, 200
MAX_N_FRACTION = 0.05
# Max-pool factors of the two conv stages per context: about 60 positions reach the transformer.
POOLS = {HUMAN_CONTEXT: (8, 4), FLY_CONTEXT: (4, 4), YEAST_CONTEXT: (4, 2)}

FLY_PACKAGE = "r-bioc-biostrings"
FLY_MEMBER = "usr/lib/R/site-library/Biostrings/extdata/dm3_upstream2000.fa.gz"
FLY_HELD_OUT = {"chr2L"}
FLY_VALIDATION = {"chr2R"}
FLY_FIT = {"chr3L", "chr3R", "chrX", "chr4"}
FLY_EPOCH_POSITIVES = 4000
YEAST_FILE = os.path.join(common.SHARED_DATA, "promoter", "yeast_epdnew_scerevisiae_401bp.fa")


# ---------------------------------------------------------------------------------------------
# The network


class PromoterNet(nn.Module):
    """Window tokens [B, T] -> promoter probability [B].

    Input encoding (one-hot of char ids, or a learned k-mer embedding), two conv + max-pool
    stages (x16 shorter), a 2-layer pre-norm transformer encoder (d 64, 4 heads), mean and max
    pooling, one linear unit, sigmoid.
    """

    def __init__(self, kmer: int, context: int, dropout: float = 0.1):
        super().__init__()
        self.kmer = kmer
        if kmer > 0:
            self.encode = nets.KmerEmbedding(kmer, 32)
            in_channels, kernel = 32, 7
        else:
            self.encode = nets.OneHot()
            in_channels, kernel = 4, 11
        pools = POOLS[context]
        self.trunk = nets.ConvTransformerTrunk(in_channels, 32, 64, (kernel, 7), pools, layers=2,
                                               heads=4,
                                               max_positions=context // (pools[0] * pools[1]) + 8,
                                               dropout=dropout)
        self.head = nn.Linear(128, 1)

    def logits(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.trunk(self.encode(ids))).squeeze(-1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.logits(ids))



# ---------------------------------------------------------------------------------------------
# Data: human


class HumanData:
    """chr20 windows around refGene TSSs and windows without any TSS."""

    def __init__(self, context: int = HUMAN_CONTEXT):
        self.context = context
        self.genome = common.chr20_ids()
        self.tss = sorted({(t.tss, t.strand) for t in common.refgene_chr20()})
        self.tss_positions = np.array(sorted({p for p, _ in self.tss}), dtype=np.int64)
        self.is_n = (self.genome == 5).astype(np.int32)
        self.n_prefix = np.concatenate(([0], np.cumsum(self.is_n)))

    def tss_window(self, tss: int, strand: str, offset: int) -> Tuple[int, Optional[np.ndarray]]:
        """(genomic start, ids) of the sense-strand window whose index context/2 + offset is the
        TSS."""
        half = self.context // 2
        start = tss - half - offset if strand == "+" else tss - half + 1 + offset
        ids = self.genome[start:start + self.context]
        if strand == "-":
            ids = nets.reverse_complement_ids(ids)
        return start, ids

    def clean(self, start: int, end: int) -> bool:
        n = self.n_prefix[end] - self.n_prefix[start]
        return n <= MAX_N_FRACTION * (end - start)

    def has_tss(self, start: int, end: int) -> bool:
        lo = np.searchsorted(self.tss_positions, start)
        return lo < len(self.tss_positions) and self.tss_positions[lo] < end

    def positives(self, region: Tuple[int, int], offset_fn: Callable[[], int],
                  margin: int) -> np.ndarray:
        """One sense-strand window per TSS whose window (for any offset within `margin`) lies in
        `region`; offsets drawn by offset_fn."""
        rows = []
        for tss, strand in self.tss:
            lo = tss - self.context // 2 - margin
            hi = tss + self.context // 2 + margin + 1
            if not (region[0] <= lo and hi <= region[1]):
                continue
            start, ids = self.tss_window(tss, strand, offset_fn())
            if self.clean(start, start + self.context):
                rows.append(ids)
        return np.stack(rows)

    def random_negatives(self, region: Tuple[int, int], count: int,
                         rng: np.random.Generator) -> np.ndarray:
        rows = []
        while len(rows) < count:
            start = int(rng.integers(region[0], region[1] - self.context))
            end = start + self.context
            if self.has_tss(start, end) or not self.clean(start, end):
                continue
            ids = self.genome[start:end]
            rows.append(nets.reverse_complement_ids(ids) if rng.random() < 0.5 else ids)
        return np.stack(rows)

    def tiled_negatives(self, region: Tuple[int, int], stride: int) -> np.ndarray:
        """Windows on the served grid (every `stride` bp, plus strand) without any TSS."""
        rows = []
        for start in range(region[0], region[1] - self.context + 1, stride):
            end = start + self.context
            if not self.has_tss(start, end) and self.clean(start, end):
                rows.append(self.genome[start:end])
        return np.stack(rows)


# ---------------------------------------------------------------------------------------------
# Data: Drosophila and yeast


@dataclass
class FlyUpstream:
    chrom: str
    strand: str
    start0: int  # 0-based start of the 2 kb region
    end0: int    # exclusive
    seq: str     # transcript orientation, ends right before the TSS

    @property
    def tss(self) -> int:
        return self.end0 if self.strand == "+" else self.start0 - 1

    def distal_span(self) -> Tuple[int, int]:
        """Genomic span of seq[:1000], the kilobase further upstream."""
        if self.strand == "+":
            return self.start0, self.start0 + 1000
        return self.end0 - 1000, self.end0


_FLY_HEADER = re.compile(r"^>\S+_up_2000_\S+_-?\d+_([fr])\s+(\S+):(-?\d+)-(\d+)")


def fly_upstream() -> List[FlyUpstream]:
    """Distinct dm3 upstream regions (isoforms sharing a TSS give the same region once)."""
    path = common.debian_file(FLY_PACKAGE, FLY_MEMBER)
    seen, out = set(), []
    header, chunks = None, []

    def flush():
        if header is None:
            return
        match = _FLY_HEADER.match(header)
        if not match:
            raise common.DataError(f"{path}: unexpected header {header!r}")
        chrom, strand = match.group(2), "+" if match.group(1) == "f" else "-"
        start0, end0 = int(match.group(3)) - 1, int(match.group(4))
        seq = "".join(chunks).upper()
        key = (chrom, strand, start0)
        # Regions running off a chromosome start (negative coordinates) are padded: skipped.
        if start0 >= 0 and len(seq) == 2000 and end0 - start0 == 2000 and key not in seen:
            seen.add(key)
            out.append(FlyUpstream(chrom, strand, start0, end0, seq))

    with gzip.open(path, "rt", encoding="ascii") as handle:
        for line in handle:
            line = line.strip()
            if line.startswith(">"):
                flush()
                header, chunks = line, []
            elif line:
                chunks.append(line)
        flush()
    if len(out) < 1000:
        raise common.DataError(f"{path}: only {len(out)} upstream regions")
    return out


def yeast_promoters() -> List[Tuple[int, str]]:
    """(EPDnew FP number, -200..+199 sequence) for every yeast promoter."""
    out, number, chunks = [], None, []
    with open(common.require_shared(YEAST_FILE), encoding="ascii") as handle:
        for line in list(handle) + [">END"]:
            line = line.strip()
            if line.startswith(">"):
                if number is not None:
                    seq = "".join(chunks).upper()
                    if len(seq) >= YEAST_CONTEXT:
                        out.append((number, seq[:YEAST_CONTEXT]))
                match = re.match(r">FP(\d+)", line)
                number, chunks = (int(match.group(1)) if match else None), []
            elif line:
                chunks.append(line)
    if len(out) < 1000:
        raise common.DataError(f"{YEAST_FILE}: only {len(out)} promoters")
    return out


def yeast_split(number: int) -> str:
    r = number % 10
    return "held_out" if r in (0, 1) else "validation" if r == 2 else "fit"


def shuffled_ids(seqs: Sequence[str], rng: random.Random) -> np.ndarray:
    return np.stack([nets.char_ids(dinucleotide_shuffle(s, rng)) for s in seqs])


def ids_of(seqs: Sequence[str]) -> np.ndarray:
    return np.stack([nets.char_ids(s) for s in seqs])


class FlyData:
    def __init__(self):
        regions = fly_upstream()
        tss_by_chrom: Dict[str, List[int]] = {}
        for r in regions:
            tss_by_chrom.setdefault(r.chrom, []).append(r.tss)
        self.tss = {c: np.array(sorted(v)) for c, v in tss_by_chrom.items()}
        self.regions = regions

    def _free_of_tss(self, r: FlyUpstream) -> bool:
        lo, hi = r.distal_span()
        tss = self.tss[r.chrom]
        i = np.searchsorted(tss, lo)
        return not (i < len(tss) and tss[i] < hi)

    def split(self, chroms) -> Tuple[List[str], List[str]]:
        """(proximal positives, TSS-free distal negatives) of the regions on `chroms`."""
        chosen = [r for r in self.regions if r.chrom in chroms]
        proximal = [r.seq[1000:] for r in chosen]
        distal = [r.seq[:1000] for r in chosen if self._free_of_tss(r)]
        return proximal, distal


# ---------------------------------------------------------------------------------------------
# Training


def _bce(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.binary_cross_entropy_with_logits(outputs, targets.float())


def _to_input(kmer: int) -> Callable[[np.ndarray], torch.Tensor]:
    if kmer:
        return lambda rows: torch.from_numpy(nets.kmer_ids(rows, kmer, 1))
    return lambda rows: torch.from_numpy(rows.astype(np.int64))


def calibrate(model: PromoterNet, kmer: int, positives: np.ndarray, negatives: np.ndarray,
              log: nets.Log) -> float:
    """Shifts the output bias so that the default threshold 0.5 maximises F1 on the validation
    windows (training mixes 1 positive to 3 negatives; the genome holds far fewer promoters).
    Returns the shift. AUROC is unchanged by it."""
    to_input = _to_input(kmer)
    view = nets.LogitView(model).eval()
    pos = nets.predict_batches(view, to_input(positives).numpy(), 128)
    neg = nets.predict_batches(view, to_input(negatives).numpy(), 128)
    best = (-1.0, 0.0)
    for shift in np.arange(-6.0, 3.01, 0.1):
        tp = float((pos + shift >= 0).sum())
        fp = float((neg + shift >= 0).sum())
        f1 = 2 * tp / (2 * tp + fp + (len(pos) - tp))
        if f1 > best[0] + 1e-9:
            best = (f1, float(shift))
    with torch.no_grad():
        model.head.bias += best[1]
    log(f"calibrated: bias shift {best[1]:+.1f}, validation F1 at 0.5 {best[0]:.3f}")
    return best[1]


def _validator(kmer: int, positives: np.ndarray, negatives: np.ndarray):
    x = np.concatenate([positives, negatives])
    y = np.concatenate([np.ones(len(positives)), np.zeros(len(negatives))])
    to_input = _to_input(kmer)

    def validate(model: nn.Module) -> float:
        scores = nets.predict_batches(model, to_input(x).numpy(), 128)
        return metrics.auroc(scores, y)
    return validate


@dataclass
class Spec:
    model_id: str
    species: str          # human, fly, yeast
    kmer: int             # 0 = char
    context: int
    stride: int
    is_default: bool
    epochs: int
    lr: float


SPECS = [
    Spec("promoter-human", "human", 0, HUMAN_CONTEXT, HUMAN_STRIDE, True, 8, 2e-3),
    Spec("promoter-human-kmer6", "human", 6, HUMAN_CONTEXT, HUMAN_STRIDE, False, 5, 2e-3),
    Spec("promoter-fly", "fly", 0, FLY_CONTEXT, FLY_STRIDE, False, 3, 2e-3),
    Spec("promoter-yeast", "yeast", 0, YEAST_CONTEXT, YEAST_STRIDE, False, 6, 2e-3),
]


def tokenizer_of(spec: Spec) -> Dict:
    if spec.kmer:
        return {"type": "kmer", "k": spec.kmer, "stride": 1}
    return {"type": "char"}


def _human_training(spec: Spec, rng: np.random.Generator, data: HumanData):
    def epoch_data(epoch: int):
        pos = np.concatenate([
            data.positives(common.FIT, lambda: int(rng.integers(-HUMAN_JITTER, HUMAN_JITTER + 1)),
                           HUMAN_JITTER) for _ in range(2)])
        neg = data.random_negatives(common.FIT, 3 * len(pos), rng)
        return (np.concatenate([pos, neg]),
                np.concatenate([np.ones(len(pos)), np.zeros(len(neg))]).astype(np.float32))
    val_pos = data.positives(common.VALIDATION, lambda: 0, 0)
    val_neg = data.tiled_negatives(common.VALIDATION, spec.stride)
    return epoch_data, _validator(spec.kmer, val_pos, val_neg), (val_pos, val_neg)


def _fly_training(spec: Spec, rng: np.random.Generator, data: FlyData):
    py_rng = random.Random(int(rng.integers(1 << 31)))
    fit_pos, fit_distal = data.split(FLY_FIT)
    pos_ids, distal_ids = ids_of(fit_pos), ids_of(fit_distal)

    def epoch_data(epoch: int):
        # A fresh draw each epoch: FLY_EPOCH_POSITIVES positives, as many negatives (distal
        # kilobases, topped up with shuffles of other positives).
        chosen = rng.permutation(len(fit_pos))[:FLY_EPOCH_POSITIVES]
        distal = distal_ids[rng.permutation(len(fit_distal))[:FLY_EPOCH_POSITIVES * 3 // 4]]
        spare = rng.permutation(len(fit_pos))[:FLY_EPOCH_POSITIVES - len(distal)]
        neg = np.concatenate([distal, shuffled_ids([fit_pos[i] for i in spare], py_rng)])
        pos = pos_ids[chosen]
        return (np.concatenate([pos, neg]),
                np.concatenate([np.ones(len(pos)), np.zeros(len(neg))]).astype(np.float32))
    val_pos, val_distal = data.split(FLY_VALIDATION)
    val_neg = np.concatenate([ids_of(val_distal), shuffled_ids(val_pos, random.Random(7))])
    return epoch_data, _validator(spec.kmer, ids_of(val_pos), val_neg), None


def _yeast_training(spec: Spec, rng: np.random.Generator, promoters):
    py_rng = random.Random(int(rng.integers(1 << 31)))
    fit = [s for n, s in promoters if yeast_split(n) == "fit"]
    val = [s for n, s in promoters if yeast_split(n) == "validation"]

    def epoch_data(epoch: int):
        pos = ids_of(fit)
        neg = shuffled_ids(fit, py_rng)
        return (np.concatenate([pos, neg]),
                np.concatenate([np.ones(len(pos)), np.zeros(len(neg))]).astype(np.float32))
    return epoch_data, _validator(spec.kmer, ids_of(val), shuffled_ids(val, random.Random(7))), None


def _train_one(spec: Spec, out_dir: str, seed: int, data) -> str:
    log = nets.Log(spec.model_id)
    rng = np.random.default_rng(seed)
    common.seeded(seed)
    model = PromoterNet(spec.kmer, spec.context)
    if spec.species == "human":
        epoch_data, validate, calibration = _human_training(spec, rng, data)
    elif spec.species == "fly":
        epoch_data, validate, calibration = _fly_training(spec, rng, data)
    else:
        epoch_data, validate, calibration = _yeast_training(spec, rng, data)
    summary = nets.fit(nets.LogitView(model), epoch_data, _bce, _to_input(spec.kmer), spec.epochs,
                       spec.lr, 64, rng, log, validate=validate)
    summary["bias_shift"] = (calibrate(model, spec.kmer, *calibration, log)
                             if calibration else 0.0)
    summary["train_seconds"] = log.elapsed()
    summary["train_cpu_seconds"] = log.cpu()
    write(spec, model, out_dir, seed, summary)
    log(f"written; best validation AUROC {summary['validation']:.4f} at epoch "
        f"{summary['best_epoch']}")
    return spec.model_id


def train(out_dir: str, seed: int) -> List[str]:
    nets.set_threads(2)
    written = []
    human = None
    for spec in SPECS:
        if not common.wanted(spec.model_id):
            continue
        if spec.species == "human" and human is None:
            human = HumanData()
        data = human if spec.species == "human" else (
            FlyData() if spec.species == "fly" else yeast_promoters())
        written.append(_train_one(spec, out_dir, seed, data))
    return written


# ---------------------------------------------------------------------------------------------
# Evaluation (from the package alone)



def _score(manifest: Dict, module, rows: np.ndarray) -> np.ndarray:
    return nets.predict_batches(module, nets.tokenize(manifest["tokenizer"], rows), 128)


def _evaluate_human(manifest: Dict, module) -> Dict[str, float]:
    data = HumanData(manifest["context_window_bp"])
    centred = data.positives(common.HELD_OUT, lambda: 0, 500)
    off = np.concatenate([data.positives(common.HELD_OUT, lambda: -500, 500),
                          data.positives(common.HELD_OUT, lambda: 500, 500)])
    negatives = data.tiled_negatives(common.HELD_OUT, manifest["stride_bp"])
    pos_scores = _score(manifest, module, centred)
    off_scores = _score(manifest, module, off)
    neg_scores = _score(manifest, module, negatives)
    y = np.concatenate([np.ones(len(pos_scores)), np.zeros(len(neg_scores))])
    out = {"heldout_tss": len(centred), "heldout_negative_windows": len(negatives)}
    out.update(metrics.binary_report("", np.concatenate([pos_scores, neg_scores]), y))
    y_off = np.concatenate([np.ones(len(off_scores)), np.zeros(len(neg_scores))])
    out["auroc_tss_500bp_off_centre"] = metrics.auroc(np.concatenate([off_scores, neg_scores]),
                                                       y_off)
    plots.offer_binary(manifest["id"], {
        "TSS centred": (np.concatenate([pos_scores, neg_scores]), y),
        "TSS 500 bp off centre": (np.concatenate([off_scores, neg_scores]), y_off)})
    return out


def _evaluate_fly(manifest: Dict, module) -> Dict[str, float]:
    proximal, distal = FlyData().split(FLY_HELD_OUT)
    shuffled = shuffled_ids(proximal, random.Random(11))
    pos = _score(manifest, module, ids_of(proximal))
    dist = _score(manifest, module, ids_of(distal))
    shuf = _score(manifest, module, shuffled)
    out = {"heldout_positives": len(pos), "heldout_distal_negatives": len(dist),
           "heldout_shuffled_negatives": len(shuf)}
    all_neg = np.concatenate([dist, shuf])
    out.update(metrics.binary_report("", np.concatenate([pos, all_neg]),
                                     np.concatenate([np.ones(len(pos)), np.zeros(len(all_neg))])))
    series = {"all negatives": (np.concatenate([pos, all_neg]),
                                np.concatenate([np.ones(len(pos)), np.zeros(len(all_neg))]))}
    for name, neg in (("distal", dist), ("shuffled", shuf)):
        out[f"auroc_vs_{name}"] = metrics.auroc(
            np.concatenate([pos, neg]), np.concatenate([np.ones(len(pos)), np.zeros(len(neg))]))
        series[f"vs {name} only"] = (np.concatenate([pos, neg]),
                                     np.concatenate([np.ones(len(pos)), np.zeros(len(neg))]))
    plots.offer_binary(manifest["id"], series)
    return out


def _evaluate_yeast(manifest: Dict, module) -> Dict[str, float]:
    held = [s for n, s in yeast_promoters() if yeast_split(n) == "held_out"]
    pos = _score(manifest, module, ids_of(held))
    neg = _score(manifest, module, shuffled_ids(held, random.Random(11)))
    out = {"heldout_positives": len(pos), "heldout_shuffled_negatives": len(neg)}
    y = np.concatenate([np.ones(len(pos)), np.zeros(len(neg))])
    out.update(metrics.binary_report("", np.concatenate([pos, neg]), y))
    plots.offer_binary(manifest["id"], {"vs shuffled": (np.concatenate([pos, neg]), y)})
    return out


# The package whose variant background (issue 25 quantiles) evaluate-models recomputes and ships:
# the task's default (training/scorer_backgrounds.py).
VARIANT_BACKGROUND = {"promoter-human"}


def evaluate(package_dir: str) -> Dict[str, float]:
    nets.set_threads(2)
    manifest, module = nets.load_package(package_dir)
    spec = next((s for s in SPECS if s.model_id == manifest["id"]), None)
    if spec is None:
        raise common.DataError(f"{manifest['id']} is not a package of the promoter module")
    if spec.species == "human":
        out = _evaluate_human(manifest, module)
    elif spec.species == "fly":
        out = _evaluate_fly(manifest, module)
    else:
        out = _evaluate_yeast(manifest, module)
    example = torch.from_numpy(nets.tokenize(manifest["tokenizer"], np.full(
        (1, manifest["context_window_bp"]), 1, dtype=np.uint8)))
    out["forward_ms_one_window_one_thread"] = nets.time_forward(module, (example,))
    return out


# ---------------------------------------------------------------------------------------------
# Packages and cards

METRIC_MEANINGS = {
    "heldout_tss": "distinct annotated TSSs (refGene, either strand) whose window lies in the "
                   "held-out region",
    "heldout_negative_windows": "windows of the served grid in the held-out region holding no "
                                "annotated TSS (at most 5% N)",
    "auroc": "AUROC, positives vs negatives (held-out)",
    "auprc": "average precision (PR-AUC), same sets",
    "tpr_at_0.5": "share of positives scoring >= 0.5 (the default threshold)",
    "fpr_at_0.5": "share of negatives scoring >= 0.5",
    "auroc_tss_500bp_off_centre": "AUROC with the TSS 500 bp off the window centre (either "
                                  "side), the worst case on the served grid",
    "heldout_positives": "held-out positive windows",
    "heldout_distal_negatives": "held-out negatives: the TSS-free kilobase further upstream",
    "heldout_shuffled_negatives": "held-out negatives: dinucleotide shuffles of the positives",
    "auroc_vs_distal": "AUROC against the distal (real fly sequence) negatives only",
    "auroc_vs_shuffled": "AUROC against the shuffled negatives only",
    "forward_ms_one_window_one_thread": "TorchScript forward of one window, one CPU thread "
                                        "(informative; not compared)",
}

NOT_COMPARED = {"forward_ms_one_window_one_thread"}


def _description(spec: Spec) -> str:
    tok = f"6-mer tokens (k-mer tokenizer, stride 1)" if spec.kmer else "single nucleotides"
    if spec.species == "human":
        return (f"Human promoter classifier ({tok}): probability that a {spec.context:,} bp "
                f"sense-strand window holds an annotated TSS near its centre; trained on GRCh37 "
                f"chr20 + RefSeq TSSs (windows every {spec.stride:,} bp). Small conv + "
                "transformer; held-out metrics in its model card.")
    if spec.species == "fly":
        return ("Drosophila promoter classifier (proxy): trained on the 1 kb directly upstream of "
                "dm3 RefSeq TSSs against further-upstream fly sequence and dinucleotide "
                "shuffles; 1,000 bp windows every 500 bp. Not trained on sequence downstream of "
                "the TSS.")
    return ("Yeast (S. cerevisiae) promoter classifier: EPDnew promoters (-200..+199 around the "
            "TSS) against dinucleotide-shuffled promoters; 400 bp windows every 200 bp. It "
            "separates promoters from composition-matched shuffles, not from other yeast DNA.")


def _data_section(spec: Spec) -> str:
    if spec.species == "human":
        return (
            "- Genome: GRCh37 chr20 from Debian's `vt-examples` package (`apt-get download`; MIT).\n"
            "- Labels: hg19 RefSeq (refGene) chr20 transcripts from `../shared/data/annotation/"
            "hg19_refGene.txt.gz` (UCSC table via vladsavelyev/bed_annotation, MIT); 932 distinct "
            "(TSS, strand) pairs.\n"
            f"- Positives: the {spec.context:,} bp window around each TSS on the transcript's "
            f"strand; in training the TSS sits uniformly within +-{HUMAN_JITTER} bp of the centre "
            "(two draws per TSS and epoch).\n"
            "- Negatives: random chr20 windows that contain no annotated TSS (either strand), "
            "random orientation, three per positive, drawn anew every epoch.\n"
            "- Windows with more than 5% N are skipped.\n"
            f"- Regions: fit on chr20:0-{common.FIT[1]:,}; epoch chosen on the validation slice "
            f"chr20:{common.VALIDATION[0]:,}-{common.VALIDATION[1]:,}; evaluated only on the "
            f"held-out chr20:{common.HELD_OUT[0]:,}-{common.HELD_OUT[1]:,} (last 10 Mb).")
    if spec.species == "fly":
        return (
            "- Data: `dm3_upstream2000.fa.gz` from Debian's `r-bioc-biostrings` package "
            "(Artistic-2.0): 2 kb upstream of each dm3 RefSeq transcript; isoforms sharing a "
            "region are counted once.\n"
            "- Positives: the 1 kb directly upstream of the TSS (-1,000..-1) in transcript "
            "orientation.\n"
            "- Negatives: (a) the kilobase further upstream (-2,000..-1,001) when no annotated TSS "
            "of the file lies in it: real fly sequence near, but not at, a TSS; (b) dinucleotide "
            "shuffles of positives (same composition and dinucleotide counts), as many as make "
            "the classes equal.\n"
            "- Split by chromosome arm: chr2R validation, chr2L held out, chr3L/chr3R/chrX/chr4 "
            "fitted (heterochromatin and unplaced contigs unused).")
    return (
        "- Data: 5,117 S. cerevisiae promoters from EPDnew, -200..+200 around the TSS "
        "(`../shared/data/promoter/yeast_epdnew_scerevisiae_401bp.fa`, via AnnaKalygina/"
        "PromoterShape, MIT); the first 400 bp (-200..+199) of each is one window.\n"
        "- Negatives: dinucleotide shuffles of promoters (fresh shuffles every epoch; fixed-seed "
        "shuffles for evaluation). No non-promoter yeast sequence is reachable here, so the "
        "model learns what distinguishes promoters from composition-matched random sequence.\n"
        "- Split: the file has no coordinates, so by EPDnew id: FP number mod 10 = 0 or 1 held "
        "out, 2 validation, the rest fitted. Neighbouring or bidirectional promoters can fall on "
        "both sides of the split.")


def _limits(spec: Spec) -> str:
    common_limits = (
        "- Submit the gene's sense strand (5'->3'), as the task requires; the model is "
        "strand-aware.\n"
        "- Small model, small data (one chromosome): a research baseline, not a clinical tool.")
    if spec.species == "human":
        return (common_limits + "\n"
                "- Trained on ~700 TSSs of chr20 only; TSSs missing from RefSeq count as negatives "
                "in training and evaluation.\n"
                "- Fires on CpG-island-like sequence: unannotated CpG islands and TSSs of "
                "unannotated transcripts score high.\n"
                "- The threshold 0.5 reflects a 1:3 positive:negative training mix; the genome has "
                "far fewer promoter windows, so expect false positive windows on long inputs "
                "(fpr_at_0.5 below).")
    if spec.species == "fly":
        return (common_limits + "\n"
                "- A proxy: positives are upstream sequence only (downstream of the TSS was never "
                "seen), so windows centred on a TSS look only half like training positives.\n"
                "- Negatives are near genes or shuffled; intergenic or intronic fly sequence far "
                "from genes was never seen.")
    return (common_limits + "\n"
            "- Negatives are shuffles: real yeast non-promoter DNA (coding sequence, terminators) "
            "may score high. Treat scores as 'promoter-like composition and motifs'.")


def write(spec: Spec, model: PromoterNet, out_dir: str, seed: int, summary: Dict) -> str:
    tokenizer = tokenizer_of(spec)
    example_ids = np.random.default_rng(0).integers(1, 6, size=(2, spec.context)).astype(np.uint8)
    example = torch.from_numpy(nets.tokenize(tokenizer, example_ids))
    scripted = nets.export(model, (example,))
    manifest = common.trained_manifest(spec.model_id, TASK, _description(spec), spec.is_default,
                                       tokenizer, spec.context, ["promoter"], seed,
                                       stride_bp=spec.stride)
    package = common.write_package(out_dir, manifest, scripted, "(card pending)\n")
    with plots.capture() as captured:
        results = evaluate(package)
    write_card(package, spec, manifest, model, seed, summary, results)
    cards.complete(package, results, captured, NOT_COMPARED)
    return package


def write_card(package: str, spec: Spec, manifest: Dict, model: PromoterNet, seed: int,
               summary: Dict, results: Dict[str, float]) -> None:
    compared = {k: v for k, v in results.items() if k not in NOT_COMPARED}
    arch = ("one-hot of the char ids" if not spec.kmer else
            f"learned embedding of overlapping {spec.kmer}-mers (4,098 x 32)")
    body = cards.card(
        spec.model_id,
        f"{_description(spec)}\n\n**Trained on real public data** (seed {seed}); every metric "
        "below is recomputed from this package by `scripts/evaluate-models`.",
        manifest,
        [("parameters", f"{nets.parameter_count(model):,}"),
         ("training time", f"{summary['train_seconds'] / 60:.1f} min wall, "
                           f"{summary['train_cpu_seconds'] / 60:.1f} min CPU, 2 threads "
                           f"({summary['epochs']} epochs, best validation epoch "
                           f"{summary['best_epoch']}, validation AUROC "
                           f"{summary['validation']:.4f})"),
         ("forward, one window, one thread",
          f"{results['forward_ms_one_window_one_thread']:.1f} ms CPU (TorchScript, Python)"),
         ("exported with", f"torch {torch.__version__}, torch.jit.script + freeze, float32")],
        [("Architecture",
          f"{arch} -> conv (32 channels, k {11 if not spec.kmer else 7}) + ReLU + max-pool "
          f"{POOLS[spec.context][0]} -> conv (64, k 7) + ReLU + max-pool {POOLS[spec.context][1]} "
          "-> sinusoidal positions -> 2-layer pre-norm transformer encoder (d 64, 4 heads, "
          "feed-forward 128) -> mean and max pooling -> linear -> sigmoid. Binary cross-entropy, "
          "AdamW (weight decay 0.01), one-cycle learning rate, batch 64."
          + (f" After training the output bias was shifted by {summary['bias_shift']:+.1f} so "
             "that the default threshold 0.5 maximises F1 on the validation windows (training "
             "mixes one positive with three negatives; the genome holds far fewer promoter "
             "windows). AUROC does not depend on it." if spec.species == "human" else "")),
         ("Data and provenance", _data_section(spec)),
         ("Held-out evaluation", _heldout_text(spec)),
         ("Metrics", cards.metrics_table(compared, METRIC_MEANINGS)),
         ("Known limits", _limits(spec)),
         ("Reproduce",
          "```\nscripts/train-models --only promoter      # all four promoter packages\n"
          "scripts/evaluate-models --only promoter   # recomputes the table above\n```")])
    with open(os.path.join(package, manifest["model_card"]), "w", encoding="utf-8") as handle:
        handle.write(body)


def _heldout_text(spec: Spec) -> str:
    if spec.species == "human":
        return (f"chr20:{common.HELD_OUT[0]:,}-{common.HELD_OUT[1]:,} (GRCh37; the last 10 Mb): "
                "no training example and no model choice touched it. Positives: one window "
                "centred on each distinct TSS there (sense strand). Negatives: every window of "
                f"the served grid ({spec.context:,} bp every {spec.stride:,} bp from the region "
                "start) that holds no annotated TSS.")
    if spec.species == "fly":
        return ("Chromosome arm chr2L (dm3): its proximal kilobases as positives against its "
                "TSS-free distal kilobases and fixed-seed dinucleotide shuffles of its positives.")
    return ("EPDnew ids with FP number mod 10 in {0, 1} (20%): the promoters against fixed-seed "
            "dinucleotide shuffles of themselves.")
