// Golden records of the stored formats (tests/data/formats/, README there): job records of
// version 1 (the release before versions: an HTTP status) and version 2 (the current one), each
// with a result stored gzip and one stored as it is, and admission verdicts of both versions.
// The current reader must read every one as its fixture expects (the rule of deploy/README.md,
// "Upgrades": a release reads N and N-1), and the current writer must still write what the
// version-2 fixtures hold, field for field: changing the format without a new version fails here.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "common/ids.h"
#include "core/jobs/admission_verdict.h"
#include "core/jobs/redis_job_store.h"
#include "core/jobs/result_codec.h"
#include "core/quota/clock.h"
#include "tests/support/shared_redis.h"
#include "tests/support/test_env.h"

namespace dnaserve::core {
namespace {

rapidjson::Document Fixture(const std::string& name) {
  const std::string path = testing::SourceDir() + "/tests/data/formats/" + name;
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  rapidjson::Document doc;
  doc.Parse(text.str().c_str());
  REQUIRE_FALSE(doc.HasParseError());
  return doc;
}

std::string FromHex(const std::string& hex) {
  std::string out;
  REQUIRE(hex.size() % 2 == 0);
  for (size_t i = 0; i < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string Str(const rapidjson::Value& v, const char* name) {
  REQUIRE(v.HasMember(name));
  return v[name].IsString() ? std::string(v[name].GetString(), v[name].GetStringLength()) : "";
}

std::optional<int> OptionalInt(const rapidjson::Value& v, const char* name) {
  if (!v.HasMember(name) || v[name].IsNull()) return std::nullopt;
  return v[name].GetInt();
}

// A fixture's fields with its placeholders filled: the owner and the time of this run.
std::map<std::string, std::string> Fields(const rapidjson::Value& record, const std::string& owner,
                                          int64_t now_ms) {
  std::map<std::string, std::string> fields;
  for (const auto& m : record["fields"].GetObject()) {
    std::string value = m.value.GetString();
    if (value == "{{owner}}") value = owner;
    if (value == "{{now_ms}}") value = std::to_string(now_ms);
    fields[m.name.GetString()] = value;
  }
  fields["body"] = FromHex(Str(record, "body_hex"));
  return fields;
}

std::string Owner() { return "fixtures-" + NewUuidV4().substr(0, 8); }

void ReadsAsExpected(const std::string& fixture) {
  const rapidjson::Document doc = Fixture(fixture);
  ManualClock clock;
  auto redis = testing::ConnectRedis(testing::SharedRedis().url());
  RedisJobStore store(redis, &clock);
  const std::string owner = Owner();
  for (const auto& record : doc["records"].GetArray()) {
    INFO(fixture << ": " << Str(record, "name"));
    auto fields = Fields(record, owner, clock.NowMs());
    std::vector<std::string> hset = {"HSET", "dnaserve:job:" + fields["job_id"]};
    for (const auto& [name, value] : fields) hset.insert(hset.end(), {name, value});
    REQUIRE(redis->Command(hset).ok());

    auto got = store.Get(fields["job_id"], owner);
    REQUIRE(got.ok());
    const rapidjson::Value& expect = record["expect"];
    CHECK(JobStateName(got->state) == Str(expect, "state"));
    CHECK(ErrorCodeName(got->code) == Str(expect, "code"));
    CHECK(got->format_version == expect["format_version"].GetInt());
    CHECK(got->legacy_http_status == OptionalInt(expect, "legacy_http_status"));
    CHECK(got->content_type == Str(expect, "content_type"));
    CHECK(got->body == Str(expect, "body"));  // gzip undone
    CHECK(got->request_id == fields["request_id"]);
  }
}

TEST_CASE("golden job records of version 1 (the release before) are read as written",
          "[jobs][redis][versions]") {
  ReadsAsExpected("job-record-v1.json");
}

TEST_CASE("golden job records of version 2 are read as written", "[jobs][redis][versions]") {
  ReadsAsExpected("job-record-v2.json");
}

TEST_CASE("the current writer writes what the version 2 fixtures hold", "[jobs][redis][versions]") {
  const rapidjson::Document doc = Fixture("job-record-v2.json");
  ManualClock clock;
  auto redis = testing::ConnectRedis(testing::SharedRedis().url());
  RedisJobStore store(redis, &clock);
  const std::string owner = Owner();
  for (const auto& record : doc["records"].GetArray()) {
    INFO(Str(record, "name"));
    auto golden = Fields(record, owner, clock.NowMs());
    const rapidjson::Value& expect = record["expect"];
    JobRecord job;
    job.job_id = NewUuidV4();
    job.request_id = golden["request_id"];
    job.owner = owner;
    job.task = golden["task"];
    job.mode = golden["mode"];
    job.queued = golden["queued"] == "1";
    job.created_at_ms = clock.NowMs();
    REQUIRE(store.Create(job).ok());
    const ErrorCode code = ErrorCodeFromName(Str(expect, "code"));
    REQUIRE(store.Finish(job.job_id, code, Str(expect, "content_type"), Str(expect, "body")).ok());

    auto all = redis->Command({"HGETALL", "dnaserve:job:" + job.job_id});
    REQUIRE(all.ok());
    std::map<std::string, std::string> written;
    for (size_t i = 0; i + 1 < all->elements.size(); i += 2) {
      written[all->elements[i].str] = all->elements[i + 1].str;
    }
    std::set<std::string> golden_names, written_names;
    for (const auto& [name, value] : golden) golden_names.insert(name);
    for (const auto& [name, value] : written) written_names.insert(name);
    CHECK(written_names == golden_names);
    for (const char* stable : {"v", "state", "code", "content_type", "body_encoding", "queued",
                               "task", "mode", "progress_percent"}) {
      INFO(stable);
      CHECK(written[stable] == golden[stable]);
    }
    // The stored bytes may differ (zlib's output is not a format); what they decode to may not.
    auto decoded = written["body_encoding"] == "gzip" ? GzipDecompress(written["body"])
                                                      : StatusOr<std::string>(written["body"]);
    REQUIRE(decoded.ok());
    CHECK(*decoded == Str(expect, "body"));
  }
}

TEST_CASE("golden admission verdicts of both versions are read as written", "[jobs][versions]") {
  const rapidjson::Document doc = Fixture("admission-verdicts.json");
  for (const auto& v : doc["verdicts"].GetArray()) {
    INFO(Str(v, "name"));
    const AdmissionVerdict got = ParseAdmissionVerdict(Str(v, "text"));
    const rapidjson::Value& expect = v["expect"];
    CHECK(got.accepted == expect["accepted"].GetBool());
    CHECK(got.job_id == Str(expect, "job_id"));
    CHECK(ErrorCodeName(got.code) == Str(expect, "code"));
    CHECK(got.legacy_http_status == OptionalInt(expect, "legacy_http_status"));
    CHECK(got.body == Str(expect, "body"));
  }
  // The current writer's verdicts are the version-2 fixtures, byte for byte.
  CHECK(AcceptedVerdict("e1f2a3b4-c5d6-4e7f-8a9b-0c1d2e3f4a5b") == Str(doc["verdicts"][3], "text"));
}

}  // namespace
}  // namespace dnaserve::core
