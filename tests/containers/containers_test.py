#!/usr/bin/python3
"""The service run from its container images, as Kubernetes would run it (issue 16).

Two checks, each a ctest test (tests/CMakeLists.txt, label `containers`):

  service    Redis, the six workers, the runner and the gateway as podman containers on a podman
             network of their own, each with the container spec of deploy/k8s/base as
             `kubectl kustomize` renders it: the image, args, environment (the ConfigMaps
             verbatim: services are reached by their Service names and ports, given to every
             container as host entries), the pod's securityContext (uid/gid 10001, read-only
             root file system with no tmpfs podman would add, every capability dropped, no
             privilege escalation), the memory limit, and the volumes at the manifests' mount
             paths (keys file, model packages read-only, writable scratch and /tmp, Redis data).
             A component is ready when every probe of its manifest passes (httpGet, grpc, exec,
             tcpSocket), within its startupProbe's budget. Then, through the gateway container:
             /health (with the version git gives), a prediction of every task, an async job,
             both workflows (the variant one reading and writing the local S3 server of
             tests/support/s3-server), MCP initialize and tools/list; a worker container
             killed makes its task answer 503, started again it answers 200.
  manifests  the images agree with the manifests of every overlay: image names and the dev
             tag, the user each runs as (runAsUser), exposed ports (containerPorts), entrypoint
             binaries, the mount points and the models directory, no compiler or source in the
             runtime images; the probes' paths are exercised by `service`.

Building images costs far more than CI's budget, so both run only when asked
(DNASERVE_TEST_CONTAINERS=1, which `scripts/test --containers` sets after scripts/build-images);
otherwise they exit 77, which ctest reports as skipped.

  containers_test.py service|manifests --root SRC --build-dir BUILD --keys-tool BIN [--tag TAG]
"""

import argparse
import ipaddress
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib

SKIP = 77
TASKS = ["promoter", "splice", "enhancer", "chromatin", "annotation", "expression"]
BUCKET = "cohort-data"
S3_ACCESS_KEY = "AKIDCONTAINERTEST"
UID = 10001


def log(message):
    print(f"[containers] {message}", flush=True)


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def run(argv, check_rc=True, capture=True, env=None, timeout=600):
    result = subprocess.run(argv, stdout=subprocess.PIPE if capture else None,
                            stderr=subprocess.PIPE if capture else None, text=True, env=env,
                            timeout=timeout)
    if check_rc and result.returncode != 0:
        raise Failure(f"{' '.join(argv)} exited {result.returncode}: {result.stderr.strip()[-2000:]}")
    return result


# --- the manifests ------------------------------------------------------------------------------

def render(overlay):
    """`kubectl kustomize` of an overlay, as JSON objects (YAML read by the npm package `yaml`
    that tests/deploy pins, as validate_manifests.js reads it)."""
    out = run([os.environ.get("KUBECTL", "kubectl"), "kustomize", overlay]).stdout
    to_json = ("const Y = require('yaml'); let s = ''; process.stdin.on('data', d => s += d);"
               "process.stdin.on('end', () => console.log(JSON.stringify("
               "Y.parseAllDocuments(s).map(d => d.toJSON()).filter(Boolean))));")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run(["node", "-e", to_json], input=out, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "NODE_PATH": os.path.join(root, "deploy/node_modules")})
    if result.returncode != 0:
        raise Failure(f"reading the rendered {overlay}: {result.stderr.strip()} "
                      "(npm ci --prefix tests/deploy: scripts/install-deps)")
    return json.loads(result.stdout)


