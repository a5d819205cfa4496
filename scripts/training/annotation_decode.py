"""What the worker does with an annotation model's output, in Python, for evaluation.

This mirrors worker/windowing/annotation_decode.{h,cc} and the annotation runner
(worker/tasks/annotation_task.cc) step for step, so the held-out metrics describe what the service
returns: windows, the reverse-complement pass, the edge-weighted average of the two passes, the
per-strand Viterbi parse, CDS and transcript type.
tests/unit/worker/annotation_expression_models_test.cpp checks the two against each other on
held-out chr20 regions through the real worker.
"""

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from training.annotation_data import COMPLEMENT_IDS

# Channel indices of LABELS (annotation_data), splice sites included.
INTERGENIC = 0
PLUS = dict(exon=1, intron=2, cds=3, utr=4, tss=5, end=6, donor=13, acceptor=14)
MINUS = dict(exon=7, intron=8, cds=9, utr=10, tss=11, end=12, donor=15, acceptor=16)
# The channel a channel becomes on the reverse complement.
TWIN = [0, 7, 8, 9, 10, 11, 12, 1, 2, 3, 4, 5, 6, 15, 16, 13, 14]
CHANNELS = len(TWIN)

EDGE_RAMP_BP = 256   # kEdgeRampBp: a window's bases within this of its edge weigh less
FLOOR = 1e-4         # kProbabilityFloor


@dataclass
class DecodeOptions:        # worker: DecodeOptions (a manifest's "decoder" overrides them)
    emission_weight: float = 1.0  # weight of the per-base log probabilities against the costs
    start_cost: float = 12.0      # -log prior of a transcript starting (or ending) at a base
    splice_cost: float = 8.0      # -log prior of an exon/intron switch
    terminal_weight: float = 1.0  # weight of log(TSS / transcript_end probability) on them
    site_weight: float = 1.0      # weight of log(donor / acceptor probability) on a switch
    site_pass_weight: float = 0.0  # weight of log(1 - that probability) for not switching there
    cds_threshold: float = 0.5    # CDS call
    min_transcript_bp: int = 100
    min_exon_mean: float = 0.5    # a transcript whose exons average less is dropped
    min_terminal_exon_bp: int = 10  # shorter first/last exons are dropped (repeatedly)


@dataclass
class Transcript:
    strand: str
    start: int
    end: int
    tss_position: int
    polya_position: int
    exons: List[Tuple[int, int]]
    introns: List[Tuple[int, int]]
    cds: List[Tuple[int, int]]
    score: float
    transcript_type: str = ""
    transcript_type_score: float = 0.0


# --- windows and stitching -----------------------------------------------------------------

def plan_windows(length: int, context: int) -> List[Tuple[int, int]]:
    """Non-overlapping windows [start, end) (the last one may be short, padded with N)."""
    count = 1 if length <= context else (length - context + context - 1) // context + 1
    return [(i * context, min(i * context + context, length)) for i in range(count)]


def edge_weight(offset: int, real: int) -> float:
    """EdgeWeight: how much a window's row `offset` of `real` real bases is trusted. Rows
    near either end saw only one side of their context."""
    distance = min(offset, real - 1 - offset)
    return min(1.0, (distance + 1) / EDGE_RAMP_BP)


def _edge_weights(real: int) -> np.ndarray:
    offsets = np.arange(real)
    distance = np.minimum(offsets, real - 1 - offsets)
    return np.minimum(1.0, (distance + 1) / EDGE_RAMP_BP).astype(np.float32)


