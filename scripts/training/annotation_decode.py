"""What the worker does with an annotation model's output, in Python, for evaluation.

This mirrors worker/windowing/annotation_decode.{h,cc} and the annotation runner
(worker/tasks/annotation_task.cc) step for step, so the held-out metrics describe what the service
returns: windows, the reverse-complement pass, the edge-weighted average of the two passes, the
per-strand Viterbi parse, CDS and transcript type.
tests/unit/worker/annotation_expression_models_test.cpp checks the two against each other on
held-out chr20 regions through the real worker.
"""

import math
import os
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from training import annotation_coding as coding_mod
from training import annotation_splice_signal as signal_mod
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
    # The exon-chain decoder (decode_chain_strand; worker: DecodeChainStrand) instead of the
    # per-base parse, and what it needs: candidate splice sites, candidate transcript ends,
    # segment length priors (log-normal: mean and sd of the natural log of the length in bp),
    # and a reading frame (the best ORF) for the CDS.
    exon_chain: bool = False
    site_min: float = 0.01        # a splice-site candidate: its probability >= this (and motif)
    terminal_block_bp: int = 100  # one TSS / transcript-end candidate per block (its argmax)
    terminal_min: float = 0.0     # ... when its probability is >= this
    length_weight: float = 1.0    # weight of the log length priors
    exon_weight: float = 0.0      # weight of log(P(exon or intron) share) inside a gene
    max_intron_bp: int = 100000
    max_exon_bp: int = 20000
    intron_log_mean: float = 7.446
    intron_log_sd: float = 1.526
    first_exon_log_mean: float = 5.321
    first_exon_log_sd: float = 0.734
    internal_exon_log_mean: float = 4.763
    internal_exon_log_sd: float = 0.537
    last_exon_log_mean: float = 6.885
    last_exon_log_sd: float = 0.983
    single_exon_log_mean: float = 5.583
    single_exon_log_sd: float = 1.495
    # The coding content sensor (annotation_coding; worker: CodingModel, ChainParseFramed):
    # with coding_weight > 0 the chain decoder keeps a reading frame through the CDS
    # (chain_paths_framed) and the CDS is the chain's ORF. `coding_model` names the table file
    # in the package; `coding` is that model once read (manifest_options), not a manifest key.
    coding_model: str = ""
    coding_weight: float = 0.0
    coding: Optional[object] = None
    # Splice-site signal sensors (annotation_splice_signal; worker: SpliceSignal): with
    # signal_weight > 0 each candidate site's term adds signal_weight x the log-odds of its
    # sequence window (true sites against motif-matching non-sites). `splice_signal` names the
    # table file in the package; `signal` is that model once read, not a manifest key.
    splice_signal: str = ""
    signal_weight: float = 0.0
    signal: Optional[object] = None
    orf_cds: bool = False         # CDS = the best-scoring ORF (ATG..stop) of the spliced exons
    min_orf_bp: int = 90
    # Alternative starts (alternative_start_chains): a transcript from each confident TSS peak
    # no chain starts near.
    alternative_starts: bool = False
    alternative_start_min: float = 0.5       # a peak: a BlockPeaks TSS probability >= this
    alternative_start_spacing_bp: int = 2000  # peaks closer than this to a start are not used
    alternative_span_bp: int = 200000         # how far downstream of its peak the chain may go


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


def neighbour_ids(source: np.ndarray, start: int, context: int, neighbour: int) -> np.ndarray:
    """The `neighbour` ids before a window starting at `start` and the `neighbour` after its
    `context` bases, N (5) beyond the sequence (worker: NeighbourIds)."""
    left = source[max(0, start - neighbour):start]
    right = source[start + context:start + context + neighbour]
    out = np.full(2 * neighbour, 5, dtype=np.int64)
    out[neighbour - len(left):neighbour] = left
    out[neighbour:neighbour + len(right)] = right
    return out


def run_pass(module, ids: np.ndarray, context: int, batch_size: int, reverse: bool,
             wanted: Optional[int] = None, neighbour: int = 0):
    """One pass of the runner: ([L, 13] scores in plus-strand coordinates and channels,
    [L] row weights, [(span, type probabilities)]). `wanted` (a strand-complete module's second
    input, the same for every row; None: not sent) and `neighbour` (its third input's bases on
    each side of a window; 0: not sent)."""
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
            inputs = [torch.from_numpy(batch)]
            if wanted is not None:
                inputs.append(torch.full((len(chunk),), wanted, dtype=torch.int64))
            if wanted is not None and neighbour > 0:
                inputs.append(torch.from_numpy(np.stack(
                    [neighbour_ids(source, s, context, neighbour) for s, _ in chunk])))
            labels, kinds = module(*inputs)
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


