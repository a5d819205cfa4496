"""The find-genes-and-predict-expression workflow on the held-out region, through a running
service, scored at the gene level like the annotation card (annotation_metrics.gene_starts).

Start the service first (scripts/run prints its URL and a development key as the two variables
below), then, from scripts/:

    DNASERVE_URL=http://127.0.0.1:8080 DNASERVE_API_KEY=... \\
        /usr/bin/python3 -m training.find_genes_eval [--out metrics.json]

The region (chr20:53,025,520-63,025,520, GRCh37 from Debian's vt-examples) is sent as 20
consecutive asynchronous requests of 500,000 bp (the request ceiling); each job is polled to its
end. Every entry of `expression_predictions` is a found gene with its strand and TSS; the
figures are the share of held-out refGene genes with a found gene on their strand whose TSS lies
within 2 kb of one of their annotated starts (recall), and the share of found genes that lie so
near an annotated start (precision).
"""

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from typing import Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from training import annotation_metrics as scoring  # noqa: E402
from training import common  # noqa: E402

REQUEST_BP = 500_000
POLL_SECONDS = 2.0
JOB_TIMEOUT_SECONDS = 1800.0
SUBMIT_ATTEMPTS = 30
RETRY_SECONDS = 5.0


def call(url: str, key: str, method: str = "GET", body=None,
         headers: Dict[str, str] = None) -> Tuple[int, Dict]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", f"Bearer {key}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def run_job(base: str, key: str, sequence: str, name: str, description: str,
            log=print) -> Dict:
    """One workflow call (asynchronous), polled to completion: its `data`."""
    body = {"sequence": sequence, "sequence_name": name, "options": {"description": description}}
    # A service still starting (503) or busy (429) is waited for, a bounded number of times.
    for _ in range(SUBMIT_ATTEMPTS):
        status, submitted = call(f"{base}/v1/workflows/find-genes-and-predict-expression", key,
                                 "POST", body, {"Prefer": "respond-async"})
        if status not in (429, 503):
            break
        log(f"{name}: {status}, retrying in {RETRY_SECONDS:.0f} s")
        time.sleep(RETRY_SECONDS)
    if status != 202:
        raise RuntimeError(f"{name}: submit answered {status}: {submitted}")
    path = submitted["data"]["links"]["result"]
    started = time.monotonic()
    while time.monotonic() - started < JOB_TIMEOUT_SECONDS:
        status, body = call(f"{base}{path}", key)
        if status == 200:
            return body["data"]
        if status != 202:
            raise RuntimeError(f"{name}: job answered {status}: {body}")
        time.sleep(POLL_SECONDS)
    raise RuntimeError(f"{name}: job did not finish in {JOB_TIMEOUT_SECONDS:.0f} s")


def evaluate(base: str, key: str, region=common.HELD_OUT, description: str = "Liver, liver",
             log=print) -> Dict[str, float]:
    chr20 = common.chr20()
    spans = [(s, min(s + REQUEST_BP, region[1])) for s in range(region[0], region[1], REQUEST_BP)]
    found: List[Tuple[str, int]] = []
    transcripts = 0
    started = time.monotonic()
    for start, end in spans:
        data = run_job(base, key, chr20[start:end], f"chr20:{start}-{end}", description, log)
        genes = data.get("expression_predictions", [])
        transcripts += len(data.get("annotation", {}).get("transcripts", []))
        found += [(g["strand"], start + int(g["tss_position"])) for g in genes]
        log(f"find-genes: chr20:{start:,}-{end:,}: {len(genes)} genes "
            f"({time.monotonic() - started:.0f} s)")
    reference = [scoring.from_refgene(t) for t in common.refgene_chr20()
                 if region[0] <= t.tx_start and t.tx_end <= region[1]]
    reference = scoring.unique(reference, lambda s: (s.strand, tuple(s.exons)))
    metrics = scoring.gene_starts(found, reference, "find_genes_")
    metrics["find_genes_requests"] = float(len(spans))
    metrics["find_genes_annotation_transcripts"] = float(transcripts)
    metrics["find_genes_seconds"] = time.monotonic() - started
    return metrics


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=os.environ.get("DNASERVE_URL", "http://127.0.0.1:8080"))
    parser.add_argument("--key", default=os.environ.get("DNASERVE_API_KEY", ""))
    parser.add_argument("--description", default="Liver, liver")
    parser.add_argument("--out", help="also write the metrics here (JSON)")
    args = parser.parse_args(argv)
    if not args.key:
        parser.error("no API key: set DNASERVE_API_KEY or pass --key")
    metrics = evaluate(args.url.rstrip("/"), args.key, description=args.description)
    text = json.dumps(metrics, indent=2, sort_keys=True)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
