"""Held-out variant-effect check of the splice models (issue 25): do SNVs that break the canonical
dinucleotide of an annotated junction get larger SpliceAI delta scores than random SNVs near the
same junctions?

Variants (all in the held-out region, common.HELD_OUT, from hg19 refGene chr20 and GRCh37 chr20):
- Positives: one SNV at each of POSITIVES canonical dinucleotide bases drawn with a fixed seed
  from every annotated intron whose reference dinucleotides read GT..AG on its transcript's
  strand (donor: intron bases +1/+2; acceptor: intron bases -2/-1; GC-AG and AT-AC introns are
  left out). A base shared by several transcripts counts once. The ALT is drawn with the same
  seed among the three other bases (each of them breaks the dinucleotide).
- Negatives: for each positive, one SNV in each distance bin of BINS: a base drawn uniformly
  (fixed seed) at 3-500 bp either side of the positive's own intron boundary, inside the
  positive's transcript span, accepted only when its distance to the NEAREST annotated intron
  boundary (any transcript, either strand) falls in the bin being filled. Distance of a base to a
  boundary: 1 for the bases either side of it, 2 for the next ones, and so on; every negative is
  therefore at least 3 bp from every annotated junction, so it never touches a junction's +-2
  bases. It is scored on the positive's strand (the gene's strand).

Score: SpliceAI's delta score as POST /v1/variants/score computes it
(runner/workflows/splice_delta.cc, variant_scoring.cc): the runner sends the variant +-(distance
+ the package's flank_bp) of reference (REF) and the same with the ALT base, reverse-complemented
for a minus-strand gene; the worker windows that sequence as it windows every flanked package
(window i scores [i*O, (i+1)*O) from input [i*O - flank, (i+1)*O + flank), N outside the
sequence; splice.flanked_scores); DS_AG/DS_AL/DS_DG/DS_DL are the largest ALT - REF and REF - ALT
acceptor and donor differences over the variant +-DISTANCE, DS = the largest of the four. Only
the windows holding the scored positions are run (the worker runs the others too, for scores the
delta never reads).

`python -m training.splice_variants check-service` scores a few of the variants through a
running service and compares its numbers with this module's (the documented check of the card).
"""

import argparse
import bisect
import json
import os
import sys
import time
import urllib.request
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from training import common, metrics, nets

DISTANCE = 50                       # the service's default splice distance
BINS = ((3, 50), (51, 500))         # nearest-junction distance bins of the negatives (bp)
POSITIVES = 200
SEED = 2025
BOOTSTRAP = 1000                    # stratified resamples for the AUROC interval
# OpenSpliceAI (openspliceai_variants.py) is scored on the first N positives in draw order and
# their negatives; N = POSITIVES (the default) compares the two models on every variant. Set the
# variable lower for a shorter run (the card then says which subset it compares); the cache
# keeps what is already scored.
OPENSPLICEAI_POSITIVES = int(os.environ.get("DNASERVE_EVAL_OPENSPLICEAI_VARIANTS", str(POSITIVES)))
# Sites need this much reference either side inside the held-out region (distance + the largest
# flank of the packages scored: OpenSpliceAI's 5,000, with room for the negatives' 500 bp).
_MARGIN = 6000
_BASES = "ACGT"
_COMPLEMENT = {"A": "T", "C": "G", "G": "C", "T": "A"}


@dataclass(frozen=True)
class Variant:
    pos: int        # 0-based genome position (chr20)
    ref: str
    alt: str
    strand: str     # the gene's strand, scored
    label: int      # 1 breaks a canonical dinucleotide, 0 a matched random SNV
    kind: str       # donor+1, donor+2, acceptor-2, acceptor-1, or near:<bin>
    distance: int   # to the nearest annotated intron boundary (1 = a base beside one)
    gene: str

    def spec(self) -> str:
        """The service's variant string, 1-based."""
        return f"chr20:{self.pos + 1}:{self.ref}:{self.alt}"


