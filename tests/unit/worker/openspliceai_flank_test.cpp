// Flanked per-base splice models (manifest flank_bp / output_window_bp, the OpenSpliceAI layout):
// the pure window geometry, the manifest fields, and the splice runner driven by a fake model
// that records its inputs and derives its outputs from them, so the flank contents, the stitching
// and the coordinate mapping can be checked base by base.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "common/task.h"
#include "tests/unit/worker/worker_test_support.h"
#include "worker/manifest/manifest.h"
#include "worker/tasks/task_runner.h"
#include "worker/windowing/window_plan.h"

namespace dnaserve::worker {
namespace {

using testing::FakeModel;
using testing::RandomBases;
using Outputs = StatusOr<std::vector<FloatTensor>>;

std::vector<WindowSpan> Plan(int64_t length) { return PlanFlankedWindows(length, 5000, 5000); }

CATCH_TEST_CASE("flanked windows: exact counts, scored spans and last-window padding",
                "[windowing][flank]") {
  CATCH_CHECK(Plan(0).empty());
  CATCH_CHECK(PlanFlankedWindows(100, 5000, -1).empty());

  auto one = Plan(1);
  CATCH_REQUIRE(one.size() == 1);
  CATCH_CHECK(one[0].start == 0);
  CATCH_CHECK(one[0].end == 1);
  CATCH_CHECK(one[0].padded_bp == 4999);

  auto exact = Plan(5000);
  CATCH_REQUIRE(exact.size() == 1);
  CATCH_CHECK(exact[0].padded_bp == 0);

  auto over = Plan(5001);
  CATCH_REQUIRE(over.size() == 2);
  CATCH_CHECK(over[1].start == 5000);
  CATCH_CHECK(over[1].end == 5001);
  CATCH_CHECK(over[1].padded_bp == 4999);

  auto three = Plan(12000);
  CATCH_REQUIRE(three.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CATCH_CHECK(three[i].index == i);
    CATCH_CHECK(three[i].start == i * 5000);
  }
  CATCH_CHECK(three[0].end == 5000);
  CATCH_CHECK(three[1].end == 10000);
  CATCH_CHECK(three[2].end == 12000);
  CATCH_CHECK(three[0].padded_bp == 0);
  CATCH_CHECK(three[1].padded_bp == 0);
  CATCH_CHECK(three[2].padded_bp == 3000);

  auto big = Plan(500000);
  CATCH_REQUIRE(big.size() == 100);
  for (const auto& w : big) CATCH_CHECK(w.padded_bp == 0);
  CATCH_CHECK(big.back().end == 500000);

  // The scored regions are the plain non-overlapping windows; flank 0 is exactly that plan.
  auto plain = PlanWindows(12345, 5000, 5000);
  auto no_flank = PlanFlankedWindows(12345, 5000, 0);
  CATCH_REQUIRE(no_flank.size() == plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    CATCH_CHECK(no_flank[i].start == plain[i].start);
    CATCH_CHECK(no_flank[i].end == plain[i].end);
    CATCH_CHECK(no_flank[i].padded_bp == plain[i].padded_bp);
  }
}

CATCH_TEST_CASE("flanked windows: the input is real neighbouring sequence, N only past the ends",
                "[windowing][flank]") {
  // output 4, flank 3: inputs of 10 over a 10 bp sequence.
  const std::string seq = "ACGTACGTAC";
  auto windows = PlanFlankedWindows(10, 4, 3);
  CATCH_REQUIRE(windows.size() == 3);
  CATCH_CHECK(FlankedInputSpan(windows[0], 4, 3) == Span{-3, 7});
  CATCH_CHECK(FlankedInputSpan(windows[1], 4, 3) == Span{1, 11});
  CATCH_CHECK(FlankedInputSpan(windows[2], 4, 3) == Span{5, 15});
  CATCH_CHECK(FlankedWindow(seq, windows[0], 4, 3) == "NNNACGTACG");
  CATCH_CHECK(FlankedWindow(seq, windows[1], 4, 3) == "CGTACGTACN");
  CATCH_CHECK(FlankedWindow(seq, windows[2], 4, 3) == "CGTACNNNNN");

  // A sequence shorter than one flank: N on both sides of it.
  auto tiny = PlanFlankedWindows(2, 4, 3);
  CATCH_REQUIRE(tiny.size() == 1);
  CATCH_CHECK(FlankedWindow("GT", tiny[0], 4, 3) == "NNNGTNNNNN");

  // Full size: window 1 of 12,000 bp sees bases 0-11,999 and 3,000 N; N inside the sequence is
  // passed through as it is.
  std::string bases = RandomBases(12000, 3);
  bases.replace(7000, 10, std::string(10, 'N'));
  auto plan = Plan(12000);
  const std::string w0 = FlankedWindow(bases, plan[0], 5000, 5000);
  const std::string w1 = FlankedWindow(bases, plan[1], 5000, 5000);
  const std::string w2 = FlankedWindow(bases, plan[2], 5000, 5000);
  CATCH_CHECK(w0.size() == 15000);
  CATCH_CHECK(w0 == std::string(5000, 'N') + bases.substr(0, 10000));
  CATCH_CHECK(w1 == bases + std::string(3000, 'N'));
  CATCH_CHECK(w2 == bases.substr(5000) + std::string(8000, 'N'));
  // Flank 0 gives the plain padded window.
  auto plain = PlanWindows(12000, 5000, 5000);
  CATCH_CHECK(FlankedWindow(bases, plain[2], 5000, 0) == PaddedWindow(bases, plain[2], 5000));
}

const char kFlankedSplice[] = R"({
  "format_version": 1,
  "id": "splice-flanked",
  "task": "splice",
  "description": "a flanked per-base splice model",
  "is_default": false,
  "tokenizer": {"type": "char"},
  "context_window_bp": 15000,
  "trained_window_bp": null,
  "flank_bp": 5000,
  "output_window_bp": 5000,
  "output_labels": ["neither", "acceptor", "donor"],
  "trained": true,
  "weights": "model.pt",
  "model_card": "MODEL_CARD.md"
})";

