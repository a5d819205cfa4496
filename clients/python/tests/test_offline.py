"""The CLI's and the SDK's rules that need no service: options and records refused before
anything is sent, readable connection errors, the expression TSS rule, output file modes and
the chr20 record cutter. Each CLI run points at a port nothing listens on, so a check that was
not local would end in exit 4 (unreachable) instead of the usage exit 2."""

import gzip
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from dnaserve_client import Client, DnaserveError
from dnaserve_client.cli import EXIT_UNREACHABLE, EXIT_USAGE, _write_output, is_run_wide, main
from dnaserve_client.client import expression_tss_index

HERE = os.path.dirname(os.path.abspath(__file__))
NOWHERE = "http://127.0.0.1:9"  # discard port: nothing listens


def fasta(tmp_path, records, name="in.fa"):
    path = tmp_path / name
    path.write_text("".join(f">{n}\n{s}\n" for n, s in records))
    return str(path)


def run_cli(argv, capsys, url=NOWHERE):
    code = main(["--url", url] + argv)
    return code, capsys.readouterr().err


# ---- whole-run checks before anything is sent -----------------------------------------------
def test_an_option_out_of_range_is_one_usage_error(tmp_path, capsys):
    path = fasta(tmp_path, [(f"r{i}", "ACGT" * 100) for i in range(8)])
    code, err = run_cli(["predict", "promoter", path, "--threshold", "1.5"], capsys)
    assert code == EXIT_USAGE
    assert err.count("\n") == 1 and "--threshold must be between 0 and 1" in err
    for argv in (["predict", "annotation", path, "--batch-size", "0"],
                 ["predict", "splice", path, "--site-types", "donor,exon"]):
        assert run_cli(argv, capsys)[0] == EXIT_USAGE, argv


def test_an_unreachable_service_is_one_readable_line(tmp_path, capsys):
    path = fasta(tmp_path, [(f"r{i}", "ACGT" * 100) for i in range(8)])
    code, err = run_cli(["predict", "promoter", path, "-q"], capsys)
    assert code == EXIT_UNREACHABLE
    assert "connection refused" in err
    assert "records failed" not in err and "HTTPConnectionPool" not in err
    assert "urllib3" not in err and "Max retries" not in err
    assert err.count("connection refused") == 1  # checked once, not once per record


def test_run_wide_refusals_are_told_from_a_records_own():
    def refusal(code, locs=()):
        return DnaserveError(code, "x", details={"errors": [{"loc": list(l)} for l in locs]})
    assert is_run_wide(refusal("unauthorized"))
    assert is_run_wide(refusal("model_not_found"))
    assert is_run_wide(refusal("validation_failed", [("body", "options", "threshold")]))
    assert not is_run_wide(refusal("validation_failed", [("body", "sequence")]))
    assert not is_run_wide(refusal("validation_failed", [("body", "options", "threshold"),
                                                         ("body", "sequence")]))
    assert not is_run_wide(refusal("too_many_requests"))


# ---- genome coordinates ---------------------------------------------------------------------
def test_placement_needs_region_names_of_the_records_length(tmp_path, capsys):
    named = fasta(tmp_path, [("chr20:1,001-1,400", "ACGT" * 100), ("other", "ACGT" * 100)])
    code, err = run_cli(["predict", "promoter", named, "--format", "bed",
                         "--shift-coordinates", "UCSC"], capsys)
    assert code == EXIT_USAGE and "other" in err and "1 of 2 are not" in err
    wrong_length = fasta(tmp_path, [("chr20_1001-1500", "ACGT" * 100)], "w.fa")
    code, err = run_cli(["predict", "promoter", wrong_length, "--format", "bed",
                         "--shift-coordinates", "UCSC"], capsys)
    assert code == EXIT_USAGE and "500 bp but the record has 400 bp" in err
    code, err = run_cli(["predict", "promoter", named, "--format", "bed", "--region",
                         "chr20:1-400"], capsys)
    assert code == EXIT_USAGE and "one record" in err
    code, err = run_cli(["predict", "chromatin", wrong_length, "--format", "json", "--region",
                         "chr20:1-400"], capsys)
    assert code == EXIT_USAGE and "JSON" in err
    code, err = run_cli(["predict", "promoter", wrong_length, "--format", "bed",
                         "--shift-coordinates", "hg19"], capsys)
    assert code == EXIT_USAGE and "UCSC" in err


