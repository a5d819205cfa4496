#!/usr/bin/env python3
"""The prod overlay's Redis entrypoint (deploy/k8s/overlays/prod/redis-ha/redis-ha.sh) on
loopback with real redis-server processes, as its pods run it: three data nodes and three
sentinels with passwords. The first node starts as primary (the seed), the others as its
replicas; the sentinels watch it; after the primary is SIGKILLed and the sentinels promote a
replica, the old primary started again by the same entrypoint rejoins as a replica of the new
primary (not as a second primary) and has the data; a restarted sentinel watches the new primary;
a placeholder password is refused. The old primary restarts while a stale sentinel (a fake that
still names it, listed first) answers too, so the entrypoint must prefer the sentinel naming
another node.

  redis_ha_entrypoint_test.py ENTRYPOINT
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

NAME = "dnaserve"
DATA_PASSWORD = "data-secret-1"
SENTINEL_PASSWORD = "sentinel-secret-2"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(port, password, *args):
    env = dict(os.environ, REDISCLI_AUTH=password)
    out = subprocess.run(["redis-cli", "--no-auth-warning", "-h", "127.0.0.1", "-p", str(port),
                          *args], capture_output=True, text=True, timeout=5, env=env)
    return out.stdout.splitlines()


def wait_for(check, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (OSError, subprocess.TimeoutExpired):
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


class Group:
    def __init__(self, entrypoint, tmp):
        self.entrypoint, self.tmp = entrypoint, tmp
        self.nodes = [free_port() for _ in range(3)]
        self.sentinels = [free_port() for _ in range(3)]
        self.processes = {}
        self.stale_sentinels = []  # fake sentinels listed before the real ones
        self.secrets = {}
        for name, text in (("redis", DATA_PASSWORD), ("sentinel", SENTINEL_PASSWORD),
                           ("placeholder", "CHANGE-ME-redis")):
            path = os.path.join(tmp, f"{name}-password")
            with open(path, "w") as f:
                f.write(text + "\n")
            self.secrets[name] = path

    def env(self, port, redis_password="redis"):
        conf = os.path.join(self.tmp, f"conf-{port}")
        data = os.path.join(self.tmp, f"data-{port}")
        os.makedirs(conf, exist_ok=True)
        os.makedirs(data, exist_ok=True)
        return dict(os.environ, PRIMARY_NAME=NAME, SELF_HOST="127.0.0.1", SELF_PORT=str(port),
                    SEED=f"127.0.0.1:{self.nodes[0]}",
                    NODES=" ".join(f"127.0.0.1:{p}" for p in self.nodes),
                    SENTINELS=" ".join(f"127.0.0.1:{p}"
                                       for p in self.stale_sentinels + self.sentinels),
                    QUORUM="2", DOWN_AFTER_MS="1000",
                    REDIS_PASSWORD_FILE=self.secrets[redis_password],
                    SENTINEL_PASSWORD_FILE=self.secrets["sentinel"], CONF_DIR=conf, DATA_DIR=data)

    def start(self, role, port):
        log = open(os.path.join(self.tmp, f"{role}-{port}.log"), "a")
        args = ["--bind", "127.0.0.1"]
        if role == "node":
            args += ["--appendonly", "yes", "--appendfsync", "always", "--save", "",
                     "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"]
        self.processes[port] = subprocess.Popen(["sh", self.entrypoint, role, *args],
                                                env=self.env(port), stdout=log, stderr=log)
        wait_for(lambda: socket.create_connection(("127.0.0.1", port), 1).close() or True, 15,
                 f"{role} on {port}")

    def log(self, role, port):
        with open(os.path.join(self.tmp, f"{role}-{port}.log")) as f:
            return f.read()

    def kill(self, port):
        self.processes[port].send_signal(signal.SIGKILL)
        self.processes[port].wait()

    def role(self, port):
        return cli(port, DATA_PASSWORD, "ROLE")

    def named_primary(self, sentinel):
        return cli(sentinel, SENTINEL_PASSWORD, "SENTINEL", "get-master-addr-by-name", NAME)

    def stop(self):
        for p in self.processes.values():
            if p.poll() is None:
                p.kill()
                p.wait()


class StaleSentinel:
    """A sentinel that has not heard of the failover yet: answers every command (AUTH included)
    with the old primary's address, in RESP, as `SENTINEL get-master-addr-by-name` does."""

    def __init__(self, primary_port):
        self.answer = (f"*2\r\n$9\r\n127.0.0.1\r\n${len(str(primary_port))}\r\n"
                       f"{primary_port}\r\n").encode()
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen()
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    while conn.recv(4096):
                        conn.sendall(self.answer)
                except OSError:
                    pass

    def close(self):
        self.server.close()


