// Output-format negotiation (NegotiateFormat): ?format= and Accept against each task's allowed set.
#ifndef CATCH_CONFIG_PREFIX_ALL
#define CATCH_CONFIG_PREFIX_ALL
#endif
#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "common/task.h"
#include "core/validation/predict_request.h"

namespace dnaserve::core {
namespace {

using F = OutputFormat;
const std::optional<std::string> kNone;

const std::vector<F> kAllFormats = {F::kJson, F::kBed, F::kBedGraph, F::kGff3};

bool Supports(Task task, F f) {
  const auto& s = SupportedFormats(task);
  return std::find(s.begin(), s.end(), f) != s.end();
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// A 415 whose message names every supported format of the task.
void Require415(const StatusOr<OutputFormat>& result, Task task) {
  CATCH_REQUIRE_FALSE(result.ok());
  CATCH_INFO(result.status().ToString());
  CATCH_CHECK(result.status().code() == ErrorCode::kUnsupportedFormat);
  const std::string& message = result.status().message();
  CATCH_CHECK(message.find(std::string(TaskName(task))) != std::string::npos);
  CATCH_CHECK(message.find("supported: ") != std::string::npos);
  for (F f : SupportedFormats(task)) {
    CATCH_CHECK(message.find(std::string(FormatName(f))) != std::string::npos);
  }
}

OutputFormat RequireFormat(const StatusOr<OutputFormat>& result) {
  CATCH_INFO(result.status().ToString());
  CATCH_REQUIRE(result.ok());
  return *result;
}

CATCH_TEST_CASE("per-task allowed format sets match the contract", "[format]") {
  CATCH_CHECK(SupportedFormats(Task::kPromoter) == std::vector<F>{F::kJson, F::kBed, F::kBedGraph});
  CATCH_CHECK(SupportedFormats(Task::kSplice) == std::vector<F>{F::kJson, F::kBed, F::kGff3});
  CATCH_CHECK(SupportedFormats(Task::kEnhancer) == std::vector<F>{F::kJson, F::kBedGraph});
  CATCH_CHECK(SupportedFormats(Task::kChromatin) == std::vector<F>{F::kJson, F::kBed});
  CATCH_CHECK(SupportedFormats(Task::kAnnotation) == std::vector<F>{F::kJson, F::kBed, F::kGff3});
  CATCH_CHECK(SupportedFormats(Task::kExpression) == std::vector<F>{F::kJson});
}

CATCH_TEST_CASE("?format= selects every allowed format and 415s every other one", "[format]") {
  for (Task task : kAllTasks) {
    for (F f : kAllFormats) {
      const std::string name(FormatName(f));
      CATCH_INFO(TaskName(task) << " format=" << name);
      auto lower = core::NegotiateFormat(task, name, kNone);
      auto upper = core::NegotiateFormat(task, Upper(name), kNone);
      if (Supports(task, f)) {
        CATCH_CHECK(RequireFormat(lower) == f);
        CATCH_CHECK(RequireFormat(upper) == f);  // case-insensitive value
      } else {
        Require415(lower, task);
        Require415(upper, task);
        CATCH_CHECK(lower.status().message().find("'" + name + "'") != std::string::npos);
      }
    }
  }
}

CATCH_TEST_CASE("the 415 message names the task's supported set", "[format]") {
  auto result = core::NegotiateFormat(Task::kEnhancer, std::string("gff3"), kNone);
  CATCH_REQUIRE_FALSE(result.ok());
  CATCH_CHECK(result.status().message() ==
              "format 'gff3' is not supported for enhancer; supported: json, bedgraph");
}

CATCH_TEST_CASE("an unknown ?format= value is 415 for every task", "[format]") {
  for (Task task : kAllTasks) {
    CATCH_INFO(TaskName(task));
    Require415(core::NegotiateFormat(task, std::string("xml"), kNone), task);
    Require415(core::NegotiateFormat(task, std::string(""), kNone), task);
    Require415(core::NegotiateFormat(task, std::string("text/x-bed"), kNone), task);
  }
}

CATCH_TEST_CASE("no format and no Accept is json", "[format]") {
  for (Task task : kAllTasks) {
    CATCH_CHECK(RequireFormat(core::NegotiateFormat(task, kNone, kNone)) == F::kJson);
    CATCH_CHECK(RequireFormat(core::NegotiateFormat(task, kNone, std::string(""))) == F::kJson);
    CATCH_CHECK(RequireFormat(core::NegotiateFormat(task, kNone, std::string("*/*"))) == F::kJson);
    CATCH_CHECK(RequireFormat(core::NegotiateFormat(task, kNone, std::string("application/json"))) ==
                F::kJson);
    CATCH_CHECK(RequireFormat(core::NegotiateFormat(
                    task, kNone, std::string("Application/JSON; charset=utf-8"))) == F::kJson);
  }
}

CATCH_TEST_CASE("Accept media types map to formats where the task offers them", "[format]") {
  struct Mapping {
    std::string media_type;
    F format;
  };
  const std::vector<Mapping> mappings = {
      {"text/x-bed", F::kBed},   {"text/bed", F::kBed},     {"text/x-bedgraph", F::kBedGraph},
      {"text/x-gff3", F::kGff3}, {"TEXT/X-GFF3", F::kGff3},
  };
  for (Task task : kAllTasks) {
    for (const auto& m : mappings) {
      CATCH_INFO(TaskName(task) << " Accept: " << m.media_type);
      auto result = core::NegotiateFormat(task, kNone, m.media_type);
      if (Supports(task, m.format)) {
        CATCH_CHECK(RequireFormat(result) == m.format);
      } else {
        // Naming only a known text format the task does not offer is 415, not a JSON fallback.
        Require415(result, task);
        CATCH_CHECK(result.status().message().find(std::string(FormatName(m.format))) !=
                    std::string::npos);
      }
    }
  }
}

CATCH_TEST_CASE("Accept naming only unknown media types is 415", "[format]") {
  for (Task task : kAllTasks) {
    CATCH_INFO(TaskName(task));
    Require415(core::NegotiateFormat(task, kNone, std::string("text/html")), task);
    Require415(core::NegotiateFormat(task, kNone, std::string("application/xml, image/png;q=0.9")), task);
  }
}

CATCH_TEST_CASE("every task has a 415 path through Accept", "[format]") {
  const std::vector<std::pair<Task, std::string>> cases = {
      {Task::kPromoter, "text/x-gff3"},       {Task::kSplice, "text/x-bedgraph"},
      {Task::kEnhancer, "text/x-bed"},        {Task::kChromatin, "text/x-gff3"},
      {Task::kAnnotation, "text/x-bedgraph"}, {Task::kExpression, "text/x-bed"},
  };
  for (const auto& [task, accept] : cases) {
    CATCH_INFO(TaskName(task) << " " << accept);
    Require415(core::NegotiateFormat(task, kNone, accept), task);
  }
}

CATCH_TEST_CASE("Accept lists: the first acceptable supported type wins, by q then order",
                "[format]") {
  auto pick = [](Task task, const std::string& accept) {
    return RequireFormat(core::NegotiateFormat(task, kNone, accept));
  };
  // Client order among equal q.
  CATCH_CHECK(pick(Task::kSplice, "text/x-gff3, text/x-bed") == F::kGff3);
  CATCH_CHECK(pick(Task::kSplice, "text/x-bed, text/x-gff3") == F::kBed);
  // Higher q first, regardless of order.
  CATCH_CHECK(pick(Task::kSplice, "text/x-bed;q=0.5, text/x-gff3;q=0.9") == F::kGff3);
  CATCH_CHECK(pick(Task::kAnnotation, "application/json;q=0.1, text/x-gff3") == F::kGff3);
  // Unsupported entries are skipped in favour of a later acceptable one.
  CATCH_CHECK(pick(Task::kEnhancer, "text/x-gff3, text/x-bedgraph;q=0.8") == F::kBedGraph);
  CATCH_CHECK(pick(Task::kEnhancer, "text/x-gff3, */*;q=0.1") == F::kJson);
  CATCH_CHECK(pick(Task::kExpression, "text/html, application/json;q=0.5") == F::kJson);
  // A browser-style header ends in */* and gets json.
  CATCH_CHECK(pick(Task::kPromoter,
                   "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8") == F::kJson);
  // q=0 means "not acceptable", also through a wildcard.
  CATCH_CHECK(pick(Task::kPromoter, "application/json;q=0, */*") == F::kBed);
  Require415(core::NegotiateFormat(Task::kExpression, kNone, std::string("application/json;q=0")),
             Task::kExpression);
  // text/* picks the task's first text format; none for expression.
  CATCH_CHECK(pick(Task::kAnnotation, "text/*") == F::kBed);
  CATCH_CHECK(pick(Task::kEnhancer, "text/*") == F::kBedGraph);
  Require415(core::NegotiateFormat(Task::kExpression, kNone, std::string("text/*")), Task::kExpression);
  // Parameters and spacing are tolerated.
  CATCH_CHECK(pick(Task::kChromatin, " text/x-bed ; charset=utf-8 ; q=1 ") == F::kBed);
}

CATCH_TEST_CASE("?format= wins over Accept", "[format]") {
  CATCH_CHECK(RequireFormat(core::NegotiateFormat(Task::kAnnotation, std::string("json"),
                                            std::string("text/x-gff3"))) == F::kJson);
  CATCH_CHECK(RequireFormat(core::NegotiateFormat(Task::kAnnotation, std::string("gff3"),
                                            std::string("application/json"))) == F::kGff3);
  // An unsupported ?format= is not rescued by an acceptable Accept.
  Require415(core::NegotiateFormat(Task::kEnhancer, std::string("gff3"), std::string("*/*")),
             Task::kEnhancer);
  // And a bad Accept does not matter when ?format= is fine.
  CATCH_CHECK(RequireFormat(core::NegotiateFormat(Task::kExpression, std::string("JSON"),
                                            std::string("text/html"))) == F::kJson);
}

}  // namespace
}  // namespace dnaserve::core
