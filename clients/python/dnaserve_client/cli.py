"""The `dnaserve` command line.

Exit codes:
  0    success
  1    the service refused a request (its error code and message are printed). A refusal that
       applies to the whole run (a wrong or disabled key, an unknown model, an option the
       service rejects) is printed once and stops the run; records it did not reach are not
       sent, and any that finished before it are kept for a rerun (with -o)
  2    usage: bad arguments or options (checked before anything is sent), an unreadable or
       malformed FASTA, records that cannot be placed or scored as asked
  3    configuration: no URL, a config file other users can read; plot without matplotlib
  4    the service could not be reached (or did not answer as dnaserve does)
  5    expression: the description named no training context (warned on stderr; the output
       is written, with the mean over all contexts; `GET /v1/tasks/expression/contexts` lists them)
  130  interrupted; finished records are kept, so rerunning the same command resumes

Genome coordinates: with --shift-coordinates UCSC every record named by its region,
chrom:start-end (1-based, inclusive, commas allowed) or chrom_start-end, is placed on its
contig in BED, bedGraph and GFF3 output (one ##sequence-region per contig); --region gives
the region of a single record instead.

Intervals: with no FASTA, --region chr20:5,750,001-5,760,000 (repeatable) or --regions
FILE.bed asks the service to read the interval from its reference genome (GET /v1/genomes;
--assembly, --strand; a BED file's sixth column gives each row's strand). Every output, JSON
included, is then in genome coordinates, and each result's meta.interval echoes its interval.

Expression: the TSS is the record's centre (length // 2) unless --tss-index is given; a record
of exactly 9,198 bp is the model's window itself. Records must have at least 9,198 bp. With
--region, --tss-genome-position names the TSS on the contig (1-based, inside the interval).
"""

import argparse
import hashlib
import json
import os
import shutil
import signal
import stat
import sys
import tempfile
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from tqdm import tqdm

from . import __version__
from .client import (ASYNC_THRESHOLD_BP, EXPRESSION_WINDOW_BP, PERCENT_BAR_FORMAT, TASKS,
                     TEXT_FORMATS, Client, expression_tss_index)
from .config import ConfigError, load_settings
from .errors import DnaserveError
from .fasta import FastaRecord, read_fasta
from .plot_cli import add_plot_command, needs_service
from .ism_cli import IsmUsageError, add_ism_command, run_ism
from .score_cli import ScoreUsageError, add_score_variants_command, run_score_variants
from .results import JobProgress, Result
from .tracks import Placement, mark_cut_transcripts, merge, parse_region, place

EXIT_OK, EXIT_SERVICE, EXIT_USAGE, EXIT_CONFIG, EXIT_UNREACHABLE, EXIT_INTERRUPTED = \
    0, 1, 2, 3, 4, 130
EXIT_UNMATCHED_CONTEXT = 5


class UsageError(Exception):
    pass


class RunWideError(Exception):
    """A refusal that applies to every record of a run, reported once."""

    def __init__(self, error: DnaserveError, *, sent: int, total: int = 0,
                 state_dir: Optional[str] = None):
        super().__init__(str(error))
        self.error, self.sent, self.total, self.state_dir = error, sent, total, state_dir


# ---- entry point -----------------------------------------------------------------------------
def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    # SIGTERM is handled like Ctrl-C: keep what finished, say how to resume.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        client = None
        if needs_service(args):  # plot --from-json draws saved results: no URL needed
            settings = load_settings(args.url)
            client = Client(settings.url, settings.api_key, retry_budget=args.retry_budget,
                            poll_interval=args.poll_interval)
        return args.handler(client, args)
    except ConfigError as e:
        _err(f"configuration: {e}")
        return EXIT_CONFIG
    except UsageError as e:
        _err(str(e))
        return EXIT_USAGE
    except DnaserveError as e:
        return _report(e)
    except RunWideError as e:
        code = _report(e.error)
        if e.sent and e.state_dir:
            _err(f"the run stopped: {e.sent} of {e.total} records had finished and are saved in "
                 f"{e.state_dir}; fix the cause and rerun the same command to resume")
        elif e.sent:
            _err(f"the run stopped: {e.sent} of {e.total} records had finished; nothing was "
                 "written")
        else:
            _err("the run stopped before any record was done; nothing was written")
        return code
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt()


def _err(message: str) -> None:
    print(f"dnaserve: {message}", file=sys.stderr, flush=True)


