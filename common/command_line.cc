#include "common/command_line.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "common/log.h"

namespace dnaserve {

Status ParseCommandLine(CLI::App& app, int argc, char** argv, bool* exit_now) {
  *exit_now = false;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    *exit_now = true;
    std::cout << app.help();
  } catch (const CLI::ParseError& e) {
    return BadRequest(e.what());
  }
  return Status::Ok();
}

int FailStartup(std::string_view event, const Status& status) {
  log::Error(event, {{"error", status.message()}});
  return kBadConfigurationExit;
}

}  // namespace dnaserve
