#!/usr/bin/env python3
"""The operations drill of issue 26 (RELIABILITY.md, "Operations drill", holds a run's figures).

Starts real processes on loopback: Redis as a Sentinel group (a primary, two replicas and three
sentinels, Debian's redis-server; the gateways and runners find the primary through the
sentinels and confirm each enqueue on one replica with WAIT), promoter, annotation and
expression workers (the bundled tiny test models), two runners and two gateways. The Service in
front of the gateways is Debian's haproxy (haproxy_balancer.py: layer 4, each gateway
health-checked on /ready at deploy/k8s/base/gateway.yaml's probe periods, a terminating one out
of rotation after a propagation delay); without haproxy, --short falls back to the load
generator's own routing with the same rules (--balancer builtin). A load generator plays the
clients through it. Its clients, three tenants with a
key each, send at a steady modest rate for the whole drill: sync promoter predictions, sync
find-genes calls (queued, run by a runner while the gateway waits) and async promoter jobs,
polled until done. A 503 with Retry-After is retried after the time it names, as a client would.

Steps, in this order, each under the load:
  gateways  each gateway replaced in turn the way a rolling update with maxSurge 1 and
            maxUnavailable 0 does it: a new gateway is started and awaited in rotation, then the
            old one leaves the rotation, its preStop pause runs, it gets SIGTERM and drains.
  runners   the same for each runner (no preStop: nothing routes to a runner).
            With --previous-build DIR or --previous-commit REV (previous_build.py) each of the
            two steps runs twice: every process replaced by the previous release's build, then
            by the current one ("gateways to previous", "gateways to current", then the same
            for the runners), so both releases serve side by side against one Redis.
  failover  SIGKILL of the Redis primary; the sentinels promote a replica. The killed server is
            started again later (as its StatefulSet pod would be) and rejoins as a replica.

Counted: requests sent; failed (anything but success; a 503 with Retry-After is counted apart,
as a retry); requests that hang past the sync timeout; accepted jobs (202) and how many of them
reached succeeded with a readable result (the rest are lost); the failover window (the first to
the last 503 after the kill). Targets (issue 26): 0 lost and 0 failed across the replacements;
failover window <= 10 s, 0 lost, 0 hanging.

Usage: scripts/drill [--rate 3] [--short] [--inject-loss N] [--balancer auto|haproxy|builtin]
[--previous-build DIR | --previous-commit REV]. --short (the test suite's form) shortens the
quiet periods. --inject-loss N proves the drill can count a loss: when the runners'
replacement begins it deletes the records of N jobs that had succeeded (as a Redis that dropped
acknowledged writes would), so their final reads fail; the drill must report them lost and exit
1 (`ctest -R reliability:drill-counts-a-lost-job`). Results are printed and written as JSON to <build>/drill/results.json; the exit status
is 1 when a target is missed.
"""
import argparse
import collections
import itertools
import json
import os
import random
import secrets
import hashlib
import http.client
import select
import signal
import socket
import subprocess
import sys
import threading
import time

from dnaserve_tools import previous_build
from dnaserve_tools.haproxy_balancer import HAProxyBalancer, haproxy_version
from dnaserve_tools.reliability import (GATEWAY, RUNNER, WORKER, BUILD, ROOT, Process,
                                        Response, dna, free_port, percentile, request,
                                        wait_for)

PRIMARY_NAME = "dnaserve-drill"
# A sync call's budget in the drill (DNASERVE_SYNC_TIMEOUT): a request still unanswered after it
# (plus a margin for a loaded machine) is counted as hanging.
SYNC_TIMEOUT_S = 30
HANG_MARGIN_S = 5
# The load balancer's view of readiness, from deploy/k8s/base/gateway.yaml: probed every 5 s,
# out of rotation after 2 failures in a row, in after 1 success.
PROBE_PERIOD_S = 5
PROBE_FAILURE_THRESHOLD = 2
# How long endpoints keep receiving traffic after their pod starts terminating (endpoint and
# kube-proxy updates); the gateway's preStop pause (10 s in the manifest) must cover it.
PROPAGATION_S = 1.0
PRESTOP_S = 5
TENANTS = ("tenant-a", "tenant-b", "tenant-c")
LIVER = {"description": "adult liver tissue"}
# A job's record in Redis (core/jobs/redis_job_store.h: key_prefix + "job:" + id).
JOB_KEY_PREFIX = "dnaserve:job:"


def log(*parts):
    print("[drill]", *parts, file=sys.stderr, flush=True)


def log_tail(process, lines):
    """The last lines of a child's log on stderr, so that CI's output shows why it failed."""
    path = os.path.join(process.log_dir, process.name + ".log")
    try:
        with open(path, errors="replace") as f:
            tail = f.readlines()[-lines:]
    except OSError as error:
        tail = [f"(no log: {error})\n"]
    log(f"--- last {len(tail)} lines of {path}")
    sys.stderr.write("".join(tail))