def _report(e: DnaserveError) -> int:
    where = f" (request {e.request_id})" if e.request_id else ""
    _err(f"error: {e.code}: {e.message}{where}")
    for item in e.validation_errors[:10]:
        if isinstance(item, dict):
            loc = ".".join(str(part) for part in item.get("loc", []))
            _err(f"  {loc}: {item.get('msg', '')}")
    if e.code in UNREACHABLE_CODES:
        return EXIT_UNREACHABLE
    return EXIT_SERVICE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dnaserve", description="Command line for the dnaserve Sequence Analysis Service. "
        "URL and key come from DNASERVE_URL / DNASERVE_API_KEY or ~/.config/dnaserve/config.json "
        "(mode 600).", epilog=__doc__.split("\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"dnaserve {__version__}")
    parser.add_argument("--url", help="service URL (default: DNASERVE_URL or the config file)")
    parser.add_argument("--retry-budget", type=float, default=300.0, metavar="SECONDS",
                        help="how long one request may keep retrying 429/503 (default 300)")
    parser.add_argument("--poll-interval", type=float, default=1.0, metavar="SECONDS",
                        help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("predict", help="run a task on every record of FASTA files")
    p.add_argument("task", choices=TASKS)
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="FASTA (plain or gzip); - for stdin. None: --region/--regions name "
                   "intervals of the service's reference genome")
    _add_run_options(p, formats=("json", "bed", "bedgraph", "gff3"))
    p.add_argument("--model", help="model id (default: the task's default model)")
    p.add_argument("--threshold", type=float, help="promoter/splice/chromatin cutoff (0-1)")
    p.add_argument("--site-types", help="splice: donor,acceptor")
    p.add_argument("--batch-size", type=int, help="annotation batch size (1-128)")
    _add_placement_options(p)
    p.add_argument("--no-reverse-complement", action="store_true",
                   help="annotation: one pass, no reverse-complement averaging")
    p.add_argument("--description", help="expression: the experimental context (required)")
    p.add_argument("--tss-index", type=int, help="expression: 0-based TSS offset in every "
                   "record (default: the record's centre, length // 2)")
    p.add_argument("--tss-genome-position", type=int, metavar="POS",
                   help="expression with --region: the TSS as a 1-based position on the "
                   "contig, inside the interval (instead of --tss-index)")
    p.set_defaults(handler=cmd_predict)

    p = sub.add_parser("find-genes", help="annotation, then expression per found gene")
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="FASTA; none: --region/--regions name reference intervals")
    _add_run_options(p, formats=("json", "gff3"))
    p.add_argument("--description", required=True, help="experimental context for every gene")
    p.add_argument("--annotation-model")
    p.add_argument("--expression-model")
    p.add_argument("--batch-size", type=int)
    _add_placement_options(p)
    p.set_defaults(handler=cmd_find_genes)

    p = sub.add_parser("variant", help="annotate a VCF in object storage (async)")
    p.add_argument("uri", help="s3://bucket/key.vcf.gz")
    p.add_argument("--genome-build", default="GRCh37")
    p.add_argument("--window", type=int)
    p.add_argument("--tissue", action="append", dest="tissues", help="repeatable")
    p.add_argument("--gene", action="append", dest="genes", help="repeatable")
    p.add_argument("--client-ref")
    p.add_argument("--wait", action="store_true", help="wait for the result (progress bar)")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(handler=cmd_variant)

    add_score_variants_command(sub, cmd_score_variants)
    add_ism_command(sub, cmd_ism)

    p = sub.add_parser("jobs", help="your recent jobs")
    p.add_argument("--limit", type=int, default=50)
    p.set_defaults(handler=cmd_jobs)

    p = sub.add_parser("job", help="one job's state or result")
    p.add_argument("job_id")
    p.add_argument("--wait", action="store_true")
    p.add_argument("--format", default="json", help="json, or a text track of the result")
    p.add_argument("-o", "--output")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(handler=cmd_job)

    p = sub.add_parser("models", help="models served for a task (all tasks when omitted)")
    p.add_argument("task", nargs="?", choices=TASKS)
    p.set_defaults(handler=cmd_models)

    p = sub.add_parser("health", help="service health and version")
    p.set_defaults(handler=cmd_health)

    add_plot_command(sub)
    return parser


