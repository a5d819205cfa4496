// POST /v1/variants/score quantiles for all four scorers end to end: a runner holding GRCh37
// chr20 and its catalogue (its own gateway, as tests/integration/variant_score_test.cpp) calling
// workers that serve the bundled default packages splice-human, promoter-human, chromatin-human
// and expression-human, each shipping a variant background (training/variant_background.py,
// training/scorer_backgrounds.py). Variants are taken from the shipped background files
// themselves, so besides "every quantile is non-null and is the share of the shipped file at or
// below the published |delta|", the service's published statistic for a background SNV is
// checked against the value the file holds for it (the background was computed as the service
// scores). Skips with a message when the Debian packages cannot be had.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "tests/integration/service_fixture.h"
#include "tests/support/test_files.h"
#include "tests/support/variant_data.h"

using namespace dnaserve::testing;

namespace {

const char* const kPackages[] = {"splice-human", "promoter-human", "chromatin-human",
                                 "expression-human"};
const char* const kTasks[] = {"splice", "promoter", "chromatin", "expression"};

// A shipped background file read independently of the worker's loader.
struct BackgroundFile {
  std::vector<std::string> variants;                     // row order
  std::map<std::string, std::vector<double>> columns;    // statistic -> values, row order
};

BackgroundFile ReadBackground(const std::string& package) {
  std::ifstream in(SourceDir() + "/worker/packages/" + package + "/variant_background.tsv");
  BackgroundFile out;
  std::string line;
  REQUIRE(std::getline(in, line));
  std::vector<std::string> header;
  std::istringstream names(line);
  for (std::string name; std::getline(names, name, '\t');) header.push_back(name);
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string field;
    for (size_t c = 0; std::getline(fields, field, '\t'); ++c) {
      if (c == 0) {
        out.variants.push_back(field);
      } else {
        out.columns[header[c]].push_back(std::stod(field));
      }
    }
  }
  return out;
}

double ShareAtOrBelow(const std::vector<double>& values, double value) {
  const auto n = std::count_if(values.begin(), values.end(), [&](double v) { return v <= value; });
  return static_cast<double>(n) / static_cast<double>(values.size());
}

struct QuantileStack {
  std::string dir, base;
  LaunchedWorker workers[4];
  LaunchedGateway gateway;
  ChildProcess runner;
};

QuantileStack* GetStack(std::string* skip) {
  static std::string reason;
  static QuantileStack* instance = []() -> QuantileStack* {
    Service* svc = Service::Get(&reason);
    if (svc == nullptr) return nullptr;
    auto built = BuildCatalogue({}, &reason);
    if (!built) return nullptr;
    auto s = std::make_unique<QuantileStack>();
    s->dir = MakeTempDir("dnaserve-scorer-quantiles-it");
    std::map<std::string, std::string> address;  // task -> its bundled worker
    for (size_t i = 0; i < 4; ++i) {
      WorkerLaunch launch;
      launch.task = kTasks[i];
      launch.models_dir = s->dir + "/models-" + kTasks[i];
      launch.log_path = s->dir + "/worker-" + kTasks[i] + ".log";
      const std::string copy = "mkdir -p " + launch.models_dir + " && cp -r " + SourceDir() +
                               "/worker/packages/" + kPackages[i] + " " + launch.models_dir + "/";
      if (std::system(copy.c_str()) != 0 || !s->workers[i].Start(std::move(launch)) ||
          !s->workers[i].WaitUntilListening()) {
        reason = std::string("the ") + kTasks[i] + " worker did not start; see " + s->dir;
        return nullptr;
      }
      address[kTasks[i]] = s->workers[i].address();
    }
    // The service's workers spec with these four tasks pointed at the bundled packages.
    std::string workers;
    std::istringstream entries(svc->workers_spec());
    for (std::string entry; std::getline(entries, entry, ',');) {
      const std::string task = entry.substr(0, entry.find('='));
      if (address.count(task)) entry = task + "=" + address[task];
      workers += (workers.empty() ? "" : ",") + entry;
    }
    if (!StartReferenceStack(*svc, 9, workers, *built, "splice", s->dir, &s->runner, &s->gateway,
                             &reason)) {
      return nullptr;
    }
    s->base = s->gateway.base_url();
    std::atexit([] { delete instance; });  // before the integration service's processes
    return s.release();
  }();
  *skip = reason;
  return instance;
}

}  // namespace