@dataclass(frozen=True)
class Site:
    pos: int
    strand: str
    kind: str
    boundary: int   # the intron boundary (coordinate between two bases) the site belongs to
    tx_start: int
    tx_end: int
    gene: str


def intron_boundaries(transcripts) -> np.ndarray:
    """Sorted unique intron boundaries (genome coordinates between bases: an intron [a, b) has
    boundaries a and b) of every transcript, either strand."""
    out = set()
    for t in transcripts:
        for left, right in zip(t.exons, t.exons[1:]):
            if right[0] > left[1]:
                out.update((left[1], right[0]))
    return np.array(sorted(out), dtype=np.int64)


def boundary_distance(pos: int, boundary: int) -> int:
    """Distance of base `pos` to the boundary before base `boundary`: 1 for bases boundary - 1
    and boundary, 2 for the next ones out."""
    return pos - boundary + 1 if pos >= boundary else boundary - pos


def nearest_distance(pos: int, boundaries: np.ndarray) -> int:
    i = bisect.bisect_right(boundaries, pos)
    best = 1 << 40
    for j in (i - 1, i):
        if 0 <= j < len(boundaries):
            best = min(best, boundary_distance(pos, int(boundaries[j])))
    return best


def canonical_sites(transcripts, genome: str, region: Tuple[int, int]) -> List[Site]:
    """The canonical dinucleotide bases of every GT..AG intron with _MARGIN bp to spare inside
    `region`, one Site per base (first transcript by position wins a shared base), by position."""
    seen, out = set(), []
    for t in sorted(transcripts, key=lambda x: (x.tx_start, x.tx_end, x.name)):
        for left, right in zip(t.exons, t.exons[1:]):
            a, b = left[1], right[0]  # intron [a, b)
            if b - a < 4 or not (region[0] + _MARGIN <= a and b + _MARGIN <= region[1]):
                continue
            if t.strand == "+":
                if genome[a:a + 2] != "GT" or genome[b - 2:b] != "AG":
                    continue
                bases = [(a, "donor+1", a), (a + 1, "donor+2", a),
                         (b - 2, "acceptor-2", b), (b - 1, "acceptor-1", b)]
            else:
                if genome[b - 2:b] != "AC" or genome[a:a + 2] != "CT":
                    continue
                bases = [(b - 1, "donor+1", b), (b - 2, "donor+2", b),
                         (a + 1, "acceptor-2", a), (a, "acceptor-1", a)]
            for pos, kind, boundary in bases:
                if pos in seen:
                    continue
                seen.add(pos)
                out.append(Site(pos, t.strand, kind, boundary, t.tx_start, t.tx_end, t.gene))
    return sorted(out, key=lambda s: s.pos)


def _other_base(rng: np.random.Generator, ref: str) -> str:
    return [b for b in _BASES if b != ref][int(rng.integers(0, 3))]


def build_variants(transcripts, genome: str, region: Tuple[int, int], positives: int = POSITIVES,
                   seed: int = SEED, bins: Sequence[Tuple[int, int]] = BINS,
                   tries: int = 2000) -> List[Variant]:
    """Positives then, for each, one negative per bin, in draw order (see the module doc). A
    positive whose locus yields no negative for some bin is replaced by the next draw, so every
    positive has all its negatives."""
    rng = np.random.default_rng(seed)
    sites = canonical_sites(transcripts, genome, region)
    boundaries = intron_boundaries(transcripts)
    order = rng.permutation(len(sites))
    out: List[Variant] = []
    taken = set()
    chosen = 0
    for index in order:
        if chosen == positives:
            break
        site = sites[int(index)]
        ref = genome[site.pos]
        positive = Variant(site.pos, ref, _other_base(rng, ref), site.strand, 1, site.kind,
                           nearest_distance(site.pos, boundaries), site.gene)
        negatives = []
        for lo, hi in bins:
            found = None
            for _ in range(tries):
                distance = int(rng.integers(3, bins[-1][1] + 1))
                pos = (site.boundary + distance - 1 if rng.random() < 0.5
                       else site.boundary - distance)
                if not (site.tx_start <= pos < site.tx_end) or pos in taken:
                    continue
                if genome[pos] not in _BASES or any(n.pos == pos for n in negatives):
                    continue
                nearest = nearest_distance(pos, boundaries)
                if lo <= nearest <= hi:
                    found = Variant(pos, genome[pos], _other_base(rng, genome[pos]), site.strand,
                                    0, f"near:{lo}-{hi}", nearest, site.gene)
                    break
            if found is None:
                break
            negatives.append(found)
        if len(negatives) != len(bins):
            continue
        out.append(positive)
        out.extend(negatives)
        taken.update(v.pos for v in [positive] + negatives)
        chosen += 1
    if chosen < positives:
        raise common.DataError(f"only {chosen} of {positives} junction variants could be matched")
    return out


