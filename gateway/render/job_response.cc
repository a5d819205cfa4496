#include "gateway/render/job_response.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "core/render/json_writer.h"
#include "gateway/http/error_response.h"

namespace dnaserve::gateway {
namespace {

namespace pb = worker::v1;

// ISO-8601 UTC with milliseconds, e.g. 2026-05-14T09:30:00.123Z.
std::string IsoUtc(int64_t epoch_ms) {
  int64_t seconds = epoch_ms / 1000;
  int64_t millis = epoch_ms % 1000;
  if (millis < 0) {
    millis += 1000;
    seconds -= 1;
  }
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[80];  // ample for any int fields, which keeps -Wformat-truncation quiet
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(millis));
  return buf;
}

double RoundToTenth(double value) { return std::round(value * 10.0) / 10.0; }

}  // namespace

std::string RenderJobSubmitted(const std::string& job_id, const std::string& task) {
  core::JsonWriter w;
  w.StartObject();
  w.Key("data");
  w.StartObject();
  w.Field("job_id", job_id);
  w.Field("status", "accepted");
  w.Key("links");
  w.StartObject();
  w.Field("result", "/v1/tasks/jobs/" + job_id);
  w.EndObject();
  w.EndObject();
  w.Key("meta");
  w.StartObject();
  w.Field("job_id", job_id);
  w.Field("task", task);
  w.Field("mode", "async");
  w.EndObject();
  w.EndObject();
  return w.Take();
}

std::string RenderJobProgress(const core::JobRecord& job, int64_t now_ms) {
  double percent = std::isfinite(job.progress_percent) ? job.progress_percent : 0.0;
  percent = std::clamp(percent, 0.0, 100.0);
  const double elapsed_s = std::max<int64_t>(0, now_ms - job.created_at_ms) / 1000.0;

  core::JsonWriter w;
  w.StartObject();
  w.Key("data");
  w.StartObject();
  w.Field("job_id", job.job_id);
  w.Field("status", core::JobStateName(job.state));
  w.Key("progress");
  w.StartObject();
  w.Field("current_percent", RoundToTenth(percent));
  w.Field("message", job.progress_message);
  w.Field("elapsed_seconds", RoundToTenth(elapsed_s));
  w.EndObject();
  w.EndObject();
  w.Key("meta");
  w.StartObject();
  w.Field("job_id", job.job_id);
  w.Field("task", job.task);
  w.Field("mode", job.mode);
  w.EndObject();
  w.EndObject();
  return w.Take();
}

std::string RenderJobList(const std::vector<core::JobRecord>& jobs) {
  core::JsonWriter w;
  w.StartObject();
  w.Key("jobs");
  w.StartArray();
  for (const auto& job : jobs) {
    const bool finished = job.state == core::JobState::kCompleted || job.state == core::JobState::kFailed;
    w.StartObject();
    w.Field("job_id", job.job_id);
    w.Field("task", job.task);
    w.Field("mode", job.mode);
    w.Field("status", core::JobStateName(job.state));
    w.Field("created_at", IsoUtc(job.created_at_ms));
    w.Field("updated_at", IsoUtc(job.updated_at_ms));
    if (finished) {
      w.Field("http_status", static_cast<int64_t>(HttpStatusFor(job)));
    } else {
      w.NullField("http_status");
    }
    w.EndObject();
  }
  w.EndArray();
  w.Field("count", static_cast<int64_t>(jobs.size()));
  w.EndObject();
  return w.Take();
}

std::string RenderModelList(Task task, const std::vector<pb::ModelInfo>& models) {
  // Same rule as ModelCatalogue::DefaultModel: the flagged model, else the first listed.
  const pb::ModelInfo* default_model = nullptr;
  for (const auto& m : models) {
    if (m.is_default()) {
      default_model = &m;
      break;
    }
  }
  if (default_model == nullptr && !models.empty()) default_model = &models.front();

  core::JsonWriter w;
  w.StartObject();
  w.Field("task", TaskName(task));
  if (default_model != nullptr) {
    w.Field("default_model", default_model->id());
  } else {
    w.NullField("default_model");
  }
  w.Key("models");
  w.StartArray();
  for (const auto& m : models) {
    w.StartObject();
    w.Field("name", m.id());
    w.Field("description", m.description());
    w.Field("is_default", &m == default_model);
    w.Key("bio_spec");
    w.StartObject();
    w.Field("request_max_bp", kMaxSequenceBp);
    w.Field("context_window_bp", m.context_window_bp());
    if (m.trained_window_bp() > 0) {
      w.Field("trained_window_bp", m.trained_window_bp());
    } else {
      w.NullField("trained_window_bp");
    }
    w.EndObject();
    w.Field("tokenizer", m.tokenizer());
    // From the package's manifest (worker/manifest/model_facts.h); absent from older workers.
    if (!m.resolution().empty()) w.Field("resolution", m.resolution());
    if (!m.outputs().empty()) w.Field("outputs", m.outputs());
    w.Field("trained", m.trained());
    w.Field("card", ModelCardUrl(m.id()));
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

}  // namespace dnaserve::gateway
