"""`dnaserve score-variants`: POST /v1/variants/score for variants given on the command line or
read from a small VCF (plain or gzip), answered synchronously (at most 100 variants; a
multi-allelic record counts once per ALT). Prints {data, meta} as JSON.

`dnaserve score-variants in.vcf.gz -o out.vcf.gz` (a VCF in, a .vcf.gz out) posts the file as
a batch job (up to 20,000 variants), waits for it, writes the annotated VCF to out.vcf.gz and
the JSON summary to out.vcf.gz.json. The job's id is kept in out.vcf.gz.dnaserve-resume.json
as soon as it is accepted: rerunning the same command after an interruption waits for that job
instead of submitting again (the service itself resumes a job whose runner died)."""

import argparse
import gzip
import hashlib
import json
import os
import sys
from typing import Any, Dict, List, Optional

from .errors import DnaserveError

MAX_SYNC_VARIANTS = 100


class ScoreUsageError(Exception):
    pass


def add_score_variants_command(sub, handler) -> None:
    p = sub.add_parser("score-variants", help="score up to 100 variants (splice, expression, "
                       "chromatin, promoter) against the service's reference genome")
    p.add_argument("variants", nargs="*", metavar="VARIANT",
                   help="chr20:5753600:A:G (or chr20-5753600-A-G); or one VCF file with "
                   "-o OUT.vcf.gz: a batch job writing the annotated VCF")
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
                            f"score-variants answers at most {limit} at once: split the file, "
                            "or score it as a job with -o OUT.vcf.gz")
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
    vcf = batch_input(args)
    if vcf is not None:
        return run_score_vcf_job(client, args, vcf)
    kwargs = scorer_arguments(args)  # every local check before anything is sent
    result = client.score_variants(variants_of(args), **kwargs)
    write_output(json.dumps({"data": result.data, "meta": result.meta}, indent=2) + "\n",
                 args.output)
    errors = (result.data.get("counts") or {}).get("errors", 0)
    if errors:
        print(f"dnaserve: {errors} of {len(result.data.get('results', []))} variants were not "
              "scored (see each result's error)", file=sys.stderr, flush=True)
    return errors


# ---- batch jobs: a VCF in, an annotated VCF out -----------------------------------------------
BATCH_SCORERS = ("splice", "chromatin", "promoter")


def batch_input(args) -> Optional[str]:
    """The VCF to score as a batch job, when the command asks for one: a single VCF file (given
    as the argument or --vcf) and an output ending .vcf.gz."""
    output = args.output or ""
    if not (output.endswith(".vcf.gz") or output.endswith(".vcf.bgz")):
        return None
    files = [v for v in args.variants if os.path.isfile(v)] + ([args.vcf] if args.vcf else [])
    others = [v for v in args.variants if not os.path.isfile(v)]
    if len(files) != 1 or others:
        raise ScoreUsageError("an annotated VCF output (-o OUT.vcf.gz) needs exactly one VCF "
                              "input and no variants on the command line")
    return files[0]


def batch_scorers(args) -> List[str]:
    if args.contexts or args.expression_window is not None:
        raise ScoreUsageError("the expression scorer needs contexts, which a VCF job cannot "
                              "carry: score those variants as JSON (at most 100 at once)")
    if any(v is not None for v in (args.splice_distance, args.top, args.promoter_distance)):
        raise ScoreUsageError("a VCF job runs each scorer with its default options: drop "
                              "--splice-distance, --top and --promoter-distance")
    names = [n for n, on in (("splice", args.splice), ("chromatin", args.chromatin),
                             ("promoter", args.promoter)) if on]
    return names or ["splice"]


def _run_key(vcf: bytes, scorers: List[str], assembly: Optional[str]) -> str:
    digest = hashlib.sha256(vcf)
    digest.update(json.dumps([scorers, assembly]).encode())
    return digest.hexdigest()


def _saved_job(state_path: str, key: str) -> Optional[str]:
    try:
        with open(state_path, encoding="utf-8") as handle:
            state = json.load(handle)
    except (OSError, ValueError):
        return None
    return state.get("job_id") if state.get("run") == key else None


def _save_job(state_path: str, key: str, job_id: str) -> None:
    partial = state_path + ".tmp"
    with open(partial, "w", encoding="utf-8") as handle:
        json.dump({"run": key, "job_id": job_id}, handle)
    os.replace(partial, state_path)


def run_score_vcf_job(client, args, path: str) -> int:
    """Submits (or, after an interruption, finds again) the batch job of `path`, waits for it and
    writes the annotated VCF and the JSON summary; returns how many variants had their own
    error."""
    scorers = batch_scorers(args)
    try:
        with open(path, "rb") as handle:
            vcf = handle.read()
    except OSError as e:
        raise ScoreUsageError(f"{path}: cannot read it: {e}")
    state_path = args.output + ".dnaserve-resume.json"
    key = _run_key(vcf, scorers, args.assembly)
    job_id = _saved_job(state_path, key)
    result = None
    if job_id:
        print(f"dnaserve: resuming job {job_id}", file=sys.stderr, flush=True)
        try:
            result = client.wait(job_id, progress=True)
        except DnaserveError as e:
            if e.code not in ("not_found", "job_expired", "service_unavailable"):
                raise
            print(f"dnaserve: job {job_id} is gone ({e.code}); submitting again",
                  file=sys.stderr, flush=True)
            job_id = None
    if result is None:
        job = client.submit_vcf(vcf, scorers=scorers, assembly=args.assembly)
        job_id = job.job_id
        _save_job(state_path, key, job_id)
        result = client.wait(job_id, progress=True)
    client.job_file(job_id, "annotated.vcf.gz", args.output)
    with open(args.output + ".json", "w", encoding="utf-8") as handle:
        json.dump({"data": result.data, "meta": result.meta}, handle, indent=2)
        handle.write("\n")
    os.remove(state_path)
    counts = result.data.get("counts") or {}
    errors = counts.get("errors", 0)
    print(f"dnaserve: {counts.get('variants', 0)} variants, {errors} not scored; wrote "
          f"{args.output} and {args.output}.json", file=sys.stderr, flush=True)
    return errors
