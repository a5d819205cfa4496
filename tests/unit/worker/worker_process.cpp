#include "tests/unit/worker/worker_process.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include "tests/unit/worker/worker_test_support.h"

namespace dnaserve::worker::testing {

namespace fs = std::filesystem;
using dnaserve::testing::BinaryDir;
using dnaserve::testing::SourceDir;

std::string SharedDataDir() { return SourceDir() + "/../shared/data"; }

bool PythonHasTorch() {
  return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

bool RunLockedScript(const std::string& lock_dir, const char* script,
                     const std::map<std::string, std::string>& env, const std::string& log) {
  fs::create_directories(lock_dir);
  std::string command = "flock " + ShellQuote(lock_dir + "/.lock") + " env";
  for (const auto& [name, value] : env) command += " " + name + "=" + ShellQuote(value);
  command += " sh -ec " + ShellQuote(script) + " >" + ShellQuote(log) + " 2>&1";
  return std::system(command.c_str()) == 0;
}

namespace {

// apt-get download needs no root; the .deb is unpacked in a temporary directory.
constexpr char kFetchChr20Script[] = R"sh(
if [ ! -s "$DEST" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cd "$tmp"
  apt-get download vt-examples || { apt-get update -qq && apt-get download vt-examples; }
  dpkg-deb -x vt-examples_*.deb x
  mkdir -p "$(dirname "$DEST")"
  cp x/usr/share/doc/vt/examples/ref/20.fa.gz "$DEST.tmp"
  mv "$DEST.tmp" "$DEST"
fi
)sh";

}  // namespace

std::optional<std::string> Chr20Fasta(std::string* why) {
  const std::string dir = BinaryDir() + "/test-data/vt-examples";
  const std::string path = dir + "/20.fa.gz";
  const std::string log = dir + "/fetch.log";
  if (RunLockedScript(dir, kFetchChr20Script, {{"DEST", path}}, log)) return path;
  *why = "fetching chr20 from Debian's vt-examples failed: " + ReadFile(log);
  return std::nullopt;
}

bool RunPython(const std::vector<std::string>& args, const std::string& log) {
  std::string command = "/usr/bin/python3";
  for (const auto& a : args) command += " " + ShellQuote(a);
  command += " >" + ShellQuote(log) + " 2>&1";
  return std::system(command.c_str()) == 0;
}

std::vector<double> PerBaseTrack(const std::string& bedgraph, size_t length) {
  std::vector<double> values;
  std::istringstream in(bedgraph);
  std::string line;
  std::getline(in, line);  // track line
  while (std::getline(in, line)) {
    char chrom[64];
    long long start = 0, end = 0;
    double value = 0;
    if (std::sscanf(line.c_str(), "%63s %lld %lld %lf", chrom, &start, &end, &value) != 4 ||
        start != static_cast<long long>(values.size()) || end != start + 1) {
      return {};
    }
    values.push_back(value);
  }
  if (values.size() != length) return {};
  return values;
}

std::vector<AnnotatedSite> ReadAnnotatedSites(const std::string& path) {
  std::vector<AnnotatedSite> sites;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    AnnotatedSite site;
    if (!(fields >> site.type >> site.index >> site.role)) return {};
    sites.push_back(site);
  }
  return sites;
}

WorkerProcess::~WorkerProcess() {
  process().Stop();
  if (!scratch_dir_.empty()) RemoveScratch(scratch_dir_);
}

bool WorkerProcess::Start(Task task, const std::string& models_dir,
                          const std::vector<std::string>& extra_args,
                          const std::string& log_path) {
  dnaserve::testing::WorkerLaunch launch;
  launch.task = std::string(TaskName(task));
  launch.models_dir = models_dir;
  launch.extra_args = {"--shutdown-grace-seconds", "3"};
  launch.extra_args.insert(launch.extra_args.end(), extra_args.begin(), extra_args.end());
  launch.log_path = log_path;
  if (launch.log_path.empty()) {
    scratch_dir_ = dnaserve::testing::MakeTempDir("dnaserve-worker-process");
    launch.log_path = scratch_dir_ + "/worker.log";
  }
  if (!worker_.Start(std::move(launch)) || !worker_.WaitUntilListening()) return false;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  channel_ = grpc::CreateCustomChannel(worker_.address(), grpc::InsecureChannelCredentials(), args);
  stub_ = v1::Worker::NewStub(channel_);
  return true;
}

grpc::Status WorkerProcess::ListModels(v1::ListModelsResponse* out) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return stub_->ListModels(&context, {}, out);
}

PredictCall WorkerProcess::Predict(const v1::PredictRequest& request,
                                   std::chrono::seconds deadline) {
  PredictCall call;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  auto reader = stub_->Predict(&context, request);
  v1::PredictEvent event;
  while (reader->Read(&event)) {
    if (event.has_result()) call.result = event.result();
  }
  call.status = reader->Finish();
  return call;
}

grpc::Status WorkerProcess::Predict(const v1::PredictRequest& request, v1::PredictResult* result,
                                    std::chrono::seconds deadline) {
  PredictCall call = Predict(request, deadline);
  if (call.result) *result = std::move(*call.result);
  return call.status;
}

std::string WorkerProcess::Log() const { return ReadFile(worker_.log_path()); }

bool WorkerProcess::WaitForLog(const std::string& text, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (Log().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace dnaserve::worker::testing
