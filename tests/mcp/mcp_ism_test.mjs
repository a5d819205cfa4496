// The ism tool (POST /v1/ism) through the official TypeScript SDK client, against a gateway whose
// runner holds the GRCh37 chr20 reference. Run by tests/integration/mcp_ism_test.cpp, which
// starts that stack and passes DNASERVE_URL and DNASERVE_KEY. The tool's answer is checked
// against the REST answer to the same arguments; its input schema against what REST refuses.
// Exits non-zero on the first failed check.
import assert from "node:assert/strict";

import Ajv from "ajv";

import { checksPassed, connect, rest as restAs, step } from "./harness.mjs";

const BASE = process.env.DNASERVE_URL;
const KEY = process.env.DNASERVE_KEY;
assert.ok(BASE && KEY, "DNASERVE_URL and DNASERVE_KEY are required");

const rest = (method, pathname, body) => restAs(BASE, method, pathname, KEY, body);

const { client } = await connect(new URL("/mcp", BASE), KEY, "dnaserve-ism-test");

let tool = null;
await step("lists the ism tool with REST's request schema and an output schema", async () => {
  const tools = (await client.listTools()).tools;
  tool = tools.find((t) => t.name === "ism");
  assert.ok(tool, `tools: ${tools.map((t) => t.name).join(", ")}`);
  assert.ok(tools.findIndex((t) => t.name === "ism") ===
            tools.findIndex((t) => t.name === "score_variants") + 1, "ism after score_variants");
  assert.equal(tool.inputSchema.type, "object");
  assert.deepEqual(tool.inputSchema.required, ["window"]);
  for (const key of ["sequence", "interval", "window", "scorers"]) {
    assert.ok(tool.inputSchema.properties[key], `inputSchema.properties.${key}`);
  }
  assert.ok(!JSON.stringify(tool.inputSchema).includes("$ref"), "self-contained");
  assert.equal(tool.outputSchema?.type, "object");
  assert.equal(tool.annotations.readOnlyHint, false);
  assert.match(tool.description, /mutagenesis/);
});

// ------------------------------------------------------------------ schema == REST validation
const region = { contig: "chr20", start: 5752401, end: 5754800 };
const CASES = [
  [{ interval: region, window: { start: 5753599, end: 5753601 } }, true],
  [{ interval: { ...region, strand: "-" }, window: { start: 5753599, end: 5753601 },
     scorers: { chromatin: { top: 2 } } }, true],
  [{ sequence: "ACGTACGTAC", window: { start: 2, end: 4 }, scorers: { promoter: null } }, true],
  [{ interval: region, window: { start: 5753599 } }, false],                       // no end
  [{ interval: region, window: { start: 5753599, end: 5753601 }, model: "x" }, false],
  [{ interval: region, window: { start: 5753599, end: 5753601 },
     scorers: { splice: { distance: 5001 } } }, false],
  [{ sequence: "ACGTXCGTAC", window: { start: 2, end: 4 } }, false],
  [{ window: { start: 0, end: 4 }, sequence: "ACGTACGTAC" }, false],
];

await step("the input schema and REST agree on what is valid", async () => {
  const validate = new Ajv({ strict: false }).compile(tool.inputSchema);
  for (const [args, valid] of CASES) {
    const name = JSON.stringify(args).slice(0, 160);
    assert.equal(validate(args), valid, `schema: ${name} ${JSON.stringify(validate.errors)}`);
    if (valid) continue;  // the valid ones run below
    const r = await rest("POST", "/v1/ism", args);
    assert.equal(r.status, 422, `REST: ${name} -> ${r.text.slice(0, 300)}`);
    // The tool gives the same refusal as an error result.
    const result = await client.callTool({ name: "ism", arguments: args });
    assert.equal(result.isError, true, name);
    assert.equal(result.structuredContent.error.code, "validation_failed", name);
    assert.deepEqual(result.structuredContent.error.details.errors[0].loc,
                     r.json.error.details.errors[0].loc, name);
  }
});

// ------------------------------------------------------------------ the answer
// |delta| of a cell, as the tool ranks them.
const cellsOf = (data) => data.positions.flatMap((p) => p.alt.map((alt, i) => ({
  position: p.position, ref: p.ref, alt, delta: p.delta[i],
  ...(p.feature ? { feature: p.feature[i] } : {}),
})));

for (const [label, args] of [
  ["chromatin on an interval", { interval: region, window: { start: 5753591, end: 5753610 },
                                 scorers: { chromatin: { top: 2 } } }],
  ["promoter on an interval on strand -",
   { interval: { ...region, strand: "-" }, window: { start: 5753596, end: 5753605 },
     scorers: { promoter: { distance: 100 } } }],
]) {
  await step(`${label}: the tool's result is REST's matrix, its largest cells first`, async () => {
    const result = await client.callTool({ name: "ism", arguments: args });
    const sc = result.structuredContent;
    assert.equal(result.isError, false, JSON.stringify(sc?.error));
    assert.equal(sc.status, "completed");
    assert.equal(sc.task, "ism");
    assert.match(sc.job_id, /^[0-9a-f-]{36}$/);
    const r = await rest("POST", "/v1/ism", args);
    assert.equal(r.status, 200, r.text.slice(0, 300));
    const data = r.json.data;
    assert.equal(sc.scorer, data.scorer);
    assert.equal(sc.model, data.model);
    assert.equal(sc.value, data.value);
    assert.deepEqual(sc.window, data.window);
    assert.deepEqual(sc.options, data.options);
    assert.deepEqual(sc.interval, r.json.meta.interval);
    // Every cell ranked; the 20 kept are the largest |delta| and each is REST's cell.
    const cells = cellsOf(data);
    assert.equal(sc.top_items.total, cells.length);
    assert.equal(cells.length, 3 * data.window.length);
    assert.equal(sc.top_items.returned, Math.min(20, cells.length));
    const magnitudes = cells.map((c) => Math.abs(c.delta)).sort((a, b) => b - a);
    assert.deepEqual(sc.top_items.items.map((c) => Math.abs(c.delta)),
                     magnitudes.slice(0, sc.top_items.returned));
    for (const item of sc.top_items.items) {
      const cell = cells.find((c) => c.position === item.position && c.alt === item.alt);
      assert.deepEqual(item, cell);
    }
    // The whole matrix is the job's, over REST.
    const job = await rest("GET", new URL(sc.full_result.job_url).pathname);
    assert.equal(job.status, 200, job.text.slice(0, 200));
    assert.deepEqual(job.json.data.positions, data.positions);
    assert.deepEqual(JSON.parse(result.content.find((c) => c.type === "text").text), sc);
  });
}

await client.close();
console.log(`all ${checksPassed()} checks passed`);