def neighbour_bp(manifest_json) -> int:
    """The manifest's neighbour_bp (0 when absent)."""
    return int(manifest_json.get("neighbour_bp", 0))


def strand_complete_channels(manifest_json) -> List[int]:
    """Indices of the manifest's strand_complete_labels (StrandCompleteChannels)."""
    listed = manifest_json.get("strand_complete_labels") or []
    return [i for i, label in enumerate(manifest_json["output_labels"]) if label in listed]


def stitch(module, ids: np.ndarray, context: int, batch_size: int = 8,
           reverse_complement: bool = True, strand_complete: Sequence[int] = (),
           neighbour: int = 0):
    """The runner's stitched per-base scores [L, 13] and window type probabilities (worker:
    RunAnnotationPasses). With `strand_complete` channels (strand_complete_channels) the module
    takes its second input, 1 on the forward pass and 0 on the reverse pass, and those channels
    come from the forward pass alone; `neighbour` > 0 also sends each window's neighbours."""
    complete = list(strand_complete)
    scores, weights, types = run_pass(module, ids, context, batch_size, False,
                                      1 if complete else None, neighbour)
    if reverse_complement:
        rc_scores, rc_weights, rc_types = run_pass(module, ids, context, batch_size, True,
                                                   0 if complete else None, neighbour)
        forward = scores[:, complete].copy()
        scores = weighted_average(scores, weights, rc_scores, rc_weights)
        scores[:, complete] = forward
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


_CODING_TABLES: dict = {}
_SIGNAL_TABLES: dict = {}


def coding_table(path: str) -> "coding_mod.CodingModel":
    """The coding model of a table file, read once per process."""
    if path not in _CODING_TABLES:
        _CODING_TABLES[path] = coding_mod.CodingModel.load(path)
    return _CODING_TABLES[path]


def signal_table(path: str) -> "signal_mod.SpliceSignal":
    """The splice signal model of a table file, read once per process."""
    if path not in _SIGNAL_TABLES:
        _SIGNAL_TABLES[path] = signal_mod.SpliceSignal.load(path)
    return _SIGNAL_TABLES[path]


def manifest_options(manifest_json, package_dir: Optional[str] = None) -> DecodeOptions:
    """The decoder options a package asks for (ModelManifest::decoder), its coding model read
    from `package_dir` (LoadManifest)."""
    options = DecodeOptions(**manifest_json.get("decoder", {}))
    if options.coding_model and package_dir:
        options.coding = coding_table(os.path.join(package_dir, options.coding_model))
    if options.splice_signal and package_dir:
        options.signal = signal_table(os.path.join(package_dir, options.splice_signal))
    return options


def decode(scores: np.ndarray, types, names: Sequence[str],
           options: Optional[DecodeOptions] = None, sequence: str = "") -> List[Transcript]:
    """DecodeTranscripts + the runner's type assignment: sorted by start, '+' first on ties;
    only mRNAs keep a CDS. With `sequence`, introns follow the splice motifs."""
    options = options or DecodeOptions()
    strand_decoder = (decode_chain_strand if options.exon_chain and sequence
                      and scores.shape[1] > MINUS["acceptor"] else decode_strand)
    out = (strand_decoder(scores, PLUS, "+", options, sequence)
           + strand_decoder(scores, MINUS, "-", options, sequence))
    out.sort(key=lambda t: (t.start, 0 if t.strand == "+" else 1))
    for t in out:
        t.transcript_type, t.transcript_type_score = assign_type((t.start, t.end), types, names)
        if t.transcript_type != "mRNA":
            t.cds = []
    return out


# --- the exon-chain decoder ----------------------------------------------------------------
# Mirrors DecodeChainStrand, BestOrf and their helpers in worker/windowing/exon_chain.cc
# (see the comments there); every sum and comparison is made in the same order, in doubles.

_COMPLEMENT = str.maketrans("ACGTacgt", "TGCAtgca")


def log_normal(length: np.ndarray, mean: float, sd: float) -> np.ndarray:
    """LengthPrior: -z^2 / 2 for z = (ln length - mean) / sd, the log density of the log length
    less its maximum, so a segment of the typical length costs nothing and the number of
    segments is not itself penalised (the splice sites decide it)."""
    z = (np.log(length.astype(np.float64)) - mean) / sd
    return -0.5 * z * z


