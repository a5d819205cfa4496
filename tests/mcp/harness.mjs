// What the MCP test programs share (mcp_client_test.mjs, mcp_ism_test.mjs): a REST call, an
// SDK client connected to /mcp with a key, and numbered checks that log as they pass.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

// A REST call with `key`; the body as text, and parsed when it is JSON (else json is null).
export async function rest(base, method, pathname, key, body) {
  const response = await fetch(new URL(pathname, base), {
    method,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* a text track, or not JSON */ }
  return { status: response.status, headers: response.headers, json, text };
}

// The official SDK client, connected to `mcpUrl` with `key` as its bearer token.
export async function connect(mcpUrl, key, name) {
  const client = new Client({ name, version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(mcpUrl, {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  return { client, transport };
}

let checks = 0;
// Runs one check; a failed one throws, which ends the program non-zero.
export async function step(name, fn) {
  const started = Date.now();
  await fn();
  checks++;
  console.log(`ok ${checks} - ${name} (${Date.now() - started} ms)`);
}

// How many checks have passed so far.
export function checksPassed() {
  return checks;
}
