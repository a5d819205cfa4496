"""`dnaserve plot`: a figure of one record's results, as PNG, SVG or PDF.

Either it runs the predictions itself on one FASTA record (or a region of it), as `dnaserve
predict` would, or it draws results saved before (`--from-json`: what `dnaserve predict
--format json`, `dnaserve find-genes`, `dnaserve job` or `plot --save-json` wrote). The drawing
is dnaserve_client.plot; matplotlib is loaded only when a figure is drawn, so the rest of the
command line works without it.
"""

import argparse
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional

from .client import Client
from .config import ConfigError
from .fasta import FastaRecord
from .results import Result

PANELS = ("promoter", "splice", "chromatin", "annotation", "expression")
TRACK_TASKS = ("promoter", "splice", "chromatin", "annotation")
# A heatmap wants the features below the service's default 0.5 too; white marks what was not
# reported, so a lower cutoff shows more without hiding anything.
PLOT_THRESHOLDS = {"chromatin": 0.1}
FIGURE_FORMATS = (".png", ".svg", ".pdf")

EXAMPLES = """examples:
  dnaserve plot region.fa -o region.png
  dnaserve plot region.fa --tasks promoter,splice --width 1024 --height 768 -o region.svg
  dnaserve plot chr20.fa.gz --region chr20:31012001-31024000 --description "adult liver" \\
      --description "brain cortex" --save-json results.jsonl -o genes.pdf
  dnaserve plot --from-json results.jsonl --region 31016001-31020000 -o zoom.png
"""


def add_plot_command(sub) -> None:
    p = sub.add_parser(
        "plot", help="a figure (PNG, SVG or PDF) of one record's results",
        description="A figure of one record's (or region's) results: promoter score, splice "
        "sites, a heatmap of the top chromatin features, the predicted gene models and "
        "expression per context. Runs the predictions on a FASTA record, or draws saved "
        "results with --from-json. Needs matplotlib (Debian's python3-matplotlib).",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="a FASTA (plain or gzip; - for stdin), or with --from-json saved results")
    p.add_argument("-o", "--output", required=True,
                   help="the figure; its extension chooses the format: .png, .svg or .pdf")
    p.add_argument("--from-json", action="store_true",
                   help="FILEs hold saved results ({data, meta} objects, one per line or a "
                   "JSON list), not FASTA: nothing is sent to the service")
    p.add_argument("--record", help="the record to draw (its FASTA name or sequence_name); "
                   "needed when there are several")
    p.add_argument("--region", help="a part of the record: START-END (1-based, inclusive, in "
                   "the record) or CONTIG:START-END (when the record is the contig or is named "
                   "CONTIG:START-END); from FASTA only that part is sent")
    p.add_argument("--tasks", help="comma-separated panels among " + ",".join(PANELS) +
                   " (default: promoter,splice,chromatin,annotation, plus expression with "
                   "--description; with --from-json every panel the results fill)")
    p.add_argument("--description", action="append", dest="descriptions", metavar="TEXT",
                   help="expression: an experimental context; repeat it for one bar per "
                   "context. Each found gene is scored on its own strand (find-genes), unless "
                   "--tss-index names one TSS")
    p.add_argument("--tss-index", type=int, help="expression: score the window centred on "
                   "this 0-based offset (in the region sent) on the submitted strand, instead "
                   "of the genes find-genes finds")
    p.add_argument("--threshold", action="append", default=[], metavar="TASK=VALUE",
                   help="a task's cutoff, e.g. splice=0.2 (repeatable; default: the "
                   "service's, and chromatin=0.1 so the heatmap has rows)")
    p.add_argument("--width", type=int, default=1400, help="pixels (default 1400)")
    p.add_argument("--height", type=int, default=900, help="pixels (default 900)")
    p.add_argument("--dpi", type=float, default=100.0,
                   help="dots per inch (default 100); a PNG is WIDTH x HEIGHT pixels, an "
                   "SVG/PDF WIDTH/DPI x HEIGHT/DPI inches")
    p.add_argument("--top-features", type=int, default=12,
                   help="chromatin heatmap rows (default 12)")
    p.add_argument("--title", help="the figure's title (default: the record or region)")
    p.add_argument("--save-json", metavar="FILE", help="also write the results, one "
                   "{data, meta} per line, to redraw later with --from-json")
    p.add_argument("-j", "--concurrency", type=int, default=4,
                   help="requests in flight (default 4)")
    p.add_argument("-q", "--quiet", action="store_true", help="no messages on stderr")
    p.set_defaults(handler=cmd_plot)


