#include "tests/bench/bench_common.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/file_text.h"

namespace dnaserve::bench {

std::vector<worker::ModelManifest> PackagesToMeasure(const std::string& models_dir,
                                                     bool defaults_only) {
  std::vector<worker::ModelManifest> out;
  for (Task task : kAllTasks) {
    worker::ManifestScan scan = worker::ScanModelsDir(models_dir, task);
    if (!defaults_only) {
      out.insert(out.end(), scan.models.begin(), scan.models.end());
      continue;
    }
    const worker::ModelManifest* chosen = scan.models.empty() ? nullptr : &scan.models.front();
    for (const auto& m : scan.models) {
      if (m.is_default) {
        chosen = &m;
        break;
      }
    }
    if (chosen) out.push_back(*chosen);
  }
  return out;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

double Min(const std::vector<double>& values) {
  return values.empty() ? 0.0 : *std::min_element(values.begin(), values.end());
}

double BestRatio(const std::vector<double>& numerator, const std::vector<double>& denominator) {
  if (numerator.empty() || denominator.empty()) return 0;
  const double bottom = Min(denominator);
  return bottom > 0 ? Min(numerator) / bottom : 0;
}

double PairedRatio(const std::vector<double>& numerator, const std::vector<double>& denominator) {
  std::vector<double> ratios;
  for (size_t i = 0; i < numerator.size() && i < denominator.size(); ++i) {
    if (denominator[i] > 0) ratios.push_back(numerator[i] / denominator[i]);
  }
  return Median(std::move(ratios));
}

ProcessMemory ReadProcessMemory(int pid) {
  ProcessMemory memory;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    long long kib = 0;
    if (std::sscanf(line.c_str(), "VmHWM: %lld kB", &kib) == 1) memory.hwm_kib = kib;
    if (std::sscanf(line.c_str(), "VmRSS: %lld kB", &kib) == 1) memory.rss_kib = kib;
  }
  return memory;
}

ProcessCounters ReadProcessCounters(int pid) {
  ProcessCounters counters;
  const std::string stat =
      ReadFileText("/proc/" + std::to_string(pid) + "/stat").value_or(std::string());
  // The command name (field 2) may hold spaces: fields are counted after its closing ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return counters;
  std::istringstream fields(stat.substr(close + 1));
  std::vector<std::string> after;  // after[0] is field 3 (state)
  for (std::string field; fields >> field;) after.push_back(field);
  if (after.size() < 13) return counters;
  const long ticks = sysconf(_SC_CLK_TCK);
  counters.minor_faults = std::stoll(after[10 - 3]);
  counters.cpu_s = static_cast<double>(std::stoll(after[14 - 3]) + std::stoll(after[15 - 3])) /
                   static_cast<double>(ticks > 0 ? ticks : 100);
  return counters;
}

std::string FormatSeconds(double seconds) {
  char buf[32];
  if (seconds < 1.0) {
    std::snprintf(buf, sizeof(buf), "%.1f ms", seconds * 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f s", seconds);
  }
  return buf;
}

std::string FormatBpPerSecond(double bp_per_second) {
  char buf[32];
  if (bp_per_second >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.2f Mbp/s", bp_per_second / 1e6);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f kbp/s", bp_per_second / 1e3);
  }
  return buf;
}

AllAtOnce RunAllAtOnce(int clients, const std::function<bool()>& call) {
  std::mutex mu;
  std::condition_variable cv;
  int ready = 0;
  bool go = false;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&] {
      {
        std::unique_lock<std::mutex> lock(mu);
        ++ready;
        cv.notify_all();
        cv.wait(lock, [&] { return go; });
      }
      if (!call()) ++failures;
    });
  }
  std::chrono::steady_clock::time_point started;
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return ready == clients; });
    go = true;
    started = std::chrono::steady_clock::now();
  }
  cv.notify_all();
  for (auto& t : threads) t.join();
  AllAtOnce out;
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  out.failures = failures.load();
  return out;
}

bool RunJsonPeer(const std::string& command, rapidjson::Document* out) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return false;
  std::string output;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) output.append(buf, n);
  const int status = pclose(pipe);
  out->Parse(output.c_str(), output.size());
  return status == 0 && !out->HasParseError() && out->IsObject() && out->HasMember("median_s") &&
         (*out)["median_s"].IsNumber();
}

}  // namespace dnaserve::bench
