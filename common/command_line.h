// What the three binaries share at start-up: reading their flags (CLI11, each flag with its
// environment variable) and the one way they refuse a configuration they cannot run with.
#pragma once

#include <string_view>

#include "common/status.h"

namespace CLI {
class App;
}

namespace dnaserve {

// The exit status of a binary started with a configuration it cannot run with.
constexpr int kBadConfigurationExit = 2;

// Parses argv into what `app` binds. --help prints the help and sets *exit_now; a bad flag or
// value is a bad_request naming it.
Status ParseCommandLine(CLI::App& app, int argc, char** argv, bool* exit_now);

// Logs `event` at error level with the status's message; returns kBadConfigurationExit.
int FailStartup(std::string_view event, const Status& status);

}  // namespace dnaserve