def needs_service(args) -> bool:
    return not (getattr(args, "command", None) == "plot" and args.from_json)


def cmd_plot(client: Optional[Client], args) -> int:
    from . import cli

    _check_figure_options(args, cli.UsageError)
    tasks = _parse_tasks(args.tasks, cli.UsageError)
    try:
        from . import plot
    except ImportError as e:
        raise ConfigError(str(e))
    if args.from_json:
        results = _saved_results(args, cli)
        region = args.region
    else:
        results = _predicted_results(client, args, tasks, cli, plot)
        region = None  # only the region was sent
        if args.save_json:
            cli._write_output("".join(json.dumps({"data": r.data, "meta": r.meta}) + "\n"
                                      for r in results), args.save_json)
    try:
        fig = plot.plot_results(results, tasks=tasks, region=region,
                                figsize=(args.width / args.dpi, args.height / args.dpi),
                                dpi=args.dpi, top_features=args.top_features, title=args.title)
        plot.save_figure(fig, args.output)
    except ValueError as e:
        raise cli.UsageError(str(e))
    if not args.quiet:
        drawn = ", ".join(plot.panels(fig))
        cli._err(f"wrote {args.output} ({args.width} x {args.height} px at {args.dpi:g} dpi; "
                 f"{drawn})")
    return cli.EXIT_OK


# ---- options --------------------------------------------------------------------------------
def _check_figure_options(args, UsageError) -> None:
    if os.path.splitext(args.output)[1].lower() not in FIGURE_FORMATS:
        raise UsageError(f"{args.output}: the figure's format comes from its extension: "
                         ".png, .svg or .pdf")
    directory = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(directory):
        raise UsageError(f"{args.output}: no such directory {directory}")
    for name, value, low, high in (("--width", args.width, 100, 20000),
                                   ("--height", args.height, 100, 20000),
                                   ("--dpi", args.dpi, 10, 1200),
                                   ("--top-features", args.top_features, 1, 100),
                                   ("--concurrency", args.concurrency, 1, 64)):
        if not low <= value <= high:
            raise UsageError(f"{name} {value:g}: must be between {low} and {high}")
    if args.from_json:
        for flag, value in (("--description", args.descriptions), ("--tss-index",
                            args.tss_index), ("--threshold", args.threshold),
                            ("--save-json", args.save_json)):
            if value:
                raise UsageError(f"{flag} applies when plot runs the predictions, not to "
                                 "--from-json (the results are already there)")


def _parse_tasks(text: Optional[str], UsageError) -> Optional[List[str]]:
    if text is None:
        return None
    tasks = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in PANELS]
    if unknown or not tasks:
        raise UsageError(f"--tasks {text}: choose from {','.join(PANELS)}")
    return tasks


def _thresholds(args, UsageError) -> Dict[str, float]:
    thresholds = dict(PLOT_THRESHOLDS)
    for item in args.threshold:
        task, sep, value = item.partition("=")
        if not sep or task not in ("promoter", "splice", "chromatin"):
            raise UsageError(f"--threshold {item}: write TASK=VALUE with TASK one of promoter, "
                             "splice, chromatin")
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not 0.0 <= number <= 1.0:
            raise UsageError(f"--threshold {item}: the value must be a number from 0 to 1")
        thresholds[task] = number
    return thresholds


# ---- results from the service ---------------------------------------------------------------
def _pick_record(records: List[FastaRecord], wanted: Optional[str], UsageError) -> FastaRecord:
    if wanted is not None:
        for record in records:
            if record.name == wanted:
                return record
        raise UsageError(f"no record named {wanted!r} (the input has: " +
                         ", ".join(r.name for r in records[:8]) +
                         (", ..." if len(records) > 8 else "") + ")")
    if not records:
        raise UsageError("the input holds no FASTA record")
    if len(records) > 1:
        raise UsageError(f"the input holds {len(records)} records and a figure shows one: "
                         "choose it with --record NAME (" +
                         ", ".join(r.name for r in records[:5]) +
                         (", ..." if len(records) > 5 else "") + ")")
    return records[0]


