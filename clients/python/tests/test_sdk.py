"""The SDK against a real dnaserve: every route, the async workflow, every error path, retries
and pacing. tests/integration/clients_test.cpp runs this file with the service's URL and keys in
the environment:

    DNASERVE_URL, DNASERVE_API_KEY        the service and a generous key
    DNASERVE_TEST_OTHER_KEY               a second client's key (jobs are owner-scoped)
    DNASERVE_TEST_DISABLED_KEY            a disabled key (403)
    DNASERVE_TEST_SLOW_KEY                a key with a bucket of one token (rate 6/min)

Without DNASERVE_URL every test is skipped (they need a running service).
"""

import os
import random
import time

import pytest
import requests

from dnaserve_client import Client, DnaserveError, Job, JobProgress, Result

URL = os.environ.get("DNASERVE_URL")
KEY = os.environ.get("DNASERVE_API_KEY")
pytestmark = pytest.mark.skipif(not URL or not KEY, reason="DNASERVE_URL/DNASERVE_API_KEY unset: "
                                "no service to test against (see tests/integration/clients_test.cpp)")


def dna(length: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("ACGT") for _ in range(length))


@pytest.fixture(scope="module")
def client() -> Client:
    return Client(URL, KEY, retry_budget=60, poll_interval=0.2)


