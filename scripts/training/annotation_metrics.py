"""How predicted gene structures are compared with refGene on the held-out region.

A structure is (strand, exons, cds) in chr20 coordinates (0-based, half-open). Reference: every
refGene chr20 transcript lying wholly in HELD_OUT (NM_ and NR_); identical structures count once.

- **exon level**: a predicted exon matches when a reference exon on the same strand has exactly
  the same start and end. Precision = matching distinct predicted exons / distinct predicted
  exons; recall = distinct reference exons matched / distinct reference exons; F1 their harmonic
  mean. **intron level**: the same for introns (the gaps between consecutive exons).
- **transcript level**: a predicted transcript matches a reference transcript on the same strand
  with the identical intron chain (multi-exon), or, both single-exon, when they overlap by at
  least half of the longer one. Precision over predicted transcripts, recall over distinct
  reference transcripts (isoforms are separate transcripts, so recall is bounded by how many
  isoforms a locus has: one prediction per locus can match at most one).
- **gene level**: a reference gene (refGene symbol and strand) is recovered when any of its
  transcripts is matched at transcript level.
- **coding (CDS) level**, the level AUGUSTUS predicts: the CDS segments of NM_ transcripts are
  the reference; CDS-exon matching is exact as above, and a predicted coding transcript matches
  when its chain of CDS segments equals a reference coding chain.
- **base level**: exonic bases per strand (sensitivity and specificity, Burset & Guigo 1996).

- **gene starts** (what a gene-by-gene workflow needs): a reference gene (symbol, strand) is
  found when a predicted transcript on its strand starts (5' end: leftmost base on '+',
  rightmost on '-') within GENE_START_BP of one of its transcripts' starts; recall over
  reference genes, precision over predicted transcripts (a prediction counts when its start lies
  that close to a reference start on its strand). `gene_starts` (below) computes them for any
  list of (strand, start) pairs, so the find-genes workflow's genes are scored the same way.

Looser recovery tiers for "does it find the annotated transcripts", per reference transcript:
`overlap` (a predicted transcript on the same strand overlaps its span), `shares_junction`
(... and shares at least one exact intron, or for single-exon references, overlaps by half),
`introns_80` (one predicted transcript holds >= 80% of its introns exactly), `exact` (transcript
level above).
"""

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Sequence, Tuple

import numpy as np

Span = Tuple[int, int]


@dataclass
class Structure:
    strand: str
    exons: List[Span]
    cds: List[Span] = field(default_factory=list)
    name: str = ""
    gene: str = ""

    @property
    def start(self) -> int:
        return self.exons[0][0]

    @property
    def end(self) -> int:
        return self.exons[-1][1]

    @property
    def introns(self) -> List[Span]:
        return [(a[1], b[0]) for a, b in zip(self.exons, self.exons[1:])]


def from_refgene(t) -> Structure:
    cds = []
    if t.coding:
        for a, b in t.exons:
            lo, hi = max(a, t.cds_start), min(b, t.cds_end)
            if lo < hi:
                cds.append((lo, hi))
    return Structure(strand=t.strand, exons=list(t.exons), cds=cds, name=t.name, gene=t.gene)


def prf(tp_predicted: int, predicted: int, tp_reference: int, reference: int,
        prefix: str) -> Dict[str, float]:
    precision = tp_predicted / predicted if predicted else 0.0
    recall = tp_reference / reference if reference else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {f"{prefix}_precision": precision, f"{prefix}_recall": recall, f"{prefix}_f1": f1}


def _feature_level(predicted: Iterable[Structure], reference: Iterable[Structure], attribute,
                   prefix: str) -> Dict[str, float]:
    p = {(s.strand, a, b) for s in predicted for a, b in attribute(s)}
    r = {(s.strand, a, b) for s in reference for a, b in attribute(s)}
    hit = p & r
    out = prf(len(hit), len(p), len(hit), len(r), prefix)
    out[f"{prefix}_predicted"] = float(len(p))
    out[f"{prefix}_reference"] = float(len(r))
    return out