def _floored_log(p: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(p.astype(np.float64), FLOOR))


def block_peaks(values: np.ndarray, block: int, minimum: float) -> np.ndarray:
    """BlockPeaks: per block of `block` bases the first position of its maximum, when >=
    minimum."""
    values = values.astype(np.float64)
    out = []
    n = len(values)
    for lo in range(0, n, block):
        k = lo + int(np.argmax(values[lo:lo + block]))
        if values[k] >= minimum:
            out.append(k)
    return np.array(out, dtype=np.int64)


def sense_channels(scores: np.ndarray, channels: dict, strand: str):
    """The strand's channels read in its sense direction (reversed on '-')."""
    def column(name):
        c = scores[:, channels[name]]
        return c if strand == "+" else c[::-1]
    return {name: np.ascontiguousarray(column(name)) for name in channels}


def _chain_inputs(sense: dict, seq: str, options: DecodeOptions):
    """What ChainParse and ChainParseFramed score: per-base prefix sums, candidate nodes and
    their terms (the caller has checked len(seq) == n > 0)."""
    n = len(sense["exon"])
    exon = sense["exon"].astype(np.float64)
    intron = sense["intron"].astype(np.float64)
    outside = 1.0 - exon - intron
    lo_out = np.log(np.maximum(outside, FLOOR))
    w = options.emission_weight
    donor_p = sense["donor"].astype(np.float64)
    acceptor_p = sense["acceptor"].astype(np.float64)
    # An intron may begin at i (GT / GC at i, i+1), an exon resume at i (AG at i-2, i-1).
    donor_motif, acceptor_motif = splice_motifs(seq, "+")
    pw = options.site_pass_weight
    # Per-base segment scores against "outside": exon bases pay for confident donors they pass,
    # intron bases for confident acceptors.
    genic = np.maximum(exon + intron, FLOOR)
    inside = w * (np.log(genic) - lo_out)
    xw = options.exon_weight
    exon_score = inside + xw * np.log(np.maximum(exon / genic, FLOOR))
    intron_score = inside + xw * np.log(np.maximum(intron / genic, FLOOR))
    keep_donor = pw * np.log(np.maximum(1.0 - donor_p, FLOOR))
    exon_score = exon_score + np.where(donor_motif, keep_donor, 0.0)
    acc_at = np.zeros(n, dtype=np.float64)   # acceptor probability of the base before i
    acc_at[1:] = acceptor_p[:-1]
    keep_acceptor = pw * np.log(np.maximum(1.0 - acc_at, FLOOR))
    intron_score = intron_score + np.where(acceptor_motif, keep_acceptor, 0.0)
    ce = np.concatenate([[0.0], np.cumsum(exon_score)])
    ci = np.concatenate([[0.0], np.cumsum(intron_score)])

    donors = np.nonzero(donor_motif & (donor_p >= options.site_min))[0]
    acceptors = np.nonzero(acceptor_motif & (acc_at >= options.site_min))[0]
    tss = sense["tss"].astype(np.float64)
    end = sense["end"].astype(np.float64)
    starts = block_peaks(sense["tss"], options.terminal_block_bp, options.terminal_min)
    ends = block_peaks(sense["end"], options.terminal_block_bp, options.terminal_min) + 1
    tw, sw = options.terminal_weight, options.site_weight
    starts = np.union1d(starts, [0]).astype(np.int64)
    ends = np.union1d(ends, [n]).astype(np.int64)
    start_term = tw * _floored_log(tss[np.minimum(starts, n - 1)])
    start_term[starts == 0] = 0.0
    end_term = tw * _floored_log(end[ends - 1])
    end_term[ends == n] = 0.0
    donor_term = sw * _floored_log(donor_p[donors])
    acceptor_term = sw * _floored_log(acc_at[acceptors])
    if "donor_signal" in sense:
        donor_term = donor_term + options.signal_weight * sense["donor_signal"][donors]
        acceptor_term = acceptor_term + options.signal_weight * sense["acceptor_signal"][acceptors]

    return (ce, ci, donors, acceptors, starts, ends, start_term, end_term, donor_term,
            acceptor_term)