def _add_placement_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shift-coordinates", metavar="UCSC",
                   help="UCSC: place every record on its contig, from its name chrom:start-end "
                   "(or chrom_start-end), in genome coordinates")
    p.add_argument("--region", metavar="CHROM:START-END", action="append",
                   help="with a FASTA: the region the (single) record covers, 1-based "
                   "inclusive: its output is placed there. Without one: an interval of the "
                   "service's reference genome to analyse (repeatable)")
    p.add_argument("--regions", metavar="FILE.bed",
                   help="without a FASTA: the intervals of a BED file (0-based starts; column 6, "
                   "when + or -, is the strand)")
    p.add_argument("--strand", choices=("+", "-"),
                   help="intervals: analyse this strand (default +; - analyses the reverse "
                   "complement, positions still on + coordinates)")
    p.add_argument("--assembly", help="intervals: the assembly (default: the service's default)")


def _add_run_options(p: argparse.ArgumentParser, formats) -> None:
    p.add_argument("--format", default="json", choices=formats,
                   help="json (one {data, meta} per line) or one merged text track")
    p.add_argument("-o", "--output", help="output file (default stdout); with -o an interrupted "
                   "run resumes from <output>.dnaserve-resume/")
    p.add_argument("-j", "--concurrency", type=int, default=4,
                   help="requests in flight; set it to your key's max_concurrency (default 4)")
    p.add_argument("--async", dest="mode", action="store_const", const="async", default="auto",
                   help="submit every record as an async job")
    p.add_argument("--sync", dest="mode", action="store_const", const="sync",
                   help="never go async (default: async above the advisory thresholds)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")


# ---- small commands --------------------------------------------------------------------------
def _print_json(value: Any, output: Optional[str] = None) -> None:
    text = json.dumps(value, indent=2, sort_keys=False) + "\n"
    _write_output(text, output)


def _write_output(text: str, output: Optional[str]) -> None:
    if not output or output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    directory = os.path.dirname(os.path.abspath(output))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".dnaserve-")
    try:
        # mkstemp makes the file 600; the output gets the mode any new file would get (the
        # umask's), or keeps the mode of the file it replaces.
        os.fchmod(fd, _output_mode(output))
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, output)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def _output_mode(output: str) -> int:
    try:
        return stat.S_IMODE(os.stat(output).st_mode)
    except OSError:
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def cmd_health(client: Client, args) -> int:
    _print_json(client.health())
    return EXIT_OK


def cmd_models(client: Client, args) -> int:
    if args.task:
        _print_json(client.models(args.task))
    else:
        _print_json({task: client.models(task) for task in TASKS})
    return EXIT_OK


def cmd_jobs(client: Client, args) -> int:
    jobs = client.jobs(limit=args.limit)
    _print_json({"jobs": jobs, "count": len(jobs)})
    return EXIT_OK


def cmd_job(client: Client, args) -> int:
    if args.wait:
        state = client.wait(args.job_id, progress=None if args.quiet else True)
    else:
        state = client.job(args.job_id)
    if isinstance(state, JobProgress):
        _print_json(state.raw, args.output)
        return EXIT_OK
    if args.format != "json":
        try:
            _write_output(state.text(args.format), args.output)
        except KeyError as e:
            raise UsageError(str(e.args[0]))
        return EXIT_OK
    _print_json({"data": state.data, "meta": state.meta}, args.output)
    return EXIT_OK


def cmd_variant(client: Client, args) -> int:
    outcome = client.variant(args.uri, genome_build=args.genome_build, window=args.window,
                             tissues=args.tissues, genes=args.genes, client_ref=args.client_ref,
                             wait=args.wait, progress=None if args.quiet else True)
    if isinstance(outcome, Result):
        _print_json({"data": outcome.data, "meta": outcome.meta})
    else:
        _print_json({"job_id": outcome.job_id, "status": outcome.status,
                     "result": outcome.result_path})
    return EXIT_OK


def cmd_score_variants(client: Client, args) -> int:
    try:
        run_score_variants(client, args, _write_output)
    except ScoreUsageError as e:
        raise UsageError(str(e))
    return EXIT_OK


def cmd_ism(client: Client, args) -> int:
    try:
        run_ism(client, args, _write_output)
    except IsmUsageError as e:
        raise UsageError(str(e))
    return EXIT_OK


# ---- predict / find-genes over many records --------------------------------------------------
def _read_records(files: List[str]) -> List[FastaRecord]:
    records: List[FastaRecord] = []
    for path in files:
        if path != "-" and not os.path.isfile(path):
            raise UsageError(f"{path}: no such file")
        try:
            records.extend(read_fasta(path))
        except (ValueError, OSError, EOFError) as e:
            raise UsageError(f"{path}: not a readable FASTA: {e}")
    seen = set()
    for record in records:
        if record.name in seen:
            raise UsageError(f"two records are named {record.name!r}: names become sequence ids "
                             "in the output, so they must be unique")
        seen.add(record.name)
    return records