def run_pass(module, ids: np.ndarray, context: int, batch_size: int, reverse: bool):
    """One pass of the runner: ([L, 13] scores in plus-strand coordinates and channels,
    [L] row weights, [(span, type probabilities)])."""
    import torch
    length = len(ids)
    source = COMPLEMENT_IDS[ids[::-1]] if reverse else ids
    windows = plan_windows(length, context)
    scores = np.zeros((length, CHANNELS), dtype=np.float32)
    weights = np.zeros(length, dtype=np.float32)
    types = []
    for first in range(0, len(windows), batch_size):
        chunk = windows[first:first + batch_size]
        batch = np.full((len(chunk), context), 5, dtype=np.int64)
        for row, (s, e) in enumerate(chunk):
            batch[row, :e - s] = source[s:e]
        with torch.no_grad():
            labels, kinds = module(torch.from_numpy(batch))
        labels, kinds = labels.numpy(), kinds.numpy()
        for row, (s, e) in enumerate(chunk):
            real = e - s
            rows = labels[row, :real]
            w = _edge_weights(real)
            if reverse:
                scores[length - e:length - s] = rows[::-1][:, TWIN]
                weights[length - e:length - s] = w[::-1]
                span = (length - e, length - s)
            else:
                scores[s:e] = rows
                weights[s:e] = w
                span = (s, e)
            types.append((span, kinds[row].astype(np.float64)))
    return scores, weights, types


def stitch(module, ids: np.ndarray, context: int, batch_size: int = 8,
           reverse_complement: bool = True):
    """The runner's stitched per-base scores [L, 13] and window type probabilities."""
    scores, weights, types = run_pass(module, ids, context, batch_size, False)
    if reverse_complement:
        rc_scores, rc_weights, rc_types = run_pass(module, ids, context, batch_size, True)
        scores = weighted_average(scores, weights, rc_scores, rc_weights)
        types += rc_types
    return scores, types


def weighted_average(a: np.ndarray, wa: np.ndarray, b: np.ndarray, wb: np.ndarray) -> np.ndarray:
    """AverageWeighted: per base (wa a + wb b) / (wa + wb) in float32, as the worker does."""
    total = (wa + wb)[:, None]
    return ((a * wa[:, None] + b * wb[:, None]) / total).astype(np.float32)


# --- decoding ------------------------------------------------------------------------------

DONOR_MOTIFS = ("GT", "GC")  # the first two intron bases, sense strand
ACCEPTOR_MOTIFS = ("AG",)     # the last two intron bases, sense strand
_RC = str.maketrans("ACGT", "TGCA")


def splice_motifs(sequence: str, strand: str) -> Tuple[np.ndarray, np.ndarray]:
    """SpliceMotifs: (intron_may_start[i], exon_may_resume[i]) in plus coordinates, reading
    left to right: an intron may begin at i (exon -> intron between i-1 and i) when the two
    bases from i are a donor (on '+') or the reverse complement of an acceptor (on '-'), and an
    exon may resume at i when the two bases before i are an acceptor (on '+') or the reverse
    complement of a donor (on '-')."""
    n = len(sequence)
    begin = np.zeros(n, dtype=bool)
    resume = np.zeros(n, dtype=bool)
    if strand == "+":
        first, last = DONOR_MOTIFS, ACCEPTOR_MOTIFS
    else:
        first = tuple(m.translate(_RC)[::-1] for m in ACCEPTOR_MOTIFS)
        last = tuple(m.translate(_RC)[::-1] for m in DONOR_MOTIFS)
    if n < 2:
        return begin, resume
    bases = np.frombuffer(sequence.upper().encode("ascii"), dtype=np.uint8).astype(np.int32)
    pairs = bases[:-1] * 256 + bases[1:]  # pairs[i] = bases i and i + 1

    def codes(motifs):
        return [ord(m[0]) * 256 + ord(m[1]) for m in motifs]

    begin[:-1] = np.isin(pairs, codes(first))
    resume[2:] = np.isin(pairs[:-1], codes(last))
    return begin, resume