def _chain_events(ends, donors, acceptors, starts) -> List[Tuple[int, int, int]]:
    """The chain DP's events in the order it visits them: (position, kind, index), kinds at one
    position ordered transcript end 0, donor 1, acceptor 2, start 3."""
    events = ([(int(p), 0, k) for k, p in enumerate(ends)]
              + [(int(p), 1, k) for k, p in enumerate(donors)]
              + [(int(p), 2, k) for k, p in enumerate(acceptors)]
              + [(int(p), 3, k) for k, p in enumerate(starts)])
    events.sort()
    return events


def chain_paths(sense: dict, seq: str, options: DecodeOptions) -> List[List[Tuple[int, int]]]:
    """ChainParse: the best exon chains (exons in sense coordinates) of one strand."""
    n = len(sense["exon"])
    if n == 0 or len(seq) != n:
        return []
    (ce, ci, donors, acceptors, starts, ends, start_term, end_term, donor_term,
     acceptor_term) = _chain_inputs(sense, seq, options)
    o = options
    lw = options.length_weight
    events = _chain_events(ends, donors, acceptors, starts)
    neg = -math.inf
    sv = np.full(len(starts), neg)
    sback = np.full(len(starts), -1, dtype=np.int64)   # T node before, -1: none
    av = np.full(len(acceptors), neg)
    aback = np.full(len(acceptors), -1, dtype=np.int64)  # donor
    dv = np.full(len(donors), neg)
    dback = np.full((len(donors), 2), -1, dtype=np.int64)  # (0 start / 1 acceptor, index)
    tv = np.full(len(ends), neg)
    tback = np.full((len(ends), 2), -1, dtype=np.int64)
    best_g, best_g_node = 0.0, -1

    def best_exon_origin(p, first_mean, first_sd, inner_mean, inner_sd):
        # over starts S (first / single exon) then acceptors A (internal / last): strict >.
        best, origin = neg, (-1, -1)
        for kind, positions, values, mean, sd in ((0, starts, sv, first_mean, first_sd),
                                                  (1, acceptors, av, inner_mean, inner_sd)):
            lo = int(np.searchsorted(positions, p - o.max_exon_bp, "left"))
            hi = int(np.searchsorted(positions, p, "left"))
            if hi <= lo:
                continue
            pos = positions[lo:hi]
            cand = values[lo:hi] + (ce[p] - ce[pos]) + lw * log_normal(p - pos, mean, sd)
            k = int(np.argmax(cand))
            if cand[k] > best:
                best, origin = float(cand[k]), (kind, lo + k)
        return best, origin

    for p, kind, k in events:
        if kind == 0:    # transcript ends at p (exclusive)
            best, origin = best_exon_origin(p, o.single_exon_log_mean, o.single_exon_log_sd,
                                            o.last_exon_log_mean, o.last_exon_log_sd)
            if best > neg:
                tv[k] = best + end_term[k]
                tback[k] = origin
                if tv[k] > best_g:
                    best_g, best_g_node = float(tv[k]), k
        elif kind == 1:  # an intron begins at p
            best, origin = best_exon_origin(p, o.first_exon_log_mean, o.first_exon_log_sd,
                                            o.internal_exon_log_mean, o.internal_exon_log_sd)
            if best > neg:
                dv[k] = best + donor_term[k]
                dback[k] = origin
        elif kind == 2:  # an exon resumes at p
            lo = int(np.searchsorted(donors, p - o.max_intron_bp, "left"))
            hi = int(np.searchsorted(donors, p - MIN_INTRON_BP, "right"))
            if hi > lo:
                pos = donors[lo:hi]
                cand = dv[lo:hi] + (ci[p] - ci[pos]) + lw * log_normal(
                    p - pos, o.intron_log_mean, o.intron_log_sd)
                j = int(np.argmax(cand))
                if cand[j] > neg:
                    av[k] = float(cand[j]) - o.splice_cost + acceptor_term[k]
                    aback[k] = lo + j
        else:            # a transcript starts at p
            sv[k] = best_g - o.start_cost + start_term[k]
            sback[k] = best_g_node
    # Back-track from the best transcript end.
    chains = []
    node = best_g_node
    while node >= 0:
        exons = []
        stop = int(ends[node])
        kind, idx = tback[node]
        while True:
            if kind == 0:
                exons.append((int(starts[idx]), stop))
                node = int(sback[idx])
                break
            a = int(acceptors[idx])
            exons.append((a, stop))
            d = int(aback[idx])
            stop = int(donors[d])
            kind, idx = dback[d]
        chains.append(exons[::-1])
    return chains[::-1]


MIN_INTRON_BP = 30  # kMinChainIntronBp

