"""`Client`: every route of the Sequence Analysis Service, both sync and async.

Retries: 429 and 503 (and the other transient codes) are retried after `Retry-After` (else an
exponential back-off capped at 30 s) for as long as `retry_budget` seconds allow; a permanent
4xx is raised at once. Pacing: when a response says the key's bucket is empty
(`RateLimit-Remaining: 0`), the next admitted request waits for a token instead of spending a
429 on finding out. A Client is safe to share between threads (one `requests.Session` each).
"""

import os
import socket
import ssl
import threading
import time
from typing import Any, Callable, Dict, Iterable, Optional, Union
from urllib.parse import urlsplit

import requests

from .errors import DnaserveError
from .results import Job, JobProgress, Result

TASKS = ("promoter", "splice", "enhancer", "chromatin", "annotation", "expression")

# The contract's advisory async thresholds (bp): above them a request should go async.
ASYNC_THRESHOLD_BP = {
    "promoter": 100_000, "splice": 250_000, "enhancer": 100_000, "chromatin": 100_000,
    "annotation": 30_000, "expression": None, "find-genes": 50_000,
}
# Text formats each task can render (JSON always works).
TEXT_FORMATS = {
    "promoter": ("bed", "bedgraph"), "splice": ("bed", "gff3"), "enhancer": ("bedgraph",),
    "chromatin": ("bed",), "annotation": ("bed", "gff3"), "expression": (),
}
FIND_GENES_PATH = "/v1/workflows/find-genes-and-predict-expression"
VARIANT_PATH = "/v1/workflows/genomic-variant-interpretation"
SCORE_VARIANTS_PATH = "/v1/variants/score"
ISM_PATH = "/v1/ism"
SCORERS = ("splice", "expression", "chromatin", "promoter")

ProgressCallback = Callable[[JobProgress], None]


def _stripped_length(sequence: str) -> int:
    return sum(1 for c in sequence if not c.isspace())


# Seconds for the TCP connection and the TLS handshake (requests bounds both with it).
CONNECT_TIMEOUT = 5.0

EXPRESSION_WINDOW_BP = 9198  # the expression model's input: the TSS-centred window


def expression_tss_index(sequence: str) -> Optional[int]:
    """The TSS the client sends for an expression sequence given without one: None (the
    service's own default, the window's centre 4,599) for exactly 9,198 bp, else the sequence's
    centre, length // 2 (0-based, after whitespace removal), as the /viewer page does. The
    service then scores the 9,198 bp around it, so the sequence needs at least 9,198 bp."""
    length = _stripped_length(sequence)
    return None if length == EXPRESSION_WINDOW_BP else length // 2


class _Pacer:
    """Earliest time the next admitted request may go, from the last RateLimit-* headers."""

    def __init__(self):
        self._lock = threading.Lock()
        self._not_before = 0.0

    def wait(self, deadline: float) -> None:
        with self._lock:
            delay = self._not_before - time.monotonic()
        if delay > 0:
            time.sleep(max(0.0, min(delay, deadline - time.monotonic())))

    def observe(self, headers) -> None:
        try:
            limit = int(headers["RateLimit-Limit"])
            remaining = int(headers["RateLimit-Remaining"])
            reset = float(headers["RateLimit-Reset"])
        except (KeyError, ValueError):
            return
        if remaining > 0 or limit <= 0:
            return
        # Reset is the time to a full bucket; one token takes Reset/Limit of it.
        with self._lock:
            self._not_before = max(self._not_before, time.monotonic() + reset / limit)

    def push_back(self, seconds: float) -> None:
        with self._lock:
            self._not_before = max(self._not_before, time.monotonic() + seconds)


# A job's progress bar: the percentage as a whole number and the job's own message, instead of
# tqdm's counter ("40.0/100") and rate ("39.56%/s"), which say nothing of a job.
PERCENT_BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {elapsed}{postfix}"


