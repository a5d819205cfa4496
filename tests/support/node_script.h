// Runs a Node program of the tests (tests/mcp/*.mjs and the like) to its end, for the C++ tests
// that provide it a running service: what it printed and how it exited, for the test to check.
#pragma once

#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include "tests/support/test_env.h"

namespace dnaserve::testing {

struct NodeRun {
  bool started = false;
  std::optional<int> exit_code;  // nullopt: still running after the timeout (then killed)
  std::string output;            // its stdout and stderr
};

// `node script` with `env` added to the environment, its output written to `log_path`.
inline NodeRun RunNodeScript(const std::string& script,
                             const std::map<std::string, std::string>& env,
                             const std::string& log_path, std::chrono::milliseconds timeout) {
  NodeRun run;
  ChildProcess node;
  run.started = node.Start({"/usr/bin/env", "node", script}, env, log_path);
  if (!run.started) return run;
  run.exit_code = node.WaitExit(timeout);
  std::ifstream in(log_path);
  std::stringstream output;
  output << in.rdbuf();
  run.output = output.str();
  return run;
}

}  // namespace dnaserve::testing