# Coding states of ChainParseFramed's acceptor and donor nodes: before the CDS (5' UTR, or a
# non-coding transcript), in it with the codon position q of the next exonic base (1 + q), after
# it (3' UTR).
BEFORE_CDS, AFTER_CDS, CODING_STATES = 0, 4, 5


def _coding_tables(sense: dict, seq: str):
    """(frame sums [3, n + 1], next in-frame stop [3, n + 1], previous in-frame stop [3, n] (the
    last stop codon start j <= i with (j - g) % 3 == 0, -3: none), in-frame ATG starts per
    frame): see annotation_coding."""
    llr = np.stack([sense["llr0"], sense["llr1"], sense["llr2"]]).astype(np.float64)
    sums = coding_mod.frame_sums(llr)
    nxt = coding_mod.next_stops(seq)
    n = len(seq)
    up = seq.upper()
    raw = np.frombuffer(up.encode("ascii"), dtype=np.uint8)
    is_stop = np.zeros(n, dtype=bool)
    is_atg = np.zeros(n, dtype=bool)
    if n >= 3:
        def codon(c):
            return (raw[:-2] == ord(c[0])) & (raw[1:-1] == ord(c[1])) & (raw[2:] == ord(c[2]))
        for stop in coding_mod.STOPS:
            is_stop[:n - 2] |= codon(stop)
        is_atg[:n - 2] = codon("ATG")
    j = np.arange(n)
    prev = np.full((3, n), -3, dtype=np.int64)
    atgs = []
    for g in range(3):
        in_frame = (j - g) % 3 == 0
        at = np.where(is_stop & in_frame, j, -3)
        prev[g] = np.maximum.accumulate(at) if n else at
        atgs.append(np.nonzero(is_atg & in_frame)[0])
    return sums, nxt, prev, atgs


