// The RESP encoder of core/redis against hiredis's own formatter, byte for byte.
#include <catch2/catch.hpp>
#include <hiredis/hiredis.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/redis/resp.h"

namespace dnaserve::core {
namespace {

std::string HiredisFormat(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  char* raw = nullptr;
  const int n = redisFormatCommandArgv(&raw, static_cast<int>(args.size()), argv.data(), lens.data());
  REQUIRE(n > 0);
  std::string out(raw, static_cast<size_t>(n));
  redisFreeCommand(raw);
  return out;
}

TEST_CASE("RESP commands are encoded as hiredis encodes them", "[redis]") {
  std::string binary("a\0b\r\n$*", 7);
  const std::vector<std::vector<std::string>> commands = {
      {"PING"},
      {"SET", "k", ""},
      {"HSET", "dnaserve:job:1", "state", "running", "payload", binary},
      {"EVALSHA", std::string(40, 'f'), "2", "k1", "k2", std::string(100000, 'G')},
      std::vector<std::string>(1000, "x"),
  };
  std::string pipelined;
  std::string expected_pipeline;
  for (const auto& args : commands) {
    std::string one;
    AppendRespCommand(args, &one);
    CHECK(one == HiredisFormat(args));
    AppendRespCommand(args, &pipelined);
    expected_pipeline += HiredisFormat(args);
  }
  CHECK(pipelined == expected_pipeline);
}

}  // namespace
}  // namespace dnaserve::core
