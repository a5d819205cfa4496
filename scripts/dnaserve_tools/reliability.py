#!/usr/bin/env python3
"""The reliability campaign of dnaserve (RELIABILITY.md holds a run's figures).

Starts real processes on loopback (redis-server with its append-only file fsynced on every
write, as deploy/k8s runs it; promoter workers; gateways) and measures, against the targets:

  load     60 s at twice a key's quota with wrk: 0 5xx, every 429 well formed, p99 latency of
           admitted requests <= 2x the idle p99 (the same request, one connection at a quarter
           of the quota),
           both measured in this run; the p99 at exactly the quota is reported beside them.
  faults   kill -9 of a worker mid-request (503 envelope within 5 s, gateway healthy, the other
           replica serves); a hung worker (SIGSTOP: calls fail by keepalive, rotation skips it);
           Redis killed and restarted (gateway reconnects by itself, no accepted job lost); a
           gateway killed (its jobs stay pollable through the other).
  hostile  slow clients, huge headers, chunked bodies over 16 MiB, thousands of idle
           connections: the gateway's RSS (under its 512 MiB memory request), a bystander
           client's latency (its own process; no failure, median within 2x of its median alone)
           and whether every attacking request got its answer.

Python standard library only (Debian's /usr/bin/python3); wrk from Debian for the load.
Usage: scripts/reliability [--only load,faults,hostile] [--load-seconds 60]. Results are
printed and written as JSON to <build>/reliability/results.json; the exit status is 1 when a
target is missed. ctest runs the faults part (about 80 s) as `reliability:faults`.
"""
import argparse
import hashlib
import http.client
import json
import multiprocessing
import os
import random
import resource
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("DNASERVE_BUILD_DIR", os.path.join(ROOT, "build"))
GATEWAY = os.path.join(BUILD, "gateway", "dnaserve-gateway")
RUNNER = os.path.join(BUILD, "runner", "dnaserve-runner")
WORKER = os.path.join(BUILD, "worker", "dnaserve-worker")
IN_ROTATION = 'dnaserve_worker_replicas{task="promoter",state="in_rotation"}'
# The load test's key: 300 requests/min, i.e. 5/s with a burst of 50 (rate / 6). A quota the
# hardware serves comfortably, as an operator would set it (--load-quota to change it).
LOAD_QUOTA_PER_MINUTE = 300


def log(*parts):
    print("[reliability]", *parts, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return True
        except OSError:
            pass
        time.sleep(interval)
    return False


def percentile(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(p / 100.0 * len(ordered) + 0.5)) - 1))
    return ordered[index]


def dna(n, seed):
    rng = random.Random(seed)
    return "".join(rng.choice("ACGT") for _ in range(n))


class Response:
    def __init__(self, status, headers, body, seconds):
        self.status, self.headers, self.body, self.seconds = status, headers, body, seconds

    def json(self):
        return json.loads(self.body)

    def error_code(self):
        try:
            return self.json()["error"]["code"]
        except (ValueError, KeyError, TypeError):
            return None


def request(port, method, path, body=None, headers=None, timeout=330):
    """One HTTP/1.1 request on a fresh connection; status 0 when the transport failed."""
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        payload = body.encode() if isinstance(body, str) else body
        conn.request(method, path, body=payload, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, data,
                        time.monotonic() - started)
    except (OSError, http.client.HTTPException) as e:
        return Response(0, {}, str(e).encode(), time.monotonic() - started)
    finally:
        conn.close()


def metrics(admin_port):
    r = request(admin_port, "GET", "/metrics", timeout=5)
    out = {}
    for line in r.body.decode(errors="replace").splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            try:
                out[name] = float(value)
            except ValueError:
                pass
    return out


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def open_fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