class Manifests:
    def __init__(self, docs):
        self.docs = docs
        self.workloads = {d["metadata"]["name"]: d for d in docs
                          if d["kind"] in ("Deployment", "StatefulSet")}
        self.config_maps = {d["metadata"]["name"]: d.get("data", {}) for d in docs
                            if d["kind"] == "ConfigMap"}

    def pod(self, workload):
        return self.workloads[workload]["spec"]["template"]["spec"]

    def container(self, workload):
        containers = self.pod(workload)["containers"]
        check(len(containers) == 1, f"{workload}: one container expected")
        return containers[0]

    def env(self, workload, pod_name):
        """The environment the kubelet would give the container (ConfigMaps, then env)."""
        c = self.container(workload)
        env = {}
        for source in c.get("envFrom", []):
            name = source["configMapRef"]["name"]
            check(name in self.config_maps, f"{workload}: no ConfigMap {name}")
            env.update(self.config_maps[name])
        for var in c.get("env", []):
            if "value" in var:
                env[var["name"]] = var["value"]
            elif var.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name":
                env[var["name"]] = pod_name
            else:
                raise Failure(f"{workload}: env {var['name']} has a source the test cannot give")
        return env

    def port(self, workload, port):
        """A probe's port (a name or a number) as a number."""
        if isinstance(port, int):
            return port
        for p in self.container(workload).get("ports", []):
            if p.get("name") == port:
                return p["containerPort"]
        raise Failure(f"{workload}: no container port named {port}")


def image_name(image, tag):
    """The local image a manifest's `image:` names, at `tag` (the name without registry/tag)."""
    name = image.split("@")[0]
    if ":" in name.split("/")[-1]:
        name = name.rsplit(":", 1)[0]
    return f"{name.split('/')[-1]}:{tag}"


def memory_limit(quantity):
    units = {"Ki": "k", "Mi": "m", "Gi": "g", "K": "k", "M": "m", "G": "g"}
    for suffix, unit in units.items():
        if quantity.endswith(suffix):
            return quantity[: -len(suffix)] + unit
    return quantity


# --- podman ---------------------------------------------------------------------------------------

def podman(*args, check_rc=True, timeout=300):
    return run(["podman", *args], check_rc=check_rc, timeout=timeout)


def inspect_image(image):
    result = podman("image", "inspect", image, check_rc=False)
    if result.returncode != 0:
        raise Failure(f"no image {image}: build it with scripts/build-images")
    return json.loads(result.stdout)[0]


# --- probes (what the kubelet runs) ----------------------------------------------------------------