def chain_paths_framed(sense: dict, seq: str, options: DecodeOptions):
    """ChainParseFramed: ChainParse with a reading frame kept through the CDS. Returns the best
    chains as (exons, cds) in sense coordinates, cds = (ATG start, stop codon end) or None."""
    n = len(sense["exon"])
    if n == 0 or len(seq) != n:
        return []
    (ce, ci, donors, acceptors, starts, ends, start_term, end_term, donor_term,
     acceptor_term) = _chain_inputs(sense, seq, options)
    o = options
    lw, cw = o.length_weight, o.coding_weight
    sums, nxt, prev, atgs = _coding_tables(sense, seq)
    events = _chain_events(ends, donors, acceptors, starts)
    neg = -math.inf
    S = CODING_STATES
    sv = np.full(len(starts), neg)
    sback = np.full(len(starts), -1, dtype=np.int64)
    av = np.full((len(acceptors), S), neg)
    aback = np.full((len(acceptors), S), -1, dtype=np.int64)
    dv = np.full((len(donors), S), neg)
    # (origin kind 0 start / 1 acceptor, origin index, origin state, mark): the mark is the ATG
    # of an exon that enters the CDS, the stop codon's end of one that leaves it, else -1.
    dback = np.full((len(donors), S, 4), -1, dtype=np.int64)
    tv = np.full(len(ends), neg)
    tback = np.full((len(ends), 4), -1, dtype=np.int64)
    best_g, best_g_node = 0.0, -1

    def window(positions, p):
        lo = int(np.searchsorted(positions, p - o.max_exon_bp, "left"))
        hi = int(np.searchsorted(positions, p, "left"))
        return lo, hi

    def base(values, positions, p, mean, sd):
        return values + (ce[p] - ce[positions]) + lw * log_normal(p - positions, mean, sd)

    def entering(p, g, positions):
        """Per origin position: the best ATG of frame g in [max(origin, last stop end), p - 3]
        (smallest prefix sum, leftmost on ties), -1: none."""
        last = int(prev[g][p - 3]) + 3 if p >= 3 else 0
        frame_atgs = atgs[g]
        lo = int(np.searchsorted(frame_atgs, last, "left"))
        hi = int(np.searchsorted(frame_atgs, p - 3, "right"))
        cand = frame_atgs[lo:hi]
        if len(cand) == 0:
            return np.full(len(positions), -1, dtype=np.int64)
        # best[k]: the best of cand[k:] (leftmost on ties)
        best = np.empty(len(cand), dtype=np.int64)
        keep = len(cand) - 1
        for k in range(len(cand) - 1, -1, -1):
            if sums[g, cand[k]] <= sums[g, cand[keep]]:
                keep = k
            best[k] = cand[keep]
        idx = np.searchsorted(cand, np.maximum(positions, last), "left")
        out = np.full(len(positions), -1, dtype=np.int64)
        ok = idx < len(cand)
        out[ok] = best[idx[ok]]
        return out

    def exon_into(p, target, first_mean, first_sd, inner_mean, inner_sd):
        """The best exon ending at p whose end is in coding state `target` (-1: a transcript
        end): (value, origin kind, origin index, origin state, mark)."""
        groups = []   # (kind, lo, state, values, marks) in tie order
        s_lo, s_hi = window(starts, p)
        a_lo, a_hi = window(acceptors, p)
        spos = starts[s_lo:s_hi]
        apos = acceptors[a_lo:a_hi]
        none_s = np.full(len(spos), -1, dtype=np.int64)
        none_a = np.full(len(apos), -1, dtype=np.int64)
        s_base = base(sv[s_lo:s_hi], spos, p, first_mean, first_sd)
        if target in (BEFORE_CDS, -1):
            groups.append((0, s_lo, BEFORE_CDS, s_base, none_s))
            groups.append((1, a_lo, BEFORE_CDS,
                           base(av[a_lo:a_hi, BEFORE_CDS], apos, p, inner_mean, inner_sd),
                           none_a))
        if target in (AFTER_CDS, -1):
            groups.append((1, a_lo, AFTER_CDS,
                           base(av[a_lo:a_hi, AFTER_CDS], apos, p, inner_mean, inner_sd),
                           none_a))
            for q in range(3):   # leaving the CDS: the first in-frame stop lies inside
                g = (apos - q) % 3
                stop = nxt[g, apos]
                ok = stop + 3 <= p
                end = np.where(ok, stop + 3, apos)
                values = base(av[a_lo:a_hi, 1 + q], apos, p, inner_mean, inner_sd) + cw * (
                    sums[g, end] - sums[g, apos])
                groups.append((1, a_lo, 1 + q, np.where(ok, values, neg),
                               np.where(ok, end, -1)))
        if 1 <= target <= 3:
            g = (p - (target - 1)) % 3
            for kind, lo, pos, values, mean, sd in (
                    (0, s_lo, spos, sv[s_lo:s_hi], first_mean, first_sd),
                    (1, a_lo, apos, av[a_lo:a_hi, BEFORE_CDS], inner_mean, inner_sd)):
                atg = entering(p, g, pos)   # entering the CDS at an ATG
                ok = atg >= 0
                cand = base(values, pos, p, mean, sd) + cw * (
                    sums[g, p] - sums[g, np.where(ok, atg, p)])
                groups.append((kind, lo, BEFORE_CDS, np.where(ok, cand, neg), atg))
            q = (apos - g) % 3   # staying in it: no in-frame stop
            ok = nxt[g, apos] + 3 > p
            values = av[a_lo:a_hi][np.arange(len(apos)), 1 + q] if len(apos) else av[a_lo:a_hi, 0]
            cand = base(values, apos, p, inner_mean, inner_sd) + cw * (sums[g, p] - sums[g, apos])
            # the state of each origin differs: encoded as -(1 + q) below
            groups.append((1, a_lo, -1, np.where(ok, cand, neg), -1 - q))
        best = (neg, -1, -1, -1, -1)
        for kind, lo, state, values, marks in groups:
            if len(values) == 0:
                continue
            k = int(np.argmax(values))
            if values[k] > best[0]:
                if state == -1:   # continuing: origin state 1 + q, no mark
                    best = (float(values[k]), kind, lo + k, int(-marks[k]), -1)
                else:
                    best = (float(values[k]), kind, lo + k, state, int(marks[k]))
        return best

    for p, kind, k in events:
        if kind == 0:
            best = exon_into(p, -1, o.single_exon_log_mean, o.single_exon_log_sd,
                             o.last_exon_log_mean, o.last_exon_log_sd)
            if best[0] > neg:
                tv[k] = best[0] + end_term[k]
                tback[k] = best[1:]
                if tv[k] > best_g:
                    best_g, best_g_node = float(tv[k]), k
        elif kind == 1:
            for target in range(S):
                best = exon_into(p, target, o.first_exon_log_mean, o.first_exon_log_sd,
                                 o.internal_exon_log_mean, o.internal_exon_log_sd)
                if best[0] > neg:
                    dv[k, target] = best[0] + donor_term[k]
                    dback[k, target] = best[1:]
        elif kind == 2:
            lo = int(np.searchsorted(donors, p - o.max_intron_bp, "left"))
            hi = int(np.searchsorted(donors, p - MIN_INTRON_BP, "right"))
            if hi > lo:
                pos = donors[lo:hi]
                length = lw * log_normal(p - pos, o.intron_log_mean, o.intron_log_sd)
                for state in range(S):
                    cand = dv[lo:hi, state] + (ci[p] - ci[pos]) + length
                    j = int(np.argmax(cand))
                    if cand[j] > neg:
                        av[k, state] = float(cand[j]) - o.splice_cost + acceptor_term[k]
                        aback[k, state] = lo + j
        else:
            sv[k] = best_g - o.start_cost + start_term[k]
            sback[k] = best_g_node
    chains = []
    node = best_g_node
    while node >= 0:
        exons, cds_start, cds_end = [], -1, -1
        stop = int(ends[node])
        kind, idx, state, mark = (int(x) for x in tback[node])
        if mark >= 0:
            cds_end = mark
        while True:
            if kind == 0:
                exons.append((int(starts[idx]), stop))
                node = int(sback[idx])
                break
            exons.append((int(acceptors[idx]), stop))
            d = int(aback[idx, state])
            stop = int(donors[d])
            kind, idx, origin, mark = (int(x) for x in dback[d, state])
            if mark >= 0:
                if state == BEFORE_CDS or state == AFTER_CDS:
                    cds_end = mark     # this exon left the CDS
                else:
                    cds_start = mark   # this exon entered it
            state = origin
        exons = exons[::-1]
        cds = (cds_start, cds_end) if cds_start >= 0 and cds_end >= 0 else None
        chains.append((exons, cds))
    return chains[::-1]


