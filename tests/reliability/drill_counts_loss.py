#!/usr/bin/env python3
"""The drill's "0 lost" can fail: runs the short drill with --inject-loss 2 (two succeeded jobs'
records deleted mid-drill) and requires it to exit 1 with both jobs counted lost and the loss
target missed. A drill that did not read every accepted job back, or that read them from a
cache of its own, would report 0 lost here and this test fails.

  drill_counts_loss.py ROOT
"""
import json
import os
import subprocess
import sys
import tempfile

INJECTED = 2


def main():
    root = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="drill-loss-") as tmp:
        results_path = os.path.join(tmp, "results.json")
        run = subprocess.run([os.path.join(root, "scripts", "python-env"), "dnaserve-drill",
                              "--short", "--inject-loss", str(INJECTED), "--results", results_path],
                             stdout=subprocess.DEVNULL)
        with open(results_path) as f:
            results = json.load(f)
    problems = []
    if run.returncode != 1:
        problems.append(f"the drill exited {run.returncode}, not 1")
    injected = results.get("injected_losses", [])
    if len(injected) != INJECTED:
        problems.append(f"{len(injected)} losses injected, not {INJECTED}")
    lost_ids = {d["job_id"] for d in results.get("lost_detail", [])}
    if not set(injected) <= lost_ids or results.get("injected_losses_counted") != len(injected):
        problems.append(f"injected {injected} but lost_detail has {sorted(lost_ids)}")
    if results.get("jobs_lost", 0) < INJECTED:
        problems.append(f"jobs_lost {results.get('jobs_lost')} < {INJECTED}")
    failover = results.get("targets", {}).get("failover: window <= 10 s, 0 lost, 0 hanging", {})
    if failover.get("met", True) or failover.get("lost", 0) < INJECTED:
        problems.append(f"the loss target was not missed: {failover}")
    summary = {k: results.get(k) for k in ("accepted_jobs", "jobs_lost", "injected_losses",
                                           "injected_losses_counted", "targets")}
    print(json.dumps(summary, indent=2))
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