class Process:
    """A child process with its log file; stopped by the campaign, never left behind."""

    def __init__(self, name, argv, env, log_dir):
        self.name, self.argv, self.env, self.log_dir = name, argv, env, log_dir
        self.proc = None
        self.start()

    def start(self):
        env = dict(os.environ)
        env.update(self.env)
        logf = open(os.path.join(self.log_dir, self.name + ".log"), "ab")
        self.proc = subprocess.Popen(self.argv, env=env, stdout=logf, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        logf.close()

    @property
    def pid(self):
        return self.proc.pid

    def signal(self, sig):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def kill(self):
        self.signal(signal.SIGKILL)
        if self.proc:
            self.proc.wait()

    def stop(self, grace=10):
        if not self.proc or self.proc.poll() is not None:
            return
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.kill()


class Stack:
    """redis-server (AOF, appendfsync always), promoter workers, runners and gateways on loopback."""

    def __init__(self, directory, workers=2, gateways=2, gateway_env=None, runners=2):
        self.dir = directory
        self.processes = []
        os.makedirs(os.path.join(directory, "redis"), exist_ok=True)
        self.redis_port = free_port()
        self.redis = self._spawn("redis", [
            "redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1",
            "--dir", os.path.join(directory, "redis"), "--appendonly", "yes",
            "--appendfsync", os.environ.get("DNASERVE_RELIABILITY_APPENDFSYNC", "always"),
            "--save", ""], {})
        if not wait_for(lambda: socket.create_connection(("127.0.0.1", self.redis_port), 1), 10):
            raise RuntimeError("redis-server did not start")
        self.models = os.environ.get("DNASERVE_TEST_MODELS_DIR") or subprocess.check_output(
            [os.path.join(ROOT, "scripts", "make-models")], text=True).strip()
        self.workers = []
        for i in range(workers):
            port, admin = free_port(), free_port()
            w = self._spawn(f"worker-{i}", [
                WORKER, "--task", "promoter", "--models-dir", self.models,
                "--listen", f"127.0.0.1:{port}", "--admin-listen", f"127.0.0.1:{admin}"], {})
            w.port, w.admin = port, admin
            self.workers.append(w)
        self.keys = {}
        entries = []
        for client, rate, concurrency in [("bulk", 600000, 256), ("load", LOAD_QUOTA_PER_MINUTE, 256),
                                          ("bystander", 600000, 64)]:
            key = "dns_" + secrets.token_urlsafe(32)
            self.keys[client] = key
            entries.append({"key_sha256": hashlib.sha256(key.encode()).hexdigest(),
                            "client_id": client, "enabled": True, "rate_per_minute": rate,
                            "max_concurrency": concurrency})
        self.keys_file = os.path.join(directory, "keys.json")
        with open(self.keys_file, "w") as f:
            json.dump({"keys": entries}, f)
        self.runners = [self._runner(i) for i in range(runners)]
        self.gateways = []
        for i in range(gateways):
            self.gateways.append(self._gateway(i, gateway_env or {}))
        for g in self.gateways:
            self.wait_ready(g)

    def _spawn(self, name, argv, env):
        p = Process(name, argv, env, self.dir)
        self.processes.append(p)
        return p

    def _gateway(self, i, extra_env):
        port, admin = free_port(), free_port()
        env = {"DNASERVE_PORT": str(port), "DNASERVE_ADMIN_LISTEN": f"127.0.0.1:{admin}",
               "DNASERVE_KEYS_FILE": self.keys_file,
               "DNASERVE_REDIS_URL": f"redis://127.0.0.1:{self.redis_port}",
               "DNASERVE_WORKERS": "promoter=" + ";".join(f"127.0.0.1:{w.port}" for w in self.workers),
               "DNASERVE_IP_RATE": "100000", "DNASERVE_IP_BURST": "100000"}
        env.update(extra_env)
        g = self._spawn(f"gateway-{i}", [GATEWAY], env)
        g.port, g.admin = port, admin
        return g

    def _runner(self, i):
        env = {"DNASERVE_REDIS_URL": f"redis://127.0.0.1:{self.redis_port}",
               "DNASERVE_WORKERS": "promoter=" + ";".join(f"127.0.0.1:{w.port}" for w in self.workers),
               "DNASERVE_RUNNER_ID": f"runner-{i}", "DNASERVE_RUNNER_CLAIM_TIMEOUT": "5"}
        return self._spawn(f"runner-{i}", [RUNNER], env)

    def wait_ready(self, g, timeout=90):
        ok = wait_for(lambda: request(g.admin, "GET", "/ready", timeout=2).status == 200, timeout)
        ok = ok and wait_for(lambda: metrics(g.admin).get(IN_ROTATION) == len(self.workers), 60)
        if not ok:
            raise RuntimeError(f"{g.name} did not become ready; see {self.dir}")

    def restart_redis(self):
        self.redis.start()
        return wait_for(lambda: socket.create_connection(("127.0.0.1", self.redis_port), 1), 10)

    def post(self, g, path, body, key, extra=None, timeout=330):
        headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
        headers.update(extra or {})
        return request(g.port, "POST", path, body, headers, timeout)

    def get(self, g, path, key=None, timeout=30):
        headers = {"Authorization": "Bearer " + key} if key else {}
        return request(g.port, "GET", path, None, headers, timeout)

    def stop(self):
        for p in reversed(self.processes):
            p.stop()


def promoter_body(length, seed=1):
    return json.dumps({"sequence": dna(length, seed)})


# ------------------------------------------------------------------------------------------ load

def wrk_run(stack, g, key, body_file, rate, seconds, connections, out_prefix):
    """Offers `rate` requests/s for `seconds`; returns [(status, latency_s, well_formed)]."""
    for name in os.listdir(os.path.dirname(out_prefix)):
        if name.startswith(os.path.basename(out_prefix) + "."):
            os.remove(os.path.join(os.path.dirname(out_prefix), name))
    env = dict(os.environ, WRK_BODY=body_file, WRK_KEY=key, WRK_OUT=out_prefix,
               WRK_PERIOD_S=str(connections / rate), WRK_CONNECTIONS=str(connections))
    cmd = ["wrk", "-t", str(connections), "-c", str(connections), "-d", f"{seconds}s",
           "--timeout", "30s", "-s", os.path.join(ROOT, "scripts", "reliability.lua"),
           f"http://127.0.0.1:{g.port}/v1/tasks/promoter/predict"]
    summary = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    rows = []
    for i in range(connections):
        path = f"{out_prefix}.{i}"
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    status, latency, ok, sent_at = line.split()
                    rows.append((int(status), float(latency), ok == "1", float(sent_at)))
    socket_errors = [l.strip() for l in summary.splitlines() if "Socket errors" in l]
    return rows, socket_errors


def summarise(rows, seconds):
    admitted = [lat for status, lat, _, _ in rows if status == 200]
    out = {
        "requests": len(rows),
        "offered_per_s": round(len(rows) / seconds, 2),
        "admitted": len(admitted),
        "admitted_per_s": round(len(admitted) / seconds, 2),
        "429": sum(1 for r in rows if r[0] == 429),
        "429_malformed": sum(1 for r in rows if r[0] == 429 and not r[2]),
        "5xx": sum(1 for r in rows if r[0] >= 500),
        "other": sum(1 for r in rows if r[0] not in (200, 429) and r[0] < 500),
        "admitted_p50_ms": round(percentile(admitted, 50) * 1000, 1),
        "admitted_p99_ms": round(percentile(admitted, 99) * 1000, 1),
        "admitted_max_ms": round(max(admitted) * 1000, 1) if admitted else None,
    }
    if rows:
        # After the first refusal the key's burst is spent: admissions follow the refill rate.
        refused_at = [r[3] for r in rows if r[0] == 429]
        if refused_at:
            steady = [r[1] for r in rows if r[0] == 200 and r[3] >= min(refused_at)]
            out["steady_admitted"] = len(steady)
            out["steady_admitted_p99_ms"] = round(percentile(steady, 99) * 1000, 1)
            out["burst_spent_after_s"] = round(min(refused_at) - min(r[3] for r in rows), 1)
    return out


def run_load(stack, seconds):
    g = stack.gateways[0]
    key = stack.keys["load"]
    quota_per_s = LOAD_QUOTA_PER_MINUTE / 60.0
    burst = LOAD_QUOTA_PER_MINUTE // 6
    body_file = os.path.join(stack.dir, "load-body.json")
    with open(body_file, "w") as f:
        f.write(promoter_body(300, seed=11))  # the task's floor: what an admission costs
    out = os.path.join(stack.dir, "wrk")
    connections = 8
    # Warm up: the first call of each worker loads its model (a cold start is not latency).
    for i in range(4 * len(stack.workers)):
        stack.post(g, "/v1/tasks/promoter/predict", promoter_body(1200, seed=11), stack.keys["bulk"])
    log(f"load: idle baseline, one connection at {quota_per_s / 4:g} requests/s for 30 s")
    idle_rows, idle_errors = wrk_run(stack, g, key, body_file, quota_per_s / 4, 30, 1, out)
    idle = summarise(idle_rows, 30)
    log("load: idle", idle)
    time.sleep(burst / quota_per_s + 2)
    log(f"load: at the quota, {quota_per_s:.0f} requests/s (nothing refused) for 30 s")
    quota_rows, quota_errors = wrk_run(stack, g, key, body_file, quota_per_s, 30, connections,
                                       out)
    at_quota = summarise(quota_rows, 30)
    log("load: at quota", at_quota)
    time.sleep(burst / quota_per_s + 2)  # a full bucket again before the overload
    rss_before = rss_mb(g.pid)
    log(f"load: {2 * quota_per_s:.0f} requests/s (twice the quota) for {seconds} s")
    load_rows, load_errors = wrk_run(stack, g, key, body_file, 2 * quota_per_s, seconds,
                                     connections, out)
    load = summarise(load_rows, seconds)
    load["gateway_rss_mb_before"] = round(rss_before, 1)
    load["gateway_rss_mb_after"] = round(rss_mb(g.pid), 1)
    log("load: overload", load)
    ratio = load["admitted_p99_ms"] / idle["admitted_p99_ms"]
    return {
        "key_quota": f"{LOAD_QUOTA_PER_MINUTE}/min ({quota_per_s:g}/s, burst {burst})",
        "connections": connections,
        "body": "promoter, 300 bp",
        "idle": idle, "at_quota": at_quota, "overload": load,
        "socket_errors": idle_errors + quota_errors + load_errors,
        "p99_ratio_to_idle": round(ratio, 2),
        "p99_ratio_to_at_quota": round(load["admitted_p99_ms"] / at_quota["admitted_p99_ms"], 2),
        "steady_p99_ratio_to_idle": round(
            load.get("steady_admitted_p99_ms", float("nan")) / idle["admitted_p99_ms"], 2),
        "met": load["5xx"] == 0 and load["429_malformed"] == 0 and load["429"] > 0
        and ratio <= 2.0 and not (idle_errors + quota_errors + load_errors),
    }


# ---------------------------------------------------------------------------------------- faults

def long_calls(stack, g, count, length, key):
    """Starts `count` sync promoter calls of `length` bp; returns their threads and results."""
    results = [None] * count

    def call(i):
        r = stack.post(g, "/v1/tasks/promoter/predict", promoter_body(length, seed=100 + i), key)
        results[i] = (r, time.monotonic())

    threads = [threading.Thread(target=call, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    return threads, results


def in_flight(worker):
    return metrics(worker.admin).get("dnaserve_worker_predict_in_flight", 0)


def fault_worker_killed(stack):
    g = stack.gateways[0]
    threads, results = long_calls(stack, g, 4, 500000, stack.keys["bulk"])
    if not wait_for(lambda: all(in_flight(w) >= 1 for w in stack.workers), 60):
        raise RuntimeError("the long calls never reached both workers")
    victim = stack.workers[0]
    victim.kill()
    killed = time.monotonic()
    for t in threads:
        t.join()
    failed = [(r, at - killed) for r, at in results if r.status != 200]
    ok = [r for r, _ in results if r.status == 200]
    out_of_rotation = wait_for(lambda: metrics(g.admin).get(IN_ROTATION) == 1, 10)
    after = [stack.post(g, "/v1/tasks/promoter/predict", promoter_body(1200, seed=i),
                        stack.keys["bulk"]).status for i in range(20)]
    ready = request(g.admin, "GET", "/ready").status
    health = request(g.port, "GET", "/health").status
    victim.start()
    back = wait_for(lambda: metrics(g.admin).get(IN_ROTATION) == 2, 60)
    result = {
        "in_flight_calls": len(results),
        "failed_calls": [{"status": r.status, "code": r.error_code(),
                          "seconds_after_kill": round(s, 3)} for r, s in failed],
        "completed_calls": len(ok),
        "worker_out_of_rotation": out_of_rotation,
        "next_20_calls_statuses": sorted(set(after)),
        "gateway_ready": ready, "gateway_health": health,
        "back_in_rotation_after_restart": back,
    }
    result["met"] = (len(failed) >= 1 and all(
        f["status"] == 503 and f["code"] == "service_unavailable" and f["seconds_after_kill"] <= 5
        for f in result["failed_calls"]) and after == [200] * 20 and ready == 200
        and health == 200 and back)
    return result


def fault_worker_hung(stack):
    """SIGSTOP: the process is alive but answers nothing (a hung worker, a lost node)."""
    g = stack.gateways[1]  # runs with DNASERVE_WORKER_KEEPALIVE=5
    if not wait_for(lambda: metrics(g.admin).get(IN_ROTATION) == 2, 60):
        raise RuntimeError("both workers are not in rotation before the hung-worker test")
    threads, results = long_calls(stack, g, 4, 500000, stack.keys["bulk"])
    if not wait_for(lambda: all(in_flight(w) >= 1 for w in stack.workers), 60):
        raise RuntimeError("the long calls never reached both workers")
    victim = stack.workers[1]
    victim.signal(signal.SIGSTOP)
    stopped = time.monotonic()
    out_of_rotation = wait_for(lambda: metrics(g.admin).get(IN_ROTATION) == 1, 30)
    ejected_after = time.monotonic() - stopped
    after = [stack.post(g, "/v1/tasks/promoter/predict", promoter_body(1200, seed=i),
                        stack.keys["bulk"], timeout=60).status for i in range(10)]
    for t in threads:
        t.join()
    failed = [(r, at - stopped) for r, at in results if r.status != 200]
    victim.signal(signal.SIGCONT)
    back = wait_for(lambda: metrics(g.admin).get(IN_ROTATION) == 2, 60)
    result = {
        "keepalive_s": 5,
        "failed_calls": [{"status": r.status, "code": r.error_code(),
                          "seconds_after_stop": round(s, 2)} for r, s in failed],
        "completed_calls": len(results) - len(failed),
        "out_of_rotation_after_s": round(ejected_after, 2) if out_of_rotation else None,
        "next_10_calls_statuses": sorted(set(after)),
        "back_in_rotation_after_sigcont": back,
    }
    result["met"] = (len(failed) >= 1 and all(f["status"] == 503 for f in result["failed_calls"])
                     and out_of_rotation and after == [200] * 10 and back)
    return result


def submit_jobs(stack, g, count, length, key):
    ids = []
    for i in range(count):
        r = stack.post(g, "/v1/tasks/promoter/predict", promoter_body(length, seed=500 + i), key,
                       {"Prefer": "respond-async"})
        if r.status != 202:
            raise RuntimeError(f"job submission answered {r.status}: {r.body[:200]}")
        ids.append(r.json()["data"]["job_id"])
    return ids


def poll_until_done(stack, g, ids, key, timeout):
    """Polls until every job has its final answer: a 200, or the same error three polls in a
    row (a poll itself may meet a transient 503 while Redis is away; a job's own error stays)."""
    final = {}
    errors = {}
    transient = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(final) < len(ids):
        for job_id in ids:
            if job_id in final:
                continue
            r = stack.get(g, "/v1/tasks/jobs/" + job_id, key)
            if r.status == 202:
                errors.pop(job_id, None)
            elif r.status == 200:
                final[job_id] = (200, None)
            else:
                seen = errors.setdefault(job_id, [])
                seen.append((r.status, r.error_code()))
                if len(seen) >= 3 and len(set(seen[-3:])) == 1:
                    final[job_id] = seen[-1]
                elif len(seen) > 1 and seen[-1] != seen[-2]:
                    transient += 1
        time.sleep(0.5)
    return final


def fault_redis_restart(stack):
    g = stack.gateways[0]
    key = stack.keys["bulk"]
    done_before = submit_jobs(stack, g, 5, 2000, key)
    poll_until_done(stack, g, done_before, key, 60)
    running = submit_jobs(stack, g, 10, 200000, key)  # still queued or running at the kill
    time.sleep(1)
    stack.redis.kill()  # SIGKILL: only what the AOF holds survives
    killed = time.monotonic()
    during = stack.post(g, "/v1/tasks/promoter/predict", promoter_body(1200), key, timeout=30)
    poll_during = stack.get(g, "/v1/tasks/jobs/" + done_before[0], key)
    ready_during = request(g.admin, "GET", "/ready", timeout=5)
    time.sleep(2)
    stack.restart_redis()
    restarted = time.monotonic()

    def redis_back():
        ready = request(g.admin, "GET", "/ready", timeout=2)
        return (ready.status == 200 and ready.json().get("redis") == "up" and
                stack.post(g, "/v1/tasks/promoter/predict", promoter_body(400), key).status == 200)

    reconnected = wait_for(redis_back, 60, interval=0.1)
    reconnect_s = time.monotonic() - restarted
    ids = done_before + running
    final = poll_until_done(stack, g, ids, key, 300)
    lost = [j for j in ids if final.get(j, (None,))[0] != 200]
    after = stack.post(g, "/v1/tasks/promoter/predict", promoter_body(1200), key).status
    result = {
        "redis": "appendonly yes, appendfsync always; killed with SIGKILL, down ~2 s",
        "jobs_accepted": len(ids), "jobs_completed_before_kill": len(done_before),
        "jobs_in_progress_at_kill": len(running),
        "request_while_down": {"status": during.status, "code": during.error_code(),
                               "retry_after": during.headers.get("retry-after")},
        "poll_while_down": {"status": poll_during.status, "code": poll_during.error_code()},
        "ready_while_down": {"status": ready_during.status,
                             "redis": ready_during.json().get("redis")},
        "serving_again_s_after_restart": round(reconnect_s, 2) if reconnected else None,
        "jobs_final_status": {str(k): v for k, v in sorted(
            {s: sum(1 for f in final.values() if f[0] == s) for s, _ in final.values()}.items())},
        "jobs_lost": len(lost), "lost_detail": {j: final.get(j) for j in lost},
        "predict_after_restart": after, "gateway_restarted": False,
        "outage_s": round(restarted - killed, 2),
    }
    result["met"] = reconnected and not lost and after == 200
    return result


def fault_gateway_killed(stack):
    g1, g2 = stack.gateways
    key = stack.keys["bulk"]
    finished = submit_jobs(stack, g1, 5, 2000, key)
    poll_until_done(stack, g1, finished, key, 60)
    # Enough 500 kb jobs that most are still queued or running when the gateway dies.
    running = submit_jobs(stack, g1, 16, 500000, key)
    time.sleep(0.2)
    g1.kill()
    killed = time.monotonic()
    finished_polls = [stack.get(g2, "/v1/tasks/jobs/" + j, key).status for j in finished]
    running_polls = [stack.get(g2, "/v1/tasks/jobs/" + j, key).status for j in running]
    final = poll_until_done(stack, g2, running, key, 120)
    settled = time.monotonic() - killed
    listed = stack.get(g2, "/v1/tasks/jobs?limit=500", key)
    listed_ids = {j["job_id"] for j in listed.json()["jobs"]} if listed.status == 200 else set()
    g1.start()
    stack.wait_ready(g1)
    result = {
        "completed_jobs_polled_via_other": finished_polls,
        "running_jobs_polled_via_other_right_after_kill": running_polls,
        "running_jobs_final": [final.get(j) for j in running],
        "running_jobs_settled_after_s": round(settled, 1),
        "all_listed_via_other": set(finished + running) <= listed_ids,
    }
    # Accepted jobs run on the runners: the gateway's death loses none of them.
    result["lost_jobs"] = sum(1 for j in running if (final.get(j) or (None,))[0] != 200)
    result["met"] = (finished_polls == [200] * len(finished)
                     and all(s in (200, 202) for s in running_polls)
                     and result["lost_jobs"] == 0
                     and result["all_listed_via_other"])
    return result


def fault_runner_killed(stack):
    """A runner SIGKILLed with jobs running: the other runner takes them over and finishes them."""
    g = stack.gateways[0]
    key = stack.keys["bulk"]
    running = submit_jobs(stack, g, 16, 500000, key)
    time.sleep(0.3)
    victim = stack.runners[0]
    victim.kill()
    killed = time.monotonic()
    unfinished_at_kill = sum(1 for j in running if stack.get(g, "/v1/tasks/jobs/" + j, key).status == 202)
    final = poll_until_done(stack, g, running, key, 300)
    settled = time.monotonic() - killed
    victim.start()
    result = {
        "jobs": len(running),
        "unfinished_at_kill": unfinished_at_kill,
        "jobs_final_200": sum(1 for j in running if (final.get(j) or (None,))[0] == 200),
        "settled_after_s": round(settled, 1),
        "lost_jobs": sum(1 for j in running if (final.get(j) or (None,))[0] != 200),
    }
    result["met"] = result["lost_jobs"] == 0
    return result


# --------------------------------------------------------------------------------------- hostile

def bystander_loop(port, key, body, stop, out):
    """The bystander's calls, in a process of its own (bystander_loop runs under multiprocessing)."""
    latencies, failures = [], []
    headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
    while not stop.is_set():
        r = request(port, "POST", "/v1/tasks/promoter/predict", body, headers, 30)
        if r.status == 200:
            latencies.append(r.seconds)
        else:
            failures.append(r.status)
        time.sleep(0.05)
    out.send((latencies, failures))


class Bystander:
    """A well-behaved client: sequential predict calls, latency recorded. It runs in its own
    process so that its latencies are the gateway's, not waits for the interpreter lock held by
    the attack threads of this process (which once made its p99 look ten times worse)."""

    def __init__(self, stack, g):
        ctx = multiprocessing.get_context("spawn")
        self.stop_event = ctx.Event()
        self.receiver, sender = ctx.Pipe(duplex=False)
        self.process = ctx.Process(target=bystander_loop, daemon=True, args=(
            g.port, stack.keys["bystander"], promoter_body(600, seed=77), self.stop_event, sender))

    def start(self):
        self.process.start()

    def stop(self):
        self.stop_event.set()
        latencies, failures = self.receiver.recv()
        self.process.join()
        return {"calls": len(latencies) + len(failures), "failures": failures,
                "p50_ms": round(percentile(latencies, 50) * 1000, 1),
                "p99_ms": round(percentile(latencies, 99) * 1000, 1)}


class RssSampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.running = pid, 0.0, True

    def run(self):
        while self.running:
            self.peak = max(self.peak, rss_mb(self.pid))
            time.sleep(0.1)

    def stop(self):
        self.running = False
        self.join()
        return round(self.peak, 1)


# The gateway's memory request in deploy/k8s/base/gateway.yaml: an attack must not push a replica
# past what it is scheduled with.
HOSTILE_RSS_BOUND_MB = 512


def measured(stack, g, name, attack, alone, answered):
    """Runs `attack` while a bystander calls and the gateway's RSS is sampled. Met: the gateway
    is alive, its RSS stayed under HOSTILE_RSS_BOUND_MB, the bystander had no failed call and
    a median within twice its median alone, and `answered(detail)` (every attacking request got
    the answer it should)."""
    log(f"hostile: {name}")
    sampler, bystander = RssSampler(g.pid), Bystander(stack, g)
    rss_before = rss_mb(g.pid)
    sampler.start()
    bystander.start()
    detail = attack()
    by = bystander.stop()
    peak = sampler.stop()
    result = {"rss_mb_before": round(rss_before, 1), "rss_mb_peak": peak,
              "rss_mb_after": round(rss_mb(g.pid), 1), "bystander": by, "detail": detail,
              "gateway_alive": g.proc.poll() is None}
    result["met"] = (result["gateway_alive"] and peak <= HOSTILE_RSS_BOUND_MB
                     and not by["failures"] and by["p50_ms"] <= 2 * alone["p50_ms"]
                     and answered(detail))
    log(f"hostile: {name}", result)
    return result


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def attack_slow_clients(g, count=300, seconds=40):
    """Slowloris: header bytes trickled one per second; the header timeout (30 s) ends them."""
    socks = []
    for _ in range(count):
        s = connect(g.port)
        s.sendall(b"POST /v1/tasks/promoter/predict HTTP/1.1\r\nHost: x\r\n")
        s.setblocking(False)
        socks.append(s)
    started = time.monotonic()
    closed_at = {}
    while time.monotonic() - started < seconds and len(closed_at) < count:
        for i, s in enumerate(socks):
            if i in closed_at:
                continue
            try:
                s.send(b"X")
                data = s.recv(4096)
                if data == b"" or data:
                    closed_at[i] = time.monotonic() - started
            except BlockingIOError:
                pass
            except OSError:
                closed_at[i] = time.monotonic() - started
        time.sleep(1)
    for s in socks:
        s.close()
    times = sorted(closed_at.values())
    return {"connections": count, "trickle": "1 byte/s per connection",
            "closed_by_server": len(times),
            "closed_after_s_median": round(percentile(times, 50), 1) if times else None}


def attack_huge_headers(g, seconds=20):
    """Requests whose header block is 1 MiB, one after another for `seconds`: each refused once
    it passes 64 KiB."""
    statuses = {}
    header = b"X-Filler: " + b"a" * 8000 + b"\r\n"
    count = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        count += 1
        s = connect(g.port)
        try:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
            for _ in range(128):  # 1 MiB of headers, stopped early if the server answers
                s.sendall(header)
        except OSError:
            pass
        try:
            s.settimeout(5)
            head = s.recv(4096).split(b"\r\n", 1)[0].decode(errors="replace")
        except OSError as e:
            head = "no answer: " + type(e).__name__
        statuses[head] = statuses.get(head, 0) + 1
        s.close()
    return {"requests": count, "header_bytes_offered": 128 * len(header), "answers": statuses}


def attack_chunked_bodies(g, streams=4, mib=20, corrupt=False, seconds=20):
    """Chunked uploads of 20 MiB, four at a time, again and again for `seconds`: each refused
    with 413 as its chunks pass 16 MiB. With `corrupt`, every chunk is cut short so the framing
    goes wrong at once (the variant that used to pin the gateway's reactor threads): 400."""
    deadline = time.monotonic() + seconds
    rounds = []
    while time.monotonic() < deadline:
        rounds.append(chunked_round(g, streams, mib, corrupt))
    statuses = {}
    for results in rounds:
        for r in results:
            statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    return {"streams": streams, "mib_each": mib, "corrupt_framing": corrupt,
            "uploads": sum(len(r) for r in rounds), "answers": statuses,
            "mib_sent_before_answer_max": max(r["mib_sent_before_answer"] for rr in rounds for r in rr),
            "seconds_to_answer_max": max(r["seconds"] for rr in rounds for r in rr)}


def chunked_round(g, streams, mib, corrupt):
    results = [None] * streams
    chunk = b"A" * 65536
    framed = b"%x\r\n" % len(chunk) + (chunk[:1000] if corrupt else chunk) + b"\r\n"

    def upload(i):
        s = connect(g.port)
        s.settimeout(30)
        sent = 0
        answer = b""
        started = time.monotonic()
        try:
            s.sendall(b"POST /v1/tasks/promoter/predict HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            while sent < mib * 1024 * 1024 and not answer:
                s.sendall(framed)
                sent += len(chunk)
                if select.select([s], [], [], 0)[0]:  # answered already?
                    answer = s.recv(4096) or b"(closed)"
            if not answer:
                answer = s.recv(4096)
        except OSError:
            pass
        s.close()
        status = answer.split(b"\r\n", 1)[0].decode(errors="replace")
        results[i] = {"status": status, "mib_sent_before_answer": round(sent / 1048576, 1),
                      "seconds": round(time.monotonic() - started, 2),
                      "envelope_code": ("payload_too_large" if b"payload_too_large" in answer else
                                        "bad_request" if b"bad_request" in answer else None)}

    threads = [threading.Thread(target=upload, args=(i,)) for i in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def attack_idle_connections(g, count=5000, hold=45):
    """Thousands of connections that never send a byte, held open."""
    socks = []
    refused = 0
    for _ in range(count):
        try:
            socks.append(connect(g.port))
        except OSError:
            refused += 1
    fds_open = open_fds(g.pid)
    time.sleep(hold)
    still_open = 0
    for s in socks:
        s.setblocking(False)
        try:
            data = s.recv(1)
            if data:
                still_open += 1
        except BlockingIOError:
            still_open += 1
        except OSError:
            pass
    for s in socks:
        s.close()
    return {"connections": count, "connect_failures": refused, "held_s": hold,
            "gateway_fds_with_all_open": fds_open, "still_open_after_hold": still_open}


def run_hostile(stack):
    g = stack.gateways[0]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 16384), hard))
    idle = Bystander(stack, g)
    idle.start()
    time.sleep(15)
    baseline = idle.stop()
    log("hostile: bystander alone", baseline)
    out = {"bystander_alone": baseline, "gateway_rss_mb_idle": round(rss_mb(g.pid), 1)}

    def only(status):
        return lambda d: set(d["answers"]) == {status}

    out["slow_clients"] = measured(
        stack, g, "slow clients", lambda: attack_slow_clients(g), baseline,
        lambda d: d["closed_by_server"] == d["connections"])
    out["huge_headers"] = measured(stack, g, "huge headers", lambda: attack_huge_headers(g),
                                   baseline, only("HTTP/1.1 400 Bad Request"))
    out["chunked_over_16mib"] = measured(stack, g, "chunked bodies",
                                         lambda: attack_chunked_bodies(g), baseline,
                                         only("HTTP/1.1 413 Payload Too Large"))
    out["chunked_corrupt_framing"] = measured(stack, g, "chunked bodies, corrupt framing",
                                              lambda: attack_chunked_bodies(g, corrupt=True),
                                              baseline, only("HTTP/1.1 400 Bad Request"))
    out["idle_connections"] = measured(
        stack, g, "idle connections", lambda: attack_idle_connections(g), baseline,
        lambda d: True)  # nothing to answer: memory and the bystander are the measure
    out["met"] = all(out[k]["met"] for k in ("slow_clients", "huge_headers", "chunked_over_16mib",
                                             "chunked_corrupt_framing", "idle_connections"))
    out["gateway_rss_mb_end"] = round(rss_mb(g.pid), 1)
    return out


# ------------------------------------------------------------------------------------------ main

def missed_targets(results, path=""):
    """The result sections (by path, e.g. faults/worker_killed) whose "met" is false."""
    missed = []
    if isinstance(results, dict):
        if results.get("met") is False:
            missed.append(path or "/")
        for key, value in results.items():
            missed += missed_targets(value, f"{path}/{key}" if path else key)
    return missed


def main():
    global LOAD_QUOTA_PER_MINUTE
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="load,faults,hostile")
    parser.add_argument("--load-seconds", type=int, default=60)
    parser.add_argument("--load-quota", type=int, default=300,
                        help="the load key's rate_per_minute")
    parser.add_argument("--faults", default="worker_killed,worker_hung,redis_restarted,gateway_killed,runner_killed",
                        help="which fault scenarios to run, in this order")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    LOAD_QUOTA_PER_MINUTE = args.load_quota
    if "load" in parts and not shutil.which("wrk"):
        sys.exit("wrk is not installed (scripts/reliability installs it with apt-get)")
    out_dir = os.path.join(BUILD, "reliability")
    os.makedirs(out_dir, exist_ok=True)
    results = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "cpus": os.cpu_count(),
               "load_average_at_start": os.getloadavg()}
    run_dir = os.path.join(out_dir, time.strftime("run-%Y%m%d-%H%M%S"))
    os.makedirs(run_dir)
    stack = None
    try:
        stack = Stack(run_dir, gateway_env=None)
        # The second gateway detects hung workers faster (the minimum keepalive).
        stack.gateways[1].stop()
        stack.gateways[1].env["DNASERVE_WORKER_KEEPALIVE"] = "5"
        stack.gateways[1].start()
        stack.wait_ready(stack.gateways[1])
        if "load" in parts:
            results["load"] = run_load(stack, args.load_seconds)
        if "faults" in parts:
            results["faults"] = {}
            scenarios = {"worker_killed": fault_worker_killed, "worker_hung": fault_worker_hung,
                         "redis_restarted": fault_redis_restart,
                         "gateway_killed": fault_gateway_killed,
                         "runner_killed": fault_runner_killed}
            for name in args.faults.split(","):
                fn = scenarios[name]
                log(f"faults: {name}")
                results["faults"][name] = fn(stack)
                log(f"faults: {name}", results["faults"][name])
        if "hostile" in parts:
            results["hostile"] = run_hostile(stack)
    finally:
        if stack:
            stack.stop()
        results["load_average_at_end"] = os.getloadavg()
        with open(os.path.join(out_dir, "results.json"), "w") as f:
            json.dump(results, f, indent=2)
        print(json.dumps(results, indent=2))
        log("logs in", run_dir)
    # The exit status is the verdict, so that a run can be a test (ctest reliability:faults).
    missed = missed_targets(results)
    if missed:
        log("targets missed:", ", ".join(missed))
        return 1
    log("every target met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