# ---- expression: one TSS rule ---------------------------------------------------------------
def test_expression_tss_is_the_centre_unless_given():
    assert expression_tss_index("A" * 9198) is None  # the service's own window, TSS 4599
    assert expression_tss_index("A" * 10000) == 5000
    assert expression_tss_index("A" * 10001) == 5000
    assert expression_tss_index("AC GT\n" * 2500) == 5000  # whitespace is not sequence
    body = Client.predict_body("expression", "A" * 10000, options={"description": "liver"})
    assert body["tss_index"] == 5000
    assert "tss_index" not in Client.predict_body("expression", "A" * 9198)
    assert Client.predict_body("expression", "A" * 10000, tss_index=6000)["tss_index"] == 6000
    assert "tss_index" not in Client.predict_body("promoter", "A" * 10000)


def test_expression_records_too_short_for_the_window_are_refused_at_once(tmp_path, capsys):
    path = fasta(tmp_path, [("long", "ACGT" * 2500), ("short", "ACGT" * 2000)])
    code, err = run_cli(["predict", "expression", path, "--description", "liver"], capsys)
    assert code == EXIT_USAGE and "short (8,000 bp)" in err and "long" not in err
    code, err = run_cli(["predict", "expression", path, "--description", "liver",
                         "--tss-index", "9000"], capsys)
    assert code == EXIT_USAGE and "--tss-index 9000" in err


