#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>

#include "common/ids.h"
#include "common/log.h"
#include "common/sequence.h"
#include "common/status.h"
#include "common/task.h"

using namespace dnaserve;

TEST_CASE("NormalizeSequence strips ASCII whitespace and upper-cases", "[common]") {
  auto n = NormalizeSequence(" ac\tg\nT\r\fn\v ");
  CHECK(n.bases == "ACGTN");
  CHECK_FALSE(n.first_invalid);
}

TEST_CASE("NormalizeSequence reports the first character outside ACGTN", "[common]") {
  SECTION("a FASTA header fails the alphabet") {
    auto n = NormalizeSequence(">chr1\nACGT");
    REQUIRE(n.first_invalid);
    CHECK(*n.first_invalid == 0);
    CHECK(n.invalid_char == '>');
  }
  SECTION("offsets count stripped characters only") {
    auto n = NormalizeSequence("AC GT X");
    REQUIRE(n.first_invalid);
    CHECK(*n.first_invalid == 4);
    CHECK(n.invalid_char == 'X');
  }
  SECTION("IUPAC codes other than N are not accepted") {
    CHECK(NormalizeSequence("ACGR").first_invalid);
    CHECK(NormalizeSequence("acgu").first_invalid);
  }
}

TEST_CASE("ReverseComplement", "[common]") {
  CHECK(ReverseComplement("ACGTN") == "NACGT");
  CHECK(ReverseComplement("AAAC") == "GTTT");
  CHECK(ReverseComplement("acgtNx") == "NNACGT");  // either case in, upper case out
  CHECK(ReverseComplement("") == "");
}

TEST_CASE("BaseIndex: ACGT in either case, complements at 3 - index, -1 for the rest", "[common]") {
  for (int i = 0; i < 4; ++i) {
    CHECK(BaseIndex(kAcgt[i]) == i);
    CHECK(BaseIndex(static_cast<char>(kAcgt[i] - 'A' + 'a')) == i);
  }
  CHECK(kAcgt[3 - BaseIndex('A')] == 'T');
  CHECK(kAcgt[3 - BaseIndex('c')] == 'G');
  for (char other : std::string("NnUu-*> \0", 9)) CHECK(BaseIndex(other) == -1);
}

TEST_CASE("error code names round-trip", "[common]") {
  for (ErrorCode code : {ErrorCode::kBadRequest, ErrorCode::kValidationFailed,
                         ErrorCode::kModelNotFound, ErrorCode::kSyncTooLarge,
                         ErrorCode::kTaskNotSupportedByModel, ErrorCode::kServiceUnavailable,
                         ErrorCode::kModelLoading, ErrorCode::kJobExpired, ErrorCode::kCancelled}) {
    CHECK(ErrorCodeFromName(ErrorCodeName(code)) == code);
  }
  CHECK(ErrorCodeName(ErrorCode::kInternal) == "internal_error");
  CHECK(ErrorCodeFromName("no_such_code") == ErrorCode::kInternal);
}

TEST_CASE("ValidationFailed builds one error whose message summarises it", "[common]") {
  Status s = ValidationFailed({"body", "sequence"}, "too short", "string_too_short");
  CHECK(s.code() == ErrorCode::kValidationFailed);
  CHECK(s.message() == "too short");
  const auto& d = std::get<ValidationDetails>(s.details());
  REQUIRE(d.errors.size() == 1);
  CHECK(d.errors[0].loc == std::vector<std::string>{"body", "sequence"});
}