def grpc_health(address, port, service):
    """grpc.health.v1.Health/Check over HTTP/2 (curl), as the kubelet's grpc probe: SERVING?"""
    encoded = service.encode()
    message = b"\x0a" + bytes([len(encoded)]) + encoded
    frame = b"\x00" + len(message).to_bytes(4, "big") + message
    result = subprocess.run(
        ["curl", "-s", "--http2-prior-knowledge", "--max-time", "3", "-H", "content-type: application/grpc",
         "-H", "te: trailers", "--data-binary", "@-", "-o", "-",
         f"http://{address}:{port}/grpc.health.v1.Health/Check"],
        input=frame, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return result.returncode == 0 and result.stdout[5:] == b"\x08\x01"


def http_ok(url, timeout=3):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return 200 <= r.status < 400
    except Exception:
        return False


def probe_passes(manifests, workload, container_name, address, probe):
    if "httpGet" in probe:
        get = probe["httpGet"]
        return http_ok(f"http://{address}:{manifests.port(workload, get['port'])}{get['path']}")
    if "grpc" in probe:
        g = probe["grpc"]
        return grpc_health(address, manifests.port(workload, g["port"]), g.get("service", ""))
    if "exec" in probe:
        r = podman("exec", container_name, *probe["exec"]["command"], check_rc=False)
        return r.returncode == 0
    if "tcpSocket" in probe:
        try:
            socket.create_connection((address, manifests.port(workload, probe["tcpSocket"]["port"])),
                                     timeout=3).close()
            return True
        except OSError:
            return False
    raise Failure(f"{workload}: a probe of a kind the test does not know: {probe}")


# --- the service ---------------------------------------------------------------------------------

class Cluster:
    """The containers of one test run, on their own podman network; removed at the end."""

    def __init__(self, manifests, tag, prefix):
        self.manifests = manifests
        self.tag = tag
        self.prefix = prefix
        self.network = f"{prefix}-net"
        self.names = {}      # workload -> container name
        self.addresses = {}  # workload -> IP on the network
        self.started = {}    # workload -> time of its podman run/start
        podman("network", "create", self.network)
        info = json.loads(podman("network", "inspect", self.network).stdout)[0]
        subnet = info["subnets"][0] if "subnets" in info else info["plugins"][0]["ipam"]["ranges"][0][0]
        self.subnet = ipaddress.ip_network(subnet["subnet"])
        self.gateway_ip = str(subnet.get("gateway") or next(self.subnet.hosts()))
        hosts = list(self.subnet.hosts())
        for i, workload in enumerate(sorted(manifests.workloads)):
            self.addresses[workload] = str(hosts[10 + i])
            self.names[workload] = f"{prefix}-{workload}"

    def close(self):
        for name in self.names.values():
            podman("rm", "-f", "-t", "0", name, check_rc=False)
        podman("network", "rm", "-f", self.network, check_rc=False)

    def logs(self, workload, lines=40):
        r = podman("logs", "--tail", str(lines), self.names[workload], check_rc=False)
        return (r.stdout + r.stderr).strip()

    def run(self, workload, volumes, extra_env=None, extra_mounts=()):
        """podman run of the workload's container as its manifest declares it."""
        m = self.manifests
        pod, c = m.pod(workload), m.container(workload)
        sc_pod, sc = pod.get("securityContext", {}), c.get("securityContext", {})
        check(sc_pod.get("runAsNonRoot") is True, f"{workload}: runAsNonRoot")
        user, group = sc_pod["runAsUser"], sc_pod.get("runAsGroup", sc_pod["runAsUser"])
        # A fixed MAC address with the fixed IP: a restarted container keeps both, as a pod keeps
        # its network across a container restart in Kubernetes (with a new MAC, the others would
        # send to the old one until their ARP entries expire, some 40 s).
        mac = "02:00:0a:%02x:%02x:%02x" % tuple(int(x) for x in self.addresses[workload].split(".")[1:])
        argv = ["podman", "run", "-d", "--name", self.names[workload],
                "--network", self.network, "--ip", self.addresses[workload], "--mac-address", mac,
                "--hostname", f"{workload}-0",
                "--user", f"{user}:{group}"]
        if sc.get("readOnlyRootFilesystem"):
            # Kubernetes adds no tmpfs: only the manifest's volumes are writable.
            argv += ["--read-only", "--read-only-tmpfs=false"]
        if sc.get("capabilities", {}).get("drop") == ["ALL"]:
            argv += ["--cap-drop", "ALL"]
        if sc.get("allowPrivilegeEscalation") is False:
            argv += ["--security-opt", "no-new-privileges"]
        limit = c.get("resources", {}).get("limits", {}).get("memory")
        if limit:
            argv += ["--memory", memory_limit(limit)]
        # Kubernetes Services: every Service name resolves to its pods' address.
        for other, address in self.addresses.items():
            argv += ["--add-host", f"{other}:{address}"]
        env = m.env(workload, f"{workload}-0")
        env.update(extra_env or {})
        for key, value in sorted(env.items()):
            argv += ["--env", f"{key}={value}"]
        pod_volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for mount in c.get("volumeMounts", []):
            name = mount["name"]
            check(name in volumes, f"{workload}: the manifest mounts volume '{name}', which the test "
                                   "does not provide: teach the test what it holds")
            check(name in pod_volumes or self.is_claim_template(workload, name),
                  f"{workload}: volume {name} is mounted but not declared")
            options = "ro" if mount.get("readOnly") else "rw"
            argv += ["-v", f"{volumes[name]}:{mount['mountPath']}:{options}"]
        for host_path, path in extra_mounts:
            argv += ["-v", f"{host_path}:{path}:ro"]
        argv += [image_name(c["image"], self.tag), *c.get("args", [])]
        self.started[workload] = time.monotonic()
        run(argv)

    def is_claim_template(self, workload, name):
        spec = self.manifests.workloads[workload]["spec"]
        return any(t["metadata"]["name"] == name for t in spec.get("volumeClaimTemplates", []))

    def restart(self, workload):
        self.started[workload] = time.monotonic()
        podman("start", self.names[workload])

    def wait_ready(self, workload):
        """Seconds from podman run/start until every probe of the manifest passes."""
        c = self.manifests.container(workload)
        probes = [c[k] for k in ("startupProbe", "readinessProbe", "livenessProbe") if k in c]
        check(probes, f"{workload}: no probes")
        startup = c.get("startupProbe", probes[0])
        budget = startup.get("periodSeconds", 10) * startup.get("failureThreshold", 3)
        deadline = self.started[workload] + budget
        while time.monotonic() < deadline:
            state = podman("inspect", "--format", "{{.State.Status}}", self.names[workload],
                           check_rc=False).stdout.strip()
            check(state == "running",
                  f"{workload} is {state or 'gone'}:\n{self.logs(workload)}")
            if all(probe_passes(self.manifests, workload, self.names[workload],
                                self.addresses[workload], p) for p in probes):
                return time.monotonic() - self.started[workload]
            time.sleep(0.2)
        raise Failure(f"{workload}: its probes did not pass within the startup budget of {budget} s:\n"
                      f"{self.logs(workload)}")


def random_dna(length, seed):
    rng = random.Random(seed)
    return "".join(rng.choice("ACGT") for _ in range(length))


class Api:
    def __init__(self, base, key):
        self.base, self.key = base, key

    def call(self, method, path, body=None, headers=None, timeout=300):
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.key}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            request.add_header(k, v)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as r:
                status, text = r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read().decode()
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def poll(self, job_id, limit_seconds=600):
        deadline = time.monotonic() + limit_seconds
        while time.monotonic() < deadline:
            status, doc = self.call("GET", f"/v1/tasks/jobs/{job_id}")
            if status != 202:
                return status, doc
            time.sleep(0.5)
        raise Failure(f"job {job_id} did not finish within {limit_seconds} s")