def _predicted_results(client: Client, args, tasks: Optional[List[str]], cli, plot
                       ) -> List[Result]:
    UsageError = cli.UsageError
    if tasks is None:
        tasks = list(TRACK_TASKS) + (["expression"] if args.descriptions else [])
    if "expression" in tasks and not args.descriptions:
        raise UsageError("the expression panel needs --description (one per context)")
    if args.descriptions and "expression" not in tasks:
        raise UsageError("--description is for the expression panel: add expression to --tasks")
    if args.tss_index is not None and "expression" not in tasks:
        raise UsageError("--tss-index is for the expression panel")
    thresholds = _thresholds(args, UsageError)
    record = _pick_record(cli._read_records(args.files), args.record, UsageError)
    sequence, name = record.sequence, record.name
    if args.region:
        frame = plot.RecordFrame.from_name(record.name, len(record.sequence))
        try:
            start, end = frame.parse_region(args.region)
        except ValueError as e:
            raise UsageError(str(e))
        sequence, name = sequence[start:end], frame.sub_name(start, end)

    calls = []  # (label, function) in panel order
    by_genes = "expression" in tasks and args.tss_index is None
    for task in TRACK_TASKS:
        if task not in tasks or (task == "annotation" and by_genes):
            continue  # find-genes brings the annotation along
        options = {"threshold": thresholds[task]} if task in thresholds else None
        calls.append((task, lambda t=task, o=options: client.predict(
            t, sequence, sequence_name=name, options=o)))
    for description in args.descriptions or []:
        if by_genes:
            calls.append((f"find-genes ({description})", lambda d=description: client.find_genes(
                sequence, d, sequence_name=name)))
        else:
            calls.append((f"expression ({description})", lambda d=description: client.predict(
                "expression", sequence, sequence_name=name, options={"description": d},
                tss_index=args.tss_index)))
    if not args.quiet:
        cli._err(f"plot: {name} ({len(sequence):,} bp): " + ", ".join(c[0] for c in calls))
    pool = ThreadPoolExecutor(max_workers=min(args.concurrency, len(calls)))
    try:
        futures = [pool.submit(call) for _, call in calls]
        return [future.result() for future in futures]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


# ---- saved results --------------------------------------------------------------------------
def _saved_results(args, cli) -> List[Dict[str, Any]]:
    UsageError = cli.UsageError
    results: List[Dict[str, Any]] = []
    for path in args.files:
        try:
            text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
        except OSError as e:
            raise UsageError(f"{path}: {e.strerror}")
        found = _json_values(text, path, UsageError)
        for value in found:
            if not (isinstance(value, dict) and isinstance(value.get("data"), dict)):
                raise UsageError(f"{path}: holds something other than {{data, meta}} results "
                                 "(dnaserve predict --format json writes them)")
        results.extend(found)
    if not results:
        raise UsageError("the files hold no results")
    names = []
    for value in results:
        name = (value["data"].get("input") or {}).get("sequence_name") or "sequence"
        if name not in names:
            names.append(name)
    if args.record is not None:
        chosen = [r for r in results
                  if ((r["data"].get("input") or {}).get("sequence_name") or "sequence")
                  == args.record]
        if not chosen:
            raise UsageError(f"no results for a record named {args.record!r} (the files have: "
                             + ", ".join(names[:8]) + (", ..." if len(names) > 8 else "") + ")")
        return chosen
    if len(names) > 1:
        raise UsageError(f"the files hold results of {len(names)} records and a figure shows "
                         "one: choose it with --record NAME (" + ", ".join(names[:5]) +
                         (", ..." if len(names) > 5 else "") + ")")
    return results


def _json_values(text: str, path: str, UsageError) -> List[Any]:
    """One JSON document (an object or a list of them) or JSON lines."""
    try:
        value = json.loads(text)
        return value if isinstance(value, list) else [value]
    except ValueError:
        pass
    values = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            values.append(json.loads(line))
        except ValueError as e:
            raise UsageError(f"{path}:{number}: not JSON ({e.msg})")
    return values