def _task_options(args) -> Optional[Dict[str, Any]]:
    """The request's options, every local rule checked before anything is sent (a value the
    service would refuse for every record is a usage error here, not N refusals)."""
    options: Dict[str, Any] = {}
    task = args.task
    if args.threshold is not None:
        if task not in ("promoter", "splice", "chromatin"):
            raise UsageError(f"--threshold does not apply to {task}")
        if not 0.0 <= args.threshold <= 1.0:
            raise UsageError(f"--threshold must be between 0 and 1; got {args.threshold:g}")
        options["threshold"] = args.threshold
    if args.site_types:
        if task != "splice":
            raise UsageError("--site-types applies to splice only")
        options["site_types"] = [s.strip() for s in args.site_types.split(",") if s.strip()]
        unknown = [s for s in options["site_types"] if s not in ("donor", "acceptor")]
        if unknown or not options["site_types"]:
            raise UsageError("--site-types takes donor, acceptor or donor,acceptor")
    if args.batch_size is not None:
        if task != "annotation":
            raise UsageError("--batch-size applies to annotation only")
        options["batch_size"] = _batch_size(args.batch_size)
    if args.no_reverse_complement:
        if task != "annotation":
            raise UsageError("--no-reverse-complement applies to annotation only")
        options["reverse_complement"] = False
    if task == "expression":
        if not args.description or not args.description.strip():
            raise UsageError("expression needs --description (the experimental context)")
        options["description"] = args.description
    elif args.description:
        raise UsageError("--description applies to expression only (and to find-genes)")
    if args.tss_index is not None and task != "expression":
        raise UsageError("--tss-index applies to expression only")
    if args.tss_genome_position is not None:
        if task != "expression":
            raise UsageError("--tss-genome-position applies to expression only")
        if args.tss_index is not None:
            raise UsageError("give one of --tss-index and --tss-genome-position")
    return options or None


def _batch_size(value: int) -> int:
    if not 1 <= value <= 128:
        raise UsageError(f"--batch-size must be between 1 and 128; got {value}")
    return value


# ---- genome coordinates ----------------------------------------------------------------------
# Annotation and find-genes results are rebased by the service itself (options.shift_coordinates
# also moves tss_position and polya_position); every other task's text tracks are placed here.
SERVICE_PLACED = ("annotation", "find-genes")


def _placements(args, records: List[FastaRecord]) -> Optional[List[Placement]]:
    """Where each record lies on its contig, when --shift-coordinates or --region asks for
    genome coordinates (None otherwise). Every record must be placeable, and a region's span
    must be the record's length: a name that only looks like a region is refused, not
    trusted."""
    shift = args.shift_coordinates
    if args.region is not None and len(args.region) > 1:
        raise UsageError("with a FASTA, --region gives the region of its one record; repeat "
                         "--region only without a FASTA (intervals of the reference genome)")
    region = args.region[0] if args.region else None
    if shift is None and region is None:
        return None
    if shift is not None and shift.upper() != "UCSC":
        raise UsageError(f"--shift-coordinates takes UCSC (the only naming supported); got {shift!r}")
    if region is not None:
        if len(records) != 1:
            raise UsageError(f"--region gives the region of one record; the input has "
                             f"{len(records)} (name each record chrom:start-end and use "
                             "--shift-coordinates UCSC instead)")
        placement = parse_region(region)
        if placement is None:
            raise UsageError(f"--region must be chrom:start-end (1-based, inclusive); got "
                             f"{region!r}")
        placements = [placement]
    else:
        unnamed = [r.name for r in records if parse_region(r.name) is None]
        if unnamed:
            listed = ", ".join(unnamed[:5]) + (", ..." if len(unnamed) > 5 else "")
            raise UsageError(f"--shift-coordinates UCSC needs every record named by its region, "
                             f"chrom:start-end or chrom_start-end; {len(unnamed)} of "
                             f"{len(records)} are not: {listed}")
        placements = [parse_region(r.name) for r in records]  # type: ignore[misc]
    for record, placement in zip(records, placements):
        if placement.length != len(record.sequence):
            raise UsageError(f"{record.name}: the region {placement.label} is "
                             f"{placement.length:,} bp but the record has "
                             f"{len(record.sequence):,} bp")
    return placements  # type: ignore[return-value]


