#include "tests/integration/service_fixture.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gateway/auth/key_store.h"
#include "tests/support/openapi_check.h"

namespace dnaserve::testing {
namespace {

const std::vector<std::string> kTasks = {"promoter",  "splice",     "enhancer",
                                         "chromatin", "annotation", "expression"};

bool RunCommand(const std::string& command) { return std::system(command.c_str()) == 0; }

}  // namespace

std::optional<std::string> PrepareModels(const std::string& dir, std::string* skip_reason) {
  const std::optional<std::string> source = GeneratedModelsDir(skip_reason);
  if (!source) return std::nullopt;
  std::string models = dir + "/models";
  if (!RunCommand("cp -r " + *source + " " + models)) return std::nullopt;
  // Copy a real manifest, then make it a second promoter model whose weights are garbage.
  std::string broken = models + "/promoter-broken";
  std::string first_promoter;
  RunCommand("mkdir -p " + broken);
  std::string find = "grep -l '\"task\": *\"promoter\"' " + models + "/*/manifest.json | head -n1";
  FILE* pipe = popen(find.c_str(), "r");
  char buf[4096] = {0};
  if (pipe && fgets(buf, sizeof(buf), pipe)) first_promoter = buf;
  if (pipe) pclose(pipe);
  while (!first_promoter.empty() && (first_promoter.back() == '\n')) first_promoter.pop_back();
  if (!first_promoter.empty()) {
    RunCommand("sed -e 's/\"id\": *\"[^\"]*\"/\"id\": \"promoter-broken\"/' "
               "-e 's/\"is_default\": *true/\"is_default\": false/' " +
               first_promoter + " > " + broken + "/manifest.json");
    std::ofstream(broken + "/model.pt") << "this is not a TorchScript archive";
    std::ofstream(broken + "/MODEL_CARD.md") << "Deliberately broken package for tests.\n";
  }
  return models;
}

Service* Service::Get(std::string* failure) {
  static std::string reason;
  static Service* instance = [] {
    auto* service = new Service();
    if (!service->Start(&reason)) {
      delete service;
      return static_cast<Service*>(nullptr);
    }
    std::atexit([] { delete instance; });
    return service;
  }();
  if (!instance) *failure = reason;
  return instance;
}

bool Service::Start(std::string* failure) {
  std::string* skip_reason = failure;
  dir_ = MakeTempDir("dnaserve-it");
  redis_ = RedisServer::Start();
  if (!redis_) {
    *skip_reason = "redis-server is not installed or did not start";
    return false;
  }
  auto models = PrepareModels(dir_, skip_reason);
  if (!models) return false;

  std::string workers;
  for (const auto& task : kTasks) {
    LaunchedWorker& worker = workers_[task];
    WorkerLaunch launch;
    launch.task = task;
    launch.models_dir = *models;
    launch.admin = true;
    launch.log_path = dir_ + "/worker-" + task + ".log";
    worker.Start(std::move(launch));
    workers += (workers.empty() ? "" : ",") + task + "=" + worker.address();
  }

  keys_.alice = gateway::GenerateApiKey();
  keys_.bob = gateway::GenerateApiKey();
  keys_.disabled = gateway::GenerateApiKey();
  keys_.slow = gateway::GenerateApiKey();
  keys_.single = gateway::GenerateApiKey();
  std::ofstream(dir_ + "/keys.json")
      << "{\"keys\": [" << KeyEntry(keys_.alice, "alice", true, 6000, 8) << ","
      << KeyEntry(keys_.bob, "bob", true, 6000, 8) << ","
      << KeyEntry(keys_.disabled, "mallory", false, 6000, 8) << ","
      << KeyEntry(keys_.slow, "slowpoke", true, 6, 8) << ","
      << KeyEntry(keys_.single, "single", true, 6000, 1) << "]}";

  workers_spec_ = workers;
  runner_admin_port_ = FreePort();
  if (!StartRunner(&runner_, redis_->url(), workers, dir_ + "/runner.log",
                   {{"DNASERVE_ADMIN_LISTEN", Loopback(runner_admin_port_)}})) {
    *skip_reason = "the runner did not start; see " + dir_ + "/runner.log";
    return false;
  }
  GatewayLaunch gateway = AnotherGateway(dir_ + "/gateway.log");
  gateway.admin = true;
  gateway.env["DNASERVE_DOCS_DIR"] = SourceDir() + "/gateway/docs/node_modules";
  gateway_.Start(std::move(gateway));
  if (!gateway_.WaitUntilListening(std::chrono::seconds(20))) {
    *skip_reason = "the gateway did not start; see " + dir_ + "/gateway.log";
    return false;
  }
  // Ready when every family has reported its models.
  if (const std::string silent = WaitForModelLists(base_url(), kTasks); !silent.empty()) {
    *skip_reason = "the " + silent + " worker never reported its models; see " + dir_;
    return false;
  }
  // From here on every response is checked against the document this gateway serves.
  return LoadGatewayDocument(base_url(), skip_reason);
}

Service::~Service() {
  gateway_.process().Stop();
  runner_.Stop();
  for (auto& [task, worker] : workers_) worker.process().Stop();
  if (redis_) redis_->Stop();
}

void Service::KillWorker(const std::string& task) { workers_.at(task).process().Kill(); }

void Service::RestartWorker(const std::string& task) { workers_.at(task).Restart(); }

GatewayLaunch Service::AnotherGateway(const std::string& log_path) const {
  GatewayLaunch launch;
  launch.redis_url = redis_->url();
  launch.workers = workers_spec_;
  launch.keys_file = keys_file();
  launch.log_path = log_path;
  return launch;
}

HttpResult Service::Get(const std::string& path, const std::string& key,
                        std::vector<std::string> headers) const {
  if (!key.empty()) headers.push_back("Authorization: Bearer " + key);
  return GatewayRequest("GET", base_url(), path, headers);
}

HttpResult Service::Post(const std::string& path, const std::string& body, const std::string& key,
                         std::vector<std::string> headers) const {
  if (!key.empty()) headers.push_back("Authorization: Bearer " + key);
  headers.push_back("Content-Type: application/json");
  return GatewayRequest("POST", base_url(), path, headers, body, 300);
}

std::shared_ptr<rapidjson::Document> ParseJson(const std::string& body) {
  auto doc = std::make_shared<rapidjson::Document>();
  doc->Parse(body.c_str(), body.size());
  INFO("body: " << body.substr(0, 2000));
  REQUIRE_FALSE(doc->HasParseError());
  return doc;
}

std::string RandomDna(size_t length, unsigned seed) {
  std::mt19937 rng(seed);
  static const char kBases[] = "ACGT";
  std::string out(length, 'A');
  for (auto& c : out) c = kBases[rng() % 4];
  return out;
}

bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return condition();
}