class Client:
    def __init__(self, base_url: str, api_key: Optional[str] = None, *, timeout: float = 330.0,
                 retry_budget: float = 120.0, poll_interval: float = 1.0,
                 user_agent: str = "dnaserve-python/0.1"):
        if not base_url:
            raise ValueError("base_url is required (e.g. http://127.0.0.1:8080)")
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.timeout = timeout
        self.retry_budget = retry_budget
        self.poll_interval = poll_interval
        self._user_agent = user_agent
        self._local = threading.local()
        self._pacer = _Pacer()

    def __repr__(self) -> str:  # never shows the key
        return f"Client({self.base_url!r}, api_key={'set' if self._api_key else 'unset'})"

    # ---- transport -----------------------------------------------------------------------
    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            session.headers["User-Agent"] = self._user_agent
            self._local.session = session
        return session

    def request(self, method: str, path: str, *, json: Any = None, params: Optional[dict] = None,
                headers: Optional[dict] = None, authenticated: bool = True,
                data: Optional[bytes] = None,
                retry_budget: Optional[float] = None,
                accept_status: Iterable[int] = (200, 202)) -> requests.Response:
        """One call with the retry and pacing rules; raises DnaserveError unless the status is in
        `accept_status`."""
        budget = self.retry_budget if retry_budget is None else retry_budget
        deadline = time.monotonic() + budget
        send_headers = {"Accept": "application/json"}
        if json is not None:
            send_headers["Content-Type"] = "application/json"
        if authenticated and self._api_key:
            send_headers["Authorization"] = f"Bearer {self._api_key}"
        send_headers.update(headers or {})
        admitted = method == "POST"
        attempt = 0
        other_5xx_retried = False
        connection_failures = 0
        while True:
            if admitted:
                self._pacer.wait(deadline)
            error: DnaserveError
            try:
                response = self._session().request(method, self.base_url + path, json=json,
                                                   data=data, params=params,
                                                   headers=send_headers,
                                                   timeout=(min(CONNECT_TIMEOUT, self.timeout), self.timeout))
            except requests.RequestException as e:
                error = connection_error(self.base_url, e)
            else:
                self._pacer.observe(response.headers)
                if response.status_code in tuple(accept_status):
                    return response
                error = error_from_response(response)
            # A dropped connection on a POST may have started a job: retrying could run it twice,
            # which is only harmless for reads. A service that cannot be reached at all gets
            # three tries, not the whole budget: that is rarely transient.
            if error.code == "connection_error":
                connection_failures += 1
            retryable = error.transient and (error.code != "connection_error" or
                                             (not admitted and connection_failures < 3 and
                                              not error.details))
            if not retryable and error.status is not None and error.status >= 500 \
                    and error.code not in ("service_unavailable",) and not other_5xx_retried:
                retryable, other_5xx_retried = True, True  # other 5xx: at most once
            if not retryable:
                raise error
            if error.retry_after is not None:
                delay = error.retry_after
            else:
                delay = min(30.0, 0.5 * (2 ** attempt))
            attempt += 1
            if time.monotonic() + delay > deadline:
                raise error
            if error.code == "too_many_requests":
                self._pacer.push_back(delay)
            time.sleep(delay)

    def _json(self, method: str, path: str, **kwargs) -> Dict[str, Any]:
        response = self.request(method, path, **kwargs)
        try:
            return response.json()
        except ValueError:
            raise DnaserveError("invalid_response", f"{method} {path}: the body is not JSON",
                                status=response.status_code,
                                request_id=response.headers.get("X-Request-Id"))

    # ---- read-only routes ----------------------------------------------------------------
    def health(self) -> Dict[str, Any]:
        """`{status, version}` (public)."""
        return self._json("GET", "/health", authenticated=False)

    def models(self, task: str) -> Dict[str, Any]:
        """`{task, default_model, models: [...]}` for one task."""
        return self._json("GET", f"/v1/tasks/{task}/models")

    def openapi(self) -> Dict[str, Any]:
        return self._json("GET", "/v1/openapi.json", authenticated=False)

    def jobs(self, limit: int = 50) -> list:
        """The key's recent jobs (the `jobs` of `{jobs, count}`)."""
        return self._json("GET", "/v1/tasks/jobs", params={"limit": limit})["jobs"]

    def job(self, job_id: str) -> Union[Result, JobProgress]:
        """One poll: a `JobProgress` while it runs, the `Result` once done; raises the job's
        own error when it failed (404 unknown/not yours, 410 expired)."""
        response = self.request("GET", f"/v1/tasks/jobs/{job_id}")
        body = _body(response)
        if response.status_code == 202:
            return JobProgress.from_body(body)
        return Result.from_body(body, response)

    # ---- predictions ---------------------------------------------------------------------
    @staticmethod
    def predict_body(task: str, sequence: Optional[str] = None, *, model: Optional[str] = None,
                     sequence_name: Optional[str] = None, options: Optional[dict] = None,
                     tss_index: Optional[int] = None,
                     interval: Union[None, str, Dict[str, Any]] = None,
                     tss_genome_position: Optional[int] = None) -> Dict[str, Any]:
        """The request body: `sequence` (bases), or `interval` (a region string such as
        "chr20:5,750,001-5,760,000" or a dict of assembly, contig, start, end, strand; 1-based
        inclusive) for the service to read from its reference genome. Expression without
        `tss_index` on a sequence (or interval) that is not exactly the 9,198 bp window takes
        its centre as the TSS (`expression_tss_index`), as the /viewer page does. With an
        interval, `tss_genome_position` (1-based on the contig, inside the interval) names the
        TSS instead of `tss_index`; its window is read from the reference even past the
        interval's edges."""
        if (sequence is None) == (interval is None):
            raise ValueError("give exactly one of sequence and interval")
        if tss_genome_position is not None:
            if interval is None or task != "expression":
                raise ValueError("tss_genome_position applies to expression with an interval")
            if tss_index is not None:
                raise ValueError("give exactly one of tss_index and tss_genome_position")
        if interval is not None:
            interval = interval_object(interval)
            if sequence_name is not None:
                raise ValueError("sequence_name is not used with an interval (outputs are named "
                                 "by its contig)")
            if task == "expression" and tss_index is None and tss_genome_position is None:
                length = interval_length(interval)
                tss_index = None if length == EXPRESSION_WINDOW_BP else length // 2
            body: Dict[str, Any] = {"interval": interval}
        else:
            if task == "expression" and tss_index is None:
                tss_index = expression_tss_index(sequence)
            body = {"sequence": sequence}
        if model is not None:
            body["model"] = model
        if sequence_name is not None:
            body["sequence_name"] = sequence_name
        if options is not None:
            body["options"] = options
        if tss_index is not None:
            body["tss_index"] = tss_index
        if tss_genome_position is not None:
            body["tss_genome_position"] = tss_genome_position
        return body

    def predict(self, task: str, sequence: Optional[str] = None, *, model: Optional[str] = None,
                sequence_name: Optional[str] = None, options: Optional[dict] = None,
                tss_index: Optional[int] = None, format: str = "json",
                mode: str = "auto", progress: Union[None, bool, ProgressCallback] = None,
                interval: Union[None, str, Dict[str, Any]] = None,
                region: Optional[str] = None,
                tss_genome_position: Optional[int] = None) -> Union[Result, str]:
        """Runs one task on `sequence`, or on a stretch of the service's reference genome:
        `region="chr20:5,750,001-5,760,000"` or `interval={"contig": "chr20", "start": ...,
        "end": ..., "strand": "-"}` (1-based inclusive); outputs are then in genome coordinates
        and `result.meta["interval"]` echoes it. `mode`: "sync", "async" (submit, then wait) or
        "auto" (async above the contract's advisory threshold for the task). `format` other than
        json returns the text track as a string (taken from the JSON result's `formats` when the
        call went async, since the service renders text synchronously only)."""
        if format != "json" and format not in TEXT_FORMATS.get(task, ()):
            raise ValueError(f"{task} has no {format!r} format; choose from "
                             f"{('json',) + TEXT_FORMATS.get(task, ())}")
        interval = _one_interval(interval, region)
        body = self.predict_body(task, sequence, model=model, sequence_name=sequence_name,
                                 options=options, tss_index=tss_index, interval=interval,
                                 tss_genome_position=tss_genome_position)
        if self._goes_async(task, sequence, mode, body):
            result = self.wait(self.submit(task, body=body), progress=progress)
        elif format == "json":
            return Result.from_body(*self._post_json(f"/v1/tasks/{task}/predict", body))
        else:
            response = self.request("POST", f"/v1/tasks/{task}/predict", json=body,
                                    params={"format": format}, accept_status=(200,))
            return response.text
        return result if format == "json" else result.text(format)

    def _goes_async(self, task: str, sequence: Optional[str], mode: str,
                    body: Optional[dict] = None) -> bool:
        if mode not in ("auto", "sync", "async"):
            raise ValueError("mode is one of auto, sync, async")
        if mode != "auto":
            return mode == "async"
        threshold = ASYNC_THRESHOLD_BP.get(task)
        if sequence is None and body is not None and "interval" in body:
            length = interval_length(body["interval"])
        else:
            length = _stripped_length(sequence or "")
        return threshold is not None and length > threshold

    def _post_json(self, path: str, body: dict, headers: Optional[dict] = None):
        response = self.request("POST", path, json=body, headers=headers)
        return _body(response), response

    def submit(self, task: str, sequence: Optional[str] = None, *, body: Optional[dict] = None,
               **fields) -> Job:
        """Submits an async job (`Prefer: respond-async`); returns its `Job` handle. `task` is a
        task name, "find-genes" or "variant"."""
        if body is None:
            body = self.predict_body(task, sequence or "", **fields)
        path = {"find-genes": FIND_GENES_PATH, "variant": VARIANT_PATH}.get(
            task, f"/v1/tasks/{task}/predict")
        data, response = self._post_json(path, body, headers={"Prefer": "respond-async"})
        return Job.from_body(data, response)

    def wait(self, job: Union[Job, str], *, progress: Union[None, bool, ProgressCallback] = None,
             timeout: Optional[float] = None) -> Result:
        """Polls until the job finishes; returns its Result or raises its error. `progress`:
        a callable receiving each `JobProgress`, or True for a tqdm bar on stderr."""
        job_id = job.job_id if isinstance(job, Job) else job
        deadline = None if timeout is None else time.monotonic() + timeout
        bar = None
        callback = progress if callable(progress) else None
        try:
            while True:
                state = self.job(job_id)
                if isinstance(state, Result):
                    return state
                if callback:
                    callback(state)
                if progress is True and bar is None:
                    # Made at the first poll that finds the job running: a job already finished
                    # draws no bar (it showed one stuck at 0%).
                    from tqdm import tqdm
                    bar = tqdm(total=100, desc=f"job {job_id[:8]}", leave=False,
                               bar_format=PERCENT_BAR_FORMAT)
                if bar is not None:
                    bar.n = round(state.percent, 1)
                    bar.set_postfix_str(state.message or "", refresh=False)
                    bar.refresh()
                if deadline is not None and time.monotonic() > deadline:
                    raise DnaserveError("timeout", f"job {job_id} still {state.status} after "
                                        f"{timeout} s (it keeps running; poll it later)")
                time.sleep(self.poll_interval)
        finally:
            if bar is not None:
                bar.close()

    # ---- workflows -----------------------------------------------------------------------
    def find_genes(self, sequence: Optional[str] = None, description: Optional[str] = None, *,
                   sequence_name: Optional[str] = None,
                   annotation_model: Optional[str] = None, expression_model: Optional[str] = None,
                   batch_size: Optional[int] = None, shift_coordinates: Optional[str] = None,
                   mode: str = "auto", progress: Union[None, bool, ProgressCallback] = None,
                   interval: Union[None, str, Dict[str, Any]] = None,
                   region: Optional[str] = None) -> Result:
        """find-genes-and-predict-expression (async above 50,000 bp when mode is auto), on
        `sequence` or on `region` / `interval` of the service's reference genome."""
        if description is None:
            raise ValueError("description is required")
        interval = _one_interval(interval, region)
        if (sequence is None) == (interval is None):
            raise ValueError("give exactly one of sequence and interval (or region)")
        options: Dict[str, Any] = {"description": description}
        for key, value in (("annotation_model", annotation_model),
                           ("expression_model", expression_model), ("batch_size", batch_size),
                           ("shift_coordinates", shift_coordinates)):
            if value is not None:
                options[key] = value
        body: Dict[str, Any] = {"options": options}
        if interval is not None:
            body["interval"] = interval_object(interval)
        else:
            body["sequence"] = sequence
        if sequence_name is not None:
            body["sequence_name"] = sequence_name
        if self._goes_async("find-genes", sequence, mode, body):
            return self.wait(self.submit("find-genes", body=body), progress=progress)
        return Result.from_body(*self._post_json(FIND_GENES_PATH, body))

    def variant(self, uri: str, *, genome_build: str = "GRCh37", window: Optional[int] = None,
                tissues: Optional[list] = None, genes: Optional[list] = None,
                client_ref: Optional[str] = None, wait: bool = False,
                progress: Union[None, bool, ProgressCallback] = None) -> Union[Job, Result]:
        """genomic-variant-interpretation (always async): the Job, or its Result with wait."""
        options: Dict[str, Any] = {"genome_build": genome_build}
        for key, value in (("window", window), ("tissues", tissues), ("genes", genes)):
            if value is not None:
                options[key] = value
        body: Dict[str, Any] = {"input": {"type": "s3_object", "uri": uri}, "options": options}
        if client_ref is not None:
            body["client_ref"] = client_ref
        job = self.submit("variant", body=body)
        return self.wait(job, progress=progress) if wait else job

    def score_variants(self, variants: list, *, splice: Union[None, bool, dict] = None,
                       expression: Union[None, list, dict] = None,
                       chromatin: Union[None, bool, dict] = None,
                       promoter: Union[None, bool, dict] = None,
                       assembly: Optional[str] = None,
                       progress: Union[None, bool, ProgressCallback] = None) -> Result:
        """POST /v1/variants/score (synchronous up to 100 variants; more, up to 20,000, run as a
        batch job this call waits for, `progress` as for wait()): each variant a string
        "chr20:5753600:A:G" or a dict {contig, position, ref, alt[, assembly]}. Each scorer is
        None (not run), True (its defaults) or a dict of its options; `expression` may also be
        the list of contexts (ids, CURIEs or free text). With no scorer named the service runs
        splice. A variant's own problem is an `error` in its result, not an exception; a scorer
        whose model is not served raises (service_unavailable). Each scored result's
        `quantiles` place its deltas among the scorer's background of random held-out SNVs
        (`data["backgrounds"]`: its size, or why a scorer has none and its quantiles are None)."""
        scorers: Dict[str, Any] = {}
        for name, value in (("splice", splice), ("expression", expression),
                            ("chromatin", chromatin), ("promoter", promoter)):
            if value is None or value is False:
                continue
            if value is True:
                scorers[name] = {}
            elif name == "expression" and isinstance(value, (list, tuple)):
                scorers[name] = {"contexts": list(value)}
            elif isinstance(value, dict):
                scorers[name] = dict(value)
            else:
                raise ValueError(f"{name}: None, True or a dict of options"
                                 + (" (or the list of contexts)" if name == "expression" else ""))
        body: Dict[str, Any] = {"variants": list(variants)}
        if scorers:
            body["scorers"] = scorers
        if assembly is not None:
            body["assembly"] = assembly
        data, response = self._post_json(SCORE_VARIANTS_PATH, body)
        if response.status_code == 202:  # more than 100 variants: a batch job
            return self.wait(Job.from_body(data, response), progress=progress)
        return Result.from_body(data, response)

    def submit_vcf(self, vcf: Union[str, bytes], *, scorers: Iterable[str] = ("splice",),
                   assembly: Optional[str] = None) -> Job:
        """POST a VCF (a path, or its bytes; plain, gzip or bgzip) to /v1/variants/score: an
        async batch job of at most 20,000 variants (each ALT counts), scored by `scorers`
        (splice, chromatin, promoter) with their default options. Returns its `Job`; wait() for
        the JSON summary, then job_file(job_id, "annotated.vcf.gz", path) for the VCF."""
        if isinstance(vcf, str):
            with open(vcf, "rb") as handle:
                vcf = handle.read()
        gzipped = vcf[:2] == b"\x1f\x8b"
        params: Dict[str, str] = {"scorers": ",".join(scorers)}
        if assembly is not None:
            params["assembly"] = assembly
        response = self.request("POST", SCORE_VARIANTS_PATH, data=vcf, params=params,
                                headers={"Content-Type": "application/gzip" if gzipped
                                         else "text/x-vcf"})
        return Job.from_body(_body(response), response)

    def score_vcf(self, vcf: Union[str, bytes], output: str, *,
                  scorers: Iterable[str] = ("splice",), assembly: Optional[str] = None,
                  progress: Union[None, bool, ProgressCallback] = None) -> Result:
        """submit_vcf, wait, and the annotated VCF (bgzip) written to `output`; returns the
        job's JSON summary."""
        job = self.submit_vcf(vcf, scorers=scorers, assembly=assembly)
        result = self.wait(job, progress=progress)
        self.job_file(job.job_id, "annotated.vcf.gz", output)
        return result

    def job_file(self, job_id: str, name: str, path: str) -> str:
        """GET /v1/tasks/jobs/{job_id}/files/{name} (a finished job's file) into `path`, written
        whole or not at all."""
        response = self.request("GET", f"/v1/tasks/jobs/{job_id}/files/{name}",
                                headers={"Accept": "application/gzip"}, accept_status=(200,))
        partial = path + ".part"
        with open(partial, "wb") as handle:
            handle.write(response.content)
        os.replace(partial, path)
        return path

    def ism(self, window: Union[tuple, list, Dict[str, int]], *, sequence: Optional[str] = None,
            interval: Union[None, str, Dict[str, Any]] = None, scorer: str = "splice",
            options: Optional[Dict[str, Any]] = None) -> Result:
        """POST /v1/ism (in-silico mutagenesis, synchronous): every SNV of `window` ((start, end),
        1-based inclusive, at most 200 bp) scored by one scorer ("splice", "chromatin",
        "promoter" or "expression", with the options POST /v1/variants/score takes; expression:
        {"contexts": [one context], "gene": optional, interval only}) inside the context:
        exactly one of `sequence` (window positions in it; for expression, the 9,198 bp
        expression window) and `interval` (a region string or dict; window positions on the
        contig). data.positions is the 3 x L matrix; expression cells are log2 fold changes."""
        if (sequence is None) == (interval is None):
            raise ValueError("give exactly one of sequence and interval")
        if isinstance(window, dict):
            start, end = window["start"], window["end"]
        else:
            start, end = window
        body: Dict[str, Any] = {"window": {"start": int(start), "end": int(end)},
                                "scorers": {scorer: dict(options or {})}}
        if sequence is not None:
            body["sequence"] = sequence
        else:
            body["interval"] = interval_object(interval)
        return Result.from_body(*self._post_json(ISM_PATH, body))