def _service_shift(body: Dict[str, Any], record: FastaRecord,
                   placement: Optional[Placement]) -> Dict[str, Any]:
    """Asks the service to rebase an annotation or find-genes result: it reads the region from
    sequence_name, so a record not named chrom:start-end is sent under its region label."""
    if placement is None:
        return body
    body["options"] = dict(body.get("options") or {}, shift_coordinates="UCSC")
    if ":" not in record.name or parse_region(record.name) != placement:
        body["sequence_name"] = placement.label
    return body


def _check_expression_records(records: List[FastaRecord], tss_index: Optional[int]) -> None:
    """The one expression rule, before anything is sent: the TSS is --tss-index, else the
    record's centre; the 9,198 bp around it must lie inside the record."""
    half = EXPRESSION_WINDOW_BP // 2
    bad = []
    for record in records:
        length = len(record.sequence)
        tss = tss_index if tss_index is not None else expression_tss_index(record.sequence)
        tss = half if tss is None else tss
        if not half <= tss <= length - half:
            bad.append(f"{record.name} ({length:,} bp)")
    if bad:
        listed = ", ".join(bad[:5]) + (", ..." if len(bad) > 5 else "")
        where = f"--tss-index {tss_index}" if tss_index is not None else "the record's centre"
        raise UsageError(f"expression scores the {EXPRESSION_WINDOW_BP:,} bp around the TSS "
                         f"({where}), so it must lie {half:,} bp or more from both ends; "
                         f"{len(bad)} record(s) do not allow it: {listed}")


@dataclass
class IntervalRecord(FastaRecord):
    """A reference interval in place of a FASTA record: `name` is its label, `sequence` stays
    empty (the service reads the bases)."""
    interval: Dict[str, Any] = field(default_factory=dict)
    length: int = 0


def _interval_records(args) -> List[IntervalRecord]:
    """The intervals of --region (repeatable) and --regions FILE.bed, when no FASTA is given."""
    if args.shift_coordinates is not None:
        raise UsageError("--shift-coordinates places FASTA records; intervals already are in "
                         "genome coordinates")
    wanted: List[tuple] = []  # (contig, start 1-based, end, strand)
    for region in args.region or []:
        placement = parse_region(region)
        if placement is None:
            raise UsageError(f"--region must be chrom:start-end (1-based, inclusive, commas "
                             f"allowed); got {region!r}")
        wanted.append((placement.chrom, placement.start, placement.end, args.strand or "+"))
    if args.regions:
        wanted.extend(_bed_intervals(args.regions, args.strand))
    if not wanted:
        raise UsageError("give FASTA files, or intervals of the reference genome with --region "
                         "chrom:start-end or --regions FILE.bed")
    records: List[IntervalRecord] = []
    seen = set()
    for contig, start, end, strand in wanted:
        label = f"{contig}:{start}-{end}" + ("(-)" if strand == "-" else "")
        if label in seen:
            raise UsageError(f"the interval {label} is given twice")
        seen.add(label)
        interval: Dict[str, Any] = {"contig": contig, "start": start, "end": end,
                                    "strand": strand}
        if args.assembly:
            interval["assembly"] = args.assembly
        records.append(IntervalRecord(name=label, description="", sequence="",
                                      interval=interval, length=end - start + 1))
    return records


def _bed_intervals(path: str, strand: Optional[str]) -> List[tuple]:
    out = []
    try:
        handle = sys.stdin if path == "-" else open(path)
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror}")
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip() or line.startswith(("#", "track", "browser")):
                continue
            fields = line.rstrip("\n").split("\t")
            try:
                contig, start, end = fields[0], int(fields[1]), int(fields[2])
            except (IndexError, ValueError):
                raise UsageError(f"{path}:{number}: not a BED row (contig, start, end)")
            if start < 0 or end <= start:
                raise UsageError(f"{path}:{number}: BED start must be >= 0 and below end")
            row_strand = fields[5] if len(fields) >= 6 and fields[5] in ("+", "-") else None
            out.append((contig, start + 1, end, row_strand or strand or "+"))
    return out