def redis_cli(port, *args, timeout=3):
    """One command through Debian's redis-cli; its output lines, or None when it failed."""
    try:
        out = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args],
                             capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0 or out.stdout.startswith("Could not connect"):
        return None
    return out.stdout.splitlines()


class SentinelGroup:
    """A primary, `replicas` replicas and three sentinels (quorum 2) on free loopback ports."""

    @classmethod
    def started(cls, directory, spawn, down_after_ms, attempts=2):
        """A settled group. One that does not start or settle (seen once in CI, where its logs
        were not kept) is reported with the tails of its logs, stopped, and started afresh on
        new ports in a directory of its own."""
        for attempt in range(1, attempts + 1):
            group_dir = directory if attempt == 1 else os.path.join(directory, f"redis-{attempt}")
            os.makedirs(group_dir, exist_ok=True)
            group = cls(group_dir, spawn, down_after_ms=down_after_ms)
            try:
                group.start()
                return group
            except RuntimeError as error:
                log(f"Redis group, attempt {attempt} of {attempts}: {error}")
                for process in group.processes:
                    log_tail(process, lines=15)
                    process.stop()
                if attempt == attempts:
                    raise

    def __init__(self, directory, spawn, replicas=2, down_after_ms=2000):
        self.dir, self.spawn = directory, spawn
        self.replicas, self.down_after_ms = replicas, down_after_ms
        self.servers = {}  # port -> Process
        self.processes = []  # every process this group spawned, to stop a group that failed
        self.waiting_for = "nothing checked yet"  # what _settled last found missing

    def start(self):
        directory, down_after_ms = self.dir, self.down_after_ms
        self.primary_port = self._server()
        for _ in range(self.replicas):
            self._server(self.primary_port)
        self.sentinel_ports = []
        for i in range(3):
            port = free_port()
            conf = os.path.join(directory, f"sentinel-{i}.conf")
            with open(conf, "w") as f:
                f.write(f"port {port}\nbind 127.0.0.1\ndir {directory}\n"
                        f"sentinel monitor {PRIMARY_NAME} 127.0.0.1 {self.primary_port} 2\n"
                        f"sentinel down-after-milliseconds {PRIMARY_NAME} {down_after_ms}\n"
                        f"sentinel failover-timeout {PRIMARY_NAME} 10000\n"
                        f"sentinel parallel-syncs {PRIMARY_NAME} 1\n")
            self.processes.append(
                self.spawn(f"sentinel-{i}", ["redis-server", conf, "--sentinel"], {}))
            self.sentinel_ports.append(port)
        for port in self.sentinel_ports:
            if not wait_for(lambda: socket.create_connection(("127.0.0.1", port), 1), 10):
                raise RuntimeError(f"the sentinel on port {port} did not start")
        if not wait_for(self._settled, 60, interval=0.5):
            raise RuntimeError(f"the sentinel group did not settle in 60 s: {self.waiting_for}; "
                               f"see {directory}")

    def _server(self, primary_port=0, port=None):
        port = port or free_port()
        data = os.path.join(self.dir, f"redis-{port}")
        os.makedirs(data, exist_ok=True)
        argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", data,
                "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
                "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"]
        if primary_port:
            argv += ["--replicaof", "127.0.0.1", str(primary_port)]
        if port in self.servers:
            self.servers[port].argv = argv
            self.servers[port].start()
        else:
            self.servers[port] = self.spawn(f"redis-{port}", argv, {})
            self.processes.append(self.servers[port])
        if not wait_for(lambda: socket.create_connection(("127.0.0.1", port), 1), 10):
            raise RuntimeError(f"redis-server on port {port} did not start")
        return port

    def _settled(self):
        """Every replica online and every sentinel knowing the other two and the replicas."""
        info = redis_cli(self.primary_port, "INFO", "replication") or []
        online = sum("state=online" in line for line in info)
        if online < len(self.servers) - 1:
            self.waiting_for = (f"{online} of {len(self.servers) - 1} replicas online at the "
                                f"primary {self.primary_port} (its role: "
                                f"{next((l for l in info if l.startswith('role:')), 'no answer')})")
            return False
        for port in self.sentinel_ports:
            others = redis_cli(port, "SENTINEL", "sentinels", PRIMARY_NAME) or []
            known = redis_cli(port, "SENTINEL", "replicas", PRIMARY_NAME) or []
            peers, replicas = (sum(line == "name" for line in out) for out in (others, known))
            if peers < 2 or replicas < len(self.servers) - 1:
                self.waiting_for = (f"the sentinel on port {port} knows {peers} of 2 other "
                                    f"sentinels and {replicas} of {len(self.servers) - 1} replicas")
                return False
        return True

    def sentinels(self):
        return ",".join(f"127.0.0.1:{p}" for p in self.sentinel_ports)

    def named_primary(self):
        """The primary's port as the first sentinel that answers names it (None: none answered)."""
        for port in self.sentinel_ports:
            out = redis_cli(port, "SENTINEL", "get-master-addr-by-name", PRIMARY_NAME)
            if out and len(out) == 2:
                return int(out[1])
        return None

    def kill_primary(self):
        victim = self.primary_port
        self.servers[victim].kill()
        return victim

    def restart_as_replica(self, port, primary_port):
        """The killed server back on its port (its pod restarted); the sentinels would demote it
        anyway, --replicaof only spares it a moment as a second primary."""
        self._server(primary_port, port=port)


