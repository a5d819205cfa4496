"""A coding content sensor for the exon-chain decoder: a 3-periodic Markov model of protein-coding
sequence against a homogeneous one of non-coding sequence, counted on the training part of chr20.

For a sense-strand sequence it gives each base, for each of its three possible codon positions,
the log-likelihood ratio log P_cds(base | previous `order` bases, codon position) -
log P_noncoding(base | previous `order` bases). The decoder sums them over an exon in the frame
the chain carries and forbids in-frame stop codons (annotation_decode.chain_paths_framed;
worker: CodingModel in worker/windowing/coding_model.h, ChainParseFramed in
exon_chain.h).

Training data: the spliced CDS (start codon to stop codon, sense strand) of the distinct NM_
refGene chr20 structures wholly inside the region, and for the background their introns (sense
strand) and the intergenic bases (both strands). Counts get a pseudocount of 1.

The table file (the package's `decoder.coding_model`) is text, one line per context:
    # comment lines
    order K
    then 4^K lines "CONTEXT cds0A cds0C cds0G cds0T cds1A ... cds2T ncA ncC ncG ncT": the context
    (K bases of ACGT, in lexicographic order), then 16 natural-log probabilities (the base after
    the context at codon position 0, 1 and 2, then non-coding), 6 decimals.
"""

from typing import Tuple

import numpy as np

_BASE = {"A": 0, "C": 1, "G": 2, "T": 3}
STOPS = ("TAA", "TAG", "TGA")


def base_codes(seq: str) -> np.ndarray:
    """0-3 for ACGT (either case), -1 for anything else."""
    raw = np.frombuffer(seq.upper().encode("ascii"), dtype=np.uint8)
    out = np.full(len(raw), -1, dtype=np.int64)
    for base, code in _BASE.items():
        out[raw == ord(base)] = code
    return out


def kmer_codes(codes: np.ndarray, order: int) -> np.ndarray:
    """code[i] = the (order+1)-mer ending at i as a base-4 number, -1 where any of its bases is
    not ACGT or i < order."""
    n = len(codes)
    out = np.zeros(n, dtype=np.int64)
    bad = np.zeros(n, dtype=bool)
    for back in range(order + 1):
        shifted = np.full(n, -1, dtype=np.int64)
        shifted[back:] = codes[:n - back] if back else codes
        out += np.where(shifted < 0, 0, shifted) * (4 ** back)
        bad |= shifted < 0
    out[bad] = -1
    return out