def alternative_start_chains(sense: dict, seq: str, options: DecodeOptions,
                             chains: List[List[Tuple[int, int]]]) -> List[List[Tuple[int, int]]]:
    """AlternativeStartChains: for each confident TSS peak (BlockPeaks >= alternative_start_min,
    strongest first, leftmost on ties, none within alternative_start_spacing_bp of a stronger
    one), ascending, that lies farther than the spacing from every chain's start: the first
    chain of ChainParse over [peak, peak + alternative_span_bp) with no TSS evidence there (so
    it can start only at the peak), when it starts at the peak; in sense coordinates."""
    found = _alternative_starts(sense, seq, options, chains,
                                lambda *args: [(c, None) for c in chain_paths(*args)])
    return [exons for exons, _ in found]


def _alternative_starts(sense: dict, seq: str, options: DecodeOptions,
                        chains: List[List[Tuple[int, int]]], parse):
    """alternative_start_chains over `parse` (chain_paths or chain_paths_framed as (exons, cds)
    pairs); returns (exons, cds) pairs."""
    n = len(sense["tss"])
    if n == 0 or len(seq) != n:
        return []
    o = options
    tss = sense["tss"].astype(np.float64)
    peaks = [int(p) for p in block_peaks(sense["tss"], o.terminal_block_bp,
                                         o.alternative_start_min)]
    peaks.sort(key=lambda p: -tss[p])  # stable: leftmost first on ties

    def near(positions, p):
        return any(abs(p - q) <= o.alternative_start_spacing_bp for q in positions)

    kept: List[int] = []
    for p in peaks:
        if not near(kept, p):
            kept.append(p)
    starts = [chain[0][0] for chain in chains if chain]
    out = []
    for p in sorted(kept):
        if near(starts, p):
            continue
        end = min(n, p + o.alternative_span_bp)
        sub = {name: values[p:end] for name, values in sense.items()}
        sub["tss"] = np.zeros(end - p, dtype=np.float64)
        found = parse(sub, seq[p:end], o)
        if not found or found[0][0][0][0] != 0:
            continue
        exons, cds = found[0]
        out.append(([(a + p, b + p) for a, b in exons],
                    None if cds is None else (cds[0] + p, cds[1] + p)))
    return out