def expected_version(root):
    def git(*args):
        return subprocess.run(["git", "-C", root, *args], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "TZ": "UTC"}, check=True).stdout.strip()
    day = git("log", "-1", "--format=%cd", "--date=format-local:%Y.%m.%d")
    days = git("log", "--format=%cd", "--date=format-local:%Y.%m.%d").splitlines()
    return f"{day}.{days.count(day)} ({git('rev-parse', '--short=7', 'HEAD')})"


def s3_request(method, endpoint, key, secret, path, data_file=None, out_file=None):
    argv = ["curl", "-fsS", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", f"{S3_ACCESS_KEY}:{secret}",
            "-X", method]
    if data_file:
        digest = run(["sha256sum", data_file]).stdout.split()[0]
        argv += ["-H", f"x-amz-content-sha256: {digest}", "-T", data_file]
    else:
        argv += ["-H", "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"]
    argv += ["-o", out_file or "/dev/null", f"{endpoint}/{BUCKET}/{path}"]
    run(argv)


def service_test(args):
    root, build = args.root, args.build_dir
    manifests = Manifests(render(os.path.join(root, "deploy/k8s/base")))
    for workload, doc in manifests.workloads.items():
        inspect_image(image_name(manifests.container(workload)["image"], args.tag))

    scripts_env = {**os.environ, "DNASERVE_BUILD_DIR": build}
    work = tempfile.mkdtemp(prefix="dnaserve-containers-", dir=build)
    os.chmod(work, 0o755)
    prefix = f"dnaserve-ctest-{os.getpid()}"
    cluster = None
    s3_server = None
    timings = []
    try:
        # The volumes: what each manifest mounts, made on this host.
        def directory(name, mode=0o755, owner=None):
            path = os.path.join(work, name)
            os.makedirs(path, exist_ok=True)
            os.chmod(path, mode)
            if owner is not None:
                os.chown(path, owner, owner)
            return path

        log("assembling the model packages (scripts/serving-models)")
        models = run([os.path.join(root, "scripts/serving-models"), os.path.join(work, "models")],
                     env=scripts_env).stdout.strip().splitlines()[-1]
        run(["chmod", "-R", "a+rX", models])
        keys_dir = directory("keys")
        out = run([args.keys_tool, "new", "--client", "ctest", "--rate", "600", "--concurrency", "4",
                   "--s3-read", f"s3://{BUCKET}/", "--s3-write", f"s3://{BUCKET}/"]).stdout.splitlines()
        api_key = out[0].strip()
        with open(os.path.join(keys_dir, "keys.json"), "w") as f:
            f.write('{"keys": [%s]}\n' % out[-1])
        os.chmod(os.path.join(keys_dir, "keys.json"), 0o644)  # a Secret volume's default mode

        # The variant workflow's data (scripts/build-catalogue, Debian packages) and object store.
        built = dict(line.split("=", 1) for line in run(
            [os.path.join(root, "scripts/build-catalogue")], env=scripts_env).stdout.split())
        grch37 = directory("grch37")
        for path in (built["catalogue"], built["fasta"], built["fasta"] + ".fai", built["fasta"] + ".gzi"):
            shutil.copy(path, grch37)
        run(["chmod", "-R", "a+rX", grch37])
        secret = "container-test/" + "".join(random.choice("abcdefXYZ0123") for _ in range(24))
        s3_secret_dir = directory("s3-secret")
        with open(os.path.join(s3_secret_dir, "secret"), "w") as f:
            f.write(secret + "\n")
        os.chown(os.path.join(s3_secret_dir, "secret"), UID, UID)
        os.chmod(os.path.join(s3_secret_dir, "secret"), 0o400)

        cluster = Cluster(manifests, args.tag, prefix)
        # Redis, then the workers, the runner and the gateway, each ready before the next.
        redis = "dnaserve-redis"
        cluster.run(redis, {"data": directory("redis-data", 0o770, UID)})
        timings.append(("redis", cluster.wait_ready(redis)))
        # The object store on the host, at the network's gateway address (which exists once a
        # container has joined the network).
        s3_port = free_port()
        s3_endpoint = f"http://{cluster.gateway_ip}:{s3_port}"
        s3_log = open(os.path.join(work, "s3.log"), "w")
        s3_server = subprocess.Popen(
            ["node", os.path.join(root, "tests/support/s3-server/serve.js"), "--port", str(s3_port),
             "--directory", directory("s3-data"), "--access-key", S3_ACCESS_KEY, "--secret-key", secret,
             "--bucket", BUCKET, "--address", cluster.gateway_ip], stdout=s3_log, stderr=s3_log)
        wait_for(lambda: port_open(cluster.gateway_ip, s3_port), 30, "the S3 server")

        workers = [w for w in manifests.workloads if w.startswith("dnaserve-worker-")]
        check(sorted(w.rsplit("-", 1)[1] for w in workers) == sorted(TASKS),
              f"one worker Deployment per task expected, got {workers}")
        for w in workers:
            cluster.run(w, {"models": models, "tmp": directory(f"tmp-{w}", 0o1777)})
        for w in workers:
            timings.append((w, cluster.wait_ready(w)))
        runner = "dnaserve-runner"
        cluster.run(runner, {"variant-work": directory("variant-work", 0o1777)},
                    extra_env={"DNASERVE_S3_ENDPOINT": s3_endpoint, "DNASERVE_S3_REGION": "us-east-1",
                               "DNASERVE_S3_ACCESS_KEY_ID": S3_ACCESS_KEY,
                               "DNASERVE_S3_SECRET_ACCESS_KEY_FILE": "/etc/dnaserve/s3/secret",
                               "DNASERVE_GRCH37_CATALOGUE": "/grch37/" + os.path.basename(built["catalogue"]),
                               "DNASERVE_GRCH37_FASTA": "/grch37/" + os.path.basename(built["fasta"]),
                               # one core's worth of expression calls on a shared machine
                               "DNASERVE_VARIANT_SCORE_CONCURRENCY": "1"},
                    extra_mounts=[(grch37, "/grch37"), (s3_secret_dir, "/etc/dnaserve/s3")])
        timings.append((runner, cluster.wait_ready(runner)))
        gateway = "dnaserve-gateway"
        cluster.run(gateway, {"keys": keys_dir})
        timings.append((gateway, cluster.wait_ready(gateway)))
        log("ready, seconds from `podman run` until every probe of the manifest passes:")
        for name, seconds in timings:
            log(f"  {name:28s} {seconds:6.1f}")

        http_port = manifests.port(gateway, "http")
        api = Api(f"http://{cluster.addresses[gateway]}:{http_port}", api_key)

        # /health, with the version git gives this checkout.
        status, doc = api.call("GET", "/health")
        check(status == 200, f"/health: {status} {doc}")
        # The version: checked last, so that images of an older commit still show the rest.
        health_version = json.dumps(doc)
        log(f"/health: 200 {health_version}")

        # A prediction of every task (the bodies the integration tests use).
        for task in TASKS:
            length = {"annotation": 3000, "splice": 2000, "expression": 9198}.get(task, 1200)
            body = {"sequence": random_dna(length, hash(task) % 1000)}
            if task == "expression":
                body["options"] = {"description": "adult liver tissue"}
            status, doc = api.call("POST", f"/v1/tasks/{task}/predict", body)
            check(status == 200 and "data" in doc, f"{task} predict: {status} {str(doc)[:500]}")
            log(f"{task} predict: 200")

        # An asynchronous job, run by the runner container.
        status, doc = api.call("POST", "/v1/tasks/annotation/predict", {"sequence": random_dna(3000, 7)},
                               headers={"Prefer": "respond-async"})
        check(status == 202, f"async annotation: {status} {doc}")
        status, doc = api.poll(doc["data"]["job_id"])
        check(status == 200 and "data" in doc, f"async annotation job: {status} {str(doc)[:500]}")
        log("async job: 202, then 200")

        # The find-genes workflow.
        status, doc = api.call("POST", "/v1/workflows/find-genes-and-predict-expression",
                               {"sequence": random_dna(12000, 21),
                                "options": {"description": "adult liver tissue"}})
        check(status == 200 and doc["data"].get("task") == "find_genes_and_predict_expression",
              f"find-genes workflow: {status} {str(doc)[:500]}")
        log(f"find-genes workflow: 200 ({len(doc['data'].get('expression_predictions', []))} genes)")

        # The variant workflow: a chr20 VCF (Debian's vt-examples) in and an annotated copy out.
        vcf = run([sys.executable, os.path.join(root, "scripts/debian_files.py"), "vt-examples",
                   "usr/share/doc/vt/examples/normalize/01_IN.vcf.gz"], env=scripts_env).stdout.split()[-1]
        s3_request("PUT", s3_endpoint, S3_ACCESS_KEY, secret, "inputs/in.vcf.gz", data_file=vcf)
        status, doc = api.call("POST", "/v1/workflows/genomic-variant-interpretation",
                               {"input": {"type": "s3_object", "uri": f"s3://{BUCKET}/inputs/in.vcf.gz"},
                                "options": {"genome_build": "GRCh37", "window": 5000, "tissues": ["liver"]}},
                               headers={"Prefer": "respond-async"})
        check(status == 202, f"variant workflow: {status} {doc}")
        status, doc = api.poll(doc["data"]["job_id"])
        check(status == 200, f"variant workflow job: {status} {str(doc)[:800]}")
        out_uri = doc["data"]["output"]["uri"]
        check(out_uri.startswith(f"s3://{BUCKET}/"), f"variant output at {out_uri}")
        annotated = os.path.join(work, "annotated.vcf.gz")
        s3_request("GET", s3_endpoint, S3_ACCESS_KEY, secret, out_uri[len(f"s3://{BUCKET}/"):],
                   out_file=annotated)
        with open(annotated, "rb") as f:
            text = zlib.decompressobj(31).decompress(f.read()).decode(errors="replace")
        check("##INFO=<ID=GEX" in text, "the annotated VCF has no GEX annotation header")
        log(f"variant workflow: 202, then 200; annotated copy {out_uri} read back")

        # MCP, stateless Streamable HTTP.
        mcp_headers = {"Accept": "application/json, text/event-stream"}
        status, doc = api.call("POST", "/mcp", {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "containers-test", "version": "1"}}}, headers=mcp_headers)
        check(status == 200 and doc.get("result", {}).get("protocolVersion") == "2025-06-18",
              f"MCP initialize: {status} {doc}")
        status, doc = api.call("POST", "/mcp", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                               headers={**mcp_headers, "MCP-Protocol-Version": "2025-06-18"})
        tools = [t["name"] for t in doc.get("result", {}).get("tools", [])] if status == 200 else []
        check(any(t.startswith("predict_") for t in tools), f"MCP tools/list: {status} {str(doc)[:500]}")
        log(f"MCP: initialize, tools/list ({len(tools)} tools)")

        # A worker container killed: its task answers 503; started again: 200.
        victim = "dnaserve-worker-promoter"
        body = {"sequence": random_dna(1200, 3)}
        podman("kill", "--signal", "KILL", cluster.names[victim])
        status, doc = api.call("POST", "/v1/tasks/promoter/predict", body)
        check(status == 503, f"promoter predict with its worker killed: {status} {str(doc)[:500]}")
        log(f"worker killed: promoter predict 503 ({doc['error']['code']})")
        status, doc = api.call("POST", "/v1/tasks/splice/predict", {"sequence": random_dna(2000, 4)})
        check(status == 200, f"splice predict while the promoter worker is down: {status}")
        cluster.restart(victim)
        ready = cluster.wait_ready(victim)
        deadline = time.monotonic() + 60
        while True:
            status, doc = api.call("POST", "/v1/tasks/promoter/predict", body)
            if status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        check(status == 200, f"promoter predict after its worker restarted: {status} {str(doc)[:500]}")
        log(f"worker restarted: ready after {ready:.1f} s, promoter predict 200 again after "
            f"{time.monotonic() - cluster.started[victim]:.1f} s")

        # Each container's root file system refuses writes; its writable volumes take them (as
        # its own user: the uid of the manifest).
        for workload, name in cluster.names.items():
            r = podman("exec", name, "sh", "-c", ": > /write-probe", check_rc=False)
            check(r.returncode != 0 and "Read-only file system" in r.stderr,
                  f"{workload}: its root file system took a write ({r.stderr.strip()})")
            for mount in manifests.container(workload).get("volumeMounts", []):
                if not mount.get("readOnly"):
                    probe = os.path.join(mount["mountPath"], ".write-probe")
                    r = podman("exec", name, "sh", "-c", f': > "{probe}" && rm "{probe}"', check_rc=False)
                    check(r.returncode == 0, f"{workload}: cannot write to {mount['mountPath']}: {r.stderr}")
        log("root file systems read-only, volumes writable by uid 10001")
        check(expected_version(root) in health_version,
              f"/health reports {health_version}, expected version {expected_version(root)}: the "
              "images are of another commit (scripts/build-images)")
        log("PASS")
        return 0
    except Failure:
        if cluster is not None:
            for workload in cluster.names:
                if workload in cluster.started:
                    print(f"--- logs of {workload} ---\n{cluster.logs(workload, 15)}", file=sys.stderr)
        raise
    finally:
        if cluster is not None:
            cluster.close()
        if s3_server is not None:
            s3_server.terminate()
            s3_server.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def port_open(address, port):
    try:
        socket.create_connection((address, port), timeout=1).close()
        return True
    except OSError:
        return False


