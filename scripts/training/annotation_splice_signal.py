"""Splice-site signal sensors for the exon-chain decoder: first-order position-specific
(inhomogeneous Markov) log-odds models of the sequence around donor and acceptor sites, true
sites against motif-matching non-sites, counted on the training part of chr20.

A site's score is log P_site(window) - log P_nonsite(window), where each base of the window is
conditioned on its position and the base before it (the base before the window included). The
decoder adds signal_weight x this score to the splice network's log probability of each
candidate site (annotation_decode._chain_inputs; worker: SpliceSignalScores in
worker/windowing/splice_signal.h).

Positions are relative to the decoder's site position, in sense coordinates: a donor at i is
an intron beginning at i (GT / GC at i, i + 1), an acceptor at i an exon resuming at i (AG at
i - 2, i - 1). Windows: donor -3..+5 (3 exon bases, 6 intron bases), acceptor -20..+2 (the
polypyrimidine tract and AG, 3 exon bases).

Training data: the donors and acceptors of the introns (>= 30 bp) of the distinct refGene chr20
structures wholly inside the region (sense strand) against every other GT / GC (donor) or AG
(acceptor) of the region on either strand. Counts get a pseudocount of 1.

The table file (the package's `decoder.splice_signal`) is text:
    # comment lines
    donor FIRST LENGTH      (FIRST: the offset of the window's first base, LENGTH its bases)
    then LENGTH lines "OFFSET" + 32 numbers: for the base at that offset, ln P(base | previous
    base) at true sites (previous A, C, G, T, each base A, C, G, T: 16 numbers) then at
    non-sites (16), 6 decimals; each group of four sums to 1
    acceptor FIRST LENGTH   and its LENGTH lines likewise.
"""

from typing import Dict, Tuple

import numpy as np

from training.annotation_coding import base_codes

DONOR_WINDOW = (-3, 9)      # first offset, length
ACCEPTOR_WINDOW = (-20, 23)
KINDS = ("donor", "acceptor")


def motif_positions(seq: str) -> Tuple[np.ndarray, np.ndarray]:
    """(donors, acceptors) of a sense sequence: i with GT / GC at i, i + 1; i with AG at i - 2,
    i - 1: the chain decoder's candidates (annotation_decode.splice_motifs on '+')."""
    # Imported here: annotation_decode imports this module for its tables.
    from training.annotation_decode import splice_motifs
    donors, acceptors = splice_motifs(seq, "+")
    return np.nonzero(donors)[0], np.nonzero(acceptors)[0]


def _pair_codes(codes: np.ndarray, positions: np.ndarray, window) -> np.ndarray:
    """[len(positions), length]: previous * 4 + base for each window base, -1 where either is
    not ACGT or lies outside the sequence."""
    first, length = window
    n = len(codes)
    out = np.full((len(positions), length), -1, dtype=np.int64)
    for j in range(length):
        at = positions + first + j
        ok = (at - 1 >= 0) & (at < n)
        cur = np.where(ok, codes[np.clip(at, 0, n - 1)], -1)
        prev = np.where(ok, codes[np.clip(at - 1, 0, n - 1)], -1)
        out[:, j] = np.where((cur >= 0) & (prev >= 0), prev * 4 + cur, -1)
    return out