def interval_object(interval: Union[str, Dict[str, Any]]) -> Dict[str, Any]:
    """The request's `interval` object: a region string becomes {"region": ...}; a dict is sent
    as given (assembly, contig, start, end, strand, region)."""
    if isinstance(interval, str):
        return {"region": interval}
    if isinstance(interval, dict):
        return dict(interval)
    raise TypeError("interval is a region string or a dict")


def interval_length(interval: Dict[str, Any]) -> int:
    """end - start + 1 of an interval object (0 when it cannot be told: the service decides)."""
    if "region" in interval:
        try:
            span = str(interval["region"]).rsplit(":", 1)[1].replace(",", "")
            start, end = span.split("-", 1)
            return int(end) - int(start) + 1
        except (IndexError, ValueError):
            return 0
    try:
        return int(interval["end"]) - int(interval["start"]) + 1
    except (KeyError, TypeError, ValueError):
        return 0


def _one_interval(interval, region: Optional[str]):
    if interval is not None and region is not None:
        raise ValueError("give interval or region, not both")
    return interval if interval is not None else region


def connection_error(base_url: str, exc: requests.RequestException) -> DnaserveError:
    """A one-line `connection_error` for a request that got no HTTP answer: what failed, in
    words (refused, unknown host, timed out, TLS spoken to a plain-HTTP port), never the
    transport library's internals. `details` is {"reason": "tls"} when retrying cannot help
    (the URL's scheme is wrong), which the retry loop honours."""
    where = base_url
    causes = _causes(exc)
    https = base_url.startswith("https://")
    plain = "http://" + base_url[len("https://"):] if https else base_url
    tls_failed = isinstance(exc, requests.exceptions.SSLError) or any(
        isinstance(c, ssl.SSLError) for c in causes)
    timed_out = isinstance(exc, requests.exceptions.Timeout)
    # A plain-HTTP server handed a TLS ClientHello either answers with an HTTP error (a TLS
    # failure here) or waits for the rest of a request line that never comes (a timeout); one
    # plain request to the same port tells which, so no retry waits on a wrong scheme.
    if https and (tls_failed or timed_out) and _answers_plain_http(base_url):
        return DnaserveError(
            "connection_error", f"{where}: this port speaks plain HTTP, not TLS: use {plain}",
            details={"reason": "tls"})
    if tls_failed:
        reason = next((c for c in causes if isinstance(c, ssl.SSLError)), exc)
        return DnaserveError("connection_error",
                             f"{where}: the TLS handshake failed ({_ssl_reason(reason)})",
                             details={"reason": "tls"})
    if any(isinstance(c, socket.gaierror) for c in causes):
        host = urlsplit(base_url).hostname or base_url
        return DnaserveError("connection_error", f"{where}: unknown host {host!r}")
    if any(isinstance(c, ConnectionRefusedError) for c in causes):
        return DnaserveError("connection_error",
                             f"{where}: connection refused (is the service running there?)")
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return DnaserveError("connection_error", f"{where}: no connection within the timeout")
    if isinstance(exc, requests.exceptions.ReadTimeout):
        return DnaserveError("connection_error", f"{where}: no answer within the timeout")
    innermost = causes[-1] if causes else exc
    text = str(innermost).split(": ", 1)[-1] if ": " in str(innermost) else str(innermost)
    return DnaserveError("connection_error",
                         f"{where}: {text or type(innermost).__name__}")


