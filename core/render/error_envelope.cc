#include "core/render/error_envelope.h"

#include "core/render/json_writer.h"

namespace dnaserve::core {
namespace {

using Writer = core::JsonWriter;

void WriteString(Writer& w, const std::string& s) { w.String(s); }

void WriteStrings(Writer& w, const std::vector<std::string>& items) {
  w.StartArray();
  for (const auto& item : items) w.String(item);
  w.EndArray();
}

struct DetailsWriter {
  Writer& w;
  bool operator()(const std::monostate&) const { return false; }
  bool operator()(const ValidationDetails& d) const {
    w.StartObject();
    w.Key("errors");
    w.StartArray();
    for (const auto& e : d.errors) {
      w.StartObject();
      w.Key("loc");
      WriteStrings(w, e.loc);
      w.Key("msg");
      WriteString(w, e.msg);
      w.Key("type");
      WriteString(w, e.type);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    return true;
  }
  bool operator()(const ModelNotFoundDetails& d) const {
    w.StartObject();
    w.Key("available_models");
    WriteStrings(w, d.available_models);
    w.EndObject();
    return true;
  }
  bool operator()(const TaskNotSupportedDetails& d) const {
    w.StartObject();
    w.Key("task");
    WriteString(w, d.task);
    w.Key("supported_tasks");
    WriteStrings(w, d.supported_tasks);
    w.EndObject();
    return true;
  }
  bool operator()(const SyncTooLargeDetails& d) const {
    w.StartObject();
    w.Field("sequence_length", d.sequence_length);
    w.Field("threshold", d.threshold);
    w.EndObject();
    return true;
  }
  bool operator()(const RecordCapDetails& d) const {
    w.StartObject();
    w.Key("task");
    WriteString(w, d.task);
    w.Field("record_count", d.record_count);
    w.Field("maximum_records", d.maximum_records);
    w.Field("sequence_length", d.sequence_length);
    w.Field("threshold", d.threshold);
    w.EndObject();
    return true;
  }
};

}  // namespace

std::string ErrorEnvelopeJson(const Status& status, const std::string& request_id) {
  Writer w;
  w.StartObject();
  w.Key("error");
  w.StartObject();
  w.Key("code");
  // kCancelled is not in the contract's vocabulary: to a client it is a service that did not answer.
  std::string code(ErrorCodeName(status.code() == ErrorCode::kCancelled
                                     ? ErrorCode::kServiceUnavailable
                                     : status.code()));
  WriteString(w, code);
  w.Key("message");
  // A server error's own text (an exception's first line, a path) stays in the logs: clients
  // get the request id to quote instead, as the reference service does.
  WriteString(w, status.code() == ErrorCode::kInternal ? std::string(kInternalErrorMessage)
                                                       : status.message());
  w.Key("request_id");
  WriteString(w, request_id);
  if (!std::holds_alternative<std::monostate>(status.details())) {
    w.Key("details");
    std::visit(DetailsWriter{w}, status.details());
  }
  w.EndObject();
  w.EndObject();
  return w.Take();
}

}  // namespace dnaserve::core
