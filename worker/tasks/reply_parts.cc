#include "worker/tasks/reply_parts.h"

#include <algorithm>
#include <optional>
#include <string>

namespace dnaserve::worker {
namespace {

// The text format a result_format names; nullopt for unset and JSON (and for values of a newer
// proto, which CheckResultFormat refuses).
std::optional<OutputFormat> TextFormat(v1::ResultFormat format) {
  switch (format) {
    case v1::RESULT_FORMAT_BED:
      return OutputFormat::kBed;
    case v1::RESULT_FORMAT_BEDGRAPH:
      return OutputFormat::kBedGraph;
    case v1::RESULT_FORMAT_GFF3:
      return OutputFormat::kGff3;
    default:
      return std::nullopt;
  }
}

}  // namespace

ReplyParts ReplyParts::For(const v1::PredictRequest& request) {
  ReplyParts parts;
  const v1::ResultFormat format = request.result_format();
  if (format == v1::RESULT_FORMAT_UNSPECIFIED) return parts;
  parts.everything_ = false;
  if (format == v1::RESULT_FORMAT_JSON) {
    parts.json_ = true;
  } else if (format == v1::RESULT_FORMAT_SCORES) {
    parts.scores_only_ = true;
  } else if (auto text = TextFormat(format)) {
    parts.text_ = FormatName(*text);
  }
  return parts;
}

bool ReplyParts::Format(std::string_view name) const {
  return everything_ || json_ || name == text_;
}

Status CheckResultFormat(Task task, const v1::PredictRequest& request) {
  const v1::ResultFormat format = request.result_format();
  if (format == v1::RESULT_FORMAT_UNSPECIFIED || format == v1::RESULT_FORMAT_JSON ||
      format == v1::RESULT_FORMAT_SCORES) {
    return Status::Ok();
  }
  auto text = TextFormat(format);
  if (!text) {
    return ValidationFailed({"result_format"},
                            "result_format " + std::to_string(static_cast<int>(format)) +
                                " is not one this worker knows",
                            "literal_error");
  }
  const auto& supported = SupportedFormats(task);
  if (std::find(supported.begin(), supported.end(), *text) == supported.end()) {
    return ValidationFailed({"result_format"},
                            "result_format: the " + std::string(TaskName(task)) + " task has no " +
                                std::string(FormatName(*text)) + " rendering",
                            "literal_error");
  }
  return Status::Ok();
}

}  // namespace dnaserve::worker