std::string FlankedWith(const std::string& from, const std::string& to) {
  std::string json = kFlankedSplice;
  size_t at = json.find(from);
  if (at == std::string::npos) return "<replacement target missing: " + from + ">";
  return json.replace(at, from.size(), to);
}

std::string ManifestError(const std::string& json) {
  auto parsed = ParseManifest(json);
  return parsed.ok() ? "<parsed>" : parsed.status().message();
}

CATCH_TEST_CASE("manifest: flank_bp and output_window_bp", "[manifest][flank]") {
  auto parsed = ParseManifest(kFlankedSplice, "splice-flanked");
  CATCH_REQUIRE(parsed.ok());
  CATCH_CHECK(parsed->flank_bp == 5000);
  CATCH_CHECK(parsed->output_window_bp == 5000);
  CATCH_CHECK(parsed->stride_bp == 5000);  // windows step by the scored bases
  CATCH_CHECK(parsed->context_window_bp == 15000);

  // Without the fields: no flank, the whole context is scored (the behaviour so far).
  std::string plain = FlankedWith("\"flank_bp\": 5000,\n  \"output_window_bp\": 5000,\n", "");
  auto unflanked = ParseManifest(plain);
  CATCH_REQUIRE(unflanked.ok());
  CATCH_CHECK(unflanked->flank_bp == 0);
  CATCH_CHECK(unflanked->output_window_bp == 15000);
  CATCH_CHECK(unflanked->stride_bp == 15000);

  // An explicit stride must be the scored width.
  std::string stride = FlankedWith("\"flank_bp\"", "\"stride_bp\": 5000, \"flank_bp\"");
  CATCH_CHECK(ParseManifest(stride).ok());
  CATCH_CHECK(ManifestError(FlankedWith("\"flank_bp\"", "\"stride_bp\": 15000, \"flank_bp\"")) ==
              "manifest.json: 'stride_bp' of a splice model must equal 'output_window_bp' "
              "(flanked windows)");

  CATCH_CHECK(ManifestError(FlankedWith("\"flank_bp\": 5000,", "")) ==
              "manifest.json: 'flank_bp' and 'output_window_bp' must be given together");
  CATCH_CHECK(ManifestError(FlankedWith("\"output_window_bp\": 5000,", "")) ==
              "manifest.json: 'flank_bp' and 'output_window_bp' must be given together");
  CATCH_CHECK(ManifestError(FlankedWith("\"flank_bp\": 5000", "\"flank_bp\": 4000")) ==
              "manifest.json: 'context_window_bp' (15000) must equal 'output_window_bp' + 2 * "
              "'flank_bp' (13000)");
  CATCH_CHECK(ManifestError(FlankedWith("\"flank_bp\": 5000", "\"flank_bp\": 0")) ==
              "manifest.json: 'flank_bp' must be an integer in [1, 1000000]");
  CATCH_CHECK(
      ManifestError(FlankedWith("\"output_window_bp\": 5000", "\"output_window_bp\": -5")) ==
      "manifest.json: 'output_window_bp' must be an integer in [1, 1000000]");
  CATCH_CHECK(ManifestError(FlankedWith("\"flank_bp\": 5000", "\"flank_bp\": \"5000\"")) ==
              "manifest.json: 'flank_bp' must be an integer in [1, 1000000]");
  CATCH_CHECK(ManifestError(FlankedWith("{\"type\": \"char\"}",
                                        "{\"type\": \"kmer\", \"k\": 6, \"stride\": 6}")) ==
              "manifest.json: flanked models need the char tokenizer (one output per scored base)");
  std::string promoter = FlankedWith("\"task\": \"splice\"", "\"task\": \"promoter\"");
  CATCH_CHECK(ManifestError(promoter) ==
              "manifest.json: 'flank_bp' and 'output_window_bp' are only valid for splice models");
}

