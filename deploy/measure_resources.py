#!/usr/bin/python3
"""Measures what the Kubernetes resources of deploy/k8s are sized from (deploy/README.md, "Sizing").

Starts the whole service on loopback (redis-server, one dnaserve-worker per task family, one
dnaserve-gateway), then, family by family, sends CONCURRENCY asynchronous requests of the largest
sequence the contract admits (500,000 bp) at once and waits for them. Reports per process: resident
memory when idle and at its peak (VmHWM), CPU seconds used under the load and the wall time; and
Redis memory per stored job result.

    deploy/measure_resources.py [--build build] [--models build/models] [--concurrency 4]

Run it on an otherwise idle machine for figures; CPU seconds (user + system) are less sensitive
to other load than wall time. Stops everything it started, also on Ctrl-C.
"""
import argparse
import hashlib
import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

TASKS = ["promoter", "splice", "enhancer", "chromatin", "annotation", "expression"]
MAX_BP = 500_000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port}")


def proc_status(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024  # kB -> MiB
    return 0.0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def http(method, url, body=None, headers=None, timeout=600):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def redis_used_memory(port):
    out = subprocess.run(["redis-cli", "-p", str(port), "info", "memory"], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        if line.startswith("used_memory:"):
            return int(line.split(":")[1]) / (1024 * 1024)
    return 0.0


def body_for(task, rng):
    seq = "".join(rng.choice("ACGT") for _ in range(MAX_BP))
    if task == "expression":
        return {"sequence": seq, "tss_index": MAX_BP // 2,
                "options": {"description": "adult liver tissue"}}
    return {"sequence": seq}


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build", default=os.path.join(root, "build"))
    ap.add_argument("--models", default=None)
    ap.add_argument("--concurrency", type=int, default=4)
    args = ap.parse_args()
    models = args.models or os.path.join(args.build, "models")
    work = tempfile.mkdtemp(prefix="dnaserve-measure-")
    procs = []

    def start(argv, env=None, log=None):
        p = subprocess.Popen(argv, env={**os.environ, **(env or {})},
                             stdout=open(os.path.join(work, log), "w"), stderr=subprocess.STDOUT)
        procs.append(p)
        return p

    def stop_all(*_):
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)

    signal.signal(signal.SIGINT, lambda *_: (stop_all(), sys.exit(130)))
    try:
        redis_port = free_port()
        redis = start(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1",
                       "--save", "", "--appendonly", "no"], log="redis.log")
        wait_port(redis_port)
        workers = {}
        spec = []
        for task in TASKS:
            port = free_port()
            workers[task] = start([os.path.join(args.build, "worker", "dnaserve-worker"),
                                   "--task", task, "--models-dir", models,
                                   "--listen", f"127.0.0.1:{port}"], log=f"worker-{task}.log")
            spec.append(f"{task}=127.0.0.1:{port}")
            wait_port(port)
        key = "dns_" + secrets.token_hex(24)
        with open(os.path.join(work, "keys.json"), "w") as f:
            json.dump({"keys": [{"key_sha256": hashlib.sha256(key.encode()).hexdigest(),
                                 "client_id": "measure", "enabled": True,
                                 "rate_per_minute": 60000, "max_concurrency": 64}]}, f)
        gw_port = free_port()
        gateway = start([os.path.join(args.build, "gateway", "dnaserve-gateway")],
                        env={"DNASERVE_PORT": str(gw_port),
                             "DNASERVE_KEYS_FILE": os.path.join(work, "keys.json"),
                             "DNASERVE_REDIS_URL": f"redis://127.0.0.1:{redis_port}",
                             "DNASERVE_WORKERS": ",".join(spec),
                             "DNASERVE_IP_RATE": "100000", "DNASERVE_IP_BURST": "100000"},
                        log="gateway.log")
        base = f"http://127.0.0.1:{gw_port}"
        wait_port(gw_port)
        for task in TASKS:
            deadline = time.time() + 60
            while http("GET", f"{base}/v1/tasks/{task}/models")[0] != 200:
                if time.time() > deadline:
                    raise RuntimeError(f"the {task} worker never reported its models")
                time.sleep(0.2)

        rng = random.Random(20261122)
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
                   "Prefer": "respond-async"}
        rows = []
        gw_cpu0 = cpu_seconds(gateway.pid)
        gw_idle = proc_status(gateway.pid, "VmRSS")
        jobs_total = 0
        redis_before = redis_used_memory(redis_port)
        for task in TASKS:
            pid = workers[task].pid
            idle = proc_status(pid, "VmRSS")
            cpu0 = cpu_seconds(pid)
            bodies = [json.dumps(body_for(task, rng)).encode() for _ in range(args.concurrency)]
            started = time.time()
            job_ids, statuses = [], []

            def submit(body):
                status, out = http("POST", f"{base}/v1/tasks/{task}/predict", body, headers)
                if status != 202:
                    raise RuntimeError(f"{task}: submit answered {status}: {out[:300]!r}")
                job_ids.append(json.loads(out)["data"]["job_id"])

            threads = [threading.Thread(target=submit, args=(b,)) for b in bodies]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for job_id in job_ids:
                while True:
                    status, _ = http("GET", f"{base}/v1/tasks/jobs/{job_id}",
                                     headers={"Authorization": f"Bearer {key}"})
                    if status != 202:
                        statuses.append(status)
                        break
                    time.sleep(0.2)
            wall = time.time() - started
            jobs_total += len(job_ids)
            rows.append((task, idle, proc_status(pid, "VmHWM"), cpu_seconds(pid) - cpu0, wall,
                         statuses, proc_status(gateway.pid, "VmHWM")))
        redis_after = redis_used_memory(redis_port)

        print(f"{args.concurrency} concurrent async requests of {MAX_BP:,} bp per family, "
              f"bundled models in {models}")
        print()
        print("| process | idle RSS | peak RSS (VmHWM) | CPU seconds | wall | answers | "
              "gateway peak RSS so far |")
        print("|---|---:|---:|---:|---:|---|---:|")
        for task, idle, peak, cpu, wall, statuses, gw_peak in rows:
            print(f"| worker {task} | {idle:.0f} MiB | {peak:.0f} MiB | {cpu:.1f} s | {wall:.1f} s "
                  f"| {','.join(map(str, statuses))} | {gw_peak:.0f} MiB |")
        print(f"| gateway | {gw_idle:.0f} MiB | {proc_status(gateway.pid, 'VmHWM'):.0f} MiB | "
              f"{cpu_seconds(gateway.pid) - gw_cpu0:.1f} s | | {jobs_total} jobs | |")
        print(f"| redis | | {proc_status(redis.pid, 'VmHWM'):.0f} MiB | | | "
              f"{(redis_after - redis_before) / max(1, jobs_total):.2f} MiB per stored result | |")
    finally:
        stop_all()


if __name__ == "__main__":
    main()