# ---------------------------------------------------------------------------------------------
# Scoring


def variant_sequences(genome_ids: np.ndarray, v: Variant, distance: int, flank: int):
    """(REF, ALT) char ids the runner submits for an SNV: pos +- (distance + flank), N beyond the
    contig, reverse-complemented for a minus-strand gene."""
    margin = distance + flank
    lo, hi = v.pos - margin, v.pos + margin + 1
    ref = np.full(hi - lo, 5, dtype=np.int64)
    a, b = max(lo, 0), min(hi, len(genome_ids))
    ref[a - lo:b - lo] = genome_ids[a:b]
    alt = ref.copy()
    alt[margin] = _BASES.index(v.alt) + 1
    if v.strand == "-":
        return nets.reverse_complement_ids(ref), nets.reverse_complement_ids(alt)
    return ref, alt


def scored_window(length: int, scored: Tuple[int, int], output: int, flank: int):
    """(window index, input span) of the one worker window holding positions [scored) of a
    sequence of `length`; ValueError when they span two windows."""
    first, last = scored[0] // output, (scored[1] - 1) // output
    if first != last:
        raise ValueError(f"positions {scored} span windows {first}-{last}")
    return first, (first * output - flank, (first + 1) * output + flank)


def window_input(seq: np.ndarray, span: Tuple[int, int]) -> np.ndarray:
    lo, hi = span
    window = np.full(hi - lo, 5, dtype=np.int64)
    a, b = max(lo, 0), min(hi, len(seq))
    window[a - lo:b - lo] = seq[a:b]
    return window


def delta_scores(ref: np.ndarray, alt: np.ndarray) -> Dict[str, float]:
    """SpliceAI's DS_* of an SNV from [2d+1, 2] (acceptor, donor) REF and ALT scores."""
    diff = alt.astype(np.float64) - ref.astype(np.float64)
    out = {"DS_AG": float(diff[:, 0].max()), "DS_AL": float((-diff[:, 0]).max()),
           "DS_DG": float(diff[:, 1].max()), "DS_DL": float((-diff[:, 1]).max())}
    out["DS"] = max(out.values())
    return out


def score_variants(module, manifest: Dict, genome_ids: np.ndarray, variants: Sequence[Variant],
                   distance: int = DISTANCE, batch: int = 8) -> List[Dict[str, float]]:
    """DS_* of each variant on its gene's strand, as the service computes them."""
    classes = manifest["output_labels"]
    acc, don = classes.index("acceptor"), classes.index("donor")
    output, flank = manifest["output_window_bp"], manifest["flank_bp"]
    rows, picks = [], []
    for v in variants:
        ref, alt = variant_sequences(genome_ids, v, distance, flank)
        # Scored positions in the submitted sequence's own order: symmetric around the variant,
        # so the same span on either strand.
        scored = (flank, flank + 2 * distance + 1)
        index, span = scored_window(len(ref), scored, output, flank)
        start = scored[0] - index * output
        rows += [window_input(ref, span), window_input(alt, span)]
        picks.append((start, v.strand))
    probs = []
    with torch.no_grad():
        for s in range(0, len(rows), batch):
            x = torch.from_numpy(np.stack(rows[s:s + batch]))
            probs.append(module(x).float().numpy())
    probs = np.concatenate(probs)
    out = []
    for i, (start, strand) in enumerate(picks):
        pair = []
        for p in probs[2 * i:2 * i + 2]:
            sel = p[start:start + 2 * distance + 1][:, [acc, don]]
            pair.append(sel[::-1] if strand == "-" else sel)  # genome order
        out.append(delta_scores(pair[0], pair[1]))
    return out


