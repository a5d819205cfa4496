#!/usr/bin/env python3
"""Test cases for tests/unit/worker/bundled_models_test.cpp: annotated TSSs of held-out chr20.

  heldout_tss.py --fasta 20.fa.gz --refgene hg19_refGene.txt.gz --count N --flank F --out FILE

picks N distinct TSSs of protein-coding (NM_) refGene transcripts (one per gene, spread evenly
by position) whose region
[TSS - F, TSS + F] lies in the held-out part of chr20 (training/common.py HELD_OUT: the last
10 Mb, never trained on) and writes one line per case:

  <gene>\t<strand>\t<sequence>\t<TSS indexes>\t<other TSS indexes>

The sequence is the region on the gene's strand (reverse-complemented for a minus-strand gene,
as the promoter task wants it), so the case's own TSS is at index F. <TSS indexes> lists every
annotated TSS of the same strand in the sequence (comma-separated, sequence coordinates),
<other TSS indexes> those of the opposite strand (bidirectional promoters fire both ways).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "scripts"))

from dnaserve_tools.chr20_fasta import read_chr20  # noqa: E402
from training.common import HELD_OUT, refgene_chr20, reverse_complement  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fasta", required=True)
    parser.add_argument("--refgene", required=True)
    parser.add_argument("--count", type=int, default=12)
    parser.add_argument("--flank", type=int, default=5000)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    chrom = read_chr20(args.fasta)
    transcripts = refgene_chr20(args.refgene)
    tss = sorted({(t.tss, t.strand) for t in transcripts})
    by_gene = {}
    for t in sorted(transcripts, key=lambda t: (t.tss, t.name)):
        lo, hi = t.tss - args.flank, t.tss + args.flank + 1
        if (t.name.startswith("NM_") and HELD_OUT[0] <= lo and hi <= HELD_OUT[1]
                and t.gene not in by_gene):
            by_gene[t.gene] = t
    genes = sorted(by_gene.values(), key=lambda t: t.tss)
    if len(genes) < args.count:
        print(f"only {len(genes)} held-out genes", file=sys.stderr)
        return 2
    step = len(genes) / args.count
    chosen = [genes[int(i * step)] for i in range(args.count)]
    with open(args.out, "w", encoding="ascii") as handle:
        for t in chosen:
            lo, hi = t.tss - args.flank, t.tss + args.flank + 1
            plus = t.strand == "+"
            seq = chrom[lo:hi] if plus else reverse_complement(chrom[lo:hi])

            def index(position: int) -> int:
                return position - lo if plus else hi - 1 - position

            same = sorted(index(p) for p, s in tss if lo <= p < hi and s == t.strand)
            other = sorted(index(p) for p, s in tss if lo <= p < hi and s != t.strand)
            handle.write(f"{t.gene}\t{t.strand}\t{seq}\t{','.join(map(str, same))}\t"
                         f"{','.join(map(str, other))}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
