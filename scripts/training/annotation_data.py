"""Per-base gene-structure labels and training windows for the annotation model.

Labels come from hg19 refGene on chr20 (`common.refgene_chr20`). Each strand gets one byte per
base whose bits say what the base is on that strand, over the union of all transcripts (isoforms
included):

- EXON: in an exon of some transcript;
- INTRON: inside some transcript's span but in no exon (of any transcript of the strand);
- CDS: in an exon and inside the coding range of some NM_ transcript;
- UTR: exonic in some NM_ transcript but outside its coding range, and CDS in none;
- TSS / END: within TERMINAL_BAND_BP of a transcript's first / last transcribed base;
- DONOR / ACCEPTOR: the first / last base of an intron in the strand's sense direction (on '+'
  the intron's leftmost / rightmost base, on '-' its rightmost / leftmost), of any transcript.

`intergenic` (a channel of its own) means no exon or intron on either strand. Besides the 13
channels the worker requires, the model has four splice-site channels (`donor_plus`,
`acceptor_plus`, `donor_minus`, `acceptor_minus`), which the worker's decoder uses when present.
"""

from typing import List, Sequence, Tuple

import numpy as np

from training import common

EXON, INTRON, CDS, UTR, TSS, END, DONOR, ACCEPTOR = 1, 2, 4, 8, 16, 32, 64, 128
STRAND_BITS = (EXON, INTRON, CDS, UTR, TSS, END)  # in the order of the per-strand channels
TERMINAL_BAND_BP = 25

LABELS = [
    "intergenic",
    "exon_plus", "intron_plus", "CDS_plus", "UTR_plus", "TSS_plus", "transcript_end_plus",
    "exon_minus", "intron_minus", "CDS_minus", "UTR_minus", "TSS_minus", "transcript_end_minus",
    "donor_plus", "acceptor_plus", "donor_minus", "acceptor_minus",
]
TRANSCRIPT_TYPES = ["mRNA", "lnc_RNA"]

# Char ids (PAD=0 A=1 C=2 G=3 T=4 N=5) -> ids of the complementary base.
COMPLEMENT_IDS = np.array([0, 4, 3, 2, 1, 5], dtype=np.uint8)


def genome_ids(sequence: str) -> np.ndarray:
    """chr20 as worker char ids (uint8): A=1 C=2 G=3 T=4, anything else N=5."""
    table = np.full(256, 5, dtype=np.uint8)
    for base, value in common.CHAR_IDS.items():
        table[ord(base)] = value
    return table[np.frombuffer(sequence.encode("ascii"), dtype=np.uint8)]


def strand_labels(transcripts: Sequence[common.Transcript], length: int,
                  strand: str) -> np.ndarray:
    """The label bits of one strand, one uint8 per base."""
    exon = np.zeros(length, dtype=bool)
    span = np.zeros(length, dtype=bool)
    cds = np.zeros(length, dtype=bool)
    coding_exon = np.zeros(length, dtype=bool)
    tss = np.zeros(length, dtype=bool)
    end = np.zeros(length, dtype=bool)
    donor = np.zeros(length, dtype=bool)
    acceptor = np.zeros(length, dtype=bool)
    for t in transcripts:
        if t.strand != strand:
            continue
        span[t.tx_start:t.tx_end] = True
        for (_, left), (right, _) in zip(t.exons, t.exons[1:]):  # intron [left, right)
            if right <= left:
                continue
            (donor if strand == "+" else acceptor)[left] = True
            (acceptor if strand == "+" else donor)[right - 1] = True
        for a, b in t.exons:
            exon[a:b] = True
            if t.coding:
                coding_exon[a:b] = True
                lo, hi = max(a, t.cds_start), min(b, t.cds_end)
                if lo < hi:
                    cds[lo:hi] = True
        for position, mark in ((t.tss, tss), (t.tes, end)):
            mark[max(0, position - TERMINAL_BAND_BP):position + TERMINAL_BAND_BP + 1] = True
    bits = np.zeros(length, dtype=np.uint8)
    bits[exon] |= EXON
    bits[span & ~exon] |= INTRON
    bits[cds] |= CDS
    bits[coding_exon & ~cds] |= UTR
    bits[tss] |= TSS
    bits[end] |= END
    bits[donor] |= DONOR
    bits[acceptor] |= ACCEPTOR
    return bits