def bootstrap_auroc(scores: np.ndarray, labels: np.ndarray, resamples: int = BOOTSTRAP,
                    seed: int = SEED) -> Tuple[float, float]:
    """2.5% and 97.5% quantiles of the AUROC over stratified resamples (positives and negatives
    resampled separately, fixed seed)."""
    rng = np.random.default_rng(seed)
    pos, neg = scores[labels == 1], scores[labels == 0]
    values = []
    for _ in range(resamples):
        p = pos[rng.integers(0, len(pos), len(pos))]
        n = neg[rng.integers(0, len(neg), len(neg))]
        values.append(metrics.auroc(np.concatenate([p, n]),
                                    np.concatenate([np.ones(len(p)), np.zeros(len(n))])))
    return float(np.quantile(values, 0.025)), float(np.quantile(values, 0.975))


def summary(prefix: str, variants: Sequence[Variant], scores: Sequence[Dict[str, float]],
            bins: Sequence[Tuple[int, int]] = BINS) -> Dict[str, float]:
    labels = np.array([v.label for v in variants])
    ds = np.array([s["DS"] for s in scores])
    low, high = bootstrap_auroc(ds, labels)
    out = {f"{prefix}positives": int(labels.sum()), f"{prefix}negatives": int((labels == 0).sum()),
           f"{prefix}auroc_ds": metrics.auroc(ds, labels),
           f"{prefix}auroc_ds_low": low, f"{prefix}auroc_ds_high": high}
    for lo, hi in bins:
        keep = np.array([v.label == 1 or v.kind == f"near:{lo}-{hi}" for v in variants])
        out[f"{prefix}auroc_ds_{lo}_{hi}bp"] = metrics.auroc(ds[keep], labels[keep])
    out[f"{prefix}median_ds_positive"] = float(np.median(ds[labels == 1]))
    out[f"{prefix}median_ds_negative"] = float(np.median(ds[labels == 0]))
    return out


def openspliceai_subset(variants: Sequence[Variant], positives: int) -> List[Variant]:
    """The first `positives` positives in draw order with their negatives: a fixed-seed draw of
    junctions (build_variants draws the sites in a seeded random order), each with one negative
    per distance bin, so every bin keeps its share."""
    out, count = [], 0
    for v in variants:
        if v.label == 1:
            count += 1
            if count > positives:
                break
        out.append(v)
    return out


def evaluate(manifest: Dict, module, openspliceai: Optional[str]) -> Dict[str, float]:
    """The card's variant metrics: `variant_*` (this package, every variant) and, when the
    OpenSpliceAI checkpoint directory is given, `openspliceai_variant_*` on the same variants
    (openspliceai_variants.py). When OPENSPLICEAI_POSITIVES is below POSITIVES, OpenSpliceAI
    runs on that subset only and both models' figures on it are `*variant_subset_*`."""
    genome = common.chr20()
    genome_ids = common.chr20_ids()
    transcripts = common.refgene_chr20()
    t0 = time.monotonic()
    variants = build_variants(transcripts, genome, common.HELD_OUT)
    scores = score_variants(module, manifest, genome_ids, variants)
    out = summary("variant_", variants, scores)
    out["variant_seconds"] = time.monotonic() - t0
    out["variant_load"] = os.getloadavg()[1]
    compared = openspliceai_subset(variants, OPENSPLICEAI_POSITIVES)
    subset = len(compared) < len(variants)
    if subset:
        out.update(summary("variant_subset_", compared, scores[:len(compared)]))
    if openspliceai is not None:
        from training import openspliceai_variants
        reference_scores, info = openspliceai_variants.cached_scores(
            openspliceai, genome_ids, compared, DISTANCE,
            log=lambda line: print(line, flush=True))
        prefix = "openspliceai_variant_subset_" if subset else "openspliceai_variant_"
        out.update(summary(prefix, compared, reference_scores))
        out["openspliceai_variant_seconds"] = info["seconds"]
        out["openspliceai_variant_load"] = info["load"]
        out["openspliceai_variant_junction_seconds"] = info["junction_seconds"]
    return out