def _viterbi(exon: np.ndarray, intron: np.ndarray, left: np.ndarray, right: np.ndarray,
             options: DecodeOptions, begin=None, resume=None, opens=None,
             closes=None) -> List[int]:
    """ParseStrand: the best state path (0 outside, 1 exon, 2 intron); see the C++ comment.
    `begin`/`resume` (splice_motifs) restrict where introns may begin and exons resume;
    `opens[k]`/`closes[k]` are the splice-site probabilities of an intron's leftmost /
    rightmost base k (None: no site channels)."""
    n = len(exon)
    if n == 0:
        return []
    log = math.log
    floor = FLOOR
    w = options.emission_weight
    le = [w * log(max(float(x), floor)) for x in exon]
    li = [w * log(max(float(x), floor)) for x in intron]
    lo = [w * log(max(1.0 - float(x) - float(y), floor)) for x, y in zip(exon, intron)]
    lt = [options.terminal_weight * log(max(float(x), floor)) for x in left]
    lend = [options.terminal_weight * log(max(float(x), floor)) for x in right]
    if opens is not None:
        lopen = [options.site_weight * log(max(float(x), floor)) for x in opens]
        lclose = [options.site_weight * log(max(float(x), floor)) for x in closes]
        pw = options.site_pass_weight
        lkeep_open = [pw * log(max(1.0 - float(x), floor)) for x in opens]
        lkeep_close = [pw * log(max(1.0 - float(x), floor)) for x in closes]
    else:
        lopen = lclose = lkeep_open = lkeep_close = [0.0] * n
    start_cost, splice_cost = options.start_cost, options.splice_cost
    back = bytearray(3 * n)
    o, e, i = lo[0], le[0], li[0]
    for k in range(1, n):
        # outside <- outside | exon (the exon ended at k-1)
        from_e = e - start_cost + lend[k - 1]
        if o >= from_e:
            no, bo = o, 0
        else:
            no, bo = from_e, 1
        # exon <- exon | outside (a transcript starts at k) | intron (acceptor)
        # (staying in a state where a switch was possible pays for not taking the site)
        may_begin = begin is None or begin[k]
        may_resume = resume is None or resume[k]
        ne, be = e + (lkeep_open[k] if may_begin else 0.0), 1
        cand = o - start_cost + lt[k]
        if cand > ne:
            ne, be = cand, 0
        if may_resume:
            cand = i - splice_cost + lclose[k - 1]
            if cand > ne:
                ne, be = cand, 2
        # intron <- intron | exon (the intron's first base is k)
        ni, bi = i + (lkeep_close[k - 1] if may_resume else 0.0), 2
        if may_begin:
            cand = e - splice_cost + lopen[k]
            if cand > ni:
                ni, bi = cand, 1
        o, e, i = no + lo[k], ne + le[k], ni + li[k]
        back[3 * k] = bo
        back[3 * k + 1] = be
        back[3 * k + 2] = bi
    state = 0
    best = o
    if e > best:
        state, best = 1, e
    if i > best:
        state = 2
    path = [0] * n
    for k in range(n - 1, -1, -1):
        path[k] = state
        state = back[3 * k + state]
    return path


def _runs(mask: Sequence[bool], lo: int, hi: int) -> List[Tuple[int, int]]:
    out, open_at = [], -1
    for k in range(lo, hi):
        if mask[k]:
            if open_at < 0:
                open_at = k
        elif open_at >= 0:
            out.append((open_at, k))
            open_at = -1
    if open_at >= 0:
        out.append((open_at, hi))
    return out


def contiguous_cds(exons: List[Tuple[int, int]], coding: np.ndarray,
                   threshold: float) -> List[Tuple[int, int]]:
    """CodingSpan: the exonic bases from the first to the last exonic base with CDS >=
    threshold (one open reading frame, in genomic order), cut at the exon boundaries."""
    first = last = None
    for a, b in exons:
        hits = np.nonzero(coding[a:b] >= threshold)[0]
        if len(hits):
            if first is None:
                first = a + int(hits[0])
            last = a + int(hits[-1])
    if first is None:
        return []
    out = []
    for a, b in exons:
        lo, hi = max(a, first), min(b, last + 1)
        if lo < hi:
            out.append((lo, hi))
    return out