def _overlap(a: Span, b: Span) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def _same_transcript(p: Structure, r: Structure) -> bool:
    if p.strand != r.strand:
        return False
    if len(r.exons) > 1 or len(p.exons) > 1:
        return len(p.exons) == len(r.exons) and p.introns == r.introns
    longer = max(p.end - p.start, r.end - r.start)
    return _overlap((p.start, p.end), (r.start, r.end)) * 2 >= longer


def _index(structures: Sequence[Structure]):
    by_strand = defaultdict(list)
    for i, s in enumerate(structures):
        by_strand[s.strand].append(i)
    return by_strand


def _overlapping(p_list: Sequence[Structure], r: Structure, by_strand) -> List[Structure]:
    return [p_list[i] for i in by_strand.get(r.strand, [])
            if _overlap((p_list[i].start, p_list[i].end), (r.start, r.end)) > 0]


def unique(structures: Sequence[Structure], key) -> List[Structure]:
    seen, out = set(), []
    for s in structures:
        k = key(s)
        if k not in seen:
            seen.add(k)
            out.append(s)
    return out


def compare(predicted: Sequence[Structure], reference: Sequence[Structure],
            region: Span, prefix: str, coding_only: bool = False) -> Dict[str, float]:
    """Every metric of the module docstring for one prediction set, keys prefixed."""
    out: Dict[str, float] = {}
    predicted = [s for s in predicted if s.exons]
    reference = unique(reference, lambda s: (s.strand, tuple(s.exons)))
    if not coding_only:
        out.update(_feature_level(predicted, reference, lambda s: s.exons, f"{prefix}exon"))
        out.update(_feature_level(predicted, reference, lambda s: s.introns, f"{prefix}intron"))
        by_strand = _index(predicted)
        matched_p = set()
        matched_r = 0
        genes_all, genes_hit = set(), set()
        tiers = defaultdict(int)
        for r in reference:
            genes_all.add((r.gene, r.strand))
            near = _overlapping(predicted, r, by_strand)
            exact = [p for p in near if _same_transcript(p, r)]
            if exact:
                matched_r += 1
                genes_hit.add((r.gene, r.strand))
                matched_p.update(id(p) for p in exact)
            r_introns = set(r.introns)
            if near:
                tiers["overlap"] += 1
            if any((r_introns & set(p.introns)) if r_introns else _same_transcript(p, r)
                   for p in near):
                tiers["shares_junction"] += 1
            if any(len(r_introns & set(p.introns)) >= 0.8 * len(r_introns) if r_introns
                   else _same_transcript(p, r) for p in near):
                tiers["introns_80"] += 1
            if exact:
                tiers["exact"] += 1
        precision_hits = sum(1 for p in predicted if id(p) in matched_p)
        out.update(prf(precision_hits, len(predicted), matched_r, len(reference),
                       f"{prefix}transcript"))
        out[f"{prefix}transcript_predicted"] = float(len(predicted))
        out[f"{prefix}transcript_reference"] = float(len(reference))
        out[f"{prefix}gene_recovered"] = float(len(genes_hit))
        out[f"{prefix}gene_reference"] = float(len(genes_all))
        for tier in ("overlap", "shares_junction", "introns_80", "exact"):
            out[f"{prefix}recovered_{tier}"] = float(tiers[tier])
        out.update(_base_level(predicted, reference, region, prefix))
        out.update(gene_starts([(p.strand, five_prime(p)) for p in predicted], reference,
                               prefix))
    coding_p = [Structure(s.strand, s.cds) for s in predicted if s.cds]
    coding_r = unique([Structure(s.strand, s.cds, name=s.name, gene=s.gene)
                       for s in reference if s.cds], lambda s: (s.strand, tuple(s.exons)))
    out.update(_feature_level(coding_p, coding_r, lambda s: s.exons, f"{prefix}cds_exon"))
    chains_r = {(s.strand, tuple(s.exons)) for s in coding_r}
    chains_p = [(s.strand, tuple(s.exons)) for s in coding_p]
    hit_p = sum(1 for c in chains_p if c in chains_r)
    hit_r = len(chains_r & set(chains_p))
    out.update(prf(hit_p, len(chains_p), hit_r, len(chains_r), f"{prefix}cds_transcript"))
    out[f"{prefix}cds_transcript_predicted"] = float(len(chains_p))
    out[f"{prefix}cds_transcript_reference"] = float(len(chains_r))
    return out