METRIC_MEANINGS = {
    "variant_positives": "held-out SNVs breaking a canonical GT/AG junction dinucleotide",
    "variant_negatives": "random SNVs near the same junctions (3-50 and 51-500 bp, one each)",
    "variant_auroc_ds": "AUROC of SpliceAI's DS (max of DS_AG/AL/DG/DL, +-50 bp), positives vs "
                        "negatives",
    "variant_auroc_ds_low": "its 2.5% bootstrap quantile (1,000 stratified resamples)",
    "variant_auroc_ds_high": "its 97.5% bootstrap quantile",
    "variant_auroc_ds_3_50bp": "AUROC against the negatives 3-50 bp from a junction",
    "variant_auroc_ds_51_500bp": "AUROC against the negatives 51-500 bp from a junction",
    "variant_median_ds_positive": "median DS of the positives",
    "variant_median_ds_negative": "median DS of the negatives",
}
for _name, _meaning in list(METRIC_MEANINGS.items()):
    METRIC_MEANINGS["variant_subset_" + _name[len("variant_"):]] = (
        _meaning + ", OpenSpliceAI comparison subset")
NOT_COMPARED = {"variant_seconds", "variant_load", "openspliceai_variant_seconds",
                "openspliceai_variant_load", "openspliceai_variant_junction_seconds"} | {
    "openspliceai_" + n for n in list(METRIC_MEANINGS)}


# The documented check of the score against the service (re-run it after changing either side).
SERVICE_CHECK = (
    "Checked against the service: `python -m training.splice_variants check-service` posted the "
    "first 3 positives and 3 negatives of each strand (12 variants) to `POST /v1/variants/score` "
    "of `scripts/run` (splice-human) and compared DS_AG, DS_AL, DS_DG and DS_DL of the response's "
    "gene-strand block (`plus`/`minus`; the service scores both strands) with this script's: "
    "largest difference 4.8e-05, the service's rounding to 4 decimals (2026-11-28).")


# The documented check of openspliceai_variants.py against the service's windowing (re-run it
# after changing either side).
OPENSPLICEAI_CHECK = (
    "Checked against the service's windowing: `python -m training.splice_variants "
    "check-openspliceai` scored the first junction of each strand (6 variants) both ways with the "
    "rs10 checkpoint, through the converter's FlankedEnsemble (the module the served package "
    "freezes) on the 15,000 bp REF and ALT windows of `score_variants` and through "
    "`openspliceai_variants.py`: largest DS_* difference 1.8e-15 (2026-11-29).")