class LoadBalancer:
    """The Service: round-robin over the gateways its readiness probes admit."""

    def __init__(self, propagation_s):
        self.propagation_s = propagation_s
        self.mu = threading.Lock()
        self.gateways = []  # dicts: process, in_rotation, failures, terminating_at
        self.counter = itertools.count()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._probe_loop, daemon=True)
        self.thread.start()

    def close(self):
        self.stop.set()

    def add(self, gateway):
        with self.mu:
            self.gateways.append({"g": gateway, "in": False, "failures": 0, "terminating": None})

    def terminate(self, gateway):
        """The pod starts terminating: its endpoint goes, after the propagation delay."""
        with self.mu:
            for e in self.gateways:
                if e["g"] is gateway:
                    e["terminating"] = time.monotonic()

    def in_rotation(self, gateway):
        with self.mu:
            return any(e["g"] is gateway and e["in"] for e in self.gateways)

    def pick(self):
        now = time.monotonic()
        with self.mu:
            live = [e["g"] for e in self.gateways if e["in"] and
                    (e["terminating"] is None or now - e["terminating"] < self.propagation_s)]
            if not live:
                return None
            return live[next(self.counter) % len(live)]

    def _probe(self, entry):
        ok = request(entry["g"].admin, "GET", "/ready", timeout=5).status == 200
        with self.mu:
            if ok:
                entry["failures"] = 0
                entry["in"] = True
            else:
                entry["failures"] += 1
                if entry["failures"] >= PROBE_FAILURE_THRESHOLD:
                    entry["in"] = False

    def _probe_loop(self):
        next_probe = {}
        while not self.stop.is_set():
            with self.mu:
                entries = list(self.gateways)
            now = time.monotonic()
            for e in entries:
                # A new pod is probed at once (its startup probe has passed), then periodically.
                if now >= next_probe.get(id(e), 0):
                    next_probe[id(e)] = now + PROBE_PERIOD_S
                    self._probe(e)
            self.stop.wait(0.1)


class KeepAliveSession:
    """One kept-alive HTTP/1.1 connection, as a client library's pool holds it. The load
    balancer is a layer-4 one (kube-proxy): it picks the gateway when the connection opens, and
    requests on it go there until it closes. Like urllib3, the connection is checked before
    reuse (closed by the server: open a new one) and closed after a response that says
    `Connection: close`; a request that meets a connection closed under it is not retried."""

    def __init__(self):
        self.conn, self.gateway = None, None

    def _dropped(self):
        sock = self.conn.sock if self.conn else None
        if sock is None:
            return True
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable)  # readable while idle: the server closed it

    def close(self):
        if self.conn:
            self.conn.close()
        self.conn, self.gateway = None, None

    def send(self, lb, method, path, body, headers):
        if self.conn is None or self._dropped():
            self.close()
            g = lb.pick()
            if g is None:
                return None, None
            self.gateway = g
            self.conn = http.client.HTTPConnection("127.0.0.1", g.port,
                                                   timeout=SYNC_TIMEOUT_S + HANG_MARGIN_S)
            self.conn.connect()
        name = self.gateway.name
        started = time.monotonic()
        try:
            payload = body.encode() if isinstance(body, str) else body
            self.conn.request(method, path, body=payload, headers=headers)
            r = self.conn.getresponse()
            data = r.read()
            response = Response(r.status, {k.lower(): v for k, v in r.getheaders()}, data,
                                time.monotonic() - started)
            if response.headers.get("connection", "").lower() == "close":
                self.close()
            return name, response
        except (OSError, http.client.HTTPException) as e:
            self.close()
            return name, Response(0, {}, f"kept-alive connection: {e!r}".encode(),
                                  time.monotonic() - started)


class Tally:
    """What the clients saw, per phase."""

    def __init__(self):
        self.mu = threading.Lock()
        self.phase = "warm-up"
        self.phases = collections.OrderedDict()
        self.retries = []   # (time, phase, status) of 503s with Retry-After
        self.failures = []  # dicts
        self.jobs = {}      # job_id -> dict(key, phase, accepted_at, state)

    def set_phase(self, name):
        with self.mu:
            self.phase = name
            self.phases.setdefault(name, {"started": time.monotonic()})

    def count(self, what, phase=None):
        with self.mu:
            p = self.phases.setdefault(phase or self.phase, {"started": time.monotonic()})
            p[what] = p.get(what, 0) + 1

    def current(self):
        with self.mu:
            return self.phase