// A flanked manifest like the converted OpenSpliceAI package (no files behind it).
ModelManifest FlankedManifest() {
  auto parsed = ParseManifest(kFlankedSplice);
  return parsed.ok() ? *parsed : ModelManifest{};
}

int64_t CharId(char base) {
  switch (base) {
    case 'A':
      return 1;
    case 'C':
      return 2;
    case 'G':
      return 3;
    case 'T':
      return 4;
    default:
      return 5;
  }
}

// The base the model sees at input offset `i` of the window scoring from `start`, computed here
// independently of FlankedWindow: real sequence where it exists, N elsewhere.
char InputBase(const std::string& seq, int64_t start, int64_t i) {
  const int64_t p = start - 5000 + i;
  return p >= 0 && p < static_cast<int64_t>(seq.size()) ? seq[p] : 'N';
}

CATCH_TEST_CASE("splice runner with a flanked model: inputs, per-base outputs and coordinates",
                "[tasks][splice][flank]") {
  // Row t of a window: donor 0.9 when its scored base (input offset flank + t) is G, else 0.1;
  // acceptor = id of the input base 5,000 bp upstream (offset t) / 10, so the left flank shows in
  // the acceptor track; neither = 1 - the rest.
  std::vector<IdTensor> seen;
  FakeModel model([&](const std::vector<IdTensor>& in) -> Outputs {
    seen.push_back(in[0]);
    const int64_t batch = in[0].shape[0], width = in[0].shape[1];
    FloatTensor out{{batch, 5000, 3}, {}};
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t* row = in[0].data.data() + b * width;
      for (int64_t t = 0; t < 5000; ++t) {
        const float donor = row[5000 + t] == 3 ? 0.9f : 0.1f;
        const float acceptor = static_cast<float>(row[t]) / 10.0f;
        out.data.insert(out.data.end(), {1 - donor - acceptor, acceptor, donor});
      }
    }
    return std::vector<FloatTensor>{out};
  });
  const std::string seq = RandomBases(12345, 11);
  v1::PredictRequest request;
  request.set_sequence(seq);
  request.set_sequence_name("tx");
  request.mutable_splice()->set_threshold(0.6);  // the acceptor scores stay <= 0.5
  request.mutable_splice()->set_max_sites(20000);
  auto result = RunPrediction(model, FlankedManifest(), request, {});
  CATCH_REQUIRE(result.ok());

  // Three windows, each a [1, 15000] input of its scored bases with the real flanks.
  CATCH_CHECK(result->windows_processed() == 3);
  CATCH_REQUIRE(seen.size() == 3);
  for (int w = 0; w < 3; ++w) {
    CATCH_REQUIRE(seen[w].shape == std::vector<int64_t>{1, 15000});
    int mismatches = 0;
    for (int64_t i = 0; i < 15000; ++i) {
      mismatches += seen[w].data[i] != CharId(InputBase(seq, w * 5000, i));
    }
    CATCH_CHECK(mismatches == 0);
  }
  const auto& s = result->splice();
  CATCH_REQUIRE(s.windows_size() == 3);
  CATCH_CHECK(s.windows(2).start() == 10000);
  CATCH_CHECK(s.windows(2).end() == 12345);
  CATCH_CHECK(s.windows(2).padded_bp() == 2655);
  CATCH_CHECK(s.windows(0).tokens() == 5000);

  // One donor site per G, at its own base, never one in the padding.
  int64_t g_count = 0;
  for (char c : seq) g_count += c == 'G';
  CATCH_REQUIRE(s.sites_size() == g_count);
  for (const auto& site : s.sites()) {
    CATCH_CHECK(site.type() == v1::SPLICE_SITE_TYPE_DONOR);
    CATCH_CHECK(site.end() == site.start() + 1);
    CATCH_CHECK(seq[site.start()] == 'G');
    CATCH_CHECK(site.window_index() == site.start() / 5000);
    CATCH_CHECK(site.token_index() == site.start() % 5000);
  }

  // The acceptor track: one 1 bp row per base, the value of the base 5,000 bp upstream (N = 0.5
  // for the first 5,000 bases, which lie beside the left end).
  const std::string& track = result->tracks().at("acceptor");
  size_t line_start = track.find('\n') + 1;  // after the track line
  int64_t rows = 0;
  int bad = 0;
  while (line_start < track.size()) {
    size_t line_end = track.find('\n', line_start);
    const std::string line = track.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    long long start = 0, end = 0;
    double value = 0;
    char name[16];
    if (std::sscanf(line.c_str(), "%15s %lld %lld %lf", name, &start, &end, &value) != 4) {
      ++bad;
      continue;
    }
    const char upstream = start >= 5000 ? seq[start - 5000] : 'N';
    bad += start != rows || end != start + 1 ||
           std::abs(value - static_cast<double>(CharId(upstream)) / 10.0) > 1e-6;
    ++rows;
  }
  CATCH_CHECK(bad == 0);
  CATCH_CHECK(rows == 12345);
}

CATCH_TEST_CASE("splice runner with a flanked model: a model returning the whole context fails",
                "[tasks][splice][flank]") {
  FakeModel whole([](const std::vector<IdTensor>& in) -> Outputs {
    FloatTensor out{{in[0].shape[0], in[0].shape[1], 3}, {}};
    out.data.assign(static_cast<size_t>(in[0].shape[0] * in[0].shape[1] * 3), 0.1f);
    return std::vector<FloatTensor>{out};
  });
  v1::PredictRequest request;
  request.set_sequence(RandomBases(300, 5));
  auto result = RunPrediction(whole, FlankedManifest(), request, {});
  CATCH_REQUIRE_FALSE(result.ok());
  CATCH_CHECK(result.status().code() == ErrorCode::kInternal);
  CATCH_CHECK(result.status().message() ==
              "model 'splice-flanked' output 0 has shape [1, 15000, 3], expected [1, 5000, 3]");
}

}  // namespace
}  // namespace dnaserve::worker
