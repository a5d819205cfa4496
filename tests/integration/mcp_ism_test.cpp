// The MCP ism tool against a real stack that holds the reference (reference_stack.h), driven by
// the official TypeScript SDK client (tests/mcp/mcp_ism_test.mjs, npm packages pinned by
// tests/mcp/package-lock.json): this test provides the stack and its key, and requires the Node
// program to pass. Skips with a message when the Debian packages the reference comes from
// cannot be had.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "tests/integration/reference_stack.h"
#include "tests/integration/service_fixture.h"

using namespace dnaserve::testing;

namespace {

std::unique_ptr<ReferenceStack> MakeMcpIsmStack(std::string* reason) {
  auto s = std::make_unique<ReferenceStack>();
  if (!s->Open("dnaserve-mcp-ism-it", reason)) return nullptr;
  // Database 10: a queue and job store of its own; the service's workers.
  if (!s->Start(10, false, "chromatin", reason)) return nullptr;
  return s;
}

}  // namespace

TEST_CASE("mcp: the ism tool through the SDK client answers REST's matrix", "[mcp][ism]") {
  REQUIRE_SHARED_FIXTURE(ReferenceStack, s, MakeMcpIsmStack);
  const std::string script = SourceDir() + "/tests/mcp/mcp_ism_test.mjs";
  const std::string log = s->dir + "/node-mcp-ism.log";
  ChildProcess node;
  REQUIRE(node.Start({"/usr/bin/env", "node", script},
                     {{"DNASERVE_URL", s->base}, {"DNASERVE_KEY", s->svc->keys().alice}}, log));
  auto exit_code = node.WaitExit(std::chrono::minutes(10));
  std::ifstream in(log);
  std::stringstream output;
  output << in.rdbuf();
  INFO("node " << script << " said:\n" << output.str());
  REQUIRE(exit_code.has_value());
  REQUIRE(*exit_code == 0);
}
