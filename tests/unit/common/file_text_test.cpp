#include "common/file_text.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "tests/support/test_env.h"

using dnaserve::ReadFileText;

namespace {

std::string Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

}  // namespace

TEST_CASE("file text: a file's bytes come back whole, NUL and CR included", "[common]") {
  const std::string dir = dnaserve::testing::MakeTempDir("file-text");
  const std::string bytes = std::string("order 1\r\n\0tail", 15) + std::string(70000, 'x');
  auto text = ReadFileText(Write(dir + "/table.tsv", bytes));
  REQUIRE(text.has_value());
  CHECK(*text == bytes);

  auto empty = ReadFileText(Write(dir + "/empty", ""));
  REQUIRE(empty.has_value());
  CHECK(empty->empty());
}

TEST_CASE("file text: missing files, directories and unreadable files say why", "[common]") {
  const std::string dir = dnaserve::testing::MakeTempDir("file-text");
  std::string reason;
  CHECK_FALSE(ReadFileText(dir + "/absent", &reason).has_value());
  CHECK(reason == "No such file or directory");

  // An ifstream opens a directory and reads nothing; this must not pass as an empty file.
  reason.clear();
  CHECK_FALSE(ReadFileText(dir, &reason).has_value());
  CHECK(reason == "Is a directory");

  CHECK_FALSE(ReadFileText(dir + "/absent").has_value());  // the reason is optional

  if (geteuid() != 0) {  // root reads whatever the mode says
    const std::string locked = Write(dir + "/locked", "secret");
    REQUIRE(chmod(locked.c_str(), 0) == 0);
    reason.clear();
    CHECK_FALSE(ReadFileText(locked, &reason).has_value());
    CHECK(reason == "Permission denied");
  }
}