# ---- connection errors ----------------------------------------------------------------------
class PlainHttpPort:
    """A plain-HTTP server that, like a real one handed a TLS ClientHello, waits for the rest
    of a request line that never comes (and answers real HTTP requests)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.held = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            data = conn.recv(4096)
            if data[:4] in (b"GET ", b"HEAD"):
                conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")
                conn.close()
            else:
                self.held.append(conn)


def test_https_to_a_plain_http_port_fails_fast_and_says_so():
    server = PlainHttpPort()
    started = time.monotonic()
    with pytest.raises(DnaserveError) as raised:
        Client(f"https://127.0.0.1:{server.port}", retry_budget=60).health()
    elapsed = time.monotonic() - started
    assert raised.value.code == "connection_error"
    assert f"plain HTTP, not TLS: use http://127.0.0.1:{server.port}" in raised.value.message
    assert elapsed < 15, f"took {elapsed:.1f} s"  # one connect timeout, no retries


def test_unknown_host_and_refused_port_are_one_line():
    for url, words in (("http://127.0.0.1:9", "connection refused"),
                       ("http://no-such-host.invalid", "unknown host 'no-such-host.invalid'")):
        with pytest.raises(DnaserveError) as raised:
            Client(url, retry_budget=0).health()
        assert words in raised.value.message
        assert "\n" not in raised.value.message and "Pool" not in raised.value.message


# ---- output files ---------------------------------------------------------------------------
@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_output_files_honour_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        path = str(tmp_path / "out.bed")
        _write_output("r\t0\t1\n", path)
    finally:
        os.umask(old)
    assert os.stat(path).st_mode & 0o777 == mode
    os.chmod(path, 0o640)  # a replaced file keeps the mode it was given
    _write_output("r\t0\t2\n", path)
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert [p for p in os.listdir(tmp_path) if p.startswith(".dnaserve-")] == []


# ---- chr20_records.py -----------------------------------------------------------------------
@pytest.mark.parametrize("compressed", [False, True])
def test_chr20_records_reads_plain_and_gzip_fasta(tmp_path, compressed):
    chromosome = "ACGT" * 30 + "N" * 10 + "GGCCAATT" * 20
    text = ">20\n" + "\n".join(chromosome[i:i + 60] for i in range(0, len(chromosome), 60)) + "\n"
    source = tmp_path / ("20.fa.gz" if compressed else "20.fa")
    if compressed:
        with gzip.open(source, "wt") as handle:
            handle.write(text)
    else:
        source.write_text(text)
    out = tmp_path / "records.fa"
    done = subprocess.run([sys.executable, os.path.join(HERE, "chr20_records.py"), str(source),
                           str(out), "--count", "2", "--length", "40", "--start", "1",
                           "--step", "100"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    # The window at 101 holds Ns and is skipped; 1-40 and 201-240 are real sequence.
    assert lines[0::2] == [">chr20:1-40", ">chr20:201-240"]
    assert lines[1] == chromosome[:40] and lines[3] == chromosome[200:240]


def test_waiting_on_a_finished_job_draws_no_progress_bar(capsys):
    """`dnaserve job ID --wait` on a job already done showed a tqdm bar stuck at 0%; a job still
    running gets its bar at the first poll that finds it running."""
    from dnaserve_client.results import JobProgress, Result
    client = Client(NOWHERE, "dns_test", poll_interval=0)
    done = Result(data={"task": "promoter"}, meta={})
    client.job = lambda job_id: done
    assert client.wait("0f8fad5b-d9cb-469f-a165-70867728950e", progress=True) is done
    assert "job 0f8fad5b" not in capsys.readouterr().err
    polls = iter([JobProgress("0f8fad5b-d9cb", "promoter", "running", percent=40.0), done])
    client.job = lambda job_id: next(polls)
    assert client.wait("0f8fad5b-d9cb-469f-a165-70867728950e", progress=True) is done
    assert "job 0f8fad5b" in capsys.readouterr().err


# ---- score-variants: the variants and options are checked before anything is sent -----------
def vcf(tmp_path, records, name="small.vcf.gz"):
    text = "##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n" + "".join(
        f"20\t{pos}\t.\t{ref}\t{alt}\t.\t.\t.\n" for pos, ref, alt in records)
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    return str(path)


def test_score_variants_reads_each_alt_of_a_plain_or_gzip_vcf(tmp_path):
    from dnaserve_client.score_cli import read_vcf_variants
    records = [(68391, "T", "C,G"), (25999467, "G", "<DEL>")]
    for name in ("small.vcf.gz", "small.vcf"):
        assert read_vcf_variants(vcf(tmp_path, records, name)) == [
            "20:68391:T:C", "20:68391:T:G", "20:25999467:G:<DEL>"]


@pytest.mark.parametrize("argv, message", [
    ([], "name variants"),
    (["chr20:1:A:G", "--expression-window", "100"], "--expression-window needs"),
    (["--vcf", "/nonexistent.vcf"], "no such file"),
])
def test_score_variants_usage_errors_are_local(argv, message, capsys):
    code, err = run_cli(["score-variants"] + argv, capsys)
    assert code == EXIT_USAGE
    assert message in err


def test_score_variants_refuses_more_than_100_variants_at_once(tmp_path, capsys):
    path = vcf(tmp_path, [(1000 + i, "A", "G,T") for i in range(51)])  # 102 ALTs
    code, err = run_cli(["score-variants", "--vcf", path], capsys)
    assert code == EXIT_USAGE
    assert "more than 100 variants" in err
    hundred = vcf(tmp_path, [(1000 + i, "A", "G,T") for i in range(50)], "hundred.vcf")
    code, err = run_cli(["score-variants", "--vcf", hundred, "--chromatin"], capsys)
    assert code == EXIT_UNREACHABLE  # 100 pass the local checks and are sent


def test_score_variants_options_name_the_scorers():
    from dnaserve_client.cli import build_parser
    from dnaserve_client.score_cli import scorer_arguments
    args = build_parser().parse_args(["score-variants", "chr20:1:A:G", "--context", "E066",
                                      "--context", "liver", "--expression-window", "300",
                                      "--top", "3", "--promoter", "--splice-distance", "10"])
    assert scorer_arguments(args) == {
        "splice": {"distance": 10}, "expression": {"contexts": ["E066", "liver"], "window": 300},
        "chromatin": {"top": 3}, "promoter": {}}
    bare = build_parser().parse_args(["score-variants", "chr20:1:A:G"])
    assert scorer_arguments(bare) == {}  # the service's default: splice


def test_score_variants_vcf_job_resumes_the_saved_job_after_an_interruption(tmp_path):
    """A VCF in and -o OUT.vcf.gz: one batch job; a rerun after an interruption waits for the
    job it saved instead of submitting the file again."""
    from dnaserve_client.cli import build_parser
    from dnaserve_client.results import Job, Result
    from dnaserve_client.score_cli import run_score_variants
    path = vcf(tmp_path, [(1000 + i, "A", "G") for i in range(150)])
    out = str(tmp_path / "out.vcf.gz")
    args = build_parser().parse_args(["score-variants", path, "-o", out])
    calls = []

    class Interrupted(Exception):
        pass

    class FakeClient:
        interrupt = True

        def submit_vcf(self, data, scorers, assembly):
            calls.append(("submit", scorers))
            return Job(job_id="job-1", task="variant_score")

        def wait(self, job_id, progress=None):
            calls.append(("wait", job_id))
            if self.interrupt:
                raise Interrupted()
            return Result(data={"counts": {"variants": 150, "errors": 0}}, meta={})

        def job_file(self, job_id, name, target):
            calls.append(("file", job_id, name))
            with open(target, "wb") as handle:
                handle.write(b"vcf")

    client = FakeClient()
    with pytest.raises(Interrupted):
        run_score_variants(client, args, None)
    assert calls == [("submit", ["splice"]), ("wait", "job-1")]
    assert os.path.exists(out + ".dnaserve-resume.json")
    client.interrupt = False
    calls.clear()
    assert run_score_variants(client, args, None) == 0
    assert calls == [("wait", "job-1"), ("file", "job-1", "annotated.vcf.gz")]
    assert open(out, "rb").read() == b"vcf"
    assert json.load(open(out + ".json"))["data"]["counts"]["variants"] == 150
    assert not os.path.exists(out + ".dnaserve-resume.json")


# ---- intervals: the service reads the bases -------------------------------------------------
def test_interval_bodies_name_the_interval_instead_of_a_sequence():
    body = Client.predict_body("promoter", interval="chr20:5,750,001-5,760,000")
    assert body == {"interval": {"region": "chr20:5,750,001-5,760,000"}}
    body = Client.predict_body("splice", interval={"contig": "20", "start": 1, "end": 100,
                                                   "strand": "-"}, options={"threshold": 0.2})
    assert body["interval"]["strand"] == "-" and "sequence" not in body
    # Expression: the interval's centre is the TSS unless it is the 9,198 bp window itself.
    assert Client.predict_body("expression", interval="chr20:1-20,000")["tss_index"] == 10000
    assert "tss_index" not in Client.predict_body("expression", interval="chr20:1-9,198")
    for bad in ({}, {"sequence": "ACGT", "interval": "chr20:1-100"}):
        with pytest.raises(ValueError):
            Client.predict_body("promoter", **bad)
    with pytest.raises(ValueError):
        Client.predict_body("promoter", interval="chr20:1-100", sequence_name="x")


def test_interval_cli_options_are_checked_before_anything_is_sent(tmp_path, capsys):
    path = fasta(tmp_path, [("r1", "ACGT" * 100)])
    bad_bed = tmp_path / "bad.bed"
    bad_bed.write_text("chr20\tten\t20\n")
    empty_span = tmp_path / "empty.bed"
    empty_span.write_text("chr20\t20\t20\n")
    for argv, words in (
            (["predict", "promoter"], "--region"),
            (["predict", "promoter", "--region", "chr20"], "chrom:start-end"),
            (["predict", "promoter", "--regions", str(bad_bed)], "not a BED row"),
            (["predict", "promoter", "--regions", str(empty_span)], "below end"),
            (["predict", "promoter", path, "--region", "r:1-400", "--region", "r:1-400"],
             "repeat --region only without a FASTA"),
            (["predict", "promoter", path, "--regions", str(bad_bed)], "without FASTA files"),
            (["predict", "promoter", "--region", "chr20:1-400", "--region", "chr20:1-400"],
             "given twice"),
            (["find-genes", "--description", "liver", "--region", "chr20:1-5000",
              "--shift-coordinates", "UCSC"], "already are in genome coordinates")):
        code, err = run_cli(argv, capsys)
        assert code == EXIT_USAGE, argv
        assert words in err, (argv, err)
    # Well-formed intervals pass every local check and go to the service (unreachable here).
    good = tmp_path / "good.bed"
    good.write_text("track name=x\nchr20\t5750000\t5752000\ta\t0\t-\n")
    for argv in (["predict", "splice", "--region", "chr20:5,750,001-5,752,000", "-q"],
                 ["predict", "splice", "--regions", str(good), "-q"],
                 ["find-genes", "--description", "liver", "--region", "chr20:1-5000", "-q"]):
        assert run_cli(argv, capsys)[0] == EXIT_UNREACHABLE, argv