namespace {
const std::thread::id kTestThread = std::this_thread::get_id();  // set during static init
std::mutex documents_mutex;
std::map<std::string, std::shared_ptr<OpenApiCheck>> documents;  // by gateway address
std::vector<std::string> undocumented_elsewhere;                 // found on other threads

std::shared_ptr<OpenApiCheck> FetchDocument(const std::string& base_url, std::string* error) {
  HttpResult document = HttpRequest("GET", base_url + "/v1/openapi.json", {}, "", 10);
  if (document.status != 200) {
    *error = "GET " + base_url + "/v1/openapi.json answered " + std::to_string(document.status);
    return nullptr;
  }
  return OpenApiCheck::FromDocument(document.body, error);
}

// The document of the gateway at `base_url`, fetched on first use; null while it has none.
std::shared_ptr<OpenApiCheck> DocumentOf(const std::string& base_url) {
  {
    std::lock_guard<std::mutex> lock(documents_mutex);
    auto it = documents.find(base_url);
    if (it != documents.end()) return it->second;
  }
  std::string error;
  std::shared_ptr<OpenApiCheck> check = FetchDocument(base_url, &error);
  std::lock_guard<std::mutex> lock(documents_mutex);
  if (check) documents[base_url] = check;
  return check;
}
}  // namespace

bool LoadGatewayDocument(const std::string& base_url, std::string* error) {
  std::shared_ptr<OpenApiCheck> check = FetchDocument(base_url, error);
  if (!check) return false;
  std::lock_guard<std::mutex> lock(documents_mutex);
  documents[base_url] = check;
  return true;
}

void FailUndocumentedElsewhere() {
  std::vector<std::string> found;
  {
    std::lock_guard<std::mutex> lock(documents_mutex);
    found.swap(undocumented_elsewhere);
  }
  for (const std::string& problem : found) FAIL_CHECK(problem);
}