TEST_CASE("variant scoring: non-null quantiles for all four scorers from the shipped "
          "backgrounds of the default packages",
          "[variant-score][quantiles]") {
  std::string skip;
  QuantileStack* s = GetStack(&skip);
  if (s == nullptr) {
    WARN("skipped: " << skip);
    return;
  }
  std::map<std::string, BackgroundFile> shipped;
  for (size_t i = 0; i < 4; ++i) shipped[kTasks[i]] = ReadBackground(kPackages[i]);
  REQUIRE(shipped["promoter"].columns.count("abs_delta") == 1);
  REQUIRE(shipped["expression"].columns.count("abs_log2_fold_change:E066") == 1);
  REQUIRE(shipped["chromatin"].columns.size() >= 10);

  // Three SNVs of each background: promoter's, chromatin's, expression's (inside TSS windows).
  // Promoter and chromatin share splice's draw (same seed and span): chromatin's are rows 3-5,
  // so no variant is asked twice (a duplicate would be an error result).
  std::vector<std::pair<std::string, size_t>> picked;  // (task, row)
  std::string variants;
  for (const char* task : {"promoter", "chromatin", "expression"}) {
    const size_t first = std::string(task) == "chromatin" ? 3 : 0;
    for (size_t row = first; row < first + 3; ++row) {
      picked.emplace_back(task, row);
      variants += std::string(variants.empty() ? "" : ", ") + "\"" +
                  shipped[task].variants[row] + "\"";
    }
  }
  const std::string body = "{\"variants\": [" + variants +
                           "], \"scorers\": {\"splice\": {}, \"promoter\": {}, \"chromatin\": {}, "
                           "\"expression\": {\"contexts\": [\"E066\"]}}}";
  auto r = GatewayRequest("POST", s->base, "/v1/variants/score",
                          {"Authorization: Bearer " + Service::Get(&skip)->keys().alice,
                           "Content-Type: application/json"},
                          body, 300);
  INFO(r.body.substr(0, 4000));
  REQUIRE(r.status == 200);
  auto doc = ParseJson(r.body);
  const auto& data = (*doc)["data"];
  for (const char* task : kTasks) {
    INFO(task);
    const auto& described = data["backgrounds"][task];
    REQUIRE(described["available"].GetBool());
    CHECK(described["snvs"].GetInt64() ==
          static_cast<int64_t>(shipped[task].variants.size()));
  }
  REQUIRE(data["results"].Size() == picked.size());
  bool some_gene = false;
  int expression_rows_seen = 0;
  for (rapidjson::SizeType i = 0; i < data["results"].Size(); ++i) {
    const auto& [from, row] = picked[i];
    INFO("variant " << shipped[from].variants[row] << " from the " << from << " background");
    const auto& result = data["results"][i];
    REQUIRE_FALSE(result.HasMember("error"));
    const auto& q = result["quantiles"];
    for (const char* task : kTasks) {
      INFO(task);
      CHECK_FALSE(q[task].IsNull());
    }
    // splice: each figure against its column.
    for (const char* name : {"DS_AG", "DS_AL", "DS_DG", "DS_DL", "DS_max"}) {
      CHECK(q["splice"][name].GetDouble() ==
            ShareAtOrBelow(shipped["splice"].columns.at(name),
                           result["splice"][name].GetDouble()));
    }
    // promoter: |delta| against abs_delta; a promoter-background SNV publishes its row's value.
    const double promoter = std::fabs(result["promoter"]["delta"].GetDouble());
    const auto& abs_delta = shipped["promoter"].columns.at("abs_delta");
    CHECK(q["promoter"]["delta"].GetDouble() == ShareAtOrBelow(abs_delta, promoter));
    if (from == "promoter") CHECK(std::fabs(promoter - abs_delta[row]) <= 1.5e-4);
    // chromatin: each reported feature against its own column (learned features have one).
    const auto& features = result["chromatin"];
    REQUIRE(features.Size() == q["chromatin"].Size());
    int with_column = 0;
    for (rapidjson::SizeType f = 0; f < features.Size(); ++f) {
      const std::string column = "abs_delta:" + std::string(features[f]["name"].GetString());
      const double value = std::fabs(features[f]["delta"].GetDouble());
      auto it = shipped["chromatin"].columns.find(column);
      if (it == shipped["chromatin"].columns.end()) {
        CHECK(q["chromatin"][f].IsNull());
        continue;
      }
      ++with_column;
      CHECK(q["chromatin"][f].GetDouble() == ShareAtOrBelow(it->second, value));
      if (from == "chromatin") CHECK(std::fabs(value - it->second[row]) <= 1.5e-4);
    }
    CHECK(with_column > 0);
    // expression: per gene, E066 against its column; an expression-background SNV lies in a
    // held-out gene's TSS window (so it has a gene), whose value may be the row's (below).
    const auto& genes = result["expression"];
    REQUIRE(genes.Size() == q["expression"].Size());
    const auto& e066 = shipped["expression"].columns.at("abs_log2_fold_change:E066");
    bool row_value_seen = false;
    for (rapidjson::SizeType g = 0; g < genes.Size(); ++g) {
      const double change = std::fabs(genes[g]["contexts"][0]["log2_fold_change"].GetDouble());
      REQUIRE(q["expression"][g].Size() == 1);
      CHECK(q["expression"][g][0].GetDouble() == ShareAtOrBelow(e066, change));
      if (std::fabs(change - e066[row]) <= 1e-4 * std::max(1.0, e066[row])) row_value_seen = true;
      some_gene = true;
    }
    if (from == "expression") {
      CHECK(genes.Size() >= 1);
      if (row_value_seen) ++expression_rows_seen;
    }
  }
  CHECK(some_gene);
  // The runner's catalogue may start a gene at another transcript's TSS than the training
  // data's (whose window the background used), and then its fold change differs: at least one
  // of the three is the same window and publishes the row's value.
  CHECK(expression_rows_seen >= 1);
}
