#!/usr/bin/env python3
"""Test data for tests/unit/worker/openspliceai_test.cpp, cut from GRCh37 chr20 and refGene.

  region --fasta 20.fa.gz --start S --end E --out FILE
      writes chr20[S:E) (0-based, half-open, plus strand) to FILE.
  gene --fasta 20.fa.gz --refgene hg19_refGene.txt.gz --transcript NM_x --pad P --out-prefix PFX
      writes PFX.seq: the transcript's region [txStart - P, txEnd + P) in transcript orientation
      (reverse-complemented for a minus-strand transcript, as the splice task wants it), and
      PFX.sites: `#` header lines, then one `<donor|acceptor>\\t<index>\\t<target|other>` line per
      annotated splice site inside the region, `index` 0-based in PFX.seq. `target` sites are the
      internal junctions of the chosen transcript; `other` ones come from the other refGene
      transcripts on the same strand (alternative isoforms), which count as annotated calls.

Site convention (SpliceAI's labels, checked on chr20 genes with the published checkpoints): the
donor is the LAST exonic base before an intron and the acceptor the FIRST exonic base after it.
refGene exonStarts are 0-based and exonEnds exclusive, so on the plus strand the donor of an exon
is exonEnd - 1 and the acceptor exonStart; on the minus strand, in transcript orientation, the
donor is the exon's lowest genomic base (exonStart) and the acceptor its highest (exonEnd - 1).

The FASTA is the bgzip file of Debian's vt-examples (record "20"); Python's gzip reads bgzip.
"""

import argparse
import gzip
import sys

COMPLEMENT = str.maketrans("ACGTN", "TGCAN")


def read_chr20(path: str) -> str:
    with gzip.open(path, "rt", encoding="ascii") as handle:
        header = handle.readline()
        if not header.startswith(">20"):
            raise ValueError(f"{path}: expected record '20', got {header.strip()!r}")
        return "".join(line.strip() for line in handle if not line.startswith(">")).upper()


def refgene_chr20(path: str):
    with gzip.open(path, "rt", encoding="ascii") as handle:
        for line in handle:
            cols = line.rstrip("\n").split("\t")
            if len(cols) >= 13 and cols[2] == "chr20":
                yield {
                    "name": cols[1], "strand": cols[3], "tx_start": int(cols[4]),
                    "tx_end": int(cols[5]),
                    "exons": list(zip([int(x) for x in cols[9].split(",") if x],
                                      [int(x) for x in cols[10].split(",") if x])),
                    "gene": cols[12],
                }


def junction_bases(tx):
    """Genomic (0-based) donor and acceptor bases of the transcript's internal junctions."""
    exons = sorted(tx["exons"])
    donors, acceptors = [], []
    for left, right in zip(exons, exons[1:]):  # intron between left and right exon
        if tx["strand"] == "+":
            donors.append(left[1] - 1)
            acceptors.append(right[0])
        else:
            donors.append(right[0])
            acceptors.append(left[1] - 1)
    return donors, acceptors


def cmd_region(args) -> int:
    chrom = read_chr20(args.fasta)
    with open(args.out, "w", encoding="ascii") as handle:
        handle.write(chrom[args.start:args.end])
    return 0


def cmd_gene(args) -> int:
    chrom = read_chr20(args.fasta)
    transcripts = list(refgene_chr20(args.refgene))
    chosen = [t for t in transcripts if t["name"] == args.transcript]
    if not chosen:
        print(f"{args.transcript} is not a chr20 refGene transcript", file=sys.stderr)
        return 2
    tx = chosen[0]
    lo, hi = tx["tx_start"] - args.pad, tx["tx_end"] + args.pad
    plus = tx["strand"] == "+"
    seq = chrom[lo:hi]
    if not plus:
        seq = seq[::-1].translate(COMPLEMENT)

    def index(base: int) -> int:  # genomic base -> offset in the submitted sequence
        return base - lo if plus else hi - 1 - base

    lines = []
    target = set()
    donors, acceptors = junction_bases(tx)
    for kind, bases in (("donor", donors), ("acceptor", acceptors)):
        for b in bases:
            target.add((kind, b))
            lines.append(f"{kind}\t{index(b)}\ttarget")
    others = set()
    for t in transcripts:
        if t["strand"] != tx["strand"] or t["tx_end"] <= lo or t["tx_start"] >= hi:
            continue
        d, a = junction_bases(t)
        for kind, bases in (("donor", d), ("acceptor", a)):
            others.update((kind, b) for b in bases if lo <= b < hi and (kind, b) not in target)
    lines += [f"{kind}\t{index(b)}\tother" for kind, b in sorted(others)]
    with open(args.out_prefix + ".seq", "w", encoding="ascii") as handle:
        handle.write(seq)
    with open(args.out_prefix + ".sites", "w", encoding="ascii") as handle:
        handle.write(f"# {tx['gene']} {tx['name']} chr20:{lo}-{hi} strand {tx['strand']} "
                     f"exons {len(tx['exons'])} length {len(seq)}\n")
        handle.write("\n".join(lines) + "\n")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    region = sub.add_parser("region")
    region.add_argument("--fasta", required=True)
    region.add_argument("--start", type=int, required=True)
    region.add_argument("--end", type=int, required=True)
    region.add_argument("--out", required=True)
    gene = sub.add_parser("gene")
    gene.add_argument("--fasta", required=True)
    gene.add_argument("--refgene", required=True)
    gene.add_argument("--transcript", required=True)
    gene.add_argument("--pad", type=int, default=1000)
    gene.add_argument("--out-prefix", required=True)
    args = parser.parse_args()
    return cmd_region(args) if args.command == "region" else cmd_gene(args)


if __name__ == "__main__":
    sys.exit(main())
