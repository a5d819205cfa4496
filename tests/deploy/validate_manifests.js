#!/usr/bin/env node
// Offline validation of dnaserve's Kubernetes manifests (deploy/k8s), run by ctest.
//
// For every overlay: render it with `kubectl kustomize` (no cluster needed), then
//   1. schema: every object against the Kubernetes JSON schema of its kind (npm kubernetes-models:
//      types, required fields, enums, formats);
//   2. fields: every object type-checked by the TypeScript compiler against the same models'
//      declarations, which rejects unknown fields (a misspelt field is otherwise silently dropped);
//   3. cross-object facts a schema cannot see: Service selectors select pods and their target
//      ports exist; probe ports exist; referenced ConfigMaps, Secrets, volumes and HPA targets
//      exist; NetworkPolicies select pods, deny by default in both directions, let only
//      gateways and runners reach workers and Redis, and only runners reach the object store;
//      every environment variable and flag given to a dnaserve binary is one that binary reads
//      (its --help lists them); termination grace periods cover the drain budgets; the runner
//      (issue 12) has its scratch volume and scales on the queue depth, and the gateway holds
//      no object-store setting and no scratch volume; a Redis Sentinel group (issue 26: the prod
//      overlay) gets only the network rules it needs, spreads over nodes, has disruption
//      budgets, and the gateways and runners use it (sentinel pods that exist, the group's name,
//      password files from the Secret keys the group's pods use).
//
//   node validate_manifests.js --gateway BIN --runner BIN --worker BIN OVERLAY_DIR...
//   node validate_manifests.js --gateway BIN --runner BIN --worker BIN --self-test GOOD_OVERLAY
//                              BROKEN_OVERLAY...
// --self-test proves the checks can fail: it breaks the good overlay's objects in one way per
// check and requires each to be rejected for that reason, and requires every BROKEN_OVERLAY (a
// deliberately broken overlay on disk) to be rejected, with the errors its expected-errors.txt
// lists (one regular expression a line) if it has one. KUBECTL names the kubectl to use.
"use strict";

const { execFileSync } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const HERE = __dirname;
function requireTool(name) {
  try {
    return require(name);
  } catch (e) {
    fail(`cannot load the npm package '${name}' from ${HERE}/node_modules: run scripts/install-deps ` +
         `(npm ci --prefix tests/deploy)`);
  }
}
function fail(message) {
  console.error(`validate_manifests: ${message}`);
  process.exit(2);
}

const YAML = requireTool("yaml");

// ---------------------------------------------------------------------------------------------
// Rendering

function kubectl() {
  return process.env.KUBECTL || "kubectl";
}

