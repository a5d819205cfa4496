"""`dnaserve score-variants`: POST /v1/variants/score for variants given on the command line or
read from a small VCF (plain or gzip), answered synchronously (at most 100 variants; a
multi-allelic record counts once per ALT). Prints {data, meta} as JSON."""

import argparse
import gzip
import json
import os
import sys
from typing import Any, Dict, List, Optional

MAX_SYNC_VARIANTS = 100


class ScoreUsageError(Exception):
    pass


def add_score_variants_command(sub, handler) -> None:
    p = sub.add_parser("score-variants", help="score up to 100 variants (splice, expression, "
                       "chromatin, promoter) against the service's reference genome")
    p.add_argument("variants", nargs="*", metavar="VARIANT",
                   help="chr20:5753600:A:G (or chr20-5753600-A-G)")
    p.add_argument("--vcf", help="a VCF (plain or .gz) whose records to score, each ALT a variant")
    p.add_argument("--assembly", help="assembly of the variants (default: the service's, GRCh37)")
    p.add_argument("--splice", action="store_true",
                   help="run the splice scorer (the default when no scorer is named)")
    p.add_argument("--splice-distance", type=int, metavar="BP", help="implies --splice")
    p.add_argument("--context", action="append", dest="contexts", metavar="CONTEXT",
                   help="run the expression scorer for this context (id E066, CURIE "
                   "UBERON:0002107 or free text); repeatable")
    p.add_argument("--expression-window", type=int, metavar="BP",
                   help="genes with a TSS within this many bp (needs --context)")
    p.add_argument("--chromatin", action="store_true", help="run the chromatin scorer")
    p.add_argument("--top", type=int, metavar="N", help="chromatin features kept; implies "
                   "--chromatin")
    p.add_argument("--promoter", action="store_true", help="run the promoter scorer")
    p.add_argument("--promoter-distance", type=int, metavar="BP", help="implies --promoter")
    p.add_argument("-o", "--output", help="output file (default stdout)")
    p.set_defaults(handler=handler)


def _open_text(path: str):
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, "r", encoding="utf-8", errors="replace")


def read_vcf_variants(path: str, limit: int = MAX_SYNC_VARIANTS) -> List[str]:
    """Each ALT of each record as "CHROM:POS:REF:ALT", in file order; more than `limit` is a
    usage error (the synchronous path's bound). Symbolic and '*' ALTs are passed on: the
    service reports them as that variant's error."""
    if not os.path.isfile(path):
        raise ScoreUsageError(f"{path}: no such file")
    variants: List[str] = []
    try:
        with _open_text(path) as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip() or line.startswith("#"):
                    continue
                fields = line.rstrip("\n").split("\t")
                if len(fields) < 5:
                    raise ScoreUsageError(f"{path}:{number}: not a VCF record (fewer than 5 "
                                          "tab-separated columns)")
                chrom, pos, _, ref, alts = fields[:5]
                for alt in alts.split(","):
                    variants.append(f"{chrom}:{pos}:{ref}:{alt}")
                    if len(variants) > limit:
                        raise ScoreUsageError(
                            f"{path}: more than {limit} variants (each ALT counts); "
                            f"score-variants answers at most {limit} at once: split the file")
    except (OSError, EOFError, UnicodeError) as e:
        raise ScoreUsageError(f"{path}: cannot read it: {e}")
    return variants


def scorer_arguments(args) -> Dict[str, Any]:
    """The Client.score_variants keyword arguments the options name."""
    if args.expression_window is not None and not args.contexts:
        raise ScoreUsageError("--expression-window needs at least one --context")
    kwargs: Dict[str, Any] = {}
    if args.splice or args.splice_distance is not None:
        kwargs["splice"] = {} if args.splice_distance is None else \
            {"distance": args.splice_distance}
    if args.contexts:
        kwargs["expression"] = {"contexts": args.contexts}
        if args.expression_window is not None:
            kwargs["expression"]["window"] = args.expression_window
    if args.chromatin or args.top is not None:
        kwargs["chromatin"] = {} if args.top is None else {"top": args.top}
    if args.promoter or args.promoter_distance is not None:
        kwargs["promoter"] = {} if args.promoter_distance is None else \
            {"distance": args.promoter_distance}
    if args.assembly:
        kwargs["assembly"] = args.assembly
    return kwargs


def variants_of(args) -> List[str]:
    variants = list(args.variants)
    if args.vcf:
        variants += read_vcf_variants(args.vcf, MAX_SYNC_VARIANTS - len(variants))
    if not variants:
        raise ScoreUsageError("name variants (chr20:5753600:A:G ...) or --vcf FILE")
    if len(variants) > MAX_SYNC_VARIANTS:
        raise ScoreUsageError(f"{len(variants)} variants: score-variants answers at most "
                              f"{MAX_SYNC_VARIANTS} at once")
    return variants


def run_score_variants(client, args, write_output) -> Optional[int]:
    """Scores and writes the answer; returns how many variants had their own error."""
    kwargs = scorer_arguments(args)  # every local check before anything is sent
    result = client.score_variants(variants_of(args), **kwargs)
    write_output(json.dumps({"data": result.data, "meta": result.meta}, indent=2) + "\n",
                 args.output)
    errors = (result.data.get("counts") or {}).get("errors", 0)
    if errors:
        print(f"dnaserve: {errors} of {len(result.data.get('results', []))} variants were not "
              "scored (see each result's error)", file=sys.stderr, flush=True)
    return errors