GENE_START_BP = 2000


def five_prime(s: Structure) -> int:
    """0-based coordinate of a structure's first transcribed base."""
    return s.start if s.strand == "+" else s.end - 1


def gene_starts(predicted: Sequence[Tuple[str, int]], reference: Sequence[Structure],
                prefix: str, window: int = GENE_START_BP) -> Dict[str, float]:
    """Gene-start recall and precision (module docstring) of predicted (strand, 5' position)
    pairs against the reference structures."""
    starts = defaultdict(set)           # (gene, strand) -> 5' positions
    by_strand = defaultdict(list)        # strand -> sorted 5' positions of every reference
    for r in reference:
        starts[(r.gene or r.name, r.strand)].add(five_prime(r))
        by_strand[r.strand].append(five_prime(r))
    sorted_starts = {k: np.array(sorted(v), dtype=np.int64) for k, v in by_strand.items()}
    predicted_by_strand = defaultdict(list)
    for strand, position in predicted:
        predicted_by_strand[strand].append(position)
    predicted_sorted = {k: np.array(sorted(v), dtype=np.int64)
                        for k, v in predicted_by_strand.items()}

    def near(positions: np.ndarray, x: int) -> bool:
        if positions is None or not len(positions):
            return False
        k = int(np.searchsorted(positions, x))
        return any(0 <= j < len(positions) and abs(int(positions[j]) - x) <= window
                   for j in (k - 1, k))

    found = sum(1 for (gene, strand), xs in starts.items()
                if any(near(predicted_sorted.get(strand), x) for x in xs))
    matching = sum(1 for strand, x in predicted if near(sorted_starts.get(strand), x))
    return {f"{prefix}gene_start_recall": found / len(starts) if starts else 0.0,
            f"{prefix}gene_start_precision": matching / len(predicted) if predicted else 0.0,
            f"{prefix}gene_start_found": float(found),
            f"{prefix}gene_start_genes": float(len(starts)),
            f"{prefix}gene_start_matching": float(matching),
            f"{prefix}gene_start_predicted": float(len(predicted))}


def _base_level(predicted, reference, region: Span, prefix: str) -> Dict[str, float]:
    length = region[1] - region[0]
    tp = fp = fn = 0
    for strand in "+-":
        p = np.zeros(length, dtype=bool)
        r = np.zeros(length, dtype=bool)
        for target, structures in ((p, predicted), (r, reference)):
            for s in structures:
                if s.strand != strand:
                    continue
                for a, b in s.exons:
                    target[max(a, region[0]) - region[0]:max(0, min(b, region[1]) - region[0])] = 1
        tp += int(np.count_nonzero(p & r))
        fp += int(np.count_nonzero(p & ~r))
        fn += int(np.count_nonzero(~p & r))
    out = prf(tp, tp + fp, tp, tp + fn, f"{prefix}exon_base")
    return out


def type_accuracy(predicted: Sequence[Tuple[Structure, str]], reference: Sequence[Structure],
                  prefix: str) -> Dict[str, float]:
    """Transcript type against the reference for predictions that share a junction with (or,
    single-exon, half-overlap) a reference transcript: mRNA for NM_, lnc_RNA for NR_. When a
    prediction meets several references, the one sharing most introns decides."""
    right = total = 0
    for p, kind in predicted:
        best, best_shared = None, -1
        for r in reference:
            if r.strand != p.strand or _overlap((p.start, p.end), (r.start, r.end)) == 0:
                continue
            shared = len(set(p.introns) & set(r.introns))
            if (shared or _same_transcript(p, r)) and shared > best_shared:
                best, best_shared = r, shared
        if best is None:
            continue
        total += 1
        right += (kind == "mRNA") == best.name.startswith("NM_")
    return {f"{prefix}type_accuracy": right / total if total else 0.0,
            f"{prefix}type_evaluated": float(total)}