function render(overlay) {
  try {
    const out = execFileSync(kubectl(), ["kustomize", overlay], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    return { objects: YAML.parseAllDocuments(out).map((d) => d.toJS()).filter((o) => o) };
  } catch (e) {
    if (e.code === "ENOENT") {
      fail(`'${kubectl()}' not found: scripts/install-deps installs Debian's kubernetes-client`);
    }
    return { error: `kubectl kustomize ${overlay} failed: ${(e.stderr || e.message).trim()}` };
  }
}

const describe = (o) => `${o.kind}/${(o.metadata && o.metadata.name) || "?"}`;

// ---------------------------------------------------------------------------------------------
// 1. Schema

// kubernetes-models module of an apiVersion/kind: "apps/v1" Deployment -> apps/v1/Deployment,
// the core group "v1" -> v1/Service.
function modelPath(object) {
  if (typeof object.apiVersion !== "string" || typeof object.kind !== "string") return null;
  if (!/^[A-Za-z0-9.\/-]+$/.test(object.apiVersion) || !/^[A-Za-z0-9]+$/.test(object.kind)) {
    return null;
  }
  return `kubernetes-models/${object.apiVersion}/${object.kind}`;
}

function loadModel(object) {
  const modulePath = modelPath(object);
  if (!modulePath) return null;
  try {
    const mod = require(modulePath);
    return { modulePath, Model: mod[object.kind] };
  } catch (e) {
    return null;
  }
}

function schemaErrors(objects) {
  const errors = [];
  for (const object of objects) {
    const model = loadModel(object);
    if (!model || !model.Model) {
      errors.push(`schema: ${describe(object)}: apiVersion '${object.apiVersion}' kind ` +
                  `'${object.kind}' is not a Kubernetes kind this validator knows`);
      continue;
    }
    try {
      new model.Model(object).validate();
    } catch (e) {
      errors.push(`schema: ${describe(object)}: ${e.message.split("\n").join("; ")}`);
    }
  }
  return errors;
}

// ---------------------------------------------------------------------------------------------
// 2. Unknown fields, by the TypeScript compiler: each object becomes a literal typed as its kind's
// interface; excess-property checks reject any field the API does not have.

function fieldErrors(sets) {
  const lines = [];
  const owners = [];  // line index -> [set index, object]
  sets.forEach((objects, setIndex) => {
    objects.forEach((object, i) => {
      const model = loadModel(object);
      if (!model) return;  // reported by schemaErrors
      const id = `o${setIndex}_${i}`;
      lines.push(`import type { I${object.kind} as T${id} } from ${JSON.stringify(model.modulePath)};`);
      owners.push(null);
      lines.push(`export const ${id}: T${id} = ${JSON.stringify(object)};`);
      owners.push([setIndex, object]);
    });
  });
  const results = sets.map(() => []);
  if (lines.length === 0) return results;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dnaserve-manifests-"));
  const file = path.join(dir, "objects.ts");
  fs.writeFileSync(file, lines.join("\n") + "\n");
  // The compiler resolves kubernetes-models from this directory's node_modules.
  fs.symlinkSync(path.join(HERE, "node_modules"), path.join(dir, "node_modules"));
  const tsc = path.join(HERE, "node_modules", "typescript", "bin", "tsc");
  if (!fs.existsSync(tsc)) fail("typescript is not installed: run scripts/install-deps");
  fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({
    compilerOptions: { noEmit: true, strict: true, skipLibCheck: true, types: [], module: "commonjs",
                       moduleResolution: "node", target: "es2019", pretty: false },
    files: ["objects.ts"],
  }));
  let output = "";
  try {
    execFileSync(process.execPath, [tsc, "--project", dir],
                 { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    output = `${e.stdout || ""}${e.stderr || ""}`;
  }
  fs.rmSync(dir, { recursive: true, force: true });
  for (const line of output.split("\n")) {
    const m = /^.*objects\.ts\((\d+),\d+\): error (TS\d+: .*)$/.exec(line);
    if (!m) {
      if (line.trim()) results.forEach((r) => r.push(`fields: compiler: ${line.trim()}`));
      continue;
    }
    const owner = owners[Number(m[1]) - 1];
    if (!owner) continue;
    results[owner[0]].push(`fields: ${describe(owner[1])}: ${m[2]}`);
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// 3. Cross-object facts

const WORKLOAD_KINDS = new Set(["Deployment", "StatefulSet", "DaemonSet"]);

function workloads(objects) {
  return objects.filter((o) => WORKLOAD_KINDS.has(o.kind));
}
function podLabels(workload) {
  return (((workload.spec || {}).template || {}).metadata || {}).labels || {};
}
function podSpec(workload) {
  return ((workload.spec || {}).template || {}).spec || {};
}
function containers(workload) {
  const spec = podSpec(workload);
  return [...(spec.initContainers || []), ...(spec.containers || [])];
}
function matches(selector, labels) {
  return Object.entries(selector || {}).every(([k, v]) => labels[k] === v);
}
// A LabelSelector ({matchLabels, matchExpressions}); only matchLabels is used in deploy/.
function selects(labelSelector, labels) {
  if (!labelSelector) return false;
  if (labelSelector.matchExpressions && labelSelector.matchExpressions.length) return false;
  return matches(labelSelector.matchLabels, labels);
}
function selected(objects, labelSelector) {
  return workloads(objects).filter((w) => selects(labelSelector, podLabels(w)));
}
function portExists(workload, port) {
  return containers(workload).some((c) => (c.ports || []).some(
      (p) => (typeof port === "string" ? p.name === port : p.containerPort === port)));
}
function byKindName(objects, kind, name) {
  return objects.find((o) => o.kind === kind && o.metadata && o.metadata.name === name);
}

// The environment a container gets: name -> { value } from a ConfigMap or `value`, { valueFrom }
// for a reference, { fromSecret } from a Secret (its content is not inspected).
function containerEnv(objects, container) {
  const env = new Map();
  for (const from of container.envFrom || []) {
    const source = from.configMapRef
      ? byKindName(objects, "ConfigMap", from.configMapRef.name)
      : from.secretRef ? byKindName(objects, "Secret", from.secretRef.name) : null;
    for (const [k, v] of Object.entries((source && source.data) || {})) {
      env.set((from.prefix || "") + k, from.secretRef ? { fromSecret: true } : { value: v });
    }
  }
  for (const e of container.env || []) env.set(e.name, { value: e.value, valueFrom: e.valueFrom });
  return env;
}

// Environment variables and flags a dnaserve binary reads, from its --help.
function binaryInterface(binary) {
  let help;
  try {
    help = execFileSync(binary, ["--help"], { encoding: "utf8" });
  } catch (e) {
    fail(`cannot run '${binary} --help': ${e.message}`);
  }
  const env = new Set([...help.matchAll(/\(Env:([A-Z0-9_]+)\)/g)].map((m) => m[1]));
  const flags = new Set([...help.matchAll(/--([a-z][a-z0-9-]*)/g)].map((m) => m[1]));
  if (env.size === 0 || flags.size === 0) fail(`'${binary} --help' lists no options`);
  return { env, flags };
}

function crossErrors(objects, binaries) {
  const errors = [];
  const add = (message) => errors.push(`cross: ${message}`);

  for (const w of workloads(objects)) {
    const spec = w.spec || {};
    if (!selects(spec.selector, podLabels(w))) {
      add(`${describe(w)}: its selector does not select its own pod template`);
    }
    const volumes = new Map((podSpec(w).volumes || []).map((v) => [v.name, v]));
    for (const t of spec.volumeClaimTemplates || []) volumes.set(t.metadata.name, t);
    for (const c of containers(w)) {
      for (const [kind, probe] of [["startupProbe", c.startupProbe],
                                   ["readinessProbe", c.readinessProbe],
                                   ["livenessProbe", c.livenessProbe]]) {
        if (!probe) continue;
        const port = (probe.httpGet || probe.tcpSocket || probe.grpc || {}).port;
        if (port !== undefined && !portExists(w, port)) {
          add(`${describe(w)} container ${c.name}: ${kind} port '${port}' is not a container port`);
        }
      }
      for (const m of c.volumeMounts || []) {
        if (!volumes.has(m.name)) add(`${describe(w)} container ${c.name}: mounts unknown volume '${m.name}'`);
      }
      for (const from of c.envFrom || []) {
        if (from.configMapRef && !byKindName(objects, "ConfigMap", from.configMapRef.name)) {
          add(`${describe(w)}: envFrom names ConfigMap '${from.configMapRef.name}', which is not rendered`);
        }
        if (from.secretRef && !byKindName(objects, "Secret", from.secretRef.name)) {
          add(`${describe(w)}: envFrom names Secret '${from.secretRef.name}', which is not rendered`);
        }
      }
    }
    for (const v of podSpec(w).volumes || []) {
      if (v.secret && !byKindName(objects, "Secret", v.secret.secretName)) {
        add(`${describe(w)}: volume '${v.name}' names Secret '${v.secret.secretName}', which is not rendered`);
      }
      if (v.configMap && !byKindName(objects, "ConfigMap", v.configMap.name)) {
        add(`${describe(w)}: volume '${v.name}' names ConfigMap '${v.configMap.name}', which is not rendered`);
      }
      if (v.persistentVolumeClaim &&
          !byKindName(objects, "PersistentVolumeClaim", v.persistentVolumeClaim.claimName)) {
        add(`${describe(w)}: volume '${v.name}' claims '${v.persistentVolumeClaim.claimName}', which is not rendered`);
      }
    }
  }

  for (const s of objects.filter((o) => o.kind === "Service")) {
    const pods = workloads(objects).filter((w) => matches(s.spec.selector, podLabels(w)));
    if (!s.spec.selector || pods.length === 0) {
      add(`${describe(s)}: its selector selects no pods`);
      continue;
    }
    for (const p of s.spec.ports || []) {
      const target = p.targetPort === undefined ? p.port : p.targetPort;
      for (const w of pods) {
        if (!portExists(w, target)) add(`${describe(s)} port ${p.name || p.port}: ${describe(w)} has no port '${target}'`);
      }
    }
  }

  for (const o of objects.filter((x) => x.kind === "PodDisruptionBudget")) {
    if (selected(objects, o.spec.selector).length === 0) add(`${describe(o)}: selects no pods`);
  }
  for (const h of objects.filter((x) => x.kind === "HorizontalPodAutoscaler")) {
    const ref = h.spec.scaleTargetRef;
    if (!byKindName(objects, ref.kind, ref.name)) add(`${describe(h)}: scales ${ref.kind}/${ref.name}, which is not rendered`);
  }
  for (const i of objects.filter((x) => x.kind === "Ingress")) {
    for (const rule of i.spec.rules || []) {
      for (const p of (rule.http || {}).paths || []) {
        const svc = byKindName(objects, "Service", p.backend.service.name);
        const port = p.backend.service.port;
        if (!svc) {
          add(`${describe(i)}: backend Service '${p.backend.service.name}' is not rendered`);
        } else if (!(svc.spec.ports || []).some((sp) => sp.name === port.name || sp.port === port.number)) {
          add(`${describe(i)}: Service '${svc.metadata.name}' has no port '${port.name || port.number}'`);
        }
      }
    }
  }

  networkPolicyErrors(objects).forEach(add);
  sentinelGroupErrors(objects, binaries).forEach(add);
  binaryErrors(objects, binaries).forEach(add);
  runnerErrors(objects, binaries).forEach(add);
  trustedProxyErrors(objects).forEach(add);
  rolloutErrors(objects, binaries).forEach(add);
  return errors;
}

// A rollout or a node drain must not be seen by clients: every Deployment running a dnaserve
// binary surges a new pod before taking an old one down (maxUnavailable 0, maxSurge > 0) and has
// a PodDisruptionBudget; a gateway is taken out of the Service by its readiness (/ready) and
// keeps serving through a preStop pause while endpoints and ingresses catch up. A queue write
// that waits for Redis replicas needs replicas: the in-cluster Redis without sentinels has none.
function rolloutErrors(objects, binaries) {
  const errors = [];
  const isZero = (v) => v === 0 || v === "0" || v === "0%";
  const budgets = objects.filter((x) => x.kind === "PodDisruptionBudget");
  for (const w of objects.filter((x) => x.kind === "Deployment")) {
    const cs = podSpec(w).containers || [];
    if (!cs.some((c) => binaries[c.name])) continue;
    const strategy = (w.spec || {}).strategy || {};
    const rolling = strategy.rollingUpdate || {};
    if (strategy.type === "Recreate" || !isZero(rolling.maxUnavailable) ||
        rolling.maxSurge === undefined || isZero(rolling.maxSurge)) {
      errors.push(`${describe(w)}: a rollout must surge before it takes a pod down ` +
                  `(RollingUpdate with maxUnavailable 0 and maxSurge > 0)`);
    }
    if (!budgets.some((b) => selects(b.spec.selector, podLabels(w)))) {
      errors.push(`${describe(w)}: no PodDisruptionBudget selects its pods`);
    }
    for (const c of cs.filter((x) => x.name === "gateway")) {
      const probe = (c.readinessProbe || {}).httpGet || {};
      if (probe.path !== "/ready") {
        errors.push(`${describe(w)} container gateway: readiness is not /ready (it drops when the ` +
                    `gateway drains)`);
      }
      const preStop = ((((c.lifecycle || {}).preStop || {}).exec || {}).command || []);
      if (!(preStop[0] === "sleep" && Number(preStop[1]) >= 5)) {
        errors.push(`${describe(w)} container gateway: no preStop pause of at least 5 s before ` +
                    `the drain (routers still send requests to a terminating pod)`);
      }
    }
    for (const c of cs.filter((x) => binaries[x.name])) {
      const env = containerEnv(objects, c);
      const value = (name) => (env.get(name) || {}).value || "";
      const sentinelGroup = objects.some((o) => o.kind === "StatefulSet" &&
                                               podLabels(o)["app.kubernetes.io/component"] === "redis-sentinel");
      if (Number(value("DNASERVE_REDIS_WAIT_REPLICAS")) > 0 && value("DNASERVE_REDIS_SENTINELS") === "" &&
          !sentinelGroup) {
        const host = (/^redis:\/\/(?:[^@/]*@)?([^:/]+)/.exec(value("DNASERVE_REDIS_URL")) || [])[1];
        if (host && byKindName(objects, "Service", host)) {
          errors.push(`${describe(w)} container ${c.name}: DNASERVE_REDIS_WAIT_REPLICAS > 0 with the ` +
                      `in-cluster Redis '${host}', which has no replicas: every job would be refused`);
        }
      }
    }
  }
  return errors;
}


// DNASERVE_TRUSTED_PROXIES (wherever a ConfigMap or a container sets it) names the ingress
// controller's addresses, narrowly: a client that can reach the gateway from a trusted address
// chooses its own X-Forwarded-For, hence its per-IP bucket. A whole private range (10.0.0.0/8)
// would trust every pod of the cluster. At most an IPv4 /20 or an IPv6 /64 per entry.
const kWidestTrustedPrefix = { v4: 20, v6: 64 };
function trustedProxyErrors(objects) {
  const errors = [];
  const settings = [];
  for (const c of objects.filter((o) => o.kind === "ConfigMap")) {
    const value = (c.data || {}).DNASERVE_TRUSTED_PROXIES;
    if (value !== undefined) settings.push([describe(c), value]);
  }
  for (const w of workloads(objects)) {
    for (const c of containers(w)) {
      for (const e of c.env || []) {
        if (e.name === "DNASERVE_TRUSTED_PROXIES" && e.value !== undefined) {
          settings.push([`${describe(w)} container ${c.name}`, e.value]);
        }
      }
    }
  }
  for (const [where, value] of settings) {
    for (const entry of String(value).split(",").map((x) => x.trim()).filter((x) => x)) {
      const [address, bits] = entry.split("/");
      const v6 = address.includes(":");
      const widest = v6 ? kWidestTrustedPrefix.v6 : kWidestTrustedPrefix.v4;
      const prefix = bits === undefined ? (v6 ? 128 : 32) : Number(bits);
      if (!Number.isInteger(prefix) || prefix < widest) {
        errors.push(`${where}: DNASERVE_TRUSTED_PROXIES entry ${entry} is wider than /${widest}: trust ` +
                    `the ingress controller's addresses only, not a whole network`);
      }
    }
  }
  return errors;
}

// NetworkPolicies: each selects pods; the intended reachability holds.
function networkPolicyErrors(objects) {
  const errors = [];
  const policies = objects.filter((o) => o.kind === "NetworkPolicy");
  const component = (w) => podLabels(w)["app.kubernetes.io/component"];
  const isAll = (sel) => sel && Object.keys(sel).length === 0;
  for (const p of policies) {
    if (!isAll(p.spec.podSelector) && selected(objects, p.spec.podSelector).length === 0) {
      errors.push(`${describe(p)}: podSelector selects no pods`);
    }
    for (const rule of p.spec.ingress || []) {
      for (const peer of rule.from || []) {
        if (peer.podSelector && !peer.namespaceSelector && !isAll(peer.podSelector) &&
            selected(objects, peer.podSelector).length === 0) {
          errors.push(`${describe(p)}: an ingress rule allows pods that no workload has`);
        }
      }
    }
  }
  for (const direction of ["Ingress", "Egress"]) {
    const rules = direction.toLowerCase();
    if (!policies.some((p) => isAll(p.spec.podSelector) && (p.spec.policyTypes || []).includes(direction) &&
                            !(p.spec[rules] || []).length)) {
      errors.push(`no default-deny ${rules} NetworkPolicy (podSelector {} with policyTypes ` +
                  `${direction} and no ${rules} rules)`);
    }
  }
  // Who may open a connection to `target` on its container port `portName`: "any" (a rule with
  // no `from`, or an ipBlock), or the in-namespace workloads and foreign namespaces allowed.
  const sources = (target, portName) => {
    const port = containers(target).flatMap((c) => c.ports || []).find((x) => x.name === portName);
    const out = { any: false, components: new Set(), namespaces: 0 };
    for (const p of policies) {
      if (!(p.spec.policyTypes || ["Ingress"]).includes("Ingress")) continue;
      if (!isAll(p.spec.podSelector) && !selects(p.spec.podSelector, podLabels(target))) continue;
      for (const rule of p.spec.ingress || []) {
        const coversPort = !rule.ports || rule.ports.some(
            (rp) => rp.port === undefined || rp.port === portName || (port && rp.port === port.containerPort));
        if (!coversPort) continue;
        if (!rule.from || rule.from.length === 0) out.any = true;
        for (const peer of rule.from || []) {
          if (peer.ipBlock) out.any = true;
          else if (peer.namespaceSelector) out.namespaces++;
          else for (const w of selected(objects, peer.podSelector)) out.components.add(component(w));
          if (peer.podSelector && isAll(peer.podSelector) && !peer.namespaceSelector) out.any = true;
        }
      }
    }
    return out;
  };
  // "gateways and runners", "gateways, runners, Redis data nodes and redis-sentinels"
  const namePods = (components) => {
    const names = components.map((c) => (c === "redis" ? "Redis data nodes" : `${c}s`));
    return names.length < 2 ? names.join("") : `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
  };
  const describeSources = (s) => [s.any ? "anyone" : "", s.namespaces ? "other namespaces" : "",
                                   ...[...s.components].sort()].filter((x) => x).join(", ") || "nobody";
  const ofComponent = (comp) => {
    const targets = workloads(objects).filter((w) => component(w) === comp);
    if (targets.length === 0) errors.push(`no ${comp} workload to check network policies against`);
    return targets;
  };
  // `portName` of every `comp` pod is reachable from exactly the pods of `components`.
  const expectOnlyFrom = (comp, portName, components) => {
    const want = [...components].sort().join(", ");
    for (const w of ofComponent(comp)) {
      const s = sources(w, portName);
      const allowed = [...s.components].sort().join(", ");
      if (s.any || s.namespaces > 0 || allowed !== want) {
        errors.push(`${describe(w)} port ${portName} must be reachable from ${namePods(components)} ` +
                    `only; allowed: ${describeSources(s)}`);
      }
    }
  };
  expectOnlyFrom("worker", "grpc", ["gateway", "runner"]);
  // A Sentinel group (redis-sentinel pods): replicas reach the primary, sentinels every data
  // node and each other, a data node's entrypoint the sentinels; clients ask the sentinels.
  const sentinelGroup = workloads(objects).some((w) => component(w) === "redis-sentinel");
  expectOnlyFrom("redis", "redis", sentinelGroup ? ["gateway", "runner", "redis", "redis-sentinel"]
                                                 : ["gateway", "runner"]);
  if (sentinelGroup) {
    expectOnlyFrom("redis-sentinel", "sentinel", ["gateway", "runner", "redis", "redis-sentinel"]);
  }
  for (const w of ofComponent("runner")) {
    const s = sources(w, "admin");
    if (s.any || s.components.size > 0 || s.namespaces === 0) {
      errors.push(`${describe(w)} port admin must be reachable from the monitoring namespace only; allowed: ` +
                  describeSources(s));
    }
  }

  // Where a pod may open connections: nowhere but the egress rules of the policies selecting it
  // once one of them has policyTypes Egress. A rule whose ports are all 53 is DNS; any other
  // rule reaching an ipBlock, another namespace or anywhere (no `to`) leaves the namespace,
  // which only runners may do (the object store; they alone hold its credentials).
  const destinations = (w) => {
    const out = { unrestricted: true, outside: [], components: new Set() };
    for (const p of policies) {
      if (!(p.spec.policyTypes || []).includes("Egress")) continue;
      if (!isAll(p.spec.podSelector) && !selects(p.spec.podSelector, podLabels(w))) continue;
      out.unrestricted = false;
      for (const rule of p.spec.egress || []) {
        const dns = rule.ports && rule.ports.length > 0 &&
                    rule.ports.every((rp) => rp.port === 53 && rp.endPort === undefined);
        if (dns) continue;
        if (!rule.to || rule.to.length === 0) out.outside.push(`anywhere (${describe(p)})`);
        for (const peer of rule.to || []) {
          if (peer.ipBlock) out.outside.push(`${peer.ipBlock.cidr} (${describe(p)})`);
          else if (peer.namespaceSelector) out.outside.push(`another namespace (${describe(p)})`);
          else if (isAll(peer.podSelector)) out.outside.push(`every pod (${describe(p)})`);
          else for (const t of selected(objects, peer.podSelector)) out.components.add(component(t));
        }
      }
    }
    return out;
  };
  const mayReach = sentinelGroup
    ? { gateway: ["redis", "redis-sentinel", "worker"], runner: ["redis", "redis-sentinel", "worker"],
        worker: [], redis: ["redis", "redis-sentinel"], "redis-sentinel": ["redis", "redis-sentinel"] }
    : { gateway: ["redis", "worker"], runner: ["redis", "worker"], worker: [], redis: [] };
  for (const w of workloads(objects)) {
    const comp = component(w);
    const d = destinations(w);
    if (d.unrestricted) {
      errors.push(`${describe(w)}: no NetworkPolicy restricts its egress`);
      continue;
    }
    if (comp !== "runner" && d.outside.length > 0) {
      errors.push(`${describe(w)}: only runners may reach the object store (or anything outside the ` +
                  `namespace but DNS); egress allowed to ${d.outside.join(", ")}`);
    }
    if (comp === "runner" && !d.outside.some((o) => !o.startsWith("another namespace"))) {
      errors.push(`${describe(w)}: no egress rule lets runners reach the object store (an ipBlock)`);
    }
    // In a Sentinel group every connection it needs must be allowed too (egress rules are
    // additive, so a policy left out of an overlay silently cuts one).
    for (const needed of sentinelGroup ? (mayReach[comp] || []).filter((c) => c.startsWith("redis")) : []) {
      if (!d.components.has(needed)) {
        errors.push(`${describe(w)}: no egress rule lets it reach ${needed} pods (the Sentinel group needs it)`);
      }
    }
    const extra = [...d.components].filter((c) => !(mayReach[comp] || []).includes(c));
    if (extra.length > 0) {
      errors.push(`${describe(w)}: egress to ${extra.join(", ")} pods is not needed (${comp}s reach only ` +
                  `[${(mayReach[comp] || []).join(", ")}])`);
    }
  }
  return errors;
}

// A Redis Sentinel group (a StatefulSet of redis-sentinel pods beside the redis data nodes):
// gateways and runners use it (DNASERVE_REDIS_SENTINELS names sentinel pods that exist, on their
// port; the group's name is the sentinels'), their two password files come from the Secret keys
// the data nodes and the sentinels take theirs from, and both StatefulSets spread over nodes
// (required anti-affinity on the hostname) and have a PodDisruptionBudget.
function sentinelGroupErrors(objects, binaries) {
  const errors = [];
  const component = (w) => podLabels(w)["app.kubernetes.io/component"];
  const sentinelSets = objects.filter((o) => o.kind === "StatefulSet" && component(o) === "redis-sentinel");
  if (sentinelSets.length === 0) return errors;
  const dataSets = objects.filter((o) => o.kind === "StatefulSet" && component(o) === "redis");
  const budgets = objects.filter((x) => x.kind === "PodDisruptionBudget");
  for (const set of [...dataSets, ...sentinelSets]) {
    const required = ((((podSpec(set).affinity || {}).podAntiAffinity || {})
                       .requiredDuringSchedulingIgnoredDuringExecution) || []);
    if (!required.some((t) => t.topologyKey === "kubernetes.io/hostname" &&
                              selects(t.labelSelector, podLabels(set)))) {
      errors.push(`${describe(set)}: no required pod anti-affinity on kubernetes.io/hostname for its ` +
                  `own pods (one node lost must not take two of the group's pods)`);
    }
    if (!budgets.some((b) => selects(b.spec.selector, podLabels(set)))) {
      errors.push(`${describe(set)}: no PodDisruptionBudget selects its pods`);
    }
  }
  // The Secret key a file path of a container comes from: "secret/key", or null.
  const secretOf = (w, c, file) => {
    if (!file) return null;
    const volumes = new Map((podSpec(w).volumes || []).map((v) => [v.name, v]));
    for (const m of c.volumeMounts || []) {
      const prefix = m.mountPath.replace(/\/$/, "") + "/";
      const v = volumes.get(m.name);
      if (!file.startsWith(prefix) || !v || !v.secret) continue;
      const relative = file.slice(prefix.length);
      const item = (v.secret.items || []).find((i) => i.path === relative);
      if (v.secret.items && !item) return null;
      return `${v.secret.secretName}/${item ? item.key : relative}`;
    }
    return null;
  };
  const fromEnv = (w, c, name) => (containerEnv(objects, c).get(name) || {}).value;
  // Sentinel pod names (<set>-<i>.<serviceName>[.<namespace>.svc...]) and their port.
  const sentinelHosts = new Map();
  let groupName;
  let sentinelSecret;
  let dataSecret;
  for (const set of sentinelSets) {
    for (let i = 0; i < (set.spec.replicas === undefined ? 1 : set.spec.replicas); ++i) {
      sentinelHosts.set(`${set.metadata.name}-${i}.${set.spec.serviceName}`, set);
    }
    for (const c of podSpec(set).containers || []) {
      groupName = groupName || fromEnv(set, c, "PRIMARY_NAME");
      sentinelSecret = sentinelSecret || secretOf(set, c, fromEnv(set, c, "SENTINEL_PASSWORD_FILE"));
    }
  }
  for (const set of dataSets) {
    for (const c of podSpec(set).containers || []) {
      dataSecret = dataSecret || secretOf(set, c, fromEnv(set, c, "REDIS_PASSWORD_FILE"));
    }
  }
  for (const w of workloads(objects)) {
    for (const c of podSpec(w).containers || []) {
      if (c.name !== "gateway" && c.name !== "runner") continue;
      const where = `${describe(w)} container ${c.name}`;
      const list = fromEnv(w, c, "DNASERVE_REDIS_SENTINELS") || "";
      if (!list) {
        errors.push(`${where}: DNASERVE_REDIS_SENTINELS is empty while a Sentinel group runs: it would ` +
                    `use one Redis address (a replica would refuse its writes; a failover is not followed)`);
      }
      for (const entry of list.split(",").map((x) => x.trim()).filter((x) => x)) {
        const [host, port] = [entry.slice(0, entry.lastIndexOf(":")), Number(entry.slice(entry.lastIndexOf(":") + 1))];
        const pod = [...sentinelHosts.keys()].find((h) => host === h || host.startsWith(h + "."));
        const set = pod && sentinelHosts.get(pod);
        if (!set) {
          errors.push(`${where}: DNASERVE_REDIS_SENTINELS entry ${entry} is no sentinel pod ` +
                      `(${[...sentinelHosts.keys()].join(", ")})`);
        } else if (!portExists(set, port)) {
          errors.push(`${where}: DNASERVE_REDIS_SENTINELS entry ${entry}: ${describe(set)} has no port ${port}`);
        }
      }
      const name = fromEnv(w, c, "DNASERVE_REDIS_PRIMARY_NAME");
      if (groupName && name !== groupName) {
        errors.push(`${where}: DNASERVE_REDIS_PRIMARY_NAME is '${name || ""}' but the sentinels watch '${groupName}'`);
      }
      for (const [setting, want, what] of [
               ["DNASERVE_REDIS_SENTINEL_PASSWORD_FILE", sentinelSecret, "the sentinels'"],
               ["DNASERVE_REDIS_PASSWORD_FILE", dataSecret, "the data nodes'"]]) {
        if (!want) continue;
        const file = fromEnv(w, c, setting);
        const got = secretOf(w, c, file);
        if (got !== want) {
          errors.push(`${where}: ${setting} ${file ? `'${file}' is ${got ? `Secret key ${got}` : "no mounted Secret key"}` : "is not set"}` +
                      ` but ${what} password is Secret key ${want}`);
        }
      }
    }
  }
  return errors;
}

// The split of issue 12: runners run the jobs that outlive a request with the variant workflow's
// object store, catalogue and scratch directory; gateways hold none of these.
function runnerErrors(objects, binaries) {
  const errors = [];
  const runnerSettings = /^DNASERVE_(S3_|GRCH37_|VARIANT_)/;
  const runners = [];
  const gatewayEnvs = workloads(objects)
      .flatMap((w) => (podSpec(w).containers || []).filter((c) => c.name === "gateway"))
      .map((c) => containerEnv(objects, c));
  for (const w of workloads(objects)) {
    const spec = podSpec(w);
    const volumes = new Map((spec.volumes || []).map((v) => [v.name, v]));
    for (const c of spec.containers || []) {
      if (!binaries[c.name]) continue;
      const env = containerEnv(objects, c);
      if (c.name !== "runner") {
        for (const name of env.keys()) {
          if (runnerSettings.test(name)) {
            errors.push(`${describe(w)} container ${c.name}: ${name}: only runners hold the object ` +
                        `store's credentials, the catalogue and the variant scratch directory`);
          }
        }
        if (c.name === "gateway") {
          for (const m of c.volumeMounts || []) {
            if ((volumes.get(m.name) || {}).emptyDir) {
              errors.push(`${describe(w)} container gateway: mounts the scratch volume '${m.name}' at ` +
                          `${m.mountPath}; gateways need no scratch disk (variant jobs run on runners)`);
            }
          }
        }
        continue;
      }
      runners.push(w);
      // Gateways queue jobs in the Redis runners read, and both bound a client's queue.
      for (const name of ["DNASERVE_REDIS_URL", "DNASERVE_REDIS_SENTINELS", "DNASERVE_REDIS_PRIMARY_NAME",
                          "DNASERVE_REDIS_WAIT_REPLICAS", "DNASERVE_MAX_QUEUED_JOBS"]) {
        const mine = (env.get(name) || {}).value;
        for (const g of gatewayEnvs) {
          const theirs = (g.get(name) || {}).value;
          if (mine !== theirs) {
            errors.push(`${describe(w)} container runner: ${name} is ${mine === undefined ? "unset" : `'${mine}'`} ` +
                        `but the gateway's is ${theirs === undefined ? "unset" : `'${theirs}'`}: gateways and ` +
                        `runners must agree on it`);
          }
        }
      }
      const workDir = (env.get("DNASERVE_VARIANT_WORK_DIR") || {}).value;
      const mount = (c.volumeMounts || []).find((m) => m.mountPath === workDir);
      const volume = mount && volumes.get(mount.name);
      if (!workDir) {
        errors.push(`${describe(w)} container runner: DNASERVE_VARIANT_WORK_DIR is not set (the variant ` +
                    `scratch directory; the root filesystem is read-only)`);
      } else if (!volume || !volume.emptyDir || !volume.emptyDir.sizeLimit || mount.readOnly) {
        errors.push(`${describe(w)} container runner: DNASERVE_VARIANT_WORK_DIR ${workDir} is not a ` +
                    `writable emptyDir scratch volume with a sizeLimit`);
      }
      const id = env.get("DNASERVE_RUNNER_ID");
      const fromPodName = id && id.valueFrom && id.valueFrom.fieldRef &&
                          id.valueFrom.fieldRef.fieldPath === "metadata.name";
      if (id && !fromPodName) {
        errors.push(`${describe(w)} container runner: DNASERVE_RUNNER_ID must be unique per runner: ` +
                    `take it from the pod name (fieldRef metadata.name) or leave it unset`);
      }
    }
  }
  if (runners.length === 0) errors.push("no runner Deployment (a container named runner)");
  for (const w of runners) {
    const hpas = objects.filter((h) => h.kind === "HorizontalPodAutoscaler" &&
                                       h.spec.scaleTargetRef.kind === w.kind &&
                                       h.spec.scaleTargetRef.name === w.metadata.name);
    // Every runner exports the same service-wide dnaserve_queue_depth: as an External metric
    // with an AverageValue target the HPA divides it by the runner count; a Pods metric or a
    // Value target would multiply it instead.
    const onQueue = hpas.filter((h) => (h.spec.metrics || []).some(
        (m) => m.type === "External" && m.external.metric.name === "dnaserve_queue_depth" &&
               m.external.target.type === "AverageValue"));
    if (onQueue.length === 0) {
      errors.push(`${describe(w)}: no HorizontalPodAutoscaler scales it on the External metric ` +
                  `dnaserve_queue_depth with an AverageValue target (the queue depth)`);
    }
    // With no runner, nobody exports the queue depth and nothing takes the queued jobs.
    for (const h of onQueue) {
      const min = h.spec.minReplicas === undefined ? 1 : h.spec.minReplicas;
      if (min < 1) errors.push(`${describe(h)}: minReplicas ${min}: at least one runner must run (runners export the queue depth)`);
    }
  }
  return errors;
}

// Containers running a dnaserve binary: every variable their environment gets is read by that
// binary (or used by another variable as $(NAME)); every flag in args exists; the termination
// grace period covers preStop plus the binary's drain budget.
function binaryErrors(objects, binaries) {
  const errors = [];
  // A runner hands the jobs it could not finish back to the queue after its drain, so its drain
  // need not cover the sync budget as the gateway's must.
  const drainSetting = { gateway: "DNASERVE_DRAIN_TIMEOUT", runner: "DNASERVE_DRAIN_TIMEOUT",
                         worker: "DNASERVE_WORKER_SHUTDOWN_GRACE_SECONDS" };
  for (const w of workloads(objects)) {
    for (const c of podSpec(w).containers || []) {
      const binary = binaries[c.name];
      if (!binary) continue;
      const values = new Map([...containerEnv(objects, c)].map(([name, e]) => [
        name, e.fromSecret ? "(secret)" : e.value === undefined ? "(reference)" : e.value]));
      const referenced = new Set();
      for (const v of [...values.values(), ...(c.args || []), ...(c.command || [])]) {
        for (const m of String(v).matchAll(/\$\(([A-Za-z0-9_]+)\)/g)) referenced.add(m[1]);
      }
      for (const name of values.keys()) {
        if (!binary.env.has(name) && !referenced.has(name)) {
          errors.push(`${describe(w)} container ${c.name}: environment variable ${name} is not read by ` +
                      `the ${c.name} binary (its --help does not list it)`);
        }
      }
      for (const arg of c.args || []) {
        const m = /^--([a-z][a-z0-9-]*)/.exec(arg);
        if (m && !binary.flags.has(m[1])) errors.push(`${describe(w)} container ${c.name}: unknown flag --${m[1]}`);
      }
      const drain = Number(values.get(drainSetting[c.name]));
      if (!Number.isFinite(drain)) {
        errors.push(`${describe(w)} container ${c.name}: ${drainSetting[c.name]} is not set`);
        continue;
      }
      const preStop = ((((c.lifecycle || {}).preStop || {}).exec || {}).command || []);
      const sleep = preStop[0] === "sleep" ? Number(preStop[1]) || 0 : 0;
      const grace = podSpec(w).terminationGracePeriodSeconds;
      const graceValue = grace === undefined ? 30 : grace;
      if (graceValue < sleep + drain + 5) {
        errors.push(`${describe(w)}: terminationGracePeriodSeconds ${graceValue} is shorter than preStop ` +
                    `${sleep} s + ${drainSetting[c.name]} ${drain} s + 5 s to stop`);
      }
      if (c.name === "gateway" && drain < Number(values.get("DNASERVE_SYNC_TIMEOUT") || 300)) {
        errors.push(`${describe(w)}: DNASERVE_DRAIN_TIMEOUT ${drain} is shorter than the sync budget`);
      }
    }
  }
  return errors;
}

// ---------------------------------------------------------------------------------------------

function validateSets(sets, binaries) {
  const fields = fieldErrors(sets);
  return sets.map((objects, i) => [...schemaErrors(objects), ...fields[i], ...crossErrors(objects, binaries)]);
}

function parseArgs(argv) {
  const args = { overlays: [], selfTest: false };
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === "--gateway") args.gateway = argv[++i];
    else if (argv[i] === "--runner") args.runner = argv[++i];
    else if (argv[i] === "--worker") args.worker = argv[++i];
    else if (argv[i] === "--self-test") args.selfTest = true;
    else args.overlays.push(argv[i]);
  }
  if (!args.gateway || !args.runner || !args.worker || args.overlays.length === 0) {
    fail("usage: validate_manifests.js --gateway BIN --runner BIN --worker BIN [--self-test] OVERLAY...");
  }
  return args;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const binaries = { gateway: binaryInterface(args.gateway), runner: binaryInterface(args.runner),
                     worker: binaryInterface(args.worker) };
  if (args.selfTest) return selfTest(args.overlays, binaries);

  const rendered = args.overlays.map((overlay) => ({ overlay, ...render(overlay) }));
  const ok = rendered.filter((r) => r.objects);
  const results = validateSets(ok.map((r) => r.objects), binaries);
  let failures = 0;
  for (const r of rendered) {
    const errors = r.error ? [r.error] : results[ok.indexOf(r)];
    failures += errors.length;
    const kinds = r.objects ? `${r.objects.length} objects` : "not rendered";
    console.log(`${errors.length ? "FAIL" : "ok  "} ${r.overlay}: ${kinds}`);
    for (const e of errors) console.log(`     ${e}`);
  }
  console.log(`${rendered.length - rendered.filter((r, i) => r.error || results[ok.indexOf(r)].length).length} passed, ` +
              `${rendered.filter((r) => r.error || results[ok.indexOf(r)].length).length} failed`);
  process.exit(failures ? 1 : 0);
}

// One mutation per check; each must be rejected with an error matching `expect`.
function mutations() {
  const find = (objects, kind, name) => objects.find((o) => o.kind === kind && o.metadata.name === name);
  const gateway = (o) => find(o, "Deployment", "dnaserve-gateway");
  const worker = (o) => find(o, "Deployment", "dnaserve-worker-splice");
  const runner = (o) => find(o, "Deployment", "dnaserve-runner");
  const config = (o, prefix) => o.find((x) => x.kind === "ConfigMap" && x.metadata.name.startsWith(prefix));
  const policy = (o, name) => find(o, "NetworkPolicy", name);
  return [
    ["replicas of the wrong type", /^schema: Deployment\/dnaserve-gateway: .*replicas/,
     (o) => { gateway(o).spec.replicas = "two"; }],
    ["a misspelt container field", /^fields: Deployment\/dnaserve-worker-splice: .*imagePullPolicyy/,
     (o) => { worker(o).spec.template.spec.containers[0].imagePullPolicyy = "Always"; }],
    ["a kind that does not exist", /^schema: Deploymnet\//,
     (o) => { o.push({ apiVersion: "apps/v1", kind: "Deploymnet", metadata: { name: "x" } }); }],
    ["a Service selecting no pods", /^cross: Service\/dnaserve-gateway: its selector selects no pods/,
     (o) => { find(o, "Service", "dnaserve-gateway").spec.selector["app.kubernetes.io/component"] = "gatway"; }],
    ["a Service target port no pod has", /^cross: Service\/dnaserve-worker-splice port grpc: .*no port 'grcp'/,
     (o) => { find(o, "Service", "dnaserve-worker-splice").spec.ports[0].targetPort = "grcp"; }],
    ["a probe on a missing port", /^cross: Deployment\/dnaserve-worker-splice container worker: readinessProbe port '50052'/,
     (o) => { worker(o).spec.template.spec.containers[0].readinessProbe.grpc.port = 50052; }],
    ["workers open to every pod", /^cross: Deployment\/dnaserve-worker-\w+ port grpc must be reachable from gateways and runners only/,
     (o) => { policy(o, "dnaserve-worker").spec.ingress[0].from[0].podSelector = {}; }],
    ["workers closed to runners", /^cross: Deployment\/dnaserve-worker-\w+ port grpc must be reachable from gateways and runners only; allowed: gateway$/,
     (o) => { policy(o, "dnaserve-worker").spec.ingress[0].from.pop(); }],
    ["Redis open to workers too", /^cross: StatefulSet\/dnaserve-redis port redis must be reachable from gateways, runners, Redis data nodes and redis-sentinels only; allowed: .*worker/,
     (o) => { policy(o, "dnaserve-redis").spec.ingress[0].from.push(
         { podSelector: { matchLabels: { "app.kubernetes.io/component": "worker" } } }); }],
    ["the runners' admin port open to every pod", /^cross: Deployment\/dnaserve-runner port admin must be reachable from the monitoring namespace only/,
     (o) => { delete policy(o, "dnaserve-runner").spec.ingress[0].from; }],
    ["no default deny", /^cross: no default-deny ingress NetworkPolicy/,
     (o) => { o.splice(o.indexOf(policy(o, "dnaserve-default-deny")), 1); }],
    ["no default deny of egress", /^cross: no default-deny egress NetworkPolicy/,
     (o) => { policy(o, "dnaserve-default-deny").spec.policyTypes = ["Ingress"]; }],
    ["gateways with egress to the object store", /^cross: Deployment\/dnaserve-gateway: only runners may reach the object store.*0\.0\.0\.0\/0/,
     (o) => { policy(o, "dnaserve-gateway").spec.egress.push({ to: [{ ipBlock: { cidr: "0.0.0.0/0" } }] }); }],
    ["the object store's egress given to every pod", /^cross: StatefulSet\/dnaserve-redis: only runners may reach the object store/,
     (o) => { policy(o, "dnaserve-runner-to-object-store").spec.podSelector = {}; }],
    ["runners without egress to the object store", /^cross: Deployment\/dnaserve-runner: no egress rule lets runners reach the object store/,
     (o) => { o.splice(o.indexOf(policy(o, "dnaserve-runner-to-object-store")), 1); }],
    ["gateways with egress to runners", /^cross: Deployment\/dnaserve-gateway: egress to runner pods is not needed/,
     (o) => { policy(o, "dnaserve-gateway").spec.egress[1].to[0].podSelector.matchLabels["app.kubernetes.io/component"] = "runner"; }],
    ["object-store settings on the gateway", /^cross: Deployment\/dnaserve-gateway container gateway: DNASERVE_S3_ENDPOINT: only runners hold/,
     (o) => { config(o, "dnaserve-gateway-config").data.DNASERVE_S3_ENDPOINT = "https://s3.example.com"; }],
    ["a scratch volume on the gateway", /^cross: Deployment\/dnaserve-gateway container gateway: mounts the scratch volume 'variant-work'/,
     (o) => { const pod = gateway(o).spec.template.spec;
              pod.volumes.push({ name: "variant-work", emptyDir: { sizeLimit: "16Gi" } });
              pod.containers[0].volumeMounts.push({ name: "variant-work", mountPath: "/var/lib/dnaserve/variant-work" }); }],
    ["a runner without its scratch volume", /^cross: Deployment\/dnaserve-runner container runner: DNASERVE_VARIANT_WORK_DIR \S+ is not a writable emptyDir/,
     (o) => { const pod = runner(o).spec.template.spec; pod.volumes = []; pod.containers[0].volumeMounts = []; }],
    ["a runner scratch volume without a size limit", /^cross: Deployment\/dnaserve-runner container runner: DNASERVE_VARIANT_WORK_DIR \S+ is not a writable emptyDir/,
     (o) => { runner(o).spec.template.spec.volumes.find((v) => v.name === "variant-work").emptyDir = {}; }],
    ["every runner with the same id", /^cross: Deployment\/dnaserve-runner container runner: DNASERVE_RUNNER_ID must be unique/,
     (o) => { runner(o).spec.template.spec.containers[0].env = [{ name: "DNASERVE_RUNNER_ID", value: "runner" }]; }],
    ["no runner", /^cross: no runner Deployment/,
     (o) => { o.splice(o.indexOf(runner(o)), 1); }],
    ["runners scaled on CPU", /^cross: Deployment\/dnaserve-runner: no HorizontalPodAutoscaler scales it on the External metric dnaserve_queue_depth/,
     (o) => { find(o, "HorizontalPodAutoscaler", "dnaserve-runner").spec.metrics = [
         { type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 70 } } }]; }],
    ["runners scaled on the queue depth times the runners", /^cross: Deployment\/dnaserve-runner: no HorizontalPodAutoscaler scales it/,
     (o) => { find(o, "HorizontalPodAutoscaler", "dnaserve-runner").spec.metrics[0].external.target =
         { type: "Value", value: "4" }; }],
    ["runners scaled to zero", /^cross: HorizontalPodAutoscaler\/dnaserve-runner: minReplicas 0/,
     (o) => { find(o, "HorizontalPodAutoscaler", "dnaserve-runner").spec.minReplicas = 0; }],
    ["runners reading another Redis", /^cross: Deployment\/dnaserve-runner container runner: DNASERVE_REDIS_URL is 'redis:\/\/dnaserve-redis:6379\/1' but the gateway's is 'redis:\/\/dnaserve-redis:6379\/0'/,
     (o) => { config(o, "dnaserve-runner-config").data.DNASERVE_REDIS_URL = "redis://dnaserve-redis:6379/1"; }],
    ["a client queue bound set for gateways only", /^cross: Deployment\/dnaserve-runner container runner: DNASERVE_MAX_QUEUED_JOBS is '64' but the gateway's is '128'/,
     (o) => { config(o, "dnaserve-gateway-config").data.DNASERVE_MAX_QUEUED_JOBS = "128"; }],
    ["a runner setting the runner does not read", /^cross: Deployment\/dnaserve-runner container runner: environment variable DNASERVE_RUNNER_SLOT is not read/,
     (o) => { config(o, "dnaserve-runner-config").data.DNASERVE_RUNNER_SLOT = "4"; }],
    ["a runner grace period shorter than its drain", /^cross: Deployment\/dnaserve-runner: terminationGracePeriodSeconds 60/,
     (o) => { runner(o).spec.template.spec.terminationGracePeriodSeconds = 60; }],
    ["a setting no binary reads", /^cross: Deployment\/dnaserve-gateway container gateway: environment variable DNASERVE_REDIS_HOST/,
     (o) => { config(o, "dnaserve-gateway-config").data.DNASERVE_REDIS_HOST = "redis"; }],
    ["a flag the worker lacks", /^cross: Deployment\/dnaserve-worker-splice container worker: unknown flag --model-dir/,
     (o) => { worker(o).spec.template.spec.containers[0].args.push("--model-dir", "/models"); }],
    ["a grace period shorter than the drain", /^cross: Deployment\/dnaserve-gateway: terminationGracePeriodSeconds 30/,
     (o) => { gateway(o).spec.template.spec.terminationGracePeriodSeconds = 30; }],
    ["a missing Secret", /^cross: Deployment\/dnaserve-gateway: volume 'keys' names Secret 'dnaserve-keyz'/,
     (o) => { gateway(o).spec.template.spec.volumes.find((v) => v.name === "keys").secret.secretName = "dnaserve-keyz"; }],
    ["X-Forwarded-For trusted from a whole private range",
     /^cross: ConfigMap\/dnaserve-gateway-config[-\w]*: DNASERVE_TRUSTED_PROXIES entry 10\.0\.0\.0\/8 is wider/,
     (o) => { o.find((x) => x.kind === "ConfigMap" && x.metadata.name.startsWith("dnaserve-gateway-config"))
                .data.DNASERVE_TRUSTED_PROXIES = "192.0.2.0/24,10.0.0.0/8"; }],
    ["a gateway rollout that takes a pod down first", /^cross: Deployment\/dnaserve-gateway: a rollout must surge/,
     (o) => { gateway(o).spec.strategy.rollingUpdate = { maxUnavailable: 1, maxSurge: 0 }; }],
    ["runners without a PodDisruptionBudget", /^cross: Deployment\/dnaserve-runner: no PodDisruptionBudget/,
     (o) => { o.splice(o.indexOf(find(o, "PodDisruptionBudget", "dnaserve-runner")), 1); }],
    ["a gateway without its preStop pause", /^cross: Deployment\/dnaserve-gateway container gateway: no preStop pause/,
     (o) => { delete gateway(o).spec.template.spec.containers[0].lifecycle; }],
    ["a gateway ready while draining", /^cross: Deployment\/dnaserve-gateway container gateway: readiness is not \/ready/,
     (o) => { gateway(o).spec.template.spec.containers[0].readinessProbe.httpGet.path = "/health"; }],
    ["WAIT for replicas the in-cluster Redis lacks", /^cross: Deployment\/dnaserve-gateway container gateway: DNASERVE_REDIS_WAIT_REPLICAS > 0 with the in-cluster Redis 'dnaserve-redis'/,
     (o) => { o.splice(o.indexOf(find(o, "StatefulSet", "dnaserve-redis-sentinel")), 1);
              config(o, "dnaserve-gateway-config").data.DNASERVE_REDIS_SENTINELS = "";
              config(o, "dnaserve-gateway-config").data.DNASERVE_REDIS_WAIT_REPLICAS = "1"; }],
    // The Sentinel group of the prod overlay (redis-ha.yaml, redis-ha-patches.yaml).
    ["Redis replicas closed to each other", /^cross: StatefulSet\/dnaserve-redis port redis must be reachable from gateways, runners, Redis data nodes and redis-sentinels only; allowed: gateway, redis-sentinel, runner$/,
     (o) => { policy(o, "dnaserve-redis-replication").spec.ingress[0].from.shift(); }],
    ["sentinels open to workers", /^cross: StatefulSet\/dnaserve-redis-sentinel port sentinel must be reachable from gateways, runners, Redis data nodes and redis-sentinels only; allowed: .*worker/,
     (o) => { policy(o, "dnaserve-redis-sentinel").spec.ingress[0].from.push(
         { podSelector: { matchLabels: { "app.kubernetes.io/name": "dnaserve", "app.kubernetes.io/component": "worker" } } }); }],
    ["sentinels open to every pod", /^cross: StatefulSet\/dnaserve-redis-sentinel port sentinel must be reachable .*; allowed: anyone/,
     (o) => { delete policy(o, "dnaserve-redis-sentinel").spec.ingress[0].from; }],
    ["sentinels closed to runners", /^cross: StatefulSet\/dnaserve-redis-sentinel port sentinel must be reachable .*; allowed: gateway, redis, redis-sentinel$/,
     (o) => { policy(o, "dnaserve-redis-sentinel").spec.ingress[0].from.splice(1, 1); }],
    ["runners without egress to the sentinels", /^cross: Deployment\/dnaserve-runner: no egress rule lets it reach redis-sentinel pods/,
     (o) => { o.splice(o.indexOf(policy(o, "dnaserve-runner-to-sentinels")), 1); }],
    ["Redis data nodes with egress to the workers", /^cross: StatefulSet\/dnaserve-redis: egress to worker pods is not needed/,
     (o) => { policy(o, "dnaserve-redis-replication").spec.egress.push({ to: [{ podSelector: { matchLabels:
         { "app.kubernetes.io/name": "dnaserve", "app.kubernetes.io/component": "worker" } } }] }); }],
    ["sentinels with egress out of the namespace", /^cross: StatefulSet\/dnaserve-redis-sentinel: only runners may reach the object store.*0\.0\.0\.0\/0/,
     (o) => { policy(o, "dnaserve-redis-sentinel").spec.egress.push({ to: [{ ipBlock: { cidr: "0.0.0.0/0" } }] }); }],
    ["gateways not using the sentinels", /^cross: Deployment\/dnaserve-gateway container gateway: DNASERVE_REDIS_SENTINELS is empty while a Sentinel group runs/,
     (o) => { config(o, "dnaserve-gateway-config").data.DNASERVE_REDIS_SENTINELS = ""; }],
    ["a sentinel pod that does not exist", /^cross: Deployment\/dnaserve-runner container runner: DNASERVE_REDIS_SENTINELS entry dnaserve-redis-sentinel-3\.dnaserve-redis-sentinel:26379 is no sentinel pod/,
     (o) => { config(o, "dnaserve-runner-config").data.DNASERVE_REDIS_SENTINELS += ",dnaserve-redis-sentinel-3.dnaserve-redis-sentinel:26379"; }],
    ["the data port given for a sentinel", /^cross: Deployment\/dnaserve-gateway container gateway: DNASERVE_REDIS_SENTINELS entry dnaserve-redis-sentinel-0\.dnaserve-redis-sentinel:6379: StatefulSet\/dnaserve-redis-sentinel has no port 6379/,
     (o) => { const c = config(o, "dnaserve-gateway-config");
              c.data.DNASERVE_REDIS_SENTINELS = c.data.DNASERVE_REDIS_SENTINELS.replace(":26379", ":6379"); }],
    ["a group name the sentinels do not watch", /^cross: Deployment\/dnaserve-gateway container gateway: DNASERVE_REDIS_PRIMARY_NAME is 'mymaster' but the sentinels watch 'dnaserve'/,
     (o) => { config(o, "dnaserve-gateway-config").data.DNASERVE_REDIS_PRIMARY_NAME = "mymaster"; }],
    ["the data nodes' password given as the sentinels'", /^cross: Deployment\/dnaserve-gateway container gateway: DNASERVE_REDIS_SENTINEL_PASSWORD_FILE '\/etc\/dnaserve\/redis\/redis-password' is Secret key dnaserve-redis-auth[-\w]*\/redis-password but the sentinels' password is Secret key dnaserve-redis-auth[-\w]*\/sentinel-password/,
     (o) => { config(o, "dnaserve-gateway-config").data.DNASERVE_REDIS_SENTINEL_PASSWORD_FILE = "/etc/dnaserve/redis/redis-password"; }],
    ["runners without the data nodes' password", /^cross: Deployment\/dnaserve-runner container runner: DNASERVE_REDIS_PASSWORD_FILE is not set but the data nodes' password/,
     (o) => { delete config(o, "dnaserve-runner-config").data.DNASERVE_REDIS_PASSWORD_FILE; }],
    ["a password file on no mounted Secret", /^cross: Deployment\/dnaserve-runner container runner: DNASERVE_REDIS_SENTINEL_PASSWORD_FILE '\/etc\/redis\/sentinel-password' is no mounted Secret key/,
     (o) => { config(o, "dnaserve-runner-config").data.DNASERVE_REDIS_SENTINEL_PASSWORD_FILE = "/etc/redis/sentinel-password"; }],
    ["sentinels without anti-affinity", /^cross: StatefulSet\/dnaserve-redis-sentinel: no required pod anti-affinity/,
     (o) => { delete find(o, "StatefulSet", "dnaserve-redis-sentinel").spec.template.spec.affinity; }],
    ["Redis data nodes without a PodDisruptionBudget", /^cross: StatefulSet\/dnaserve-redis: no PodDisruptionBudget/,
     (o) => { o.splice(o.indexOf(find(o, "PodDisruptionBudget", "dnaserve-redis")), 1); }],
    ["an HPA scaling nothing", /^cross: HorizontalPodAutoscaler\/dnaserve-gateway: scales Deployment\/dnaserve-gatway/,
     (o) => { find(o, "HorizontalPodAutoscaler", "dnaserve-gateway").spec.scaleTargetRef.name = "dnaserve-gatway"; }],
  ];
}