def card_section(results: Dict[str, float]) -> str:
    """The card's "Variant effect (held-out)" section: the method and both models' figures on
    the same variants (all of them, or the OpenSpliceAI subset when only that was scored)."""
    subset = "variant_subset_positives" in results
    ours_prefix = "variant_subset_" if subset else "variant_"
    theirs_prefix = "openspliceai_" + ours_prefix
    compared = int(results[ours_prefix + "positives"] + results[ours_prefix + "negatives"])
    total = int(results["variant_positives"] + results["variant_negatives"])

    def row(name: str, key: str, fmt: str = "{:.4f}") -> str:
        ours = results.get(ours_prefix + key)
        theirs = results.get(theirs_prefix + key)
        return (f"| {name} | {fmt.format(ours)} | "
                f"{fmt.format(theirs) if theirs is not None else 'not computed'} |")

    def counts(name: str, key: str) -> str:
        return row(name, key, "{:.0f}")

    method = (
        f"Do SNVs that break a junction score higher than SNVs near it? Positives: "
        f"{int(results['variant_positives'])} SNVs drawn (fixed seed {SEED}) among the canonical "
        "dinucleotide bases of the GT..AG introns of hg19 refGene chr20 that lie in the held-out "
        f"region with {_MARGIN:,} bp to spare (donor intron +1/+2, acceptor -2/-1, on the "
        "transcript's strand; a base shared by transcripts once; GC-AG and AT-AC introns left "
        "out), the ALT drawn among the three other bases. Negatives: for each positive one SNV "
        "3-50 bp and one 51-500 bp from the NEAREST annotated intron boundary (any transcript, "
        "either strand; 1 = a base beside a boundary), drawn uniformly within 3-500 bp either "
        "side of the positive's own boundary inside its transcript and kept when its nearest "
        "distance falls in the bin being filled, so none touches the +-2 bases of any junction; "
        "ALT drawn at random; scored on the positive's (gene's) strand. Score: SpliceAI's DS as "
        "`POST /v1/variants/score` computes it (max of DS_AG, DS_AL, DS_DG, DS_DL over the "
        f"variant +-{DISTANCE} bp; the REF and ALT sequences the runner submits, variant +- "
        "(50 + the package's flank_bp), reverse-complemented for a minus-strand gene, windowed as "
        "the worker windows the package). AUROC of DS with a 95% interval from 1,000 stratified "
        "bootstrap resamples. Code: `scripts/training/splice_variants.py`, run by "
        "`scripts/evaluate-models --only splice`. " + SERVICE_CHECK)
    reference = (
        "OpenSpliceAI MANE (the five published 10,000 nt checkpoints in ../shared/data, mean of "
        "their softmax) is scored on the same variants, sequences and positions by "
        "`scripts/training/openspliceai_variants.py`, which only skips arithmetic that cannot "
        "reach the scored positions: valid convolutions over the scored positions +-5,000 bp "
        "(the network's receptive field), one REF pass per junction shared by its positive and "
        "two negatives, and each ALT recomputed only where it differs from REF. "
        + OPENSPLICEAI_CHECK + " Its per-variant scores are cached outside the repository "
        "(~/.cache/dnaserve/openspliceai-variants), so `scripts/evaluate-models` recomputes this "
        "section in seconds once they exist; without ../shared/data the OpenSpliceAI column "
        "reads \"not computed\".")
    if subset:
        drawn = int(results[ours_prefix + "positives"])
        estimate = ""
        if "openspliceai_variant_junction_seconds" in results:
            hours = results["openspliceai_variant_junction_seconds"] * POSITIVES / 3600
            estimate = f", about {hours:.1f} h for all of them at the median junction time"
        scope = (
            f"Both columns on the {compared} variants OpenSpliceAI was run on: the first "
            f"{drawn} positives in draw order (the draw is a fixed-seed random order of the "
            "junctions) with their two negatives each, so both distance bins keep their share "
            f"($DNASERVE_EVAL_OPENSPLICEAI_VARIANTS positives, default {OPENSPLICEAI_POSITIVES}). "
            f"All {int(results['variant_positives'])} did not fit the time on the shared "
            f"machine{estimate}. "
            + ("It replaces the earlier comparison on the first 20 positives (60 variants), a "
               "prefix of this draw. " if drawn > 20 else "")
            + f"splice-human on all {int(results['variant_positives'])} positives and "
            f"{int(results['variant_negatives'])} negatives: AUROC of DS "
            f"{results['variant_auroc_ds']:.4f} (95% bootstrap interval "
            f"{results['variant_auroc_ds_low']:.4f}-{results['variant_auroc_ds_high']:.4f}; the "
            "`variant_*` rows of the metrics table, the subset's are `variant_subset_*`).")
        header = (f"| on the {compared} variants OpenSpliceAI scored | splice-human | "
                  "OpenSpliceAI MANE (10k) |")
    else:
        scope = (
            f"Both columns on all {total} variants (the splice-human column is the `variant_*` "
            "rows of the metrics table). Earlier versions of this card compared the two models "
            "on a 60-variant subset only (the first 20 positives in draw order and their "
            "negatives: splice-human AUROC 0.8862, OpenSpliceAI 0.9900), because the service's "
            "scoring path took 37 s a variant for OpenSpliceAI; the full set supersedes it.")
        header = f"| on all {total} variants | splice-human | OpenSpliceAI MANE (10k) |"
    timing = (f"splice-human scored all {total} variants in {results['variant_seconds']:.0f} s "
              f"(two threads, 5-minute load average {results['variant_load']:.1f} on two cores)")
    if "openspliceai_variant_seconds" in results:
        timing += (f"; OpenSpliceAI MANE took {results['openspliceai_variant_seconds']:.0f} s "
                   f"for its {compared} variants, a median "
                   f"{results['openspliceai_variant_junction_seconds']:.0f} s a junction (three "
                   "variants; two threads, `nice -n 10`, mean 5-minute load average "
                   f"{results['openspliceai_variant_load']:.1f} on two cores; wall times of the "
                   "cached per-junction runs, pauses for other people's benchmarks included)")
    rows = [header, "|---|---|---|",
            counts("positives", "positives"), counts("negatives", "negatives"),
            row("AUROC of DS", "auroc_ds"),
            row("95% bootstrap interval, low", "auroc_ds_low"),
            row("95% bootstrap interval, high", "auroc_ds_high"),
            row("AUROC vs negatives 3-50 bp", "auroc_ds_3_50bp"),
            row("AUROC vs negatives 51-500 bp", "auroc_ds_51_500bp"),
            row("median DS, positives", "median_ds_positive"),
            row("median DS, negatives", "median_ds_negative")]
    return "\n\n".join([method, reference, scope, "\n".join(rows), timing + "."])