def wait_for(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise Failure(f"{what} did not come up within {seconds} s")


# --- manifests and images agree ------------------------------------------------------------------

RUNTIME_FORBIDDEN = ["gcc", "g++", "cc", "c++", "clang", "cmake", "make", "ld", "as", "protoc", "npm", "node"]


def manifests_test(args):
    root = args.root
    overlays = {name: Manifests(render(os.path.join(root, "deploy/k8s/overlays", name)))
                for name in ("dev", "prod")}
    base = Manifests(render(os.path.join(root, "deploy/k8s/base")))
    problems = []
    seen_images = {}
    for workload in base.workloads:
        c = base.container(workload)
        pod = base.pod(workload)
        image = image_name(c["image"], args.tag)
        config = inspect_image(image)["Config"]
        seen_images[image] = config
        where = f"{workload} ({image})"
        # The dev overlay runs exactly these images, at the tag scripts/build-images gives.
        dev_image = overlays["dev"].container(workload)["image"]
        if dev_image != f"{c['image']}:dev":
            problems.append(f"{where}: the dev overlay runs {dev_image}, not {c['image']}:dev")
        # The prod overlay runs the same target from its registry: <registry>/dnaserve/<target>.
        prod_image = overlays["prod"].container(workload)["image"]
        target = c["image"].removeprefix("dnaserve-")
        if not prod_image.rsplit(":", 1)[0].endswith(f"/dnaserve/{target}"):
            problems.append(f"{where}: the prod overlay runs {prod_image}, not .../dnaserve/{target}")
        # The user: runAsUser is the image's USER, and a user that exists in it.
        run_as = pod["securityContext"]["runAsUser"]
        if config.get("User") != str(run_as):
            problems.append(f"{where}: image USER {config.get('User')!r}, manifest runAsUser {run_as}")
        # Every containerPort is one the image exposes, and the other way round.
        exposed = sorted(int(p.split("/")[0]) for p in (config.get("ExposedPorts") or {}))
        declared = sorted(p["containerPort"] for p in c.get("ports", []))
        if exposed != declared:
            problems.append(f"{where}: image exposes {exposed}, manifest declares {declared}")
        # The image's environment does not contradict the ConfigMaps.
        image_env = dict(e.split("=", 1) for e in config.get("Env") or [])
        for key, value in base.env(workload, "x").items():
            if key in image_env and image_env[key] != value:
                problems.append(f"{where}: image sets {key}={image_env[key]}, manifest {value}")
        # What the container runs exists and is executable for its user; the probes' commands
        # exist; no compiler, build tool or source in a runtime image.
        entry = (config.get("Entrypoint") or []) + ([] if c.get("args") else (config.get("Cmd") or []))
        if not entry:
            problems.append(f"{where}: the image has no entrypoint (the manifest gives only args)")
            entry = ["/nonexistent"]
        script = [f'p=$(command -v "{entry[0]}") && test -x "$p" || {{ echo "not executable: {entry[0]}"; exit 1; }}']
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            command = c.get(probe, {}).get("exec", {}).get("command")
            if command:
                script.append(f'command -v "{command[0]}" >/dev/null || {{ echo "probe command {command[0]} missing"; exit 1; }}')
        for tool in RUNTIME_FORBIDDEN:
            script.append(f'! command -v "{tool}" >/dev/null || {{ echo "build tool in runtime image: {tool}"; exit 1; }}')
        script.append('! test -e /src || { echo "source /src in runtime image"; exit 1; }')
        script.append('! ls /usr/include/*.h >/dev/null 2>&1 || { echo "C headers in runtime image"; exit 1; }')
        # The paths the settings of each overlay name: on a volume the manifest mounts (writable
        # when the program writes there), or in the image (the dev overlay's bundled models, the
        # gateway's docs). A volume hides nothing the image holds at its mount point.
        for overlay_name, overlay in (("base", base), *overlays.items()):
            oc = overlay.container(workload)
            mounts = oc.get("volumeMounts", [])
            for key, value in sorted(overlay.env(workload, "x").items()):
                if not value.startswith("/"):
                    continue
                mount = next((m for m in mounts if (value + "/").startswith(m["mountPath"].rstrip("/") + "/")), None)
                if mount is None:
                    script.append(f'test -e "{value}" || {{ echo "{overlay_name}: {key}={value} is neither mounted nor in the image"; exit 1; }}')
                    if key == "DNASERVE_MODELS_DIR":
                        script.append(f'ls "{value}"/*/manifest.json >/dev/null 2>&1 || {{ echo "{overlay_name}: no model packages in {value}"; exit 1; }}')
                elif key.endswith("_WORK_DIR") and mount.get("readOnly"):
                    problems.append(f"{where}: {overlay_name}: {key}={value} is on a read-only volume")
            for m in mounts:
                script.append(f'test -z "$(ls -A "{m["mountPath"]}" 2>/dev/null)" || {{ echo "{overlay_name}: the volume at {m["mountPath"]} hides image content"; exit 1; }}')
        result = podman("run", "--rm", "--read-only", "--cap-drop", "ALL", "--user", str(run_as),
                        "--entrypoint", "/bin/sh", image, "-c", "\n".join(script), check_rc=False)
        if result.returncode != 0:
            problems.append(f"{where}: {(result.stdout + result.stderr).strip()}")
    for image, config in seen_images.items():
        size = inspect_image(image)["Size"]
        log(f"{image:28s} {size / 1e6:6.0f} MB  user {config.get('User')}  "
            f"ports {sorted((config.get('ExposedPorts') or {}).keys())}")
    if problems:
        raise Failure("the manifests and the images disagree:\n  " + "\n  ".join(problems))
    log("PASS: images and manifests agree")
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("check", choices=["service", "manifests"])
    parser.add_argument("--root", required=True)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--keys-tool", required=True)
    parser.add_argument("--tag", default="dev")
    args = parser.parse_args()
    if os.environ.get("DNASERVE_TEST_CONTAINERS") != "1":
        print("skipped: the container tests build on the images of scripts/build-images and run only "
              "when asked: scripts/test --containers (or DNASERVE_TEST_CONTAINERS=1 ctest -L containers)")
        return SKIP
    if shutil.which("podman") is None:
        print("FAIL: DNASERVE_TEST_CONTAINERS=1 but there is no podman: run scripts/build-images")
        return 1
    try:
        return service_test(args) if args.check == "service" else manifests_test(args)
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