def cmd_predict(client: Client, args) -> int:
    if args.format != "json" and args.format not in TEXT_FORMATS[args.task]:
        allowed = ", ".join(("json",) + TEXT_FORMATS[args.task])
        raise UsageError(f"{args.task} has no {args.format} output (choose from {allowed})")
    options = _task_options(args)
    if not args.files:
        return _predict_intervals(client, args, options)
    _no_interval_options(args)
    if args.tss_genome_position is not None:
        raise UsageError("--tss-genome-position names the TSS on an interval of the reference "
                         "genome (--region); with FASTA files use --tss-index")
    records = _read_records(args.files)
    placements = _placements(args, records)
    by_service = args.task in SERVICE_PLACED
    if placements is not None and args.format == "json" and not by_service:
        raise UsageError(f"genome coordinates apply to {args.task}'s bed/bedgraph/gff3 output; "
                         "its JSON is the service's result, in record coordinates")
    if args.task == "expression":
        _check_expression_records(records, args.tss_index)

    def body(index: int, record: FastaRecord) -> dict:
        made = Client.predict_body(args.task, record.sequence, model=args.model,
                                   sequence_name=record.name, options=options,
                                   tss_index=args.tss_index)
        if by_service:
            made = _service_shift(made, record, placements[index] if placements else None)
        return made

    run = Run(client, args, kind=args.task, path=f"/v1/tasks/{args.task}/predict",
              threshold=ASYNC_THRESHOLD_BP[args.task], make_body=body,
              placements=None if by_service else placements)
    return run.execute(records)


def _no_interval_options(args) -> None:
    if args.regions or args.strand or args.assembly:
        raise UsageError("--regions, --strand and --assembly name intervals of the reference "
                         "genome: give them without FASTA files")


def _predict_intervals(client: Client, args, options: Optional[Dict[str, Any]]) -> int:
    records = _interval_records(args)

    def body(index: int, record: FastaRecord) -> dict:
        return Client.predict_body(args.task, model=args.model, options=options,
                                   tss_index=args.tss_index,
                                   interval=records[index].interval,
                                   tss_genome_position=args.tss_genome_position)

    run = Run(client, args, kind=args.task, path=f"/v1/tasks/{args.task}/predict",
              threshold=ASYNC_THRESHOLD_BP[args.task], make_body=body, placements=None)
    return run.execute(records)


def cmd_find_genes(client: Client, args) -> int:
    options: Dict[str, Any] = {"description": args.description}
    if not args.description.strip():
        raise UsageError("--description must not be empty")
    for key in ("annotation_model", "expression_model"):
        if getattr(args, key) is not None:
            options[key] = getattr(args, key)
    if args.batch_size is not None:
        options["batch_size"] = _batch_size(args.batch_size)
    if not args.files:
        intervals = _interval_records(args)
        run = Run(client, args, kind="find-genes",
                  path="/v1/workflows/find-genes-and-predict-expression",
                  threshold=ASYNC_THRESHOLD_BP["find-genes"],
                  make_body=lambda i, r: {"interval": intervals[i].interval, "options": options},
                  placements=None)
        return run.execute(intervals)
    _no_interval_options(args)
    records = _read_records(args.files)
    placements = _placements(args, records)

    def body(index: int, record: FastaRecord) -> dict:
        made = {"sequence": record.sequence, "sequence_name": record.name, "options": options}
        return _service_shift(made, record, placements[index] if placements else None)

    run = Run(client, args, kind="find-genes",
              path="/v1/workflows/find-genes-and-predict-expression",
              threshold=ASYNC_THRESHOLD_BP["find-genes"], make_body=body, placements=None)
    return run.execute(records)


# Refusals that say nothing about one record: every other record would get the same answer.
RUN_WIDE_CODES = frozenset({"unauthorized", "forbidden", "model_not_found", "unsupported_format",
                            "connection_error", "invalid_response"})
UNREACHABLE_CODES = frozenset({"connection_error", "invalid_response", "gateway_timeout"})


def is_run_wide(error: DnaserveError) -> bool:
    """Whether a refusal of one record applies to the whole run: an authentication or model
    error, an unreachable service, or a validation error only about the options or the model
    (a sequence's own faults, its name or its TSS are the record's)."""
    if error.code in RUN_WIDE_CODES:
        return True
    if error.code == "validation_failed":
        locations = [tuple(item.get("loc") or ()) for item in error.validation_errors
                     if isinstance(item, dict)]
        return bool(locations) and all(
            len(loc) >= 2 and loc[0] == "body" and loc[1] in ("options", "model")
            for loc in locations)
    return False