# ---------------------------------------------------------------------------------------------
# The documented check against a running service


def check_service(url: str, key: str, package: str, count: int, tolerance: float) -> int:
    """Scores the first `count` positives and negatives of each strand through POST /v1/variants/score
    and compares the service's DS_* on the gene's strand with this module's. Exit 1 on a
    difference above `tolerance` (the service rounds to 4 decimals)."""
    manifest, module = nets.load_package(package)
    nets.set_threads(2)
    variants = build_variants(common.refgene_chr20(), common.chr20(), common.HELD_OUT)
    chosen = [v for label in (1, 0) for strand in "+-"
              for v in [v for v in variants if v.label == label and v.strand == strand][:count]]
    ours = score_variants(module, manifest, common.chr20_ids(), chosen)
    body = json.dumps({"variants": [v.spec() for v in chosen],
                       "scorers": {"splice": {"distance": DISTANCE}}}).encode()
    request = urllib.request.Request(url.rstrip("/") + "/v1/variants/score", data=body, headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=300) as response:
        answer = json.load(response)
    model = answer["data"]["scorers"]["splice"]["model"]
    if model != manifest["id"]:
        print(f"the service scored with {model}, not {manifest['id']}")
        return 1
    worst, failures = 0.0, 0
    print(f"{'variant':28s} strand label  DS_AG(svc/ours)  DS_AL  DS_DG  DS_DL")
    for v, mine, result in zip(chosen, ours, answer["data"]["results"]):
        theirs = result["splice"]["plus" if v.strand == "+" else "minus"]
        pairs = [(theirs[name]["score"], mine[short]) for name, short in
                 (("acceptor_gain", "DS_AG"), ("acceptor_loss", "DS_AL"),
                  ("donor_gain", "DS_DG"), ("donor_loss", "DS_DL"))]
        diff = max(abs(a - b) for a, b in pairs)
        worst = max(worst, diff)
        failures += diff > tolerance
        print(f"{v.spec():28s} {v.strand:6s} {v.label:5d}  "
              + "  ".join(f"{a:.4f}/{b:.4f}" for a, b in pairs))
    print(f"{len(chosen)} variants, model {model}: largest |service - script| {worst:.2e} "
          f"(tolerance {tolerance:g}); {failures} above it")
    return 1 if failures else 0