class Drill:
    def __init__(self, directory, args):
        self.dir, self.args = directory, args
        self.processes = []
        self.tally = Tally()
        self.latencies = collections.defaultdict(list)
        self.stop_load = threading.Event()
        self.unfinished_at = {}
        try:
            self._start(directory, args)
        except BaseException:
            self.stop()  # what did start is not left behind
            raise

    def _start(self, directory, args):
        self.redis = SentinelGroup.started(directory, self._spawn, args.down_after_ms)
        self.models = os.environ.get("DNASERVE_TEST_MODELS_DIR") or subprocess.check_output(
            [os.path.join(ROOT, "scripts", "make-models")], text=True).strip()
        workers = []
        for task in ("promoter", "annotation", "expression"):
            port = free_port()
            self._spawn(f"worker-{task}", [WORKER, "--task", task, "--models-dir", self.models,
                                           "--listen", f"127.0.0.1:{port}"], {})
            workers.append(f"{task}=127.0.0.1:{port}")
        self.workers = ",".join(workers)
        self.keys = {}
        entries = []
        for client in TENANTS:
            key = "dns_" + secrets.token_urlsafe(32)
            self.keys[client] = key
            entries.append({"key_sha256": hashlib.sha256(key.encode()).hexdigest(),
                            "client_id": client, "enabled": True, "rate_per_minute": 6000,
                            "max_concurrency": 64})
        self.keys_file = os.path.join(directory, "keys.json")
        with open(self.keys_file, "w") as f:
            json.dump({"keys": entries}, f)
        self.generation = itertools.count()
        self.runners = [self._runner() for _ in range(2)]
        if args.balancer == "haproxy":
            self.lb = HAProxyBalancer(directory, self._spawn, free_port(), args.propagation_s,
                                      PROBE_PERIOD_S, PROBE_FAILURE_THRESHOLD)
        else:
            self.lb = LoadBalancer(args.propagation_s)
        self.gateways = [self._gateway() for _ in range(2)]
        for g in self.gateways:
            self._await_own_ready(g)
            self.lb.add(g)
        for g in self.gateways:
            if not wait_for(lambda: self.lb.in_rotation(g), 120, interval=0.2):
                raise RuntimeError(f"{g.name} never became ready; see {directory}")

    def _spawn(self, name, argv, env):
        p = Process(name, argv, env, self.dir)
        self.processes.append(p)
        return p

    def _shared_env(self):
        return {"DNASERVE_REDIS_SENTINELS": self.redis.sentinels(),
                "DNASERVE_REDIS_PRIMARY_NAME": PRIMARY_NAME,
                "DNASERVE_REDIS_WAIT_REPLICAS": "1",
                "DNASERVE_REDIS_WAIT_TIMEOUT_MS": str(self.args.wait_timeout_ms),
                "DNASERVE_WORKERS": self.workers}

    def _await_own_ready(self, process):
        """The kubelet's readiness view: the process's own /ready answers 200."""
        if not wait_for(lambda: request(process.admin, "GET", "/ready", timeout=2).status == 200,
                        120, interval=0.2):
            raise RuntimeError(f"{process.name} never became ready; see {self.dir}")

    def _gateway(self, binary=GATEWAY, release="current"):
        n = next(self.generation)
        port, admin = free_port(), free_port()
        env = self._shared_env()
        env.update({"DNASERVE_PORT": str(port), "DNASERVE_ADMIN_LISTEN": f"127.0.0.1:{admin}",
                    "DNASERVE_KEYS_FILE": self.keys_file,
                    "DNASERVE_SYNC_TIMEOUT": str(SYNC_TIMEOUT_S),
                    "DNASERVE_DRAIN_TIMEOUT": str(SYNC_TIMEOUT_S + 5),
                    "DNASERVE_IP_RATE": "100000", "DNASERVE_IP_BURST": "100000"})
        g = self._spawn(f"gateway-{n}-{release}", [binary], env)
        g.port, g.admin = port, admin
        return g

    def _runner(self, binary=RUNNER, release="current"):
        n = next(self.generation)
        admin = free_port()
        env = self._shared_env()
        env.update({"DNASERVE_RUNNER_ID": f"runner-{n}", "DNASERVE_RUNNER_CLAIM_TIMEOUT": "5",
                    "DNASERVE_ADMIN_LISTEN": f"127.0.0.1:{admin}",
                    "DNASERVE_DRAIN_TIMEOUT": str(SYNC_TIMEOUT_S)})
        r = self._spawn(f"runner-{n}-{release}", [binary], env)
        r.admin = admin
        return r

    # ------------------------------------------------------------------------------ the clients

    def _send(self, method, path, key, body=None, extra=None, session=None):
        """One attempt through the load balancer: (gateway name or None, Response or None).
        Without a session, a new connection per request; with one, a kept-alive connection."""
        headers = {"Authorization": "Bearer " + key}
        if body is not None:
            headers["Content-Type"] = "application/json"
        headers.update(extra or {})
        if session is not None:
            return session.send(self.lb, method, path, body, headers)
        g = self.lb.pick()
        if g is None:
            return None, None
        return g.name, request(g.port, method, path, body, headers,
                               timeout=SYNC_TIMEOUT_S + HANG_MARGIN_S)

    def _call(self, kind, method, path, key, body=None, extra=None, ok=(200,), session=None):
        """A client's call: retried after a 503's Retry-After (at most 60 s of retries); every
        other answer that is not in `ok` is a failure. Returns the last Response (None when no
        gateway was in rotation); the caller checks its status against `ok`."""
        phase = self.tally.current()
        deadline = time.monotonic() + 60
        self.tally.count("sent", phase)
        while True:
            gateway, r = self._send(method, path, key, body, extra, session)
            if r is not None and r.seconds > SYNC_TIMEOUT_S:
                self.tally.count("hanging", phase)
                self.tally.failures.append({"kind": kind, "phase": phase, "gateway": gateway,
                                            "status": r.status, "hanging_s": round(r.seconds, 1)})
            if r is not None and r.status in ok:
                self.tally.count("succeeded", phase)
                self.latencies[kind].append(r.seconds)
                return r
            retry_after = r.headers.get("retry-after") if r is not None else None
            if r is not None and r.status == 503 and retry_after and time.monotonic() < deadline:
                with self.tally.mu:
                    self.tally.retries.append((time.monotonic(), self.tally.phase, kind))
                # Counted in the phase the refusal happened in, not the one the call began in:
                # a call begun just before the primary's kill is refused by the failover.
                self.tally.count("503_retried")
                time.sleep(min(float(retry_after), 5))
                continue
            self.tally.count("failed", phase)
            self.tally.failures.append({
                "kind": kind, "phase": phase, "gateway": gateway, "at": round(time.monotonic(), 2),
                "status": r.status if r is not None else "no gateway in rotation",
                "code": r.error_code() if r is not None else None,
                "body": r.body[:200].decode(errors="replace") if r is not None else None})
            return r

    def _client(self, index, rate):
        rng = random.Random(index)
        # Every other client keeps its connection alive, as HTTP client libraries do.
        session = KeepAliveSession() if index % 2 == 1 else None
        next_at = time.monotonic() + rng.random() / rate
        while not self.stop_load.is_set():
            tenant = TENANTS[rng.randrange(len(TENANTS))]
            key = self.keys[tenant]
            choice = rng.random()
            if choice < 0.45:
                self._call("sync_predict", "POST", "/v1/tasks/promoter/predict", key,
                           json.dumps({"sequence": dna(1200, rng.random())}), session=session)
            elif choice < 0.60:
                self._call("sync_find_genes", "POST",
                           "/v1/workflows/find-genes-and-predict-expression", key,
                           json.dumps({"sequence": dna(2000, rng.random()), "options": LIVER}),
                           session=session)
            else:
                phase = self.tally.current()
                # One async job in four is long enough (100 kb) to be running when a runner or
                # the primary goes.
                length = 100000 if choice > 0.90 else 3000
                r = self._call("async_submit", "POST", "/v1/tasks/promoter/predict", key,
                               json.dumps({"sequence": dna(length, rng.random())}),
                               {"Prefer": "respond-async"}, ok=(202,), session=session)
                if r is not None and r.status == 202:
                    job_id = r.json()["data"]["job_id"]
                    with self.tally.mu:
                        self.tally.jobs[job_id] = {"key": key, "phase": phase,
                                                   "accepted": time.monotonic(), "state": "pending"}
            next_at += 1.0 / rate
            self.stop_load.wait(max(0.0, next_at - time.monotonic()))

    def _poller(self, until):
        """Polls every pending job through the load balancer, as its client would."""
        while not until.is_set():
            with self.tally.mu:
                pending = [(j, v) for j, v in self.tally.jobs.items() if v["state"] == "pending"]
            for job_id, job in pending:
                r = self._call("poll", "GET", "/v1/tasks/jobs/" + job_id, job["key"],
                               ok=(200, 202))
                if r is None or r.status in (0, 202):
                    continue  # running, or the poll itself did not get through
                if r.status == 200:
                    job["state"] = "succeeded"
                    job["finished"] = time.monotonic()
                else:
                    # The job's own error (or its record gone): it will not succeed any more.
                    job["state"] = f"ended {r.status} {r.error_code()}"
            until.wait(1.0)

    # ----------------------------------------------------------------------------- the steps

    def note_unfinished(self, event):
        """How many accepted jobs had not yet been seen finished when `event` happened."""
        with self.tally.mu:
            self.unfinished_at[event] = sum(1 for j in self.tally.jobs.values()
                                            if j["state"] == "pending")

    def replace_gateway(self, old, binary=GATEWAY, release="current"):
        new = self._gateway(binary, release)  # maxSurge 1: the new pod first
        self._await_own_ready(new)  # endpoints list only ready pods
        self.lb.add(new)
        if not wait_for(lambda: self.lb.in_rotation(new), 120, interval=0.2):
            raise RuntimeError(f"{new.name} never became ready")
        self.lb.terminate(old)  # maxUnavailable 0: only now does the old one go
        time.sleep(self.args.prestop_s)  # preStop: serving on while the endpoint removal spreads
        self.note_unfinished(old.name)
        old.signal(signal.SIGTERM)
        old.proc.wait(SYNC_TIMEOUT_S + 30)
        # Stays listed (out of rotation once the propagation delay has passed): an early exit
        # does not hurry the endpoint removal.
        log(f"{old.name} replaced by {new.name} (exit {old.proc.returncode})")
        return new

    def replace_runner(self, old, binary=RUNNER, release="current"):
        new = self._runner(binary, release)
        self._await_own_ready(new)
        self.note_unfinished(old.name)
        old.signal(signal.SIGTERM)
        old.proc.wait(SYNC_TIMEOUT_S + 30)
        log(f"{old.name} replaced by {new.name} (exit {old.proc.returncode})")
        return new

    def failover(self):
        before = self.redis.primary_port
        self.note_unfinished("redis primary")
        self.redis.kill_primary()
        killed = time.monotonic()
        log(f"redis primary {before} SIGKILLed")
        promoted = None
        while time.monotonic() - killed < 60:
            named = self.redis.named_primary()
            if named and named != before:
                promoted = named
                break
            time.sleep(0.1)
        promoted_after = time.monotonic() - killed
        log(f"sentinels named {promoted} after {promoted_after:.1f} s")
        # The lost server's pod comes back a while later and rejoins as a replica.
        time.sleep(max(0.0, self.args.restart_after_s - (time.monotonic() - killed)))
        if promoted:
            self.redis.restart_as_replica(before, promoted)
            self.redis.primary_port = promoted
        return {"killed_at": killed, "old_primary": before, "new_primary": promoted,
                "promoted_after_s": round(promoted_after, 2)}

    def inject_loss(self, count):
        """Deletes the records of `count` jobs that had succeeded, on the primary: the test mode
        that shows the final reads counting a lost job. Returns their ids."""
        if not wait_for(lambda: sum(1 for j in list(self.tally.jobs.values())
                                    if j["state"] == "succeeded") >= count, 60, interval=0.5):
            raise RuntimeError(f"fewer than {count} jobs succeeded to inject a loss into")
        with self.tally.mu:
            victims = [job_id for job_id, j in self.tally.jobs.items()
                       if j["state"] == "succeeded"][:count]
        for job_id in victims:
            if redis_cli(self.redis.primary_port, "DEL", JOB_KEY_PREFIX + job_id) != ["1"]:
                raise RuntimeError(f"could not delete the record of job {job_id}")
        log(f"injected loss: deleted the records of {len(victims)} succeeded jobs")
        return victims

    def run(self):
        a = self.args
        # Warm-up: every model loaded and every path taken once, outside the counts.
        for _ in range(3):
            for kind, path, body in [
                    ("sync_predict", "/v1/tasks/promoter/predict", {"sequence": dna(1200, 1)}),
                    ("sync_find_genes", "/v1/workflows/find-genes-and-predict-expression",
                     {"sequence": dna(2000, 2), "options": LIVER})]:
                self._call(kind, "POST", path, self.keys[TENANTS[0]], json.dumps(body))
        self.tally = Tally()
        self.latencies.clear()
        self.tally.set_phase("steady")
        stop_polling = threading.Event()
        clients = [threading.Thread(target=self._client, args=(i, a.rate / a.clients), daemon=True)
                   for i in range(a.clients)]
        poller = threading.Thread(target=self._poller, args=(stop_polling,), daemon=True)
        for t in clients + [poller]:
            t.start()
        timeline = {}
        time.sleep(a.quiet_s)
        # Without a previous build: one rolling update to the same build. With one: a rolling
        # update to the previous release, then one back to the current release (a rollback and
        # a roll forward), so old and new run side by side against the same Redis.
        releases = [("current", GATEWAY, RUNNER)]
        if a.previous:
            releases = [("previous", a.previous["gateway"], a.previous["runner"]),
                        ("current", GATEWAY, RUNNER)]
        for release, gateway_binary, _ in releases:
            self.tally.set_phase(self._step_name("gateways", release))
            log(f"rolling replacement of the gateways ({release} build)")
            self.gateways = [self.replace_gateway(g, gateway_binary, release)
                             for g in list(self.gateways)]
            time.sleep(a.quiet_s / 2)
        for i, (release, _, runner_binary) in enumerate(releases):
            self.tally.set_phase(self._step_name("runners", release))
            if a.inject_loss and i == 0:
                timeline["injected_losses"] = self.inject_loss(a.inject_loss)
            log(f"rolling replacement of the runners ({release} build)")
            self.runners = [self.replace_runner(r, runner_binary, release)
                            for r in list(self.runners)]
            time.sleep(a.quiet_s / 2)
        self.tally.set_phase("failover")
        log("SIGKILL of the Redis primary")
        timeline["failover"] = self.failover()
        time.sleep(a.quiet_s)
        self.tally.set_phase("after")
        time.sleep(a.quiet_s / 2)
        self.stop_load.set()
        for t in clients:
            t.join(SYNC_TIMEOUT_S + 70)
        # Every accepted job must finish: the poller keeps going until none is pending.
        wait_for(lambda: all(j["state"] != "pending" for j in list(self.tally.jobs.values())),
                 a.finish_timeout_s, interval=1)
        stop_polling.set()
        poller.join(SYNC_TIMEOUT_S + 70)
        return self.report(timeline)

    def _step_name(self, kind, release):
        return f"{kind} to {release}" if self.args.previous else kind

    def report(self, timeline):
        t = self.tally
        t.set_phase("final reads")
        jobs = list(t.jobs.items())
        readable = 0
        unreadable = []
        for job_id, job in jobs:
            r = self._call("final_read", "GET", "/v1/tasks/jobs/" + job_id, job["key"])
            body = {}
            if r is not None:
                try:
                    body = r.json()
                except ValueError:
                    body = {}
            if r is not None and r.status == 200 and "data" in body:
                readable += 1
            else:
                unreadable.append({"job_id": job_id, "phase": job["phase"], "state": job["state"],
                                   "status": r.status if r is not None else None})
        kill = timeline["failover"]["killed_at"]
        after_kill = [at for at, phase, _ in t.retries if at >= kill]
        window = (max(after_kill) - min(after_kill)) if after_kill else 0.0
        phases = {}
        starts = [p["started"] for p in t.phases.values()] + [time.monotonic()]
        for (name, p), end in zip(t.phases.items(), starts[1:]):
            phases[name] = {k: v for k, v in p.items() if k != "started"}
            phases[name]["seconds"] = round(end - p["started"], 1)
            phases[name]["accepted_jobs"] = sum(1 for _, j in jobs if j["phase"] == name)
        lost_by_phase = collections.Counter(u["phase"] for u in unreadable)
        replacement_phases = [p for p in phases if p.startswith(("gateways", "runners"))]
        replacement_failed = sum(phases[p].get("failed", 0) for p in replacement_phases)
        replacement_retried = sum(phases[p].get("503_retried", 0) for p in replacement_phases)
        replacement_lost = sum(lost_by_phase.get(p, 0) for p in replacement_phases)
        hanging = sum(p.get("hanging", 0) for p in phases.values())
        out = {
            "settings": {"rate_per_s": self.args.rate, "clients": self.args.clients,
                         "tenants": len(TENANTS), "sync_timeout_s": SYNC_TIMEOUT_S,
                         "probe_period_s": PROBE_PERIOD_S, "prestop_s": self.args.prestop_s,
                         "propagation_s": self.args.propagation_s,
                         "sentinel_down_after_ms": self.args.down_after_ms,
                         "wait_replicas": 1, "wait_timeout_ms": self.args.wait_timeout_ms,
                         "killed_primary_restarted_after_s": self.args.restart_after_s,
                         "balancer": self.args.balancer_description,
                         "previous_build": self.args.previous},
            "phases": phases,
            "requests_sent": sum(p.get("sent", 0) for p in phases.values()),
            "requests_failed": sum(p.get("failed", 0) for p in phases.values()),
            "requests_503_retried": len(t.retries),
            "requests_hanging": hanging,
            "accepted_jobs": len(jobs),
            "jobs_succeeded_and_readable": readable,
            "jobs_lost": len(unreadable),
            "jobs_lost_by_phase": dict(lost_by_phase),
            "jobs_unfinished_at_sigterm_or_kill": self.unfinished_at,
            "lost_detail": unreadable[:20],
            "injected_losses": timeline.get("injected_losses", []),
            "injected_losses_counted": sum(1 for u in unreadable
                                           if u["job_id"] in timeline.get("injected_losses", [])),
            "failures": t.failures[:40],
            "failover": {
                "promoted_after_s": timeline["failover"]["promoted_after_s"],
                "window_s": round(window, 2),
                "503_retried": len(after_kill),
                "first_503_after_kill_s": round(min(after_kill) - kill, 2) if after_kill else None,
            },
            "latency_ms": {kind: {"n": len(v), "p50": round(percentile(v, 50) * 1000, 1),
                                  "p99": round(percentile(v, 99) * 1000, 1),
                                  "max": round(max(v) * 1000, 1)}
                           for kind, v in self.latencies.items() if v},
        }
        out["targets"] = {
            "replacements: 0 lost, 0 failed": {
                "met": replacement_failed == 0 and replacement_retried == 0
                and replacement_lost == 0,
                "failed": replacement_failed, "503_retried": replacement_retried,
                "lost": replacement_lost},
            "failover: window <= 10 s, 0 lost, 0 hanging": {
                "met": window <= 10 and len(unreadable) == 0 and hanging == 0
                and phases.get("failover", {}).get("failed", 0) == 0,
                "window_s": round(window, 2), "lost": len(unreadable), "hanging": hanging,
                "failed": phases.get("failover", {}).get("failed", 0)},
        }
        return out

    def stop(self):
        if getattr(self, "lb", None):
            self.lb.close()
        for p in reversed(self.processes):
            p.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, default=3.0,
                        help="client requests per second in all (polls come on top)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--quiet-s", type=float, default=20,
                        help="seconds of load before the first step and after the last")
    parser.add_argument("--short", action="store_true",
                        help="the test suite's form: 6 s quiet periods")
    parser.add_argument("--down-after-ms", type=int, default=2000,
                        help="the sentinels' down-after-milliseconds")
    parser.add_argument("--wait-timeout-ms", type=int, default=500,
                        help="DNASERVE_REDIS_WAIT_TIMEOUT_MS")
    parser.add_argument("--restart-after-s", type=float, default=15,
                        help="when the killed primary's server comes back (as a replica)")
    parser.add_argument("--prestop-s", type=float, default=PRESTOP_S,
                        help="the gateways' preStop pause (0 shows what it is for)")
    parser.add_argument("--propagation-s", type=float, default=PROPAGATION_S,
                        help="how long a terminating gateway still gets new connections")
    parser.add_argument("--finish-timeout-s", type=float, default=180)
    parser.add_argument("--inject-loss", type=int, default=0, metavar="N",
                        help="test mode: delete N succeeded jobs' records mid-drill; the drill "
                        "must count them lost and exit 1")
    parser.add_argument("--balancer", choices=("auto", "haproxy", "builtin"), default="auto",
                        help="the Service in front of the gateways: Debian's haproxy, or the "
                        "load generator's own routing (builtin); auto: haproxy, and builtin "
                        "only for --short when haproxy is not installed")
    parser.add_argument("--previous-build", metavar="DIR",
                        help="a build dir of an older commit: each gateway and runner is "
                        "replaced with its build, then with the current one")
    parser.add_argument("--previous-commit", metavar="REV",
                        help="as --previous-build, with REV's gateway and runner built into a "
                        "git worktree under <build>/drill")
    parser.add_argument("--results", default=None,
                        help="where to write the results JSON (default <build>/drill/results.json)")
    args = parser.parse_args()
    if args.short:
        args.quiet_s = 6
    version = haproxy_version()
    if args.balancer == "auto":
        args.balancer = "haproxy" if version or not args.short else "builtin"
        if not version and args.short:
            log("haproxy is not installed (scripts/install-deps installs it): the clients route "
                "to the gateways themselves, as the Service would")
    if args.balancer == "haproxy" and not version:
        log("haproxy is not installed: run scripts/install-deps (Debian package haproxy), or "
            "pass --balancer builtin for the load generator's own routing")
        return 2
    args.balancer_description = version if args.balancer == "haproxy" else (
        "builtin (the load generator routes to gateways passing /ready)")
    args.previous = None
    if args.previous_build and args.previous_commit:
        parser.error("--previous-build and --previous-commit exclude each other")
    try:
        if args.previous_build:
            args.previous = previous_build.from_build_dir(args.previous_build)
        elif args.previous_commit:
            args.previous = previous_build.from_commit(ROOT, BUILD, args.previous_commit)
    except (RuntimeError, subprocess.CalledProcessError) as e:
        log(f"no previous build: {e}")
        return 2
    if args.previous:
        log(f"previous release: {args.previous['commit']} ({args.previous['build_dir']})")
    out_dir = os.path.join(BUILD, "drill")
    run_dir = os.path.join(out_dir, time.strftime("run-%Y%m%d-%H%M%S"))
    os.makedirs(run_dir)
    results = {"started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
               "cpus": os.cpu_count(), "load_average_at_start": os.getloadavg()}
    drill = None
    status = 1
    try:
        drill = Drill(run_dir, args)
        results.update(drill.run())
        status = 0 if all(t["met"] for t in results["targets"].values()) else 1
    finally:
        if drill:
            drill.stop()
        results["load_average_at_end"] = os.getloadavg()
        with open(args.results or os.path.join(out_dir, "results.json"), "w") as f:
            json.dump(results, f, indent=2)
        print(json.dumps(results, indent=2))
        log("logs in", run_dir)
    log("every target met" if status == 0 else "a target was missed")
    return status


if __name__ == "__main__":
    sys.exit(main())
