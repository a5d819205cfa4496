"""`dnaserve ism`: POST /v1/ism, every SNV of a window of at most 200 bp scored by one scorer
inside a context (a sequence, a FASTA's first record, or a genome region), written as a table:
position, ref, A, C, G, T (REF's own cell empty), tab-separated; --json writes {data, meta}."""

import json
from typing import Any, Dict, List, Optional

from .fasta import read_fasta

BASES = ("A", "C", "G", "T")


class IsmUsageError(Exception):
    pass


def add_ism_command(sub, handler) -> None:
    p = sub.add_parser("ism", help="in-silico mutagenesis: every SNV of a window of at most "
                       "200 bp, one scorer, as a position x base table")
    context = p.add_mutually_exclusive_group(required=True)
    context.add_argument("--sequence", help="the context's bases (window positions in them)")
    context.add_argument("--fasta", help="a FASTA whose first record is the context")
    context.add_argument("--region", help="a stretch of the service's genome, chr20:5,751,501-"
                         "5,755,700 (window positions on the contig)")
    p.add_argument("--window", required=True, metavar="START-END",
                   help="the bases to mutate, 1-based inclusive, at most 200 bp")
    p.add_argument("--scorer", default="splice",
                   choices=("splice", "chromatin", "promoter", "expression"))
    p.add_argument("--distance", type=int, metavar="BP",
                   help="splice or promoter distance (as score-variants)")
    p.add_argument("--top", type=int, metavar="N", help="chromatin top (as score-variants)")
    p.add_argument("--context", metavar="TEXT",
                   help="expression: the one context (id such as E066, CURIE or free text); "
                   "each cell is the log2 fold change of its predicted expression, ALT vs REF")
    p.add_argument("--gene", metavar="NAME",
                   help="expression with --region: the gene (symbol or Ensembl id) whose TSS "
                   "window holds the window (default: the nearest start site)")
    p.add_argument("--json", action="store_true", help="write {data, meta} instead of the table")
    p.add_argument("-o", "--output", help="output file (default stdout)")
    p.set_defaults(handler=handler)


def parse_window(text: str):
    parts = text.replace(",", "").split("-")
    if len(parts) != 2 or not parts[0].isdigit() or not parts[1].isdigit():
        raise IsmUsageError(f"--window {text!r}: expected START-END, e.g. 101-300")
    return int(parts[0]), int(parts[1])


def options_of(args) -> Dict[str, Any]:
    options: Dict[str, Any] = {}
    context = getattr(args, "context", None)
    gene = getattr(args, "gene", None)
    if args.scorer == "expression":
        if not context:
            raise IsmUsageError("--scorer expression needs --context (an id such as E066, a "
                                "CURIE or free text)")
        options["contexts"] = [context]
        if gene is not None:
            if not getattr(args, "region", None):
                raise IsmUsageError("--gene names a gene of --region; a sequence is the "
                                    "expression window itself")
            options["gene"] = gene
    elif context is not None or gene is not None:
        raise IsmUsageError("--context and --gene are options of the expression scorer")
    if args.distance is not None:
        if args.scorer in ("chromatin", "expression"):
            raise IsmUsageError("--distance is an option of splice and promoter")
        options["distance"] = args.distance
    if args.top is not None:
        if args.scorer != "chromatin":
            raise IsmUsageError("--top is an option of chromatin")
        options["top"] = args.top
    return options


def context_of(args) -> Dict[str, Any]:
    if args.region:
        return {"interval": args.region}
    if args.fasta:
        records: List = read_fasta(args.fasta)
        if not records:
            raise IsmUsageError(f"{args.fasta}: no FASTA record")
        return {"sequence": records[0].sequence}
    return {"sequence": args.sequence}


def _cell(value) -> str:
    # As the JSON answer wrote the number (null, a cell the model left unscored: empty).
    return "" if value is None else json.dumps(value)


def matrix_table(data: Dict[str, Any]) -> str:
    """position, ref, A, C, G, T; REF's own cell empty."""
    lines = ["position\tref\t" + "\t".join(BASES)]
    for p in data.get("positions", []):
        cells = dict(zip(p["alt"], p["delta"]))
        row = [str(p["position"]), p["ref"]]
        row += ["" if b == p["ref"] else _cell(cells.get(b)) for b in BASES]
        lines.append("\t".join(row))
    return "\n".join(lines) + "\n"


def run_ism(client, args, write_output) -> Optional[int]:
    window = parse_window(args.window)  # every local check before anything is sent
    options = options_of(args)
    context = context_of(args)
    result = client.ism(window, scorer=args.scorer, options=options, **context)
    if args.json:
        text = json.dumps({"data": result.data, "meta": result.meta}, indent=2) + "\n"
    else:
        text = matrix_table(result.data)
    write_output(text, args.output)
    return None
