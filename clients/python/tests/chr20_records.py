"""Writes a multi-FASTA of real GRCh37 chr20 records for the CLI's tests and benchmark.

    chr20_records.py 20.fa.gz OUT.fa --count 6 --length 10000 [--start 31000001] [--step 250000]

20.fa.gz is the chromosome from Debian's vt-examples (tests/support/variant_data finds it); a
plain (uncompressed) FASTA works as well: gzip is told apart by its magic bytes, not the name.
Records are named by their UCSC region, `chr20:<start>-<end>` (1-based, inclusive), and any
window holding an N is skipped, so every record is real sequence.
"""

import argparse
import gzip
import sys


def open_fasta(path: str):
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rt") if gzipped else open(path, "rt")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("fasta")
    parser.add_argument("out")
    parser.add_argument("--count", type=int, default=6)
    parser.add_argument("--length", type=int, default=10000)
    parser.add_argument("--start", type=int, default=31_000_001)
    parser.add_argument("--step", type=int, default=250_000)
    parser.add_argument("--lengths", default="", help="comma-separated lengths, overriding "
                        "--length record by record (cycled)")
    args = parser.parse_args()
    with open_fasta(args.fasta) as handle:
        header = handle.readline()
        if not header.startswith(">"):
            print(f"{args.fasta}: not a FASTA", file=sys.stderr)
            return 1
        chromosome = "".join(line.strip() for line in handle).upper()
    lengths = [int(x) for x in args.lengths.split(",") if x] or [args.length]
    written = 0
    position = args.start - 1  # 0-based
    with open(args.out, "w") as out:
        while written < args.count and position + max(lengths) <= len(chromosome):
            length = lengths[written % len(lengths)]
            window = chromosome[position:position + length]
            if "N" not in window:
                out.write(f">chr20:{position + 1}-{position + length}\n")
                for i in range(0, len(window), 60):
                    out.write(window[i:i + 60] + "\n")
                written += 1
            position += args.step
    if written < args.count:
        print(f"only {written} N-free windows found", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
