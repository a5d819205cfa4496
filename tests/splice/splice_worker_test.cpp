// The splice scorer's packed blocks (runner/workflows/splice_batch.h) through the runner's own
// ScoreVariants against real splice-human workers over gRPC, on GRCh37 chr20 (Debian
// vt-examples, as the variant-score tests): a variant scores the same to the bit alone and among
// 100 varied others (SNVs, indels, neighbours sharing its REF block) under fixed 8-row passes;
// 100 variants take a handful of worker calls, not 4 each; the minimal blocks give the serving
// window's scores (today's 15 kb input per REF and ALT) within float rounding; the worker
// refuses a packed width it cannot run. Skips with a message when the reference cannot be had.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/sequence.h"
#include "common/task.h"
#include "core/dispatch/catalogue_refresher.h"
#include "core/dispatch/model_catalogue.h"
#include "core/dispatch/worker_client.h"
#include "runner/genome/reference_genome.h"
#include "runner/workflows/splice_delta.h"
#include "runner/workflows/variant_scoring.h"
#include "tests/support/service_launcher.h"
#include "tests/support/test_env.h"
#include "tests/support/variant_data.h"

using namespace dnaserve;
using namespace dnaserve::testing;

namespace {

namespace wv1 = worker::v1;

struct OneReference : runner::ReferenceLookup {
  const variant::ReferenceGenome* genome = nullptr;
  const variant::ReferenceGenome* Find(const std::string& assembly) const override {
    return assembly == "GRCh37" ? genome : nullptr;
  }
  std::vector<std::string> Names() const override { return {"GRCh37"}; }
};

// A splice-human worker, its backend and catalogue, as a runner holds them.
struct SpliceStack {
  LaunchedWorker worker;
  std::unique_ptr<core::GrpcInferenceBackend> backend;
  core::ModelCatalogue catalogue;

  bool Start(const std::string& dir, const std::string& name, int rows_per_pass,
             std::string* why) {
    WorkerLaunch launch;
    launch.task = "splice";
    launch.models_dir = dir + "/models";
    launch.log_path = dir + "/worker-" + name + ".log";
    // rows_per_pass < 0: no flag, the package's default (rows that scale with their width).
    if (rows_per_pass >= 0) {
      launch.extra_args = {"--batch-rows-per-pass", std::to_string(rows_per_pass)};
    }
    if (!worker.Start(std::move(launch)) || !worker.WaitUntilListening()) {
      *why = "the splice worker did not start; see " + dir + "/worker-" + name + ".log";
      return false;
    }
    core::GrpcInferenceBackend::Options options;
    options.endpoints.addresses[Task::kSplice] = {worker.address()};
    backend = std::make_unique<core::GrpcInferenceBackend>(options);
    core::CatalogueRefresher refresher(backend.get(), &catalogue);
    for (int i = 0; i < 50 && !catalogue.Known(Task::kSplice); ++i) refresher.RefreshOnce();
    if (!catalogue.Known(Task::kSplice)) {
      *why = "the splice worker's models could not be listed";
      return false;
    }
    return true;
  }
};

struct Fixture {
  std::unique_ptr<variant::ReferenceGenome> reference;
  OneReference lookup;
  SpliceStack fixed8;   // fixed passes of 8 rows: company always present as filler or others
  SpliceStack fixed1;   // one row a pass, set by the operator (the package's R, capped at 1)
  SpliceStack by_width;  // the package default: R = 1 window, narrow blocks 6 to a pass
  std::vector<int64_t> strong_acceptors, strong_donors;  // 1-based, what the model reads best