TEST_CASE("task facts follow the Limits section", "[common]") {
  CHECK(MinSequenceBp(Task::kPromoter) == 300);
  CHECK(MinSequenceBp(Task::kSplice) == 100);
  CHECK(MinSequenceBp(Task::kEnhancer) == 50);
  CHECK(MinSequenceBp(Task::kChromatin) == 200);
  CHECK(MinSequenceBp(Task::kAnnotation) == 1000);
  CHECK(MinSequenceBp(Task::kExpression) == 9198);
  CHECK(kMaxSequenceBp == 500000);
  for (Task t : kAllTasks) CHECK(TaskFromName(TaskName(t)) == t);
  CHECK_FALSE(TaskFromName("Promoter"));
  CHECK(SupportedFormats(Task::kExpression) == std::vector<OutputFormat>{OutputFormat::kJson});
  CHECK(SupportedFormats(Task::kEnhancer) ==
        std::vector<OutputFormat>{OutputFormat::kJson, OutputFormat::kBedGraph});
  CHECK(FormatMediaType(OutputFormat::kGff3) == "text/x-gff3");
}

TEST_CASE("job ids are random UUIDv4", "[common]") {
  std::regex v4("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string id = NewUuidV4();
    CHECK(std::regex_match(id, v4));
    CHECK(IsUuid(id));
    seen.insert(id);
  }
  CHECK(seen.size() == 1000);
  CHECK(NewHexId32().size() == 32);
  CHECK_FALSE(IsUuid("not-a-uuid"));
  CHECK_FALSE(IsUuid("0000000000000000000000000000000000000"));
}

TEST_CASE("log lines: timestamp, numbers and escapes as JSON wants them", "[common][log]") {
  std::string line = log::FormatLine(
      "warn", "x", {{"s", "tab\there \x01 \\ \"q\""}, {"i", int64_t{-42}}, {"d", 0.0123456789},
                    {"big", 1.5e300}, {"b", false}});
  INFO(line);
  std::regex shape(
      R"(^\{"ts":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z","level":"warn","component":"[^"]+",)"
      R"("event":"x","s":"tab\\there \\u0001 \\\\ \\"q\\"","i":-42,"d":0.0123457,)"
      R"("big":1.5e\+300,"b":false\}$)");
  CHECK(std::regex_match(line, shape));
}

TEST_CASE("buffered logging writes at a warning, on Flush, and keeps the order", "[common][log]") {
  char path[] = "/tmp/dnaserve-log-test-XXXXXX";
  const int file = mkstemp(path);
  REQUIRE(file >= 0);
  const int saved = dup(STDERR_FILENO);
  REQUIRE(dup2(file, STDERR_FILENO) >= 0);
  auto contents = [&] {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  // The once-a-second flush may only be absent from the checks made within the first second.
  const auto started = std::chrono::steady_clock::now();
  log::Init("buffered-test", log::Output::kBuffered);
  log::Info("first");
  log::Info("second");
  const std::string before_warning = contents();
  log::Warn("third");
  const std::string after_warning = contents();
  log::Info("fourth");
  const std::string before_flush = contents();
  const bool within_a_second =
      std::chrono::steady_clock::now() - started < std::chrono::milliseconds(900);
  log::Flush();
  const std::string after_flush = contents();
  log::Init("dnaserve", log::Output::kImmediate);
  dup2(saved, STDERR_FILENO);
  close(saved);
  close(file);
  std::remove(path);

  if (within_a_second) {
    CHECK(before_warning.empty());
    CHECK(before_flush == after_warning);
  }
  const size_t first = after_warning.find("\"event\":\"first\"");
  const size_t second = after_warning.find("\"event\":\"second\"");
  const size_t third = after_warning.find("\"event\":\"third\"");
  CHECK(first < second);
  CHECK(second < third);
  CHECK(third != std::string::npos);
  CHECK(after_flush.find("\"event\":\"fourth\"") > third);
  CHECK(after_flush.find("\"event\":\"fourth\"") != std::string::npos);
  CHECK(std::count(after_flush.begin(), after_flush.end(), '\n') == 4);
}

TEST_CASE("log lines are single-line JSON with escaped values", "[common]") {
  std::string line = log::FormatLine("info", "request", {{"path", "/a\"b\nc"}, {"status", 200}});
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.find("\\\"") != std::string::npos);
  CHECK(line.find("\"status\":200") != std::string::npos);
  CHECK(line.front() == '{');
  CHECK(line.back() == '}');
}