def check_openspliceai(checkpoints: str, members: int) -> int:
    """Scores the first junction of each strand (positive and negatives) through
    openspliceai_variants.py and through score_variants on the converter's FlankedEnsemble of
    the first `members` checkpoints (the service's 15,000 bp windows); prints the largest DS_*
    difference. Exit 1 above 1e-5 (the converter's own export bound)."""
    from dnaserve_tools import openspliceai_reference as ref
    from dnaserve_tools.convert_openspliceai import FlankedEnsemble
    from training import openspliceai_variants
    nets.set_threads(2)
    variants = build_variants(common.refgene_chr20(), common.chr20(), common.HELD_OUT)
    groups = openspliceai_variants.junction_groups(variants)
    chosen = [next(g for g in groups if variants[g[0]].strand == s) for s in "+-"]
    loaded = ref.load_ensemble(checkpoints)[:members]
    window = FlankedEnsemble(loaded).eval()
    manifest = {"output_labels": list(ref.CLASSES), "flank_bp": ref.FLANK_BP,
                "output_window_bp": ref.OUTPUT_BP}
    stages = [openspliceai_variants.Stages(m) for m in loaded]
    worst = 0.0
    for group in chosen:
        batch = [variants[i] for i in group]
        with torch.no_grad():
            fast = openspliceai_variants.group_scores(stages, common.chr20_ids(), batch,
                                                      DISTANCE, ref.CLASSES)
        slow = score_variants(window, manifest, common.chr20_ids(), batch, batch=2)
        for v, a, b in zip(batch, fast, slow):
            diff = max(abs(a[k] - b[k]) for k in a)
            worst = max(worst, diff)
            print(f"{v.spec():28s} {v.strand} {v.kind:12s} DS {a['DS']:.6f} / {b['DS']:.6f}  "
                  f"max |diff| {diff:.2e}")
    print(f"{sum(len(g) for g in chosen)} variants, {len(loaded)} checkpoint(s): largest DS_* "
          f"difference {worst:.2e}")
    return 1 if worst > 1e-5 else 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.splice_variants")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check-service", help="compare DS with a running service")
    check.add_argument("--url", default=os.environ.get("DNASERVE_URL", ""))
    check.add_argument("--key", default=os.environ.get("DNASERVE_API_KEY", ""))
    check.add_argument("--package", default=os.path.join(common.ROOT, "worker", "packages",
                                                         "splice-human"))
    check.add_argument("--count", type=int, default=3, help="positives and negatives per strand")
    check.add_argument("--tolerance", type=float, default=1.5e-4)
    osai = sub.add_parser("check-openspliceai",
                          help="compare openspliceai_variants.py with the service's windowing")
    osai.add_argument("--checkpoints", default=os.path.join(
        common.SHARED_DATA, "published-models", "openspliceai-mane-10000nt"))
    osai.add_argument("--members", type=int, default=1, help="checkpoints to use (1-5)")
    listing = sub.add_parser("list", help="print the variants (TSV)")
    listing.add_argument("--positives", type=int, default=POSITIVES)
    args = parser.parse_args(argv)
    if args.command == "check-openspliceai":
        return check_openspliceai(args.checkpoints, args.members)
    if args.command == "list":
        variants = build_variants(common.refgene_chr20(), common.chr20(), common.HELD_OUT,
                                  positives=args.positives)
        print("spec\tstrand\tlabel\tkind\tdistance\tgene")
        for v in variants:
            print(f"{v.spec()}\t{v.strand}\t{v.label}\t{v.kind}\t{v.distance}\t{v.gene}")
        return 0
    if not args.url or not args.key:
        parser.error("--url and --key (or DNASERVE_URL and DNASERVE_API_KEY) are needed")
    return check_service(args.url, args.key, args.package, args.count, args.tolerance)


if __name__ == "__main__":
    sys.exit(main())
