// The model roster a default deployment publishes: the packages committed in worker/packages
// (tasks without any fall back to the generated packages, as scripts/run does), served by real
// workers behind a real gateway and redis-server, read back through GET /v1/tasks/{task}/models.
// Every bundled package is listed with its manifest's description, default flag and windows; the
// families the contract names are present; untrained models say so and trained ones do not.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <iterator>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gateway/auth/key_store.h"
#include "tests/integration/service_fixture.h"
#include "tests/support/test_env.h"
#include "tests/support/test_files.h"

namespace dnaserve::testing {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kTasks = {"promoter",  "splice",     "enhancer",
                                         "chromatin", "annotation", "expression"};

struct Package {
  std::string id;
  std::string description;
  bool is_default = false;
  bool trained = false;
  int64_t context_window_bp = 0;
  bool trained_window_null = true;
};

// task -> packages of worker/packages, read straight from their manifests.
std::map<std::string, std::vector<Package>> BundledPackages() {
  std::map<std::string, std::vector<Package>> out;
  for (const auto& entry : fs::directory_iterator(SourceDir() + "/worker/packages")) {
    const std::string manifest = entry.path().string() + "/manifest.json";
    if (!fs::exists(manifest)) continue;
    rapidjson::Document doc;
    doc.Parse(ReadFile(manifest).c_str());
    REQUIRE_FALSE(doc.HasParseError());
    Package p;
    p.id = doc["id"].GetString();
    p.description = doc["description"].GetString();
    p.is_default = doc["is_default"].GetBool();
    p.trained = doc["trained"].GetBool();
    p.context_window_bp = doc["context_window_bp"].GetInt64();
    p.trained_window_null = doc["trained_window_bp"].IsNull();
    out[doc["task"].GetString()].push_back(p);
  }
  return out;
}

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A gateway, redis and one worker per task; each worker serves worker/packages when it holds a
// package of that task, else the generated packages.
class BundledService {
 public:
  ~BundledService() {
    gateway_.process().Stop();
    for (auto& w : workers_) w.process().Stop();
    if (redis_) redis_->Stop();
  }

  bool Start(const std::map<std::string, std::vector<Package>>& bundled, std::string* why) {
    dir_ = MakeTempDir("dnaserve-roster");
    redis_ = RedisServer::Start();
    if (!redis_) {
      *why = "redis-server is not installed or did not start";
      return false;
    }
    std::string generated;
    if (const char* env = std::getenv("DNASERVE_TEST_MODELS_DIR"); env && *env) generated = env;
    std::string spec;
    for (const auto& task : kTasks) {
      std::string models = SourceDir() + "/worker/packages";
      if (!bundled.count(task)) {
        if (generated.empty()) {
          *why = "no bundled " + task +
                 " package and DNASERVE_TEST_MODELS_DIR is unset "
                 "(scripts/test sets it)";
          return false;
        }
        models = generated;
      }
      WorkerLaunch launch;
      launch.task = task;
      launch.models_dir = models;
      launch.log_path = dir_ + "/worker-" + task + ".log";
      workers_.emplace_back();
      workers_.back().Start(std::move(launch));
      spec += (spec.empty() ? "" : ",") + task + "=" + workers_.back().address();
    }
    const std::string key = gateway::GenerateApiKey();
    std::ofstream(dir_ + "/keys.json")
        << "{\"keys\": [" << KeyEntry(key, "roster", true, 600, 4) << "]}";
    GatewayLaunch launch;
    launch.redis_url = redis_->url();
    launch.workers = spec;
    launch.keys_file = dir_ + "/keys.json";
    launch.generous_ip_limits = false;
    launch.env = {{"DNASERVE_IP_BURST", "1000"}};  // the test reads every card and figure
    launch.log_path = dir_ + "/gateway.log";
    gateway_.Start(std::move(launch));
    if (!gateway_.WaitUntilListening()) {
      *why = "the gateway did not start; see " + dir_;
      return false;
    }
    if (const std::string silent = WaitForModelLists(gateway_.base_url(), kTasks); !silent.empty()) {
      *why = "the " + silent + " worker never reported its models; see " + dir_;
      return false;
    }
    return true;
  }

  HttpResult Get(const std::string& path) const {
    return GatewayRequest("GET", gateway_.base_url(), path);
  }