function selfTest(overlays, binaries) {
  const [good, ...brokenOverlays] = overlays;
  if (!good || brokenOverlays.length === 0) fail("--self-test needs GOOD_OVERLAY BROKEN_OVERLAY...");
  const base = render(good);
  if (!base.objects) fail(base.error);
  const cases = mutations();
  const sets = [base.objects, ...cases.map(([, , mutate]) => {
    const copy = JSON.parse(JSON.stringify(base.objects));
    mutate(copy);
    return copy;
  })];
  const brokenRenders = brokenOverlays.map((dir) => ({ dir, ...render(dir) }));
  for (const b of brokenRenders) if (b.objects) sets.push(b.objects);
  const results = validateSets(sets, binaries);

  let passed = 0;
  let failed = 0;
  const report = (ok, name, detail) => {
    ok ? ++passed : ++failed;
    console.log(`${ok ? "ok  " : "FAIL"} ${name}${detail ? `\n     ${detail}` : ""}`);
  };
  report(results[0].length === 0, `the unchanged ${good} is accepted`, results[0].join("\n     "));
  cases.forEach(([name, expect], i) => {
    const errors = results[i + 1];
    const hit = errors.some((e) => expect.test(e));
    report(hit, `rejected: ${name}`, hit ? errors.find((e) => expect.test(e)) : `got: ${errors.join(" | ") || "no error"}`);
  });
  let next = cases.length + 1;
  for (const b of brokenRenders) {
    const errors = b.objects ? results[next++] : [b.error];
    // expected-errors.txt: one regular expression a line, each of which some error must match.
    const expectFile = path.join(b.dir, "expected-errors.txt");
    const expected = fs.existsSync(expectFile)
      ? fs.readFileSync(expectFile, "utf8").split("\n").filter((l) => l.trim() && !l.startsWith("#"))
      : [];
    const missing = expected.filter((re) => !errors.some((e) => new RegExp(re).test(e)));
    report(errors.length > 0 && missing.length === 0, `rejected: the broken overlay ${b.dir}`,
           [...missing.map((re) => `MISSING an error matching /${re}/`), ...errors].join("\n     "));
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main();