  std::string Base(int64_t pos1, int64_t n = 1) const {
    auto bases = reference->Fetch("20", pos1 - 1, pos1 - 1 + n);
    REQUIRE(bases.ok());
    return *bases;
  }
};

// The bases the model scores highest in a 200 kb stretch of chr20 (a plain splice call).
bool FindStrongSites(Fixture* f, std::string* why) {
  const int64_t from = 30000001;  // 1-based
  auto bases = f->reference->Fetch("20", from - 1, from - 1 + 200000);
  if (!bases.ok()) {
    *why = bases.status().message();
    return false;
  }
  wv1::PredictRequest request;
  request.set_model("splice-human");
  request.set_sequence(*bases);
  request.set_result_format(wv1::RESULT_FORMAT_SCORES);
  request.mutable_splice()->set_threshold(0.0);
  request.mutable_splice()->add_site_types(wv1::SPLICE_SITE_TYPE_DONOR);
  request.mutable_splice()->set_max_sites(200001);
  auto r = f->fixed1.backend->Predict(Task::kSplice, request, {}, nullptr);
  if (!r.ok()) {
    *why = r.status().message();
    return false;
  }
  std::vector<std::pair<double, int64_t>> acceptors, donors;
  for (const auto& site : r->splice().sites()) {
    acceptors.push_back({site.acceptor_score(), from + site.start()});
    donors.push_back({site.donor_score(), from + site.start()});
  }
  std::sort(acceptors.rbegin(), acceptors.rend());
  std::sort(donors.rbegin(), donors.rend());
  // Three of each, every one at least 20 bp from the others (so no two probes or neighbours
  // below are the same variant).
  std::vector<int64_t> taken;
  auto take = [&](const std::vector<std::pair<double, int64_t>>& ranked, std::vector<int64_t>* out) {
    for (const auto& [score, pos] : ranked) {
      if (out->size() == 3) break;
      bool near = false;
      for (int64_t t : taken) near = near || std::llabs(t - pos) < 20;
      if (near) continue;
      taken.push_back(pos);
      out->push_back(pos);
    }
  };
  take(acceptors, &f->strong_acceptors);
  take(donors, &f->strong_donors);
  if (acceptors[0].first > 0.2 && donors[0].first > 0.2) return true;
  *why = "no acceptor and donor above 0.2 in chr20:30,000,001-30,200,000";
  return false;
}

Fixture* GetFixture(std::string* skip) {
  static std::string reason;
  static Fixture* instance = []() -> Fixture* {
    auto built = BuildCatalogue({}, &reason);
    if (!built) return nullptr;
    auto f = std::make_unique<Fixture>();
    auto reference = variant::ReferenceGenome::Open(built->fasta);
    if (!reference.ok()) {
      reason = reference.status().message();
      return nullptr;
    }
    f->reference = std::move(reference).value();
    f->lookup.genome = f->reference.get();
    const std::string dir = MakeTempDir("dnaserve-splice-batch-it");
    if (std::system(("mkdir -p " + dir + "/models && cp -r " + SourceDir() +
                     "/worker/packages/splice-human " + dir + "/models/")
                        .c_str()) != 0) {
      reason = "cannot copy the splice-human package";
      return nullptr;
    }
    if (!f->fixed8.Start(dir, "fixed8", 8, &reason) ||
        !f->fixed1.Start(dir, "fixed1", 1, &reason) ||
        !f->by_width.Start(dir, "by-width", -1, &reason) || !FindStrongSites(f.get(), &reason)) {
      return nullptr;
    }
    std::atexit([] { delete instance; });
    return f.release();
  }();
  *skip = reason;
  return instance;
}

#define REQUIRE_FIXTURE(var)                   \
  std::string var##_skip;                      \
  Fixture* var = GetFixture(&var##_skip);      \
  if (var == nullptr) {                        \
    WARN("skipped: " << var##_skip);           \
    return;                                    \
  }

core::RequestedVariant Variant(int64_t pos, std::string ref, std::string alt) {
  core::RequestedVariant v;
  v.input = "chr20:" + std::to_string(pos) + ":" + ref + ":" + alt;
  v.assembly = "GRCh37";
  v.contig = "chr20";
  v.position = pos;
  v.ref = std::move(ref);
  v.alt = std::move(alt);
  return v;
}

char Other(char b) { return b == 'C' ? 'T' : 'C'; }

core::RequestedVariant Snv(const Fixture& f, int64_t pos) {
  const std::string ref = f.Base(pos);
  return Variant(pos, ref, std::string(1, Other(ref[0])));
}

// The strong sites changed three ways: an SNV on the site's base, a 2 bp deletion over it, a
// 3 bp insertion next to it.
std::vector<core::RequestedVariant> Probes(const Fixture& f) {
  std::vector<core::RequestedVariant> out;
  for (const auto& sites : {f.strong_acceptors, f.strong_donors}) {
    for (int64_t g : sites) {
      out.push_back(Snv(f, g));
      out.push_back(Variant(g - 1, f.Base(g - 1, 3), f.Base(g - 1)));
      out.push_back(Variant(g, f.Base(g), f.Base(g) + "TTA"));
    }
  }
  return out;
}

std::vector<core::RequestedVariant> RandomVariants(const Fixture& f, size_t n, uint32_t seed) {
  std::vector<core::RequestedVariant> out;
  uint32_t x = seed;
  while (out.size() < n) {
    x = x * 1664525u + 1013904223u;
    const int64_t pos = 2000000 + static_cast<int64_t>(x % 58000000u);
    const std::string ref = f.Base(pos, 4);
    if (ref.find('N') != std::string::npos) continue;
    if (out.size() % 5 == 3) {
      out.push_back(Variant(pos, ref, ref.substr(0, 1)));  // 3 bp deletion
    } else if (out.size() % 5 == 4) {
      out.push_back(Variant(pos, ref.substr(0, 1), ref.substr(0, 1) + "GA"));
    } else {
      out.push_back(Snv(f, pos));
    }
  }
  return out;
}

StatusOr<runner::VariantScoreResult> Score(SpliceStack& stack, const Fixture& f,
                                           const std::vector<core::RequestedVariant>& variants,
                                           int64_t distance = 50) {
  core::AdmittedVariantScore admitted;
  admitted.input.variants = variants;
  admitted.input.splice = true;
  admitted.input.splice_distance = distance;
  admitted.splice_model = "splice-human";
  runner::ScoringServices services;
  services.references = &f.lookup;
  services.catalogue = &stack.catalogue;
  services.backend = stack.backend.get();
  core::JobContext context;
  return runner::ScoreVariants(admitted, services, context);
}

std::vector<double> Numbers(const runner::SpliceDelta& d) {
  std::vector<double> out;
  for (const auto* v : {&d.acceptor_gain, &d.acceptor_loss, &d.donor_gain, &d.donor_loss}) {
    out.insert(out.end(), {v->score, static_cast<double>(v->offset), v->ref, v->alt});
  }
  return out;
}

std::vector<double> Numbers(const runner::ScoredVariant& s) {
  REQUIRE(s.splice_plus);
  REQUIRE(s.splice_minus);
  auto out = Numbers(*s.splice_plus);
  auto minus = Numbers(*s.splice_minus);
  out.insert(out.end(), minus.begin(), minus.end());
  return out;
}

// Today's serving window, as the scorer computed it before the blocks: the variant +- (distance
// + flank) sent as one sequence per strand, REF and ALT, the worker padding it to its 15 kb input.
runner::SpliceTrack ServingTrack(SpliceStack& stack, const std::string& bases, bool minus,
                                 int64_t first_offset) {
  wv1::PredictRequest request;
  request.set_model("splice-human");
  request.set_sequence(minus ? ReverseComplement(bases) : bases);
  request.set_result_format(wv1::RESULT_FORMAT_SCORES);
  request.mutable_splice()->set_threshold(0.0);
  request.mutable_splice()->add_site_types(wv1::SPLICE_SITE_TYPE_DONOR);
  request.mutable_splice()->set_max_sites(static_cast<int64_t>(bases.size()) + 1);
  auto r = stack.backend->Predict(Task::kSplice, request, {}, nullptr);
  REQUIRE(r.ok());
  const auto length = static_cast<int64_t>(bases.size());
  runner::SpliceTrack track;
  track.first_offset = first_offset;
  track.acceptor.assign(bases.size(), -1.0f);
  track.donor.assign(bases.size(), -1.0f);
  for (const auto& site : r->splice().sites()) {
    const int64_t at = minus ? length - 1 - site.start() : site.start();
    track.acceptor[static_cast<size_t>(at)] = static_cast<float>(site.acceptor_score());
    track.donor[static_cast<size_t>(at)] = static_cast<float>(site.donor_score());
  }
  return track;
}

std::vector<double> ServingNumbers(SpliceStack& stack, const Fixture& f,
                                   const core::RequestedVariant& v, int64_t distance) {
  const int64_t margin = distance + 1000;
  const auto ref_len = static_cast<int64_t>(v.ref.size());
  auto window = f.reference->Fetch("20", v.position - 1 - margin, v.position - 1 + ref_len + margin);
  REQUIRE(window.ok());
  const std::string alt = window->substr(0, static_cast<size_t>(margin)) + v.alt +
                          window->substr(static_cast<size_t>(margin + ref_len));
  std::vector<double> out;
  for (bool minus : {false, true}) {
    auto delta = runner::ComputeSpliceDelta(ServingTrack(stack, *window, minus, -margin),
                                            ServingTrack(stack, alt, minus, -margin), ref_len,
                                            static_cast<int64_t>(v.alt.size()), distance);
    REQUIRE(delta.ok());
    auto numbers = Numbers(*delta);
    out.insert(out.end(), numbers.begin(), numbers.end());
  }
  return out;
}

}  // namespace

TEST_CASE("splice blocks: a variant scores the same to the bit alone and among 100 varied others",
          "[splice-batch]") {
  REQUIRE_FIXTURE(f);
  const auto probes = Probes(*f);  // 18: SNVs, deletions and insertions at strong sites
  std::vector<core::RequestedVariant> hundred = RandomVariants(*f, 100 - probes.size() - 12, 11);
  // Neighbours: same phase a few bases on (sharing the REF block) and other phases.
  for (size_t i = 0; i < 6; ++i) {
    const int64_t g = (i < 3 ? f->strong_acceptors : f->strong_donors)[i % 3];
    hundred.push_back(Snv(*f, g + 8));
    hundred.push_back(Snv(*f, g - 3));
  }
  for (size_t i = 0; i < probes.size(); ++i) {
    hundred.insert(hundred.begin() + static_cast<std::ptrdiff_t>(i * 5 + 1), probes[i]);
  }
  REQUIRE(hundred.size() == 100);
  auto among = Score(f->fixed8, *f, hundred);
  REQUIRE(among.ok());
  std::vector<core::RequestedVariant> reversed(hundred.rbegin(), hundred.rend());
  auto among_reversed = Score(f->fixed8, *f, reversed);
  REQUIRE(among_reversed.ok());
  // A handful of packed calls (SNVs, 3 bp deletions and insertions of two sizes: one width
  // each), where the serving window took 4 per variant.
  INFO("worker calls for 100 variants: " << among->model_calls);
  CHECK(among->model_calls <= 10);
  double strongest = 0;
  for (size_t i = 0; i < probes.size(); ++i) {
    const size_t at = i * 5 + 1;
    INFO("probe " << probes[i].input);
    REQUIRE(hundred[at].input == probes[i].input);
    auto alone = Score(f->fixed8, *f, {probes[i]});
    REQUIRE(alone.ok());
    REQUIRE(alone->variants.size() == 1);
    REQUIRE_FALSE(alone->variants[0].problem);
    const auto bits = Numbers(alone->variants[0]);
    CHECK(bits == Numbers(among->variants[at]));
    CHECK(bits == Numbers(among_reversed->variants[hundred.size() - 1 - at]));
    strongest = std::max(strongest, alone->variants[0].splice_plus->Max());
  }
  // And not a comparison of zeros.
  CHECK(strongest > 0.2);
}

TEST_CASE("splice blocks: with the package default rows per pass a variant scores the same to the "
          "bit alone and among 100",
          "[splice-batch]") {
  REQUIRE_FIXTURE(f);
  // No --batch-rows-per-pass: the package's one 15 kb row a pass becomes six 2,165 bp blocks a
  // pass (worker/batching/pass_width.h); a pass's shape still depends only on the block width.
  const auto probes = Probes(*f);
  std::vector<core::RequestedVariant> hundred = RandomVariants(*f, 100 - probes.size(), 23);
  for (size_t i = 0; i < probes.size(); ++i) {
    hundred.insert(hundred.begin() + static_cast<std::ptrdiff_t>(i * 5 + 2), probes[i]);
  }
  REQUIRE(hundred.size() == 100);
  auto among = Score(f->by_width, *f, hundred);
  REQUIRE(among.ok());
  std::vector<core::RequestedVariant> reversed(hundred.rbegin(), hundred.rend());
  auto among_reversed = Score(f->by_width, *f, reversed);
  REQUIRE(among_reversed.ok());
  auto eight = Score(f->fixed8, *f, hundred);
  REQUIRE(eight.ok());
  double strongest = 0;
  for (size_t i = 0; i < probes.size(); ++i) {
    const size_t at = i * 5 + 2;
    INFO("probe " << probes[i].input);
    REQUIRE(hundred[at].input == probes[i].input);
    auto alone = Score(f->by_width, *f, {probes[i]});
    REQUIRE(alone.ok());
    REQUIRE(alone->variants.size() == 1);
    REQUIRE_FALSE(alone->variants[0].problem);
    const auto bits = Numbers(alone->variants[0]);
    CHECK(bits == Numbers(among->variants[at]));
    CHECK(bits == Numbers(among_reversed->variants[hundred.size() - 1 - at]));
    // Another pass shape moves only the last float bits: the published 4 decimals agree to
    // within one unit of rounding with 8-row passes (scores only: every 4th number from the
    // second is an offset, which a near tie may move).
    const auto other = Numbers(eight->variants[at]);
    REQUIRE(other.size() == bits.size());
    for (size_t k = 0; k < bits.size(); ++k) {
      if (k % 4 != 1) CHECK(std::abs(bits[k] - other[k]) <= 1.0001e-4);
    }
    strongest = std::max(strongest, alone->variants[0].splice_plus->Max());
  }
  CHECK(strongest > 0.2);
}

TEST_CASE("splice blocks: the minimal window gives the serving window's scores within rounding",
          "[splice-batch]") {
  REQUIRE_FIXTURE(f);
  auto variants = Probes(*f);
  for (const auto& v : RandomVariants(*f, 12, 29)) variants.push_back(v);
  for (int64_t distance : {50, 500}) {
    auto scored = Score(f->fixed1, *f, variants, distance);
    REQUIRE(scored.ok());
    double largest = 0;
    for (size_t i = 0; i < variants.size(); ++i) {
      INFO(variants[i].input << " at distance " << distance);
      const auto blocks = Numbers(scored->variants[i]);
      const auto serving = ServingNumbers(f->fixed1, *f, variants[i], distance);
      REQUIRE(blocks.size() == serving.size());
      for (size_t k = 0; k < blocks.size(); ++k) {
        if (k % 4 == 1) {
          // An offset: the same wherever the delta is more than float noise.
          if (serving[k - 1] > 0.01) CHECK(blocks[k] == serving[k]);
          continue;
        }
        largest = std::max(largest, std::abs(blocks[k] - serving[k]));
        CHECK(std::abs(blocks[k] - serving[k]) <= 1e-5);
      }
    }
    // The figure for runner/README.md: how far the blocks' scores are from the serving window's.
    std::printf("splice blocks vs serving window, distance %lld: largest difference %.3g over "
                "%zu variants\n",
                static_cast<long long>(distance), largest, variants.size());
  }
}

TEST_CASE("splice blocks: the worker refuses a packed width it cannot run", "[splice-batch]") {
  REQUIRE_FIXTURE(f);
  auto request = [](int64_t width, size_t length) {
    wv1::PredictRequest r;
    r.set_model("splice-human");
    r.set_sequence(std::string(length, 'A'));
    r.set_result_format(wv1::RESULT_FORMAT_SCORES);
    r.mutable_splice()->set_threshold(0.0);
    r.mutable_splice()->add_site_types(wv1::SPLICE_SITE_TYPE_DONOR);
    r.mutable_splice()->set_packed_window_bp(width);
    r.mutable_splice()->set_max_sites(100000);
    return r;
  };
  for (const auto& [width, length] : std::vector<std::pair<int64_t, size_t>>{
           {2000, 4000}, {-5, 4000}, {15001, 15001}, {2101, 4000}}) {
    INFO("width " << width << ", " << length << " bases");
    auto r = f->fixed1.backend->Predict(Task::kSplice, request(width, length), {}, nullptr);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kValidationFailed);
    CHECK(r.status().message().find("packed_window_bp") != std::string::npos);
  }
  // Two whole blocks: 2 x 101 scored bases, at the blocks' central coordinates.
  auto ok = f->fixed1.backend->Predict(Task::kSplice, request(2101, 4202), {}, nullptr);
  REQUIRE(ok.ok());
  REQUIRE(ok->splice().sites_size() == 202);
  CHECK(ok->splice().sites(0).start() == 1000);
  CHECK(ok->splice().sites(101).start() == 2101 + 1000);
}
