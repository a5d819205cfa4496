// The MCP endpoint against a running dnaserve, through the official TypeScript SDK client and
// the MCP Inspector CLI. Run by tests/integration/mcp_test.cpp, which starts the real stack and
// passes DNASERVE_URL and the keys. Exits non-zero on the first failed check.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";

import Ajv from "ajv";

import { checksPassed, connect as connectTo, rest as restAs, step } from "./harness.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const BASE = process.env.DNASERVE_URL;
const KEY = process.env.DNASERVE_KEY;             // generous limits
const SLOW_KEY = process.env.DNASERVE_SLOW_KEY;   // bucket capacity 1
assert.ok(BASE && KEY && SLOW_KEY, "DNASERVE_URL, DNASERVE_KEY and DNASERVE_SLOW_KEY are required");
const MCP_URL = new URL("/mcp", BASE);

function dna(n, seed = 11) {
  let x = seed;
  let s = "";
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    s += "ACGT"[x % 4];
  }
  return s;
}

function connect(key, name = "dnaserve-test") {
  return connectTo(MCP_URL, key, name);
}

function rest(method, pathname, key, body) {
  return restAs(BASE, method, pathname, key, body);
}

async function rawMcp(body, headers = {}) {
  const response = await fetch(MCP_URL, {
    method: "POST",
    headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json",
               Accept: "application/json, text/event-stream", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* empty or SSE */ }
  return { status: response.status, headers: response.headers, json, text };
}

const EXPECTED_TOOLS = [
  "predict_promoter", "predict_splice", "predict_enhancer", "predict_chromatin",
  "predict_annotation", "predict_expression", "find_genes_and_predict_expression",
  "score_variants", "ism", "get_job", "list_jobs", "list_models", "list_contexts",
];
const REST_PATH = {
  predict_promoter: "/v1/tasks/promoter/predict",
  predict_splice: "/v1/tasks/splice/predict",
  predict_enhancer: "/v1/tasks/enhancer/predict",
  predict_chromatin: "/v1/tasks/chromatin/predict",
  predict_annotation: "/v1/tasks/annotation/predict",
  predict_expression: "/v1/tasks/expression/predict",
  find_genes_and_predict_expression: "/v1/workflows/find-genes-and-predict-expression",
};

const { client, transport } = await connect(KEY);
let tools = [];

await step("connects and negotiates a served protocol revision", async () => {
  assert.equal(client.getServerVersion().name, "dnaserve");
  assert.ok(client.getServerCapabilities().tools, "the server declares tools");
  assert.ok(["2025-11-25", "2025-06-18"].includes(transport.protocolVersion),
            `negotiated ${transport.protocolVersion}`);
});

await step("lists the tools (no variant workflow), each with input and output schemas", async () => {
  tools = (await client.listTools()).tools;
  assert.deepEqual(tools.map((t) => t.name), EXPECTED_TOOLS);
  for (const t of tools) {
    assert.equal(t.inputSchema.type, "object", t.name);
    assert.equal(t.outputSchema?.type, "object", t.name);
    assert.ok(t.description.length > 60, `${t.name} has a description a model can choose by`);
    assert.ok(!JSON.stringify(t.inputSchema).includes("$ref"), `${t.name}: self-contained`);
  }
});

// ------------------------------------------------------------------ schema == REST validation
// Each case: a tool, its arguments, and whether they are valid. The schema (evaluated by ajv)
// and REST (the POST the tool wraps) must both agree with the table.
const seq300 = dna(300);
const CASES = [
  ["predict_promoter", { sequence: seq300 }, true],
  ["predict_promoter", { sequence: seq300.toLowerCase(), sequence_name: "x", model: null }, true],
  ["predict_promoter", { sequence: seq300, options: { threshold: 0.7 } }, true],
  ["predict_promoter", { sequence: seq300, options: null }, true],
  ["predict_promoter", { sequence: dna(299) }, false],
  ["predict_promoter", { sequence: seq300.slice(0, 150) + "X" + seq300.slice(150) }, false],
  ["predict_promoter", { sequence: ">chr1\n" + seq300 }, false],
  ["predict_promoter", { sequence: seq300, options: { threshold: 1.5 } }, false],
  ["predict_promoter", { sequence: seq300, options: { threshold: "high" } }, false],
  ["predict_promoter", { sequence: seq300, options: { window: 3 } }, false],
  ["predict_promoter", { sequence: seq300, extra: 1 }, false],
  ["predict_promoter", { sequence: seq300, sequence_name: "n".repeat(129) }, false],
  ["predict_promoter", { options: { threshold: 0.5 } }, false],
  ["predict_promoter", { sequence: 42 }, false],
  ["predict_splice", { sequence: dna(200), options: { site_types: ["donor"] } }, true],
  ["predict_splice", { sequence: dna(200), options: { site_types: ["exon"] } }, false],
  ["predict_enhancer", { sequence: dna(100), options: {} }, true],
  ["predict_enhancer", { sequence: dna(100), options: { threshold: 0.5 } }, false],
  ["predict_chromatin", { sequence: dna(200), options: { threshold: 0.9 } }, true],
  ["predict_annotation", { sequence: dna(1000), options: { batch_size: 0 } }, false],
  ["predict_annotation", { sequence: dna(1000), options: { batch_size: 2.5 } }, false],
  ["predict_annotation", { sequence: dna(1000), options: { reverse_complement: "no" } }, false],
  ["predict_annotation", { sequence: dna(999) }, false],
  ["predict_expression", { sequence: dna(9198) }, false],
  ["predict_expression", { sequence: dna(9198), options: {} }, false],
  ["predict_expression", { sequence: dna(9198), options: { description: "" } }, false],
  ["predict_expression", { sequence: dna(9198), options: { description: "adult liver" } }, true],
  ["predict_expression", { sequence: dna(9198), tss_index: "4599", options: { description: "x" } }, false],
  ["find_genes_and_predict_expression", { sequence: dna(1000), options: {} }, false],
  ["find_genes_and_predict_expression", { sequence: dna(1000), options: { description: "heart", batch_size: 129 } }, false],
  ["find_genes_and_predict_expression", { sequence: dna(1000), options: { description: "heart", nope: 1 } }, false],
];
// Rules that relate a field to the server's stripping or to another field are beyond JSON Schema;
// they are stated in the field descriptions, and here as what they are: the schema accepts, REST
// refuses.
const BEYOND_SCHEMA = [
  ["whitespace counts toward the schema's minLength but not REST's bp floor",
   "predict_promoter", { sequence: seq300.slice(0, 290).replace(/(.{10})/g, "$1 ") }],
  ["expression's tss_index window", "predict_expression",
   { sequence: dna(9300), tss_index: 10, options: { description: "liver" } }],
];

await step("each inputSchema agrees with REST validation on a table of cases", async () => {
  const ajv = new Ajv({ strict: false, allErrors: true });
  const validators = Object.fromEntries(tools.map((t) => [t.name, ajv.compile(t.inputSchema)]));
  const disagreements = [];
  for (const [tool, args, valid] of CASES) {
    const schemaOk = validators[tool](args);
    const r = await rest("POST", REST_PATH[tool], KEY, args);
    const restOk = r.status === 200;
    assert.ok(r.status === 200 || r.status === 422, `${tool}: REST answered ${r.status}: ${r.text.slice(0, 300)}`);
    if (schemaOk !== valid || restOk !== valid) {
      disagreements.push({ tool, args: JSON.stringify(args).slice(0, 120), valid, schemaOk, restOk,
                           schemaErrors: validators[tool].errors, rest: r.json?.error });
    }
  }
  assert.deepEqual(disagreements, [], JSON.stringify(disagreements, null, 1));
  for (const [what, tool, args] of BEYOND_SCHEMA) {
    assert.equal(validators[tool](args), true, `${what}: the schema accepts`);
    assert.equal((await rest("POST", REST_PATH[tool], KEY, args)).status, 422, `${what}: REST refuses`);
  }
});

// ------------------------------------------------------------------ every tool
const results = {};
const ARGS = {
  predict_promoter: { sequence: dna(1200), sequence_name: "mcp-promoter" },
  predict_splice: { sequence: dna(2000) },
  predict_enhancer: { sequence: dna(1200) },
  predict_chromatin: { sequence: dna(1200), options: { threshold: 0.1 } },
  predict_annotation: { sequence: dna(3000) },
  predict_expression: { sequence: dna(9198), options: { description: "adult liver tissue" } },
  find_genes_and_predict_expression: { sequence: dna(3000), options: { description: "liver" } },
};

await step("calls every job tool and gets a structured, bounded result", async () => {
  for (const [tool, args] of Object.entries(ARGS)) {
    const result = await client.callTool({ name: tool, arguments: args });
    const sc = result.structuredContent;
    assert.equal(result.isError, false, `${tool}: ${JSON.stringify(sc?.error)}`);
    assert.equal(sc.status, "completed", tool);
    assert.match(sc.job_id, /^[0-9a-f-]{36}$/, tool);
    assert.equal(typeof sc.model, "string", tool);
    assert.equal(sc.sequence_length, args.sequence.length, tool);
    assert.ok(sc.counts && typeof sc.counts === "object", `${tool} has counts`);
    if (sc.top_items) {
      assert.ok(sc.top_items.returned <= 20 && sc.top_items.returned === sc.top_items.items.length, tool);
      assert.ok(sc.top_items.total >= sc.top_items.returned, tool);
    }
    // The text block carries the same JSON, for hosts that read text only.
    assert.deepEqual(JSON.parse(result.content.find((c) => c.type === "text").text), sc, tool);
    assert.ok(JSON.stringify(result).length < 64 * 1024, `${tool}: result sized for a context`);
    results[tool] = result;
  }
  assert.equal(typeof results.predict_expression.structuredContent.prediction.expression, "number");
});

await step("follows the resource link to the whole job over REST", async () => {
  for (const tool of ["predict_chromatin", "predict_promoter", "find_genes_and_predict_expression"]) {
    const result = results[tool];
    const sc = result.structuredContent;
    const link = result.content.find((c) => c.type === "resource_link");
    assert.ok(link, `${tool}: a resource_link`);
    assert.equal(link.uri, sc.full_result.job_url);
    const job = await rest("GET", new URL(link.uri).pathname, KEY);
    assert.equal(job.status, 200, job.text.slice(0, 200));
    assert.equal(job.json.meta.job_id, sc.job_id);
    assert.deepEqual(job.json.meta.task_specific_counts, sc.counts);
    // The list the summary ranks is the job's list, cut to its top items.
    if (tool === "predict_promoter") assert.equal(job.json.data.regions.length, sc.top_items.total);
    if (tool === "predict_chromatin") {
      const hits = job.json.data.windows.flatMap((w) => Object.values(w.features).flat());
      assert.equal(hits.length, sc.top_items.total);
      const best = Math.max(...hits.map((h) => h.probability));
      if (hits.length) assert.equal(sc.top_items.items[0].probability, best);
    }
  }
  // Another key does not see the job (owner-scoped, as REST).
});

await step("get_job, list_jobs and list_models; tool jobs are REST jobs", async () => {
  const jobId = results.predict_promoter.structuredContent.job_id;
  const got = await client.callTool({ name: "get_job", arguments: { job_id: jobId } });
  assert.equal(got.isError, false);
  assert.equal(got.structuredContent.job_id, jobId);
  assert.equal(got.structuredContent.task, "promoter");
  assert.deepEqual(got.structuredContent.top_items, results.predict_promoter.structuredContent.top_items);

  const listed = await client.callTool({ name: "list_jobs", arguments: { limit: 100 } });
  assert.equal(listed.isError, false);
  const toolJobs = Object.values(results).map((r) => r.structuredContent.job_id);
  const ids = listed.structuredContent.jobs.map((j) => j.job_id);
  for (const id of toolJobs) assert.ok(ids.includes(id), `list_jobs has ${id}`);
  const restList = await rest("GET", "/v1/tasks/jobs?limit=100", KEY);
  for (const id of toolJobs) assert.ok(restList.json.jobs.some((j) => j.job_id === id), `REST lists ${id}`);

  const models = await client.callTool({ name: "list_models", arguments: {} });
  assert.equal(models.isError, false);
  assert.equal(models.structuredContent.tasks.length, 6);
  const one = await client.callTool({ name: "list_models", arguments: { task: "promoter" } });
  const restModels = await rest("GET", "/v1/tasks/promoter/models", KEY);
  assert.deepEqual(one.structuredContent.tasks[0], restModels.json);

  const missing = await client.callTool({ name: "get_job", arguments: { job_id: "00000000-0000-4000-8000-000000000000" } });
  assert.equal(missing.isError, true);
  assert.equal(missing.structuredContent.error.code, "not_found");
});

await step("a bad sequence is an isError result with REST's error object", async () => {
  const args = { sequence: ">chr1 header\n" + dna(400) };
  const result = await client.callTool({ name: "predict_promoter", arguments: args });
  assert.equal(result.isError, true);
  const restAnswer = await rest("POST", REST_PATH.predict_promoter, KEY, args);
  assert.equal(restAnswer.status, 422);
  const { request_id: _a, ...toolError } = result.structuredContent.error;
  const { request_id: _b, ...restError } = restAnswer.json.error;
  assert.deepEqual(toolError, restError);
  assert.equal(result.structuredContent.http_status, 422);
});

await step("a model failure is an isError result with REST's error object", async () => {
  // The fixture serves a deliberately broken promoter package whose weights cannot load.
  const args = { sequence: dna(400), model: "promoter-broken" };
  const result = await client.callTool({ name: "predict_promoter", arguments: args });
  assert.equal(result.isError, true);
  const restAnswer = await rest("POST", REST_PATH.predict_promoter, KEY, args);
  assert.equal(result.structuredContent.http_status, restAnswer.status);
  assert.equal(result.structuredContent.error.code, restAnswer.json.error.code);
  assert.equal(result.structuredContent.error.code, "model_loading");
  // A failed job is still a job: pollable over REST with the same error.
  const poll = await rest("GET", `/v1/tasks/jobs/${result.structuredContent.job_id}`, KEY);
  assert.equal(poll.status, restAnswer.status);
  assert.equal(poll.json.error.code, "model_loading");
});

await step("long work runs async: the job id at once, then get_job until done", async () => {
  const started = await client.callTool({ name: "predict_promoter",
                                          arguments: { sequence: dna(100_500) } });
  assert.equal(started.isError, false);
  assert.equal(started.structuredContent.status, "accepted");
  const jobId = started.structuredContent.job_id;
  let sc;
  for (let i = 0; i < 600; i++) {
    sc = (await client.callTool({ name: "get_job", arguments: { job_id: jobId } })).structuredContent;
    if (sc.status === "completed" || sc.status === "failed") break;
    assert.ok(["accepted", "running"].includes(sc.status), sc.status);
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal(sc.status, "completed", JSON.stringify(sc.error));
  assert.equal(sc.sequence_length, 100_500);
  const poll = await rest("GET", `/v1/tasks/jobs/${jobId}`, KEY);
  assert.equal(poll.status, 200);
});

// The answer is a streamed text/event-stream (chunked): the SDK reads it as it comes. With the
// bundled tiny models this job is over before the first progress sample, so usually no
// notification arrives; tests/unit/gateway/mcp_test.cpp holds a job open to require one live.
await step("a call with a progressToken completes; any notifications rise within 0-100", async () => {
  const seen = [];
  const result = await client.callTool(
    { name: "predict_splice", arguments: { sequence: dna(60_000) } }, undefined,
    { onprogress: (p) => seen.push(p), timeout: 300_000 });
  assert.equal(result.isError, false, JSON.stringify(result.structuredContent?.error));
  for (let i = 0; i < seen.length; i++) {
    assert.equal(seen[i].total, 100);
    assert.ok(seen[i].progress > 0 && seen[i].progress <= 100);
    if (i > 0) assert.ok(seen[i].progress > seen[i - 1].progress);
  }
  console.log(`# ${seen.length} progress notification(s): ${seen.map((p) => p.progress.toFixed(0)).join(", ")}`);
});

// ------------------------------------------------------------------ keys and quotas
await step("a wrong key is 401 with WWW-Authenticate, for the SDK client and raw HTTP", async () => {
  await assert.rejects(connect("dns_not-a-key"), (e) => /401/.test(String(e?.message)) || e?.code === 401);
  const raw = await fetch(MCP_URL, {
    method: "POST",
    headers: { Authorization: "Bearer dns_not-a-key", "Content-Type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  assert.equal(raw.status, 401);
  assert.match(raw.headers.get("www-authenticate"), /invalid_token/);
  assert.equal((await raw.json()).error.code, "unauthorized");
});

await step("tool calls beyond the key's bucket get REST's 429 semantics", async () => {
  const slow = await connect(SLOW_KEY, "slow");
  // initialize and tools/list cost nothing: the bucket (capacity 1) is still full.
  await slow.client.listTools();
  const args = { sequence: dna(300) };
  const first = await slow.client.callTool({ name: "predict_enhancer", arguments: args });
  assert.equal(first.isError, false, JSON.stringify(first.structuredContent?.error));
  const jobsBefore = (await slow.client.callTool({ name: "list_jobs", arguments: {} })).structuredContent.count;
  const refused = [];
  for (let i = 0; i < 3; i++) refused.push(await slow.client.callTool({ name: "predict_enhancer", arguments: args }));
  for (const r of refused) {
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent.error.code, "too_many_requests");
    assert.equal(r.structuredContent.http_status, 429);
    assert.ok(r.structuredContent.retry_after_seconds >= 1, JSON.stringify(r.structuredContent));
  }
  // The same bucket: REST refuses too, and reads stay free.
  const restRefusal = await rest("POST", REST_PATH.predict_enhancer, SLOW_KEY, args);
  assert.equal(restRefusal.status, 429);
  assert.ok(Number(restRefusal.headers.get("retry-after")) >= 1);
  assert.equal(restRefusal.json.error.code, refused[0].structuredContent.error.code);
  const jobs = await slow.client.callTool({ name: "list_jobs", arguments: {} });
  assert.equal(jobs.isError, false);
  assert.equal(jobs.structuredContent.count, jobsBefore, "refused calls create no job");
  await slow.client.close();
});

// ------------------------------------------------------------------ the protocol's edges
await step("protocol errors are JSON-RPC errors with the exact codes", async () => {
  let r = await rawMcp("{not json");
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, -32700);
  assert.equal(r.json.id, null);
  r = await rawMcp({ jsonrpc: "2.0", id: 5, method: "resources/list" });
  assert.equal(r.json.error.code, -32601);
  assert.equal(r.json.id, 5);
  r = await rawMcp({ jsonrpc: "2.0", id: 6, method: "tools/call", params: { name: "predict_variants" } });
  assert.equal(r.json.error.code, -32602);
  r = await rawMcp({ jsonrpc: "2.0", id: 7 });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, -32600);
  r = await rawMcp({ jsonrpc: "2.0", id: 8, method: "ping" }, { Origin: "http://attacker.example" });
  assert.equal(r.status, 403);
  r = await rawMcp({ jsonrpc: "2.0", id: 9, method: "ping" }, { "MCP-Protocol-Version": "2099-01-01" });
  assert.equal(r.status, 400);
  r = await rawMcp({ jsonrpc: "2.0", method: "notifications/initialized" });
  assert.equal(r.status, 202);
  const get = await fetch(MCP_URL, { headers: { Accept: "text/event-stream" } });
  assert.equal(get.status, 405);
  // Body limit as REST: over 16 MiB is 413 before parsing.
  const big = await fetch(MCP_URL, {
    method: "POST",
    headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
    body: "x".repeat(16 * 1024 * 1024 + 1),
  });
  assert.equal(big.status, 413);
});

await client.close();

// ------------------------------------------------------------------ a second client
await step("the MCP Inspector CLI lists and calls a tool", async () => {
  // Inspector 0.15 (the newest that runs on Node 20) has no option for request headers, so a
  // loopback proxy adds the key, as a host's header setting does.
  const proxy = http.createServer((req, res) => {
    const upstream = http.request(new URL(req.url, BASE), {
      method: req.method,
      headers: { ...req.headers, host: new URL(BASE).host, authorization: `Bearer ${KEY}` },
    }, (up) => { res.writeHead(up.statusCode, up.headers); up.pipe(res); });
    upstream.on("error", () => { res.writeHead(502); res.end(); });
    req.pipe(upstream);
  });
  await new Promise((r) => proxy.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${proxy.address().port}/mcp`;
  const cli = path.join(here, "node_modules/@modelcontextprotocol/inspector/cli/build/cli.js");
  const run = async (...args) => {
    return await new Promise((resolve) => {
      const child = spawn(process.execPath, [cli, "--cli", url, "--transport", "http", ...args],
                          { cwd: here });
      let out = "", err = "";
      child.stdout.on("data", (d) => (out += d));
      child.stderr.on("data", (d) => (err += d));
      child.on("close", (status) => resolve({ status, out, err }));
    });
  };
  const list = await run("--method", "tools/list");
  assert.equal(list.status, 0, list.err);
  assert.deepEqual(JSON.parse(list.out).tools.map((t) => t.name), EXPECTED_TOOLS);
  const call = await run("--method", "tools/call", "--tool-name", "predict_enhancer",
                         "--tool-arg", `sequence=${dna(120)}`);
  assert.equal(call.status, 0, call.err);
  const result = JSON.parse(call.out);
  assert.equal(result.isError, false, call.out.slice(0, 500));
  assert.equal(result.structuredContent.task, "enhancer");
  proxy.close();
});

console.log(`# all ${checksPassed()} checks passed`);