class CodingModel:
    """log_cds[q, context, base], log_nc[context, base]; contexts are base-4 numbers of the
    `order` previous bases (the most recent the least significant digit... see kmer_codes: the
    base itself is digit 0, the one before digit 1, and so on)."""

    def __init__(self, order: int, log_cds: np.ndarray, log_nc: np.ndarray):
        self.order = order
        self.log_cds = log_cds
        self.log_nc = log_nc

    def llr(self, seq: str) -> np.ndarray:
        """[3, n]: row q, base i: the log-likelihood ratio of base i at codon position q
        (0 where the base or its context is not ACGT or i < order)."""
        codes = kmer_codes(base_codes(seq), self.order)
        ok = codes >= 0
        k = np.where(ok, codes, 0)
        ctx, base = k // 4, k % 4
        out = self.log_cds[:, ctx, base] - self.log_nc[ctx, base][None, :]
        out[:, ~ok] = 0.0
        return out

    def text(self, comment: str = "") -> str:
        """The table file (see the module doc)."""
        lines = [f"# {line}" for line in comment.splitlines()] + [f"order {self.order}"]
        for c in range(4 ** self.order):
            digits = [(c // 4 ** d) % 4 for d in range(self.order)]
            context = "".join("ACGT"[x] for x in digits[::-1])  # oldest base first
            values = [self.log_cds[q, c, b] for q in range(3) for b in range(4)]
            values += [self.log_nc[c, b] for b in range(4)]
            lines.append(context + " " + " ".join(f"{v:.6f}" for v in values))
        return "\n".join(lines) + "\n"

    def save(self, path: str, comment: str = "") -> None:
        with open(path, "w", encoding="ascii") as handle:
            handle.write(self.text(comment))

    @staticmethod
    def from_text(text: str) -> "CodingModel":
        """Parses a table file (what the worker's ParseCodingModel accepts; less strict)."""
        order, rows = None, []
        for line in text.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            if order is None:
                order = int(line.split()[1])
                continue
            rows.append([float(x) for x in line.split()[1:]])
        table = np.array(rows, dtype=np.float64)
        if order is None or table.shape != (4 ** order, 16):
            raise ValueError("a coding table needs an order line and 4^order rows of 16 numbers")
        log_cds = np.stack([table[:, 4 * q:4 * q + 4] for q in range(3)])
        return CodingModel(order, log_cds, table[:, 12:16].copy())

    @staticmethod
    def load(path: str) -> "CodingModel":
        with open(path, encoding="ascii") as handle:
            return CodingModel.from_text(handle.read())


def _cds_sequence(t, chrom: str) -> str:
    from training.common import reverse_complement
    parts = [chrom[max(a, t.cds_start):min(b, t.cds_end)] for a, b in t.exons
             if min(b, t.cds_end) > max(a, t.cds_start)]
    s = "".join(parts)
    return s if t.strand == "+" else reverse_complement(s)


def fit(region: Tuple[int, int], order: int = 4) -> CodingModel:
    """Counts the model on the refGene structures wholly inside `region` (see the module doc)."""
    from training import common
    chrom = common.chr20()
    contexts = 4 ** order
    cds_counts = np.ones((3, contexts * 4), dtype=np.float64)
    nc_counts = np.ones(contexts * 4, dtype=np.float64)
    genic = np.zeros(region[1] - region[0], dtype=bool)
    seen = set()
    for t in common.refgene_chr20():
        if not (region[0] <= t.tx_start and t.tx_end <= region[1]):
            continue
        genic[t.tx_start - region[0]:t.tx_end - region[0]] = True
        if (t.strand, tuple(t.exons), t.cds_start, t.cds_end) in seen:
            continue
        seen.add((t.strand, tuple(t.exons), t.cds_start, t.cds_end))
        for (a, b), (c, d) in zip(t.exons, t.exons[1:]):
            intron = chrom[b:c]
            if t.strand == "-":
                intron = common.reverse_complement(intron)
            k = kmer_codes(base_codes(intron), order)
            nc_counts += np.bincount(k[k >= 0], minlength=contexts * 4)
        if not t.coding:
            continue
        cds = _cds_sequence(t, chrom)
        if len(cds) % 3 or len(cds) < 6:
            continue
        k = kmer_codes(base_codes(cds), order)
        q = np.arange(len(cds)) % 3
        for frame in range(3):
            keep = (k >= 0) & (q == frame)
            cds_counts[frame] += np.bincount(k[keep], minlength=contexts * 4)
    # Intergenic: both strands of every base no refGene transcript covers.
    edges = np.flatnonzero(np.diff(np.concatenate([[1], genic.astype(np.int8), [1]])))
    for lo, hi in zip(edges[::2], edges[1::2]):
        piece = chrom[region[0] + lo:region[0] + hi]
        for s in (piece, common.reverse_complement(piece)):
            k = kmer_codes(base_codes(s), order)
            nc_counts += np.bincount(k[k >= 0], minlength=contexts * 4)
    cds = cds_counts.reshape(3, contexts, 4)
    nc = nc_counts.reshape(contexts, 4)
    return CodingModel(order, np.log(cds / cds.sum(axis=2, keepdims=True)),
                       np.log(nc / nc.sum(axis=1, keepdims=True)))


def frame_sums(llr: np.ndarray) -> np.ndarray:
    """[3, n + 1]: row g, index i: the sum over bases j < i of llr[(j - g) mod 3, j], i.e. the
    coding score of [a, b) read in the frame where base j has codon position (j - g) mod 3 is
    row[b] - row[a]."""
    n = llr.shape[1]
    j = np.arange(n)
    out = np.zeros((3, n + 1), dtype=np.float64)
    for g in range(3):
        out[g, 1:] = np.cumsum(llr[(j - g) % 3, j])
    return out


def next_stops(seq: str) -> np.ndarray:
    """[3, n + 1]: row g, index a: the first j >= a with a stop codon at j..j+2 and
    (j - g) mod 3 == 0 (n + 3 when there is none). An exon [a, b) read in frame g holds an
    in-frame stop iff row[a] + 3 <= b."""
    n = len(seq)
    up = seq.upper()
    out = np.full((3, n + 1), n + 3, dtype=np.int64)
    is_stop = np.zeros(n, dtype=bool)
    if n >= 3:
        raw = np.frombuffer(up.encode("ascii"), dtype=np.uint8)
        for stop in STOPS:
            is_stop[:n - 2] |= ((raw[:-2] == ord(stop[0])) & (raw[1:-1] == ord(stop[1]))
                                & (raw[2:] == ord(stop[2])))
    j = np.arange(n)
    for g in range(3):
        at = np.where(is_stop & ((j - g) % 3 == 0), j, n + 3)
        out[g, :n] = np.minimum.accumulate(at[::-1])[::-1]
    return out