class SpliceSignal:
    """log_site[kind] and log_nonsite[kind]: [length, 16] natural-log probabilities."""

    def __init__(self, windows: Dict[str, Tuple[int, int]], log_site: Dict[str, np.ndarray],
                 log_nonsite: Dict[str, np.ndarray]):
        self.windows = windows
        self.log_site = log_site
        self.log_nonsite = log_nonsite

    def scores(self, seq: str) -> Tuple[np.ndarray, np.ndarray]:
        """(donor, acceptor) log-odds at every base of a sense sequence (the score of a site at
        i; 0 where the window runs off the sequence or holds a base that is not ACGT)."""
        codes = base_codes(seq)
        positions = np.arange(len(seq), dtype=np.int64)
        out = []
        for kind in KINDS:
            pairs = _pair_codes(codes, positions, self.windows[kind])
            ratio = self.log_site[kind] - self.log_nonsite[kind]   # [length, 16]
            bad = (pairs < 0).any(axis=1)
            safe = np.where(pairs < 0, 0, pairs)
            values = ratio[np.arange(pairs.shape[1])[None, :], safe].sum(axis=1)
            values[bad] = 0.0
            out.append(values)
        return out[0], out[1]

    def text(self, comment: str = "") -> str:
        lines = [f"# {line}" for line in comment.splitlines()]
        for kind in KINDS:
            first, length = self.windows[kind]
            lines.append(f"{kind} {first} {length}")
            for j in range(length):
                values = list(self.log_site[kind][j]) + list(self.log_nonsite[kind][j])
                lines.append(f"{first + j} " + " ".join(f"{v:.6f}" for v in values))
        return "\n".join(lines) + "\n"

    @staticmethod
    def from_text(text: str) -> "SpliceSignal":
        """Parses a table file (what the worker's ParseSpliceSignal accepts; less strict)."""
        windows, site, nonsite = {}, {}, {}
        kind, rows = None, []

        def close():
            if kind is not None:
                table = np.array(rows, dtype=np.float64)
                if table.shape != (windows[kind][1], 32):
                    raise ValueError(f"splice signal {kind}: expected {windows[kind][1]} rows "
                                     "of an offset and 32 numbers")
                site[kind], nonsite[kind] = table[:, :16].copy(), table[:, 16:].copy()

        for line in text.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            parts = line.split()
            if parts[0] in KINDS:
                close()
                kind, rows = parts[0], []
                windows[kind] = (int(parts[1]), int(parts[2]))
                continue
            rows.append([float(x) for x in parts[1:]])
        close()
        if set(site) != set(KINDS):
            raise ValueError("a splice signal table needs a donor and an acceptor section")
        return SpliceSignal(windows, site, nonsite)

    @staticmethod
    def load(path: str) -> "SpliceSignal":
        with open(path, encoding="ascii") as handle:
            return SpliceSignal.from_text(handle.read())


def _normalised_log(counts: np.ndarray) -> np.ndarray:
    c = counts.reshape(len(counts), 4, 4)
    return np.log(c / c.sum(axis=2, keepdims=True)).reshape(len(counts), 16)


def fit(region: Tuple[int, int]) -> SpliceSignal:
    """Counts the model on the refGene structures wholly inside `region` (see the module doc)."""
    from training import common
    chrom = common.chr20()
    piece = chrom[region[0]:region[1]]
    length = region[1] - region[0]
    true_sites = {(s, k): set() for s in "+-" for k in KINDS}   # region-local sense positions
    for t in common.refgene_chr20():
        if not (region[0] <= t.tx_start and t.tx_end <= region[1]):
            continue
        for (a, b), (c, d) in zip(t.exons, t.exons[1:]):
            if c - b < 30:
                continue
            lo, hi = b - region[0], c - region[0]   # the intron, region-local plus coordinates
            if t.strand == "+":
                true_sites[("+", "donor")].add(lo)
                true_sites[("+", "acceptor")].add(hi)
            else:   # sense coordinates of the reverse complement: x -> length - x
                true_sites[("-", "donor")].add(length - hi)
                true_sites[("-", "acceptor")].add(length - lo)
    windows = {"donor": DONOR_WINDOW, "acceptor": ACCEPTOR_WINDOW}
    site = {k: np.ones((windows[k][1], 16)) for k in KINDS}
    nonsite = {k: np.ones((windows[k][1], 16)) for k in KINDS}
    for strand, seq in (("+", piece), ("-", common.reverse_complement(piece))):
        codes = base_codes(seq)
        motifs = dict(zip(KINDS, motif_positions(seq)))
        for kind in KINDS:
            positions = motifs[kind]
            is_true = np.isin(positions, np.array(sorted(true_sites[(strand, kind)]),
                                                  dtype=np.int64))
            pairs = _pair_codes(codes, positions, windows[kind])
            for j in range(pairs.shape[1]):
                for target, mask in ((site[kind], is_true), (nonsite[kind], ~is_true)):
                    col = pairs[mask, j]
                    target[j] += np.bincount(col[col >= 0], minlength=16)
    return SpliceSignal(windows, {k: _normalised_log(site[k]) for k in KINDS},
                        {k: _normalised_log(nonsite[k]) for k in KINDS})