def type_coverage(transcripts: Sequence[common.Transcript], length: int) -> np.ndarray:
    """[2, length] int8: bases inside the span of an mRNA (NM_) / lnc_RNA (NR_) transcript."""
    cover = np.zeros((2, length), dtype=np.int8)
    for t in transcripts:
        row = 0 if t.name.startswith("NM_") else 1
        cover[row, t.tx_start:t.tx_end] = 1
    return cover


def targets(plus: np.ndarray, minus: np.ndarray) -> np.ndarray:
    """[..., 17] float32 label matrix from the two strands' bits (same shapes)."""
    out = np.zeros(plus.shape + (len(LABELS),), dtype=np.float32)
    out[..., 0] = ((plus | minus) & (EXON | INTRON)) == 0
    for k, bit in enumerate(STRAND_BITS):
        out[..., 1 + k] = (plus & bit) != 0
        out[..., 7 + k] = (minus & bit) != 0
    out[..., 13] = (plus & DONOR) != 0
    out[..., 14] = (plus & ACCEPTOR) != 0
    out[..., 15] = (minus & DONOR) != 0
    out[..., 16] = (minus & ACCEPTOR) != 0
    return out


class Windows:
    """Random training windows of chr20 inside an allowed range, with their labels.

    Half of the windows are centred on a random base of a random transcript (genes are where the
    structure is; chr20 is 46% genic), the others anywhere. Windows with more than 10% N are
    redrawn. Each window is reverse-complemented with probability 1/2 (its plus and minus labels
    swapped and reversed), so both strands are learnt alike.
    """

    def __init__(self, ids: np.ndarray, plus: np.ndarray, minus: np.ndarray,
                 types: np.ndarray, transcripts: Sequence[common.Transcript],
                 allowed: Tuple[int, int], length: int, rng: np.random.Generator):
        self.ids, self.plus, self.minus, self.types = ids, plus, minus, types
        self.allowed, self.length, self.rng = allowed, length, rng
        self.spans = np.array([(t.tx_start, t.tx_end) for t in transcripts
                               if allowed[0] <= t.tx_start and t.tx_end <= allowed[1]],
                              dtype=np.int64)

    def _start(self) -> int:
        lo, hi = self.allowed[0], self.allowed[1] - self.length
        while True:
            if self.rng.random() < 0.5 and len(self.spans):
                a, b = self.spans[self.rng.integers(len(self.spans))]
                start = int(self.rng.integers(a, b)) - self.length // 2
            else:
                start = int(self.rng.integers(lo, hi))
            if lo <= start <= hi and np.count_nonzero(
                    self.ids[start:start + self.length] == 5) <= self.length // 10:
                return start

    def batch(self, size: int):
        """(ids [B, L] int64, targets [B, L, 17] float32, type label [B] int64 (-1 = none))."""
        ids = np.empty((size, self.length), dtype=np.int64)
        plus = np.empty((size, self.length), dtype=np.uint8)
        minus = np.empty((size, self.length), dtype=np.uint8)
        kind = np.full(size, -1, dtype=np.int64)
        for row in range(size):
            s = self._start()
            e = s + self.length
            cover = self.types[:, s:e].sum(axis=1)
            if cover.max() >= self.length // 8:
                kind[row] = int(np.argmax(cover))
            if self.rng.random() < 0.5:
                ids[row] = COMPLEMENT_IDS[self.ids[s:e][::-1]]
                plus[row] = self.minus[s:e][::-1]
                minus[row] = self.plus[s:e][::-1]
            else:
                ids[row] = self.ids[s:e]
                plus[row] = self.plus[s:e]
                minus[row] = self.minus[s:e]
        return ids, targets(plus, minus), kind


def load(transcripts: List[common.Transcript] = None):
    """(ids, plus bits, minus bits, type coverage, transcripts) for the whole of chr20."""
    transcripts = transcripts if transcripts is not None else common.refgene_chr20()
    ids = genome_ids(common.chr20())
    length = len(ids)
    return (ids, strand_labels(transcripts, length, "+"), strand_labels(transcripts, length, "-"),
            type_coverage(transcripts, length), transcripts)