class CountingClient(Client):
    """Counts the HTTP statuses the SDK saw, including the ones it retried."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.statuses = []

    def _session(self):
        session = super()._session()
        if not getattr(session, "_counted", False):
            session.hooks["response"].append(lambda r, *a, **k: self.statuses.append(r.status_code))
            session._counted = True
        return session


# ---- public and read-only routes ----------------------------------------------------------
def test_health_and_contract(client):
    health = client.health()
    assert health["status"] == "healthy"
    assert health["version"]
    assert client.openapi()["openapi"].startswith("3.")


@pytest.mark.parametrize("task", ["promoter", "splice", "enhancer", "chromatin", "annotation",
                                  "expression"])
def test_models_every_task(client, task):
    listing = client.models(task)
    assert listing["task"] == task
    names = [m["name"] for m in listing["models"]]
    assert listing["default_model"] in names
    # Also without a key: the route is public.
    assert Client(URL).models(task)["default_model"] == listing["default_model"]


def test_unknown_task_is_not_found(client):
    with pytest.raises(DnaserveError) as raised:
        client.models("nonsense")
    assert raised.value.code == "not_found" and raised.value.status == 404
    assert raised.value.request_id


# ---- the six tasks, sync ------------------------------------------------------------------
def test_promoter_typed_result_and_text(client):
    result = client.predict("promoter", dna(2000), sequence_name="p1", options={"threshold": 0.0})
    assert isinstance(result, Result)
    assert result.task == "promoter" and result.sequence_name == "p1"
    assert result.job_id and result.request_id and result.model
    assert result.meta["sequence_length"] == 2000
    assert result.regions, "threshold 0 calls every window a promoter"
    assert set(result.formats) >= {"bed", "bedgraph"}
    bed = client.predict("promoter", dna(2000), sequence_name="p1", options={"threshold": 0.0},
                         format="bed")
    assert isinstance(bed, str) and bed.splitlines()[0].split("\t")[0] == "p1"


def test_splice_enhancer_chromatin(client):
    splice = client.predict("splice", dna(1500), options={"threshold": 0.99})
    assert splice.task == "splice" and isinstance(splice.sites, list)
    enhancer = client.predict("enhancer", dna(600))
    assert enhancer.windows and "bedgraph" in enhancer.formats
    chromatin = client.predict("chromatin", dna(1200))
    assert chromatin.task == "chromatin" and chromatin.windows


def test_annotation_and_gff3(client):
    result = client.predict("annotation", dna(3000), sequence_name="region")
    assert result.task == "annotation" and isinstance(result.transcripts, list)
    assert result.text("gff3").startswith("##gff-version 3")
    gff3 = client.predict("annotation", dna(3000), format="gff3")
    assert gff3.startswith("##gff-version 3")


def test_expression_prediction(client):
    result = client.predict("expression", dna(9198), options={"description": "adult liver"})
    prediction = result.prediction
    assert prediction["unit"]
    assert prediction["expression_tpm"] >= 0
    assert result.data["input"]["scored_window"] == [0, 9198]


# ---- async: submit, wait with progress, job, jobs -----------------------------------------
def test_async_submit_wait_job_and_jobs(client):
    job = client.submit("promoter", dna(5000, seed=3), sequence_name="async-one")
    assert isinstance(job, Job) and job.job_id and job.task == "promoter"
    seen = []
    result = client.wait(job, progress=seen.append)
    assert isinstance(result, Result) and result.job_id == job.job_id
    assert all(isinstance(p, JobProgress) for p in seen)
    again = client.job(job.job_id)
    assert isinstance(again, Result) and again.meta["job_id"] == job.job_id
    assert job.job_id in [j.get("job_id") for j in client.jobs(limit=500)]
    # mode="async" does the same in one call; the text format comes from the JSON's formats.
    bed = client.predict("promoter", dna(5000, seed=3), sequence_name="async-one",
                         options={"threshold": 0.0}, mode="async", format="bed")
    assert bed.startswith("async-one\t")


def test_jobs_are_owner_scoped(client):
    other_key = os.environ.get("DNASERVE_TEST_OTHER_KEY")
    if not other_key:
        pytest.skip("DNASERVE_TEST_OTHER_KEY unset")
    job = client.submit("promoter", dna(1000))
    client.wait(job)
    with pytest.raises(DnaserveError) as raised:
        Client(URL, other_key, retry_budget=0).job(job.job_id)
    assert raised.value.code == "not_found" and raised.value.status == 404
    with pytest.raises(DnaserveError) as raised:
        client.job("00000000-0000-4000-8000-000000000000")
    assert raised.value.code == "not_found"


# ---- workflows ----------------------------------------------------------------------------
def test_find_genes_sync_and_async(client):
    sequence = dna(6000, seed=5)
    result = client.find_genes(sequence, "adult liver", sequence_name="fg")
    assert result.task == "find_genes_and_predict_expression"
    counts = result.meta["task_specific_counts"]
    assert counts["genes_predicted"] + counts["genes_skipped"] == counts["genes_found"]
    assert len(result.expression_predictions) == counts["genes_found"]
    later = client.find_genes(sequence, "adult liver", mode="async")
    assert later.meta["task_specific_counts"] == counts


def test_find_genes_over_the_sync_cap(client):
    with pytest.raises(DnaserveError) as raised:
        client.find_genes(dna(50_001), "liver", mode="sync")
    assert raised.value.code == "sync_too_large" and raised.value.status == 413
    assert raised.value.details["threshold"] == 50_000


def test_variant_workflow_errors_carry_the_envelope():
    # The test service has no object store or a bucket we can name: the workflow refuses
    # before accepting a job (400) or says it is unavailable (503); either way one error type.
    quick = Client(URL, KEY, retry_budget=0)
    with pytest.raises(DnaserveError) as raised:
        quick.variant("s3://bucket/calls.vcf.gz", genome_build="GRCh37")
    assert raised.value.status in (400, 503)
    assert raised.value.code in ("bad_request", "service_unavailable")
    assert raised.value.request_id
    with pytest.raises(DnaserveError) as raised:
        quick.variant("s3://bucket/calls.vcf.gz", genes=[])
    assert raised.value.code == "validation_failed"


# ---- errors -------------------------------------------------------------------------------
def test_validation_error_details(client):
    with pytest.raises(DnaserveError) as raised:
        client.predict("promoter", "ACGTXACGT" * 40)
    error = raised.value
    assert error.code == "validation_failed" and error.status == 422
    assert error.validation_errors and error.validation_errors[0]["loc"] == ["body", "sequence"]
    with pytest.raises(DnaserveError) as raised:
        client.predict("promoter", dna(400), options={"bogus": 1})
    assert raised.value.validation_errors[0]["type"] == "extra_forbidden"
    with pytest.raises(DnaserveError) as raised:
        client.predict("expression", dna(9198), options={})
    assert raised.value.code == "validation_failed"


def test_unknown_model_and_unsupported_format(client):
    with pytest.raises(DnaserveError) as raised:
        client.predict("promoter", dna(400), model="no-such-model")
    assert raised.value.code == "model_not_found" and raised.value.status == 404
    with pytest.raises(DnaserveError) as raised:
        client.request("POST", "/v1/tasks/expression/predict",
                       json={"sequence": dna(9198), "options": {"description": "x"}},
                       params={"format": "bed"})
    assert raised.value.code == "unsupported_format" and raised.value.status == 415
    with pytest.raises(ValueError):
        client.predict("expression", dna(9198), format="bed")  # refused before sending


def test_authentication_errors():
    with pytest.raises(DnaserveError) as raised:
        Client(URL, "dns_not_a_real_key", retry_budget=0).jobs()
    assert raised.value.code == "unauthorized" and raised.value.status == 401
    assert raised.value.request_id
    with pytest.raises(DnaserveError) as raised:
        Client(URL, None, retry_budget=0).predict("promoter", dna(400))
    assert raised.value.code == "unauthorized"
    disabled = os.environ.get("DNASERVE_TEST_DISABLED_KEY")
    if disabled:
        with pytest.raises(DnaserveError) as raised:
            Client(URL, disabled, retry_budget=0).predict("promoter", dna(400))
        assert raised.value.code == "forbidden" and raised.value.status == 403
    assert "dns_not_a_real_key" not in repr(Client(URL, "dns_not_a_real_key"))


def test_unreachable_service():
    with pytest.raises(DnaserveError) as raised:
        Client("http://127.0.0.1:9", KEY, retry_budget=0, timeout=2).health()
    assert raised.value.code == "connection_error"


# ---- 429: retry after Retry-After, and pacing from RateLimit-* ----------------------------
def test_small_bucket_is_paced_and_429_retried():
    slow = os.environ.get("DNASERVE_TEST_SLOW_KEY")
    if not slow:
        pytest.skip("DNASERVE_TEST_SLOW_KEY unset")
    # The bucket holds one token, refilled every 10 s. A client with no retry budget sees the
    # refusal as it is: 429 too_many_requests with Retry-After.
    Client(URL, slow, retry_budget=60).predict("promoter", dna(400))
    with pytest.raises(DnaserveError) as raised:
        Client(URL, slow, retry_budget=0).predict("promoter", dna(400))
    assert raised.value.code == "too_many_requests" and raised.value.status == 429
    assert raised.value.retry_after and raised.value.retry_after > 0
    # A fresh client (no pacing knowledge) runs into the 429 and retries after Retry-After.
    fresh = CountingClient(URL, slow, retry_budget=60)
    fresh.predict("promoter", dna(400))
    assert fresh.statuses.count(429) >= 1 and fresh.statuses[-1] == 200
    # Its answer said RateLimit-Remaining: 0, so it now waits for a token before sending:
    # three more calls go through without a single 429.
    fresh.statuses.clear()
    started = time.monotonic()
    for _ in range(3):
        fresh.predict("promoter", dna(400))
    elapsed = time.monotonic() - started
    assert fresh.statuses == [200, 200, 200]
    assert elapsed >= 15, f"three tokens of a 6/min bucket came in {elapsed:.1f} s"


def test_retry_budget_bounds_the_wait():
    slow = os.environ.get("DNASERVE_TEST_SLOW_KEY")
    if not slow:
        pytest.skip("DNASERVE_TEST_SLOW_KEY unset")
    client = Client(URL, slow, retry_budget=1)
    started = time.monotonic()
    with pytest.raises(DnaserveError) as raised:
        for _ in range(3):  # the bucket is (nearly) empty after the test above
            client.predict("promoter", dna(400))
    assert raised.value.code == "too_many_requests"
    assert time.monotonic() - started < 15


def test_raw_response_is_the_contract():
    # The SDK adds nothing the service did not send: the same envelope over plain requests.
    body = requests.get(URL + "/health", timeout=10).json()
    assert body == Client(URL).health()