 private:
  std::string dir_;
  std::optional<RedisServer> redis_;
  std::vector<LaunchedWorker> workers_;
  LaunchedGateway gateway_;
};

// The card link answers with the committed MODEL_CARD.md (front matter first), and every PNG
// the card embeds, fetched relative to that link as a markdown viewer would, is the committed
// file, byte for byte.
void CheckCardServed(const BundledService& service, const std::string& id,
                     const std::string& card_url) {
  const std::string package = SourceDir() + "/worker/packages/" + id;
  const HttpResult card = service.Get(card_url);
  REQUIRE(card.status == 200);
  CHECK(card.Header("content-type").value_or("").rfind("text/markdown", 0) == 0);
  CHECK(card.body == ReadFile(package + "/MODEL_CARD.md"));
  CHECK(card.body.rfind("---\nlicense: mit\n", 0) == 0);
  const std::string base = card_url.substr(0, card_url.rfind('/') + 1);
  static const std::regex kFigure(R"(!\[[^\]]*\]\(([A-Za-z0-9_.-]+\.png)\))");
  for (std::sregex_iterator it(card.body.begin(), card.body.end(), kFigure), end; it != end;
       ++it) {
    const std::string name = (*it)[1];
    INFO("figure " << name);
    const HttpResult png = service.Get(base + name);
    REQUIRE(png.status == 200);
    CHECK(png.Header("content-type").value_or("") == "image/png");
    CHECK(png.body == ReadFile(package + "/" + name));
    CHECK(png.body.rfind("\x89PNG", 0) == 0);
  }
}

TEST_CASE("models list: the bundled roster through the gateway, with honest descriptions",
          "[roster]") {
  const auto bundled = BundledPackages();
  REQUIRE(bundled.count("promoter"));
  BundledService service;
  std::string why;
  INFO(why);
  REQUIRE(service.Start(bundled, &why));

  std::map<std::string, std::set<std::string>> listed;
  for (const auto& [task, packages] : bundled) {
    INFO("task " << task);
    const HttpResult r = service.Get("/v1/tasks/" + task + "/models");
    REQUIRE(r.status == 200);
    auto doc = ParseJson(r.body);
    const auto& models = (*doc)["models"];
    REQUIRE(models.Size() == packages.size());
    std::map<std::string, const rapidjson::Value*> by_name;
    for (const auto& m : models.GetArray()) by_name[m["name"].GetString()] = &m;
    for (const Package& p : packages) {
      INFO("model " << p.id);
      REQUIRE(by_name.count(p.id));
      const auto& m = *by_name[p.id];
      listed[task].insert(p.id);
      CHECK(std::string(m["description"].GetString()) == p.description);
      CHECK(m["is_default"].GetBool() == p.is_default);
      CHECK(m["bio_spec"]["context_window_bp"].GetInt64() == p.context_window_bp);
      CHECK(m["bio_spec"]["request_max_bp"].GetInt64() == 500000);
      CHECK(m["bio_spec"]["trained_window_bp"].IsNull() == p.trained_window_null);
      if (p.is_default) CHECK(std::string((*doc)["default_model"].GetString()) == p.id);
      const std::string description = Lower(p.description);
      if (p.trained) {
        CHECK(description.find("untrained") == std::string::npos);
      } else {
        CHECK(description.find("untrained") != std::string::npos);
      }
      CheckCardServed(service, p.id, m["card"].GetString());
    }
  }
  // The families the contract names (Arabidopsis has no labelled data here: see the README).
  const std::set<std::string> promoters = listed["promoter"];
  for (const char* id :
       {"promoter-human", "promoter-human-kmer6", "promoter-fly", "promoter-yeast"}) {
    CHECK(promoters.count(id));
  }
  CHECK(listed["splice"].count("splice-human"));
  CHECK(listed["chromatin"].count("chromatin-human"));
  CHECK(listed["chromatin"].count("chromatin-human-kmer5"));
  CHECK(listed["enhancer"].count("enhancer-fly-untrained"));
  CHECK(listed["enhancer"].count("enhancer-fly-kmer6-untrained"));
  if (bundled.count("annotation")) CHECK(listed["annotation"].size() == 1);
  auto promoter = ParseJson(service.Get("/v1/tasks/promoter/models").body);
  CHECK(std::string((*promoter)["default_model"].GetString()) == "promoter-human");
}

}  // namespace
}  // namespace dnaserve::testing