def decode_strand(scores: np.ndarray, channels: dict, strand: str,
                  options: DecodeOptions, sequence: str = "") -> List[Transcript]:
    exon = scores[:, channels["exon"]]
    intron = scores[:, channels["intron"]]
    # A transcript's leftmost base is its TSS on '+' and its 3' end on '-'; an intron's leftmost
    # base is its donor on '+' and its acceptor on '-'.
    left, right = ("tss", "end") if strand == "+" else ("end", "tss")
    opening, closing = ("donor", "acceptor") if strand == "+" else ("acceptor", "donor")
    has_sites = scores.shape[1] > channels["acceptor"]
    begin, resume = (splice_motifs(sequence, strand) if sequence and has_sites
                     else (None, None))
    path = _viterbi(exon, intron, scores[:, channels[left]], scores[:, channels[right]],
                    options, begin, resume,
                    scores[:, channels[opening]] if has_sites else None,
                    scores[:, channels[closing]] if has_sites else None)
    inside = [s != 0 for s in path]
    is_exon = [s == 1 for s in path]
    out = []
    for lo, hi in _runs(inside, 0, len(path)):
        exons = _runs(is_exon, lo, hi)
        while exons and exons[-1][1] - exons[-1][0] < options.min_terminal_exon_bp:
            exons.pop()
        while exons and exons[0][1] - exons[0][0] < options.min_terminal_exon_bp:
            exons.pop(0)
        if not exons:
            continue
        start, end = exons[0][0], exons[-1][1]
        if end - start < options.min_transcript_bp:
            continue
        exon_bases = sum(b - a for a, b in exons)
        exon_mean = sum(float(exon[a:b].astype(np.float64).sum()) for a, b in exons) / exon_bases
        if exon_mean < options.min_exon_mean:
            continue
        body = np.maximum(exon[start:end], intron[start:end]).astype(np.float64)
        introns = [(exons[k][1], exons[k + 1][0]) for k in range(len(exons) - 1)]
        out.append(Transcript(
            strand=strand, start=start, end=end,
            tss_position=start if strand == "+" else end - 1,
            polya_position=end - 1 if strand == "+" else start,
            exons=exons, introns=introns,
            cds=contiguous_cds(exons, scores[:, channels["cds"]], options.cds_threshold),
            score=float(body.sum()) / (end - start)))
    return out


def assign_type(span: Tuple[int, int], types, names: Sequence[str]) -> Tuple[str, float]:
    """AssignTranscriptType: the overlap-weighted mean of the windows' type probabilities."""
    sums = np.zeros(len(names), dtype=np.float64)
    total = 0.0
    for (s, e), probabilities in types:
        overlap = min(e, span[1]) - max(s, span[0])
        if overlap <= 0:
            continue
        sums += overlap * probabilities
        total += overlap
    if total <= 0:
        return names[0], 0.0
    best = int(np.argmax(sums))
    return names[best], float(sums[best] / total)


def manifest_options(manifest_json) -> DecodeOptions:
    """The decoder options a package asks for (ModelManifest::decoder)."""
    return DecodeOptions(**manifest_json.get("decoder", {}))


def decode(scores: np.ndarray, types, names: Sequence[str],
           options: Optional[DecodeOptions] = None, sequence: str = "") -> List[Transcript]:
    """DecodeTranscripts + the runner's type assignment: sorted by start, '+' first on ties;
    only mRNAs keep a CDS. With `sequence`, introns follow the splice motifs."""
    options = options or DecodeOptions()
    out = (decode_strand(scores, PLUS, "+", options, sequence)
           + decode_strand(scores, MINUS, "-", options, sequence))
    out.sort(key=lambda t: (t.start, 0 if t.strand == "+" else 1))
    for t in out:
        t.transcript_type, t.transcript_type_score = assign_type((t.start, t.end), types, names)
        if t.transcript_type != "mRNA":
            t.cds = []
    return out