def main():
    entrypoint = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="redis-ha-") as tmp:
        g = Group(entrypoint, tmp)
        try:
            run(g)
        except AssertionError as e:
            print("FAIL:", e)
            for name in sorted(os.listdir(tmp)):
                if name.endswith(".log"):
                    print(f"--- {name}\n{open(os.path.join(tmp, name)).read()[-1500:]}")
            return 1
        finally:
            g.stop()
    print("ok")
    return 0


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def run(g):
    n0, n1, n2 = g.nodes
    # A placeholder password left in the overlay: the pod refuses to start, saying why.
    refused = subprocess.run(["sh", g.entrypoint, "node"], env=g.env(free_port(), "placeholder"),
                             capture_output=True, text=True, timeout=30)
    check(refused.returncode == 2 and "placeholder" in refused.stderr,
          f"a placeholder password was not refused: {refused.returncode} {refused.stderr!r}")

    # First start: no sentinel, no primary anywhere: the seed is the primary.
    g.start("node", n0)
    check("starts as the primary (seed)" in g.log("node", n0), g.log("node", n0))
    for port in (n1, n2):
        g.start("node", port)
        check(f"replica of 127.0.0.1:{n0} (node " in g.log("node", port), g.log("node", port))
    check(cli(n0, "wrong", "PING") != ["PONG"], "the data node accepted a wrong password")
    wait_for(lambda: sum("state=online" in l for l in cli(n0, DATA_PASSWORD, "INFO", "replication")) == 2,
             30, "two replicas online")
    for port in g.sentinels:
        g.start("sentinel", port)
    check(f"watches 127.0.0.1:{n0}" in g.log("sentinel", g.sentinels[0]), g.log("sentinel", g.sentinels[0]))
    check(cli(g.sentinels[0], "", "PING") != ["PONG"], "a sentinel answered without its password")

    def settled():
        for s in g.sentinels:
            others = cli(s, SENTINEL_PASSWORD, "SENTINEL", "sentinels", NAME)
            replicas = cli(s, SENTINEL_PASSWORD, "SENTINEL", "replicas", NAME)
            if others.count("name") < 2 or replicas.count("name") < 2:
                return False
        return True
    wait_for(settled, 60, "the sentinels to know each other and both replicas")
    check(cli(n0, DATA_PASSWORD, "SET", "accepted", "job-1") == ["OK"], "SET on the primary")
    check(cli(n0, DATA_PASSWORD, "WAIT", "2", "2000") == ["2"], "both replicas acknowledged")

    # The primary's pod dies; the sentinels promote a replica.
    g.kill(n0)
    wait_for(lambda: g.named_primary(g.sentinels[1]) in (["127.0.0.1", str(n1)], ["127.0.0.1", str(n2)]),
             60, "the sentinels to promote a replica")
    new = int(g.named_primary(g.sentinels[1])[1])
    wait_for(lambda: g.role(new)[:1] == ["master"], 30, "the promoted node to be primary")

    # Its pod restarts on the same volume: the entrypoint asks the sentinels and rejoins as a
    # replica of the new primary instead of a second primary, even though the first sentinel it
    # asks has not heard of the failover yet and names this very node.
    stale = StaleSentinel(n0)
    g.stale_sentinels = [stale.port]
    g.start("node", n0)
    g.stale_sentinels = []
    stale.close()
    log = g.log("node", n0)
    check(f"replica of 127.0.0.1:{new} (sentinel " in log, log)
    wait_for(lambda: g.role(n0)[:1] == ["slave"] and g.role(n0)[2:3] == [str(new)]
             and g.role(n0)[3:4] == ["connected"], 30, "the old primary to replicate the new one")
    check(cli(n0, DATA_PASSWORD, "GET", "accepted") == ["job-1"], "the write before the kill")
    check(cli(new, DATA_PASSWORD, "SET", "after", "x") == ["OK"], "SET on the new primary")

    # A sentinel's pod restarts (its configuration on an emptyDir is gone): it watches the
    # current primary, learnt from the other sentinels.
    s0 = g.sentinels[0]
    g.kill(s0)
    g.start("sentinel", s0)
    last_start = [l for l in g.log("sentinel", s0).splitlines() if "redis-ha: sentinel" in l][-1]
    check(f"watches 127.0.0.1:{new} (sentinel " in last_start, last_start)
    check(g.named_primary(s0) == ["127.0.0.1", str(new)], f"restarted sentinel names {g.named_primary(s0)}")

    # The primary's pod is stopped (a rollout): its preStop hands over to a replica first.
    wait_for(settled, 60, "the sentinels to know the restarted node")
    prestop = subprocess.run(["sh", g.entrypoint, "prestop"], env=g.env(new), capture_output=True,
                             text=True, timeout=60)
    check(prestop.returncode == 0, prestop.stderr)
    check(g.role(new)[:1] == ["slave"], f"after preStop the primary is still {g.role(new)[:1]}")
    after = g.named_primary(g.sentinels[1])
    check(after != ["127.0.0.1", str(new)] and g.role(int(after[1]))[:1] == ["master"],
          f"the sentinels name {after}")
    # On a replica the hook does nothing.
    check(subprocess.run(["sh", g.entrypoint, "prestop"], env=g.env(new), timeout=30).returncode == 0,
          "preStop on a replica")


if __name__ == "__main__":
    sys.exit(main())