def _answers_plain_http(base_url: str, timeout: float = 2.0) -> bool:
    """Whether host:port of an https:// URL answers a plain HTTP request."""
    parts = urlsplit(base_url)
    try:
        with socket.create_connection((parts.hostname, parts.port or 443), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(b"HEAD /health HTTP/1.0\r\nHost: " + (parts.hostname or "").encode() +
                      b"\r\n\r\n")
            return s.recv(5) == b"HTTP/"
    except (OSError, ValueError):
        return False


def _causes(exc: BaseException) -> list:
    """The chain of exceptions under `exc` (requests wraps urllib3 wraps socket errors), outer
    first."""
    chain, seen = [], set()
    current: Any = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        nested = getattr(current, "reason", None)
        if not isinstance(nested, BaseException):
            nested = next((a for a in getattr(current, "args", ()) if isinstance(a, BaseException)),
                          None)
        current = nested or current.__cause__ or current.__context__
    return chain


def _ssl_reason(error: BaseException) -> str:
    reason = getattr(error, "reason", None)
    if isinstance(reason, str) and reason:
        return reason.replace("_", " ").lower()
    text = str(error)
    return text.rsplit("] ", 1)[-1].split(" (_ssl")[0] if text else type(error).__name__


def _body(response: requests.Response) -> Dict[str, Any]:
    try:
        return response.json()
    except ValueError:
        raise DnaserveError("invalid_response", "the body is not JSON",
                            status=response.status_code,
                            request_id=response.headers.get("X-Request-Id"))


def error_from_response(response: requests.Response) -> DnaserveError:
    retry_after = None
    if "Retry-After" in response.headers:
        try:
            retry_after = max(0.0, float(response.headers["Retry-After"]))
        except ValueError:
            retry_after = None
    request_id = response.headers.get("X-Request-Id")
    try:
        envelope = response.json()["error"]
        return DnaserveError(str(envelope.get("code", "unknown")),
                             str(envelope.get("message", "")), status=response.status_code,
                             request_id=envelope.get("request_id", request_id),
                             details=envelope.get("details"), retry_after=retry_after)
    except (ValueError, KeyError, TypeError, AttributeError):
        # No envelope: a 504 from an edge proxy, or not a dnaserve at all.
        code = "gateway_timeout" if response.status_code == 504 else "invalid_response"
        return DnaserveError(code, f"HTTP {response.status_code} without an error envelope",
                             status=response.status_code, request_id=request_id,
                             retry_after=retry_after)
