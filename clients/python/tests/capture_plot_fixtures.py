"""Captures the JSON results tests/test_plot.py draws, from a real service (run once, by hand).

    DNASERVE_URL=... DNASERVE_API_KEY=... python3 capture_plot_fixtures.py RECORD.fa OUT.jsonl

RECORD.fa holds one real chr20 record (chr20_records.py cuts one). Writes one {data, meta} per
line, as `dnaserve predict --format json` does: promoter, splice, chromatin (threshold 0.1, as
`dnaserve plot` asks), annotation and find-genes for three descriptions. The large per-base
`tracks` and the pre-rendered `formats` are dropped: the figures do not use them.
"""

import json
import os
import sys

from dnaserve_client import Client, read_fasta

DESCRIPTIONS = ("adult liver", "brain cortex", "stomach smooth muscle")


def _small(result) -> dict:
    data = dict(result.data)
    for key in ("tracks", "formats"):
        data.pop(key, None)
    if "annotation" in data:
        data["annotation"] = {k: v for k, v in data["annotation"].items() if k != "formats"}
    return {"data": data, "meta": result.meta}


def main() -> int:
    fasta, out = sys.argv[1], sys.argv[2]
    record = next(iter(read_fasta(fasta)))
    client = Client(os.environ["DNASERVE_URL"], os.environ["DNASERVE_API_KEY"])
    results = []
    for task, options in (("promoter", None), ("splice", None), ("chromatin", {"threshold": 0.1}),
                          ("annotation", None)):
        results.append(client.predict(task, record.sequence, sequence_name=record.name,
                                      options=options))
    for description in DESCRIPTIONS:
        results.append(client.find_genes(record.sequence, description,
                                         sequence_name=record.name))
    with open(out, "w") as handle:
        for result in results:
            handle.write(json.dumps(_small(result), separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