HttpResult GatewayRequest(const std::string& method, const std::string& base_url,
                          const std::string& path, const std::vector<std::string>& headers,
                          const std::string& body, long timeout_seconds) {
  HttpResult response = HttpRequest(method, base_url + path, headers, body, timeout_seconds);
  if (response.status == 0) return response;
  std::string problem;
  if (auto check = DocumentOf(base_url)) problem = check->Check(method, path, response);
  if (!problem.empty())
    problem = method + " " + path + ": " + problem + "; body: " + response.body.substr(0, 500);
  if (std::this_thread::get_id() != kTestThread) {
    if (!problem.empty()) {
      std::lock_guard<std::mutex> lock(documents_mutex);
      undocumented_elsewhere.push_back(problem);
    }
    return response;
  }
  FailUndocumentedElsewhere();
  if (!problem.empty()) FAIL_CHECK(problem);
  return response;
}

double MetricSample(const std::string& admin_url, const std::string& series) {
  auto r = HttpRequest("GET", admin_url + "/metrics", {}, "", 5);
  if (r.status != 200) return -1;
  const std::string scrape = "\n" + r.body;
  size_t at = scrape.find("\n" + series + " ");
  if (at == std::string::npos) return 0;
  return std::stod(scrape.substr(at + series.size() + 2));
}

std::string MinimalBody(const std::string& task, size_t length) {
  if (task == "expression") {
    if (length == 0) length = 9198;
    return "{\"sequence\": \"" + RandomDna(length) +
           "\", \"options\": {\"description\": \"adult liver tissue\"}}";
  }
  if (length == 0) {
    length = task == "annotation" ? 3000 : task == "splice" ? 2000 : 1200;
  }
  return "{\"sequence\": \"" + RandomDna(length) + "\"}";
}

bool StartBundledSpliceWorker(const std::string& dir, LaunchedWorker* worker, std::string* reason) {
  WorkerLaunch splice;
  splice.task = "splice";
  splice.models_dir = dir + "/models";
  splice.log_path = dir + "/worker-splice.log";
  if (std::system(("mkdir -p " + splice.models_dir + " && cp -r " + SourceDir() +
                   "/worker/packages/splice-human " + splice.models_dir + "/")
                      .c_str()) != 0 ||
      !worker->Start(std::move(splice)) || !worker->WaitUntilListening()) {
    *reason = "the splice worker did not start; see " + dir + "/worker-splice.log";
    return false;
  }
  return true;
}

std::string WorkersWithSplice(const Service& svc, const std::string& splice_address) {
  std::string workers;
  std::istringstream entries(svc.workers_spec());
  for (std::string entry; std::getline(entries, entry, ',');) {
    if (entry.rfind("splice=", 0) == 0) entry = "splice=" + splice_address;
    workers += (workers.empty() ? "" : ",") + entry;
  }
  return workers;
}

bool StartReferenceStack(const Service& svc, int db, const std::string& workers,
                         const BuiltCatalogue& reference, const std::string& roster_task,
                         const std::string& dir, ChildProcess* runner, LaunchedGateway* gateway,
                         std::string* reason) {
  const std::string redis = svc.redis_url() + "/" + std::to_string(db);
  const std::string worker_spec = workers.empty() ? svc.workers_spec() : workers;
  const std::map<std::string, std::string> runner_env = {
      {"DNASERVE_GRCH37_CATALOGUE", reference.catalogue},
      {"DNASERVE_GRCH37_FASTA", reference.fasta},
      {"DNASERVE_VARIANT_WORK_DIR", dir + "/runner-scratch"}};
  std::error_code ignored;  // StartRunner's failure below says what went wrong
  std::filesystem::create_directories(dir + "/runner-scratch", ignored);
  if (!StartRunner(runner, redis, worker_spec, dir + "/runner.log", runner_env)) {
    *reason = "the runner did not start; see " + dir + "/runner.log";
    return false;
  }
  GatewayLaunch launch = svc.AnotherGateway(dir + "/gateway.log");
  launch.redis_url = redis;
  launch.workers = worker_spec;
  // Its /viewer too (the locus and variant boxes need a runner that holds a reference).
  launch.env["DNASERVE_DOCS_DIR"] = SourceDir() + "/gateway/docs/node_modules";
  gateway->Start(std::move(launch));
  if (!gateway->WaitUntilListening(std::chrono::seconds(30))) {
    *reason = "the gateway did not start; see " + dir + "/gateway.log";
    return false;
  }
  for (int i = 0; i < 300; ++i) {
    const auto models =
        HttpRequest("GET", gateway->base_url() + "/v1/tasks/" + roster_task + "/models", {}, "");
    if (models.status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return LoadGatewayDocument(gateway->base_url(), reason);
}

}  // namespace dnaserve::testing
