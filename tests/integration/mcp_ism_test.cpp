// The MCP ism tool against a real stack that holds the reference (reference_stack.h), driven by
// the official TypeScript SDK client (tests/mcp/mcp_ism_test.mjs, npm packages pinned by
// tests/mcp/package-lock.json): this test provides the stack and its key, and requires the Node
// program to pass. Skips with a message when the Debian packages the reference comes from
// cannot be had.
#include <catch2/catch.hpp>

#include "tests/integration/reference_stack.h"
#include "tests/integration/service_fixture.h"
#include "tests/support/node_script.h"

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
  const NodeRun node =
      RunNodeScript(script, {{"DNASERVE_URL", s->base}, {"DNASERVE_KEY", s->svc->keys().alice}},
                    log, std::chrono::minutes(10));
  REQUIRE(node.started);
  INFO("node " << script << " said:\n" << node.output);
  REQUIRE(node.exit_code.has_value());
  REQUIRE(*node.exit_code == 0);
}