class Run:
    """One request per record, `concurrency` at a time, each finished record saved at once under
    `<output>.dnaserve-resume/` (and each async job's id as soon as it is accepted), so a rerun
    of the same command skips finished records and picks up submitted jobs instead of
    resubmitting them. The merged output is written only when every record has finished."""

    def __init__(self, client: Client, args, *, kind: str, path: str, threshold: Optional[int],
                 make_body, placements: Optional[List[Placement]] = None):
        self.client, self.args, self.kind, self.path = client, args, kind, path
        self.threshold, self.make_body = threshold, make_body
        self.placements = placements  # records' tracks to place on their contigs here
        self.format = args.format
        self.quiet = args.quiet
        self.state_dir = (args.output + ".dnaserve-resume") if args.output and args.output != "-" \
            else None
        self._slots = list(range(max(1, args.concurrency)))
        self._slots_lock = threading.Lock()
        self._stop = threading.Event()
        self.unmatched: List[str] = []  # records whose description matched no context

    # The run's identity: a changed input, task, model, option or format is a different run.
    def _fingerprint(self, records: List[FastaRecord]) -> str:
        digest = hashlib.sha256()
        digest.update(json.dumps([self.kind, self.format]).encode())
        for index, record in enumerate(records):
            body = self.make_body(index, record)
            body["sequence"] = hashlib.sha256(record.sequence.encode()).hexdigest()
            digest.update(json.dumps(body, sort_keys=True).encode())
        return digest.hexdigest()

    def _prepare_state(self, records: List[FastaRecord]) -> Dict[int, Any]:
        done: Dict[int, Any] = {}
        if not self.state_dir:
            return done
        fingerprint = self._fingerprint(records)
        marker = os.path.join(self.state_dir, "run.json")
        if os.path.isdir(self.state_dir):
            try:
                with open(marker) as handle:
                    same = json.load(handle).get("fingerprint") == fingerprint
            except (OSError, ValueError):
                same = False
            if not same:
                _err(f"{self.state_dir} belongs to another run (different input or options); "
                     "starting over")
                shutil.rmtree(self.state_dir)
        os.makedirs(self.state_dir, mode=0o700, exist_ok=True)
        _atomic_json(marker, {"fingerprint": fingerprint, "records": len(records)})
        for index in range(len(records)):
            try:
                with open(self._done_path(index)) as handle:
                    done[index] = json.load(handle)["value"]
            except (OSError, ValueError, KeyError):
                continue
        return done

    def _done_path(self, index: int) -> str:
        return os.path.join(self.state_dir, f"{index:06d}.done.json")

    def _job_path(self, index: int) -> str:
        return os.path.join(self.state_dir, f"{index:06d}.job")

    def _check_key(self) -> None:
        """One cheap authenticated call before any record is sent: a wrong, disabled or missing
        key (or an unreachable service) is then one error, not one per record."""
        try:
            self.client.jobs(limit=1)
        except DnaserveError as e:
            if e.code in ("unauthorized", "forbidden") or e.code in UNREACHABLE_CODES:
                raise RunWideError(e, sent=0)
            raise

    def execute(self, records: List[FastaRecord]) -> int:
        self._check_key()
        results = self._prepare_state(records)
        if results:
            _err(f"resuming: {len(results)} of {len(records)} records already done")
        todo = [i for i in range(len(records)) if i not in results]
        failures: List[tuple] = []
        run_wide: Optional[DnaserveError] = None
        bar = tqdm(total=len(records), initial=len(results), desc=self.kind, unit="record",
                   disable=True if self.quiet else None, position=0, dynamic_ncols=True)
        pool = ThreadPoolExecutor(max_workers=len(self._slots))
        try:
            pending = {pool.submit(self._one, index, records[index]): index for index in todo}
            while pending:
                finished, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for future in finished:
                    index = pending.pop(future)
                    if future.cancelled():
                        continue
                    try:
                        results[index] = future.result()
                    except DnaserveError as e:
                        if e.code == "cancelled":
                            continue
                        if run_wide is None and is_run_wide(e):
                            # Every other record would be refused alike: stop sending.
                            run_wide = e
                            self._stop.set()
                            for other in pending:
                                other.cancel()
                        elif run_wide is None:
                            failures.append((records[index].name, e))
                    bar.update(1)
        except KeyboardInterrupt:
            self._stop.set()
            bar.close()
            where = f"; rerun the same command to resume ({len(results)} of {len(records)} " \
                    f"records are saved in {self.state_dir})" if self.state_dir \
                else " (use -o FILE to make runs resumable)"
            _err(f"interrupted{where}")
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPTED)  # in-flight HTTP calls in the pool threads are abandoned
        finally:
            pool.shutdown(wait=False)
        bar.close()
        if run_wide is not None:
            self._drop_empty_state()
            raise RunWideError(run_wide, sent=len(results), total=len(records),
                               state_dir=self.state_dir)
        if failures:
            for name, e in failures[:20]:
                where = f" (request {e.request_id})" if e.request_id else ""
                _err(f"{name}: {e.code}: {e.message}{where}")
            _err(self._failure_summary(len(failures), len(records)))
            codes = {e.code for _, e in failures}
            return EXIT_UNREACHABLE if codes <= UNREACHABLE_CODES else EXIT_SERVICE
        ordered = [results[i] for i in range(len(records))]
        if self.format == "json":
            text = "".join(json.dumps(value) + "\n" for value in ordered)
        else:
            if self.placements is not None:
                ordered = [place(self.format, value, placement)
                           for value, placement in zip(ordered, self.placements)]
            if self.format == "gff3" and self.kind in ("annotation", "find-genes"):
                ordered = [mark_cut_transcripts(value) for value in ordered]
            text = merge(self.format, ordered, names=[record.name for record in records])
        _write_output(text, self.args.output)
        if self.state_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)
        if self.unmatched:
            _err(f"warning: the description matched no training context for "
                 f"{len(self.unmatched)} record(s) ({', '.join(self.unmatched[:3])}); their values "
                 "are the mean over all contexts (GET /v1/tasks/expression/contexts lists them)")
            return EXIT_UNMATCHED_CONTEXT
        return EXIT_OK

    def _drop_empty_state(self) -> None:
        """A run stopped before anything finished or was submitted leaves no resume directory."""
        if not self.state_dir or not os.path.isdir(self.state_dir):
            return
        if all(name == "run.json" or name.endswith(".tmp") for name in os.listdir(self.state_dir)):
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def _failure_summary(self, failed: int, total: int) -> str:
        if not self.state_dir:
            return f"{failed} of {total} records failed; nothing was written (with -o FILE " \
                   "finished records are kept, and a rerun retries only the failed ones)"
        if failed == total:
            return f"all {total} records failed; none was saved"
        return f"{failed} of {total} records failed; the other {total - failed} are saved in " \
               f"{self.state_dir}: fix the cause and rerun the same command to retry only the " \
               "failed ones"

    def _one(self, index: int, record: FastaRecord) -> Any:
        if self._stop.is_set():
            raise DnaserveError("cancelled", "the run was interrupted")
        job_id = None
        if self.state_dir and os.path.exists(self._job_path(index)):
            with open(self._job_path(index)) as handle:
                job_id = handle.read().strip() or None
        length = record.length if isinstance(record, IntervalRecord) else len(record.sequence)
        go_async = job_id is not None or self.args.mode == "async" or (
            self.args.mode == "auto" and self.threshold is not None and length > self.threshold)
        if go_async:
            if job_id is None:
                job = self.client.submit(self.kind, body=self.make_body(index, record))
                job_id = job.job_id
                if self.state_dir:
                    _atomic_text(self._job_path(index), job_id)
            result = self._wait(job_id, record.name)
        else:
            body, response = self.client._post_json(self.path, self.make_body(index, record))
            result = Result.from_body(body, response)
        if _unmatched_context(result):
            self.unmatched.append(record.name)
        value = self._value(result)
        if self.state_dir:
            _atomic_json(self._done_path(index), {"name": record.name, "value": value})
            try:
                os.remove(self._job_path(index))
            except OSError:
                pass
        return value

    def _value(self, result: Result) -> Any:
        if self.format == "json":
            return {"data": result.data, "meta": result.meta}
        return result.text(self.format)

    def _wait(self, job_id: str, name: str) -> Result:
        with self._slots_lock:
            slot = self._slots.pop(0) if self._slots else 0
        bar = tqdm(total=100, desc=f"  {name[:30]}", bar_format=PERCENT_BAR_FORMAT, leave=False,
                   position=slot + 1,
                   disable=True if self.quiet else None, dynamic_ncols=True)

        def show(state: JobProgress) -> None:
            if self._stop.is_set():
                raise DnaserveError("cancelled", "the run was interrupted")
            bar.n = round(state.percent, 1)
            bar.set_postfix_str(state.message[:40], refresh=False)
            bar.refresh()

        try:
            return self.client.wait(job_id, progress=show)
        finally:
            bar.close()
            with self._slots_lock:
                self._slots.append(slot)


def _unmatched_context(result: Result) -> bool:
    """True when an expression answer says its description matched no training context."""
    match = result.meta.get("description_match")
    if match is None and isinstance(result.data, dict):
        match = result.data.get("description_match")
    return isinstance(match, dict) and match.get("matched") is False


def _atomic_text(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


def _atomic_json(path: str, value: Any) -> None:
    _atomic_text(path, json.dumps(value))


if __name__ == "__main__":
    sys.exit(main())
