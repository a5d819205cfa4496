// The agent-protocol interface (MCP at /mcp) against the real stack, driven by real MCP clients:
// the official TypeScript SDK client and the MCP Inspector CLI (tests/mcp/mcp_client_test.mjs,
// npm packages pinned by tests/mcp/package-lock.json). This test only provides the running
// service and its keys, and requires the Node program to pass.
#include <catch2/catch.hpp>

#include "tests/integration/service_fixture.h"
#include "tests/support/node_script.h"

using namespace dnaserve::testing;

TEST_CASE("mcp: SDK client and Inspector CLI against the running service", "[integration][mcp]") {
  DNASERVE_REQUIRE_SERVICE(service);
  const std::string script = SourceDir() + "/tests/mcp/mcp_client_test.mjs";
  const std::string log = MakeTempDir("mcp-client") + "/node.log";
  const NodeRun node = RunNodeScript(script,
                                     {{"DNASERVE_URL", service->base_url()},
                                      {"DNASERVE_KEY", service->keys().alice},
                                      {"DNASERVE_SLOW_KEY", service->keys().slow}},
                                     log, std::chrono::minutes(15));
  REQUIRE(node.started);
  INFO("node " << script << " said:\n" << node.output);
  REQUIRE(node.exit_code.has_value());
  REQUIRE(*node.exit_code == 0);
}

// Not a test (hidden, never run by ctest): the figure BENCHMARKS.md records. Run with
//   build/tests/integration_tests "mcp: tool-call overhead" -s
TEST_CASE("mcp: tool-call overhead over the REST call", "[.][mcp][bench]") {
  DNASERVE_REQUIRE_SERVICE(service);
  const std::string log = MakeTempDir("mcp-bench") + "/node.log";
  const NodeRun node = RunNodeScript(
      SourceDir() + "/tests/mcp/overhead_bench.mjs",
      {{"DNASERVE_URL", service->base_url()}, {"DNASERVE_KEY", service->keys().alice}}, log,
      std::chrono::minutes(10));
  REQUIRE(node.started);
  WARN(node.output);
  REQUIRE(node.exit_code == 0);
}