def best_orf(seq: str, coding: np.ndarray, options: DecodeOptions) -> Optional[Tuple[int, int]]:
    """BestOrf: in a spliced sense sequence, the ORF [ATG .. stop codon] (stop included)
    maximising the summed CDS log-odds, if positive and at least min_orf_bp long."""
    up = seq.upper()
    c = np.log(np.maximum(coding.astype(np.float64), FLOOR)) - np.log(
        np.maximum(1.0 - coding.astype(np.float64), FLOOR))
    cum = np.concatenate([[0.0], np.cumsum(c)])
    best, found = 0.0, None
    for frame in range(3):
        open_at = -1
        for k in range(frame, len(up) - 2, 3):
            codon = up[k:k + 3]
            if codon in ("TAA", "TAG", "TGA"):
                if open_at >= 0 and k + 3 - open_at >= options.min_orf_bp:
                    score = float(cum[k + 3] - cum[open_at])
                    if score > best:
                        best, found = score, (open_at, k + 3)
                open_at = -1
            elif codon == "ATG" and (open_at < 0 or cum[k] < cum[open_at]):
                open_at = k
    return found


def _orf_cds(exons_sense: List[Tuple[int, int]], seq: str, coding: np.ndarray,
             options: DecodeOptions) -> List[Tuple[int, int]]:
    spliced = "".join(seq[a:b] for a, b in exons_sense)
    values = np.concatenate([coding[a:b] for a, b in exons_sense])
    orf = best_orf(spliced, values, options)
    if orf is None:
        return []
    out, offset = [], 0
    for a, b in exons_sense:
        lo, hi = max(orf[0], offset), min(orf[1], offset + b - a)
        if lo < hi:
            out.append((a + lo - offset, a + hi - offset))
        offset += b - a
    return out


def decode_chain_strand(scores: np.ndarray, channels: dict, strand: str,
                        options: DecodeOptions, sequence: str) -> List[Transcript]:
    n = scores.shape[0]
    sense = sense_channels(scores, channels, strand)
    seq = sequence if strand == "+" else sequence.translate(_COMPLEMENT)[::-1]
    framed = options.coding_weight > 0
    if framed:
        if options.coding is None and not os.path.isfile(options.coding_model):
            raise ValueError(f"decoder.coding_model {options.coding_model!r}: not read (pass "
                             "the package directory to manifest_options)")
        model = options.coding if options.coding is not None else coding_table(
            options.coding_model)
        llr = model.llr(seq)
        for q in range(3):
            sense[f"llr{q}"] = llr[q]
    if options.signal_weight > 0:
        if options.signal is None and not os.path.isfile(options.splice_signal):
            raise ValueError(f"decoder.splice_signal {options.splice_signal!r}: not read (pass "
                             "the package directory to manifest_options)")
        signal = options.signal if options.signal is not None else signal_table(
            options.splice_signal)
        sense["donor_signal"], sense["acceptor_signal"] = signal.scores(seq)
    out = []
    if framed:
        found = chain_paths_framed(sense, seq, options)
        if options.alternative_starts:
            found = found + _alternative_starts(sense, seq, options, [e for e, _ in found],
                                                chain_paths_framed)
    else:
        found = [(c, None) for c in chain_paths(sense, seq, options)]
        if options.alternative_starts:
            found = found + [(c, None) for c in alternative_start_chains(
                sense, seq, options, [e for e, _ in found])]
    for exons, frame in found:
        start, end = exons[0][0], exons[-1][1]
        if end - start < options.min_transcript_bp:
            continue
        exon_bases = sum(b - a for a, b in exons)
        exon_mean = sum(float(sense["exon"][a:b].astype(np.float64).sum())
                        for a, b in exons) / exon_bases
        if exon_mean < options.min_exon_mean:
            continue
        if framed:
            cds = [] if frame is None else [(max(a, frame[0]), min(b, frame[1]))
                                            for a, b in exons
                                            if min(b, frame[1]) > max(a, frame[0])]
        elif options.orf_cds:
            cds = _orf_cds(exons, seq, sense["cds"], options)
        else:
            cds = contiguous_cds(exons, sense["cds"], options.cds_threshold)
        body = np.maximum(sense["exon"][start:end], sense["intron"][start:end]).astype(np.float64)
        score = float(body.sum()) / (end - start)
        if strand == "-":
            exons = [(n - b, n - a) for a, b in exons[::-1]]
            cds = [(n - b, n - a) for a, b in cds[::-1]]
        start, end = exons[0][0], exons[-1][1]
        introns = [(exons[k][1], exons[k + 1][0]) for k in range(len(exons) - 1)]
        out.append(Transcript(
            strand=strand, start=start, end=end,
            tss_position=start if strand == "+" else end - 1,
            polya_position=end - 1 if strand == "+" else start,
            exons=exons, introns=introns, cds=cds, score=score))
    return out
