// Tool-call overhead over the REST call it wraps: the same enhancer prediction, alternately as
// POST /v1/tasks/enhancer/predict and as an MCP tools/call (one POST /mcp, the SDK's framing),
// on one keep-alive connection each, against a running dnaserve. Prints medians in Markdown.
// Run by the hidden Catch2 case "mcp: tool-call overhead" (tests/integration/mcp_test.cpp).
import assert from "node:assert/strict";

const BASE = process.env.DNASERVE_URL;
const KEY = process.env.DNASERVE_KEY;
const ROUNDS = Number(process.env.DNASERVE_BENCH_ROUNDS ?? 41);
const LENGTH = Number(process.env.DNASERVE_BENCH_BP ?? 1200);

let x = 5;
const sequence = Array.from({ length: LENGTH }, () => "ACGT"[(x = (x * 1103515245 + 12345) & 0x7fffffff) % 4]).join("");
const body = JSON.stringify({ sequence });
const headers = { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json",
                  Accept: "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18" };

async function timed(url, payload, check) {
  const t0 = process.hrtime.bigint();
  const response = await fetch(url, { method: "POST", headers, body: payload });
  const text = await response.text();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  check(response.status, text);
  return ms;
}
const restCall = () => timed(new URL("/v1/tasks/enhancer/predict", BASE), body, (s, t) => assert.equal(s, 200, t));
let id = 0;
const mcpCall = () => timed(new URL("/mcp", BASE),
  JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "tools/call",
                   params: { name: "predict_enhancer", arguments: { sequence } } }),
  (s, t) => { assert.equal(s, 200, t); assert.equal(JSON.parse(t).result.isError, false, t); });

const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
for (let i = 0; i < 3; i++) { await restCall(); await mcpCall(); }  // warm the model and connections
const rest = [], mcp = [], diff = [];
for (let i = 0; i < ROUNDS; i++) {
  const a = await restCall();
  const b = await mcpCall();
  rest.push(a); mcp.push(b); diff.push(b - a);
}
console.log(`| enhancer, ${LENGTH} bp, ${ROUNDS} alternating rounds | median ms |`);
console.log(`|---|---|`);
console.log(`| REST POST /v1/tasks/enhancer/predict | ${median(rest).toFixed(2)} |`);
console.log(`| MCP tools/call predict_enhancer | ${median(mcp).toFixed(2)} |`);
console.log(`| overhead (median of per-round MCP - REST) | ${median(diff).toFixed(2)} |`);
