// Request bodies as the gateway admits them: every predict task's validator, the find-genes
// workflow's, and output-format negotiation, on arbitrary bytes. Beyond "no crash, no sanitizer
// report" the outcome must be one the contract allows: ok with a sequence inside the task's
// bounds, 400 bad_request (not JSON, beyond the shape limits, or a key repeated in an object) or
// 422 validation_failed with at least one field error; never an internal error. Repeated keys
// are also found here independently (a set of keys per object, recursively): a body holding one
// is never accepted nor answered 422, and the duplicate_key refusal names a key that is repeated.
//
// Input: byte 0 picks the operation (a task, the workflow, or negotiation); the rest is the body
// (for negotiation: "<format query>\n<Accept header>").
#include <rapidjson/document.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "common/task.h"
#include "core/validation/find_genes_request.h"
#include "core/validation/json_shape.h"
#include "core/validation/predict_request.h"

using namespace dnaserve;
using namespace dnaserve::core;

namespace {

[[noreturn]] void Violation(const char* what, const Status& status) {
  std::fprintf(stderr, "contract violation: %s (%s: %s)\n", what,
               std::string(ErrorCodeName(status.code())).c_str(), status.message().c_str());
  std::abort();
}

// Whether `v` holds, at any depth, an object with a key twice; the repeated keys go in `keys`.
// Recursive: only called on bodies within the shape limits (32 levels).
bool HasRepeatedKey(const rapidjson::Value& v, std::set<std::string>* keys) {
  bool found = false;
  if (v.IsObject()) {
    std::set<std::string> seen;
    for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m) {
      std::string key(m->name.GetString(), m->name.GetStringLength());
      if (!seen.insert(key).second) {
        keys->insert(key);
        found = true;
      }
      found = HasRepeatedKey(m->value, keys) || found;
    }
  } else if (v.IsArray()) {
    for (const auto& item : v.GetArray()) found = HasRepeatedKey(item, keys) || found;
  }
  return found;
}

// The outcome agrees with an independent search for repeated keys in `body`.
void CheckRepeatedKeys(std::string_view body, const Status& status) {
  const auto* details = std::get_if<ValidationDetails>(&status.details());
  const bool says_repeated = status.code() == ErrorCode::kBadRequest && details &&
                             details->errors.size() == 1 &&
                             details->errors[0].type == "duplicate_key";
  if (!CheckJsonShape(body).ok()) {
    if (says_repeated) Violation("duplicate_key beyond the shape limits", status);
    return;
  }
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(body.data(),
                                                                                    body.size());
  std::set<std::string> repeated;
  const bool has_repeat = !doc.HasParseError() && HasRepeatedKey(doc, &repeated);
  if (has_repeat != says_repeated) Violation("repeated key missed or invented", status);
  if (says_repeated) {
    const auto& loc = details->errors[0].loc;
    if (loc.size() < 2 || loc[0] != "body" || repeated.count(loc.back()) == 0) {
      Violation("duplicate_key names a key that is not repeated", status);
    }
  }
}

void CheckRefusal(const Status& status) {
  if (status.code() == ErrorCode::kBadRequest) return;
  if (status.code() != ErrorCode::kValidationFailed) Violation("unexpected error code", status);
  const auto* details = std::get_if<ValidationDetails>(&status.details());
  if (!details || details->errors.empty()) Violation("422 without field errors", status);
  for (const FieldError& e : details->errors) {
    if (e.loc.empty() || e.msg.empty() || e.type.empty()) Violation("incomplete field error", status);
  }
}

void ValidatePredict(Task task, std::string_view body) {
  auto result = ValidatePredictBody(task, body);
  CheckRepeatedKeys(body, result.status());
  if (!result.ok()) return CheckRefusal(result.status());
  const core::ValidatedPredict& v = *result;
  if (v.task != task) Violation("task changed", Status::Ok());
  if (v.sequence_length < MinSequenceBp(task) || v.sequence_length > kMaxSequenceBp) {
    Violation("accepted sequence length out of bounds", Status::Ok());
  }
  for (char c : v.request.sequence()) {
    if (c != 'A' && c != 'C' && c != 'G' && c != 'T' && c != 'N') {
      Violation("accepted sequence not normalised to ACGTN", Status::Ok());
    }
  }
}

void ValidateFindGenes(std::string_view body) {
  auto result = ValidateFindGenesBody(body);
  CheckRepeatedKeys(body, result.status());
  if (!result.ok()) return CheckRefusal(result.status());
  if (result->sequence_length < core::kFindGenesMinSequenceBp ||
      result->sequence_length > kMaxSequenceBp) {
    Violation("accepted workflow sequence out of bounds", Status::Ok());
  }
  if (result->description.empty()) Violation("accepted without a description", Status::Ok());
}

void Negotiate(Task task, std::string_view input) {
  const size_t newline = input.find('\n');
  std::optional<std::string> query;
  std::optional<std::string> accept;
  if (newline == std::string_view::npos) {
    accept = std::string(input);
  } else {
    if (newline > 0) query = std::string(input.substr(0, newline));
    accept = std::string(input.substr(newline + 1));
  }
  auto format = core::NegotiateFormat(task, query, accept);
  if (!format.ok() && format.status().code() != ErrorCode::kUnsupportedFormat) {
    Violation("negotiation failed with an unexpected code", format.status());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t op = data[0] % (2 * kAllTasks.size() + 1);
  if (op < kAllTasks.size()) {
    ValidatePredict(kAllTasks[op], rest);
  } else if (op < 2 * kAllTasks.size()) {
    Negotiate(kAllTasks[op - kAllTasks.size()], rest);
  } else {
    ValidateFindGenes(rest);
  }
  return 0;
}
