// The tokenizer's callers: window batches (padding rows of different token counts), splice sites
// and tracks placed from token spans, and a splice run end to end with a BPE vocabulary.
#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/test_env.h"
#include "tests/unit/worker/worker_test_support.h"
#include "worker/tasks/run_support.h"
#include "worker/tasks/task_runner.h"
#include "worker/tokenize/tokenizer.h"
#include "worker/windowing/splice_sites.h"
#include "worker/windowing/window_plan.h"

namespace dnaserve::worker {
namespace {

using testing::FakeModel;
using testing::RandomBases;
using testing::TestManifest;

TokenizerSpec ChrBpe() {
  TokenizerSpec spec;
  spec.type = TokenizerType::kBpe;
  spec.file = "chr20_bpe.tokenizer.json";
  return spec;
}

std::string FixtureDir() { return dnaserve::testing::SourceDir() + "/tests/data/tokenizers"; }

std::shared_ptr<const Tokenizer> Load(const TokenizerSpec& spec, const std::string& dir = "") {
  auto t = LoadTokenizer(spec, dir);
  if (!t.ok()) CATCH_FAIL(t.status().message());
  return *t;
}

CATCH_TEST_CASE("TokenizeWindows: fixed-count tokenizers give equal rows",
                "[tokenizer][windowing]") {
  const std::string seq = RandomBases(2500, 3);
  const auto windows = PlanWindows(2500, 1000, 1000);  // the last window has 500 bp of N
  auto chars = Load({TokenizerType::kChar, 1, 1, ""});
  std::vector<std::vector<Token>> tokens;
  IdTensor ids = TokenizeWindows(seq, windows, 0, 3, 1000, *chars, &tokens);
  CATCH_CHECK(ids.shape == std::vector<int64_t>{3, 1000});
  CATCH_CHECK(ids.data.size() == 3000);
  CATCH_CHECK(ids.data.back() == 5);  // N padding, never PAD
  CATCH_REQUIRE(tokens.size() == 3);
  CATCH_CHECK(tokens[2][0].start == 0);  // spans are relative to the window start

  auto sixmers = Load({TokenizerType::kKmer, 6, 6, ""});
  IdTensor k = TokenizeWindows(seq, windows, 1, 3, 1000, *sixmers);
  CATCH_CHECK(k.shape == std::vector<int64_t>{2, 166});  // 1000 / 6, the partial k-mer dropped
  CATCH_CHECK(k.data.back() == kKmerUnkId);
}

CATCH_TEST_CASE("TokenizeWindows: BPE rows are right-padded with the pad id",
                "[tokenizer][windowing]") {
  auto bpe = Load(ChrBpe(), FixtureDir());
  // Low-complexity and random halves tokenise to very different counts.
  const std::string seq = std::string(600, 'A') + RandomBases(600, 11);
  const auto windows = PlanWindows(static_cast<int64_t>(seq.size()), 500, 500);  // 3 windows
  std::vector<std::vector<Token>> tokens;
  IdTensor ids = TokenizeWindows(seq, windows, 0, 3, 500, *bpe, &tokens);
  CATCH_REQUIRE(tokens.size() == 3);
  size_t width = 0;
  for (const auto& t : tokens) width = std::max(width, t.size());
  CATCH_CHECK(ids.shape == std::vector<int64_t>{3, static_cast<int64_t>(width)});
  CATCH_CHECK(tokens[0].size() < tokens[1].size());  // poly-A merges into long tokens
  for (int r = 0; r < 3; ++r) {
    const auto expected = bpe->Encode(PaddedWindow(seq, windows[r], 500));
    CATCH_REQUIRE(tokens[r] == expected);
    for (size_t c = 0; c < width; ++c) {
      const int64_t want = c < expected.size() ? expected[c].id : *bpe->pad_id();
      CATCH_CHECK(ids.data[r * width + c] == want);
    }
  }
  // The ids-only path builds the same tensor.
  CATCH_CHECK(TokenizeWindows(seq, windows, 0, 3, 500, *bpe).data == ids.data);
}

// Scores in (neither, acceptor, donor) order, one row per token.
std::vector<float> Rows(const std::vector<std::pair<float, float>>& acceptor_donor) {
  std::vector<float> out;
  for (auto [a, d] : acceptor_donor) {
    out.push_back(1 - a - d);
    out.push_back(a);
    out.push_back(d);
  }
  return out;
}

CATCH_TEST_CASE("splice sites take the scored token's own span", "[tokenizer][splice]") {
  // A window at 100 over a 115 bp sequence, tokens of 4, 1, 7 and 8 bases (the last crosses the
  // sequence end) plus a special token that covers nothing.
  const WindowSpan window{1, 100, 115, 5};
  const std::vector<Token> tokens = {{1, 0, 0, true},
                                     {10, 0, 4, false},
                                     {11, 4, 5, false},
                                     {12, 5, 12, false},
                                     {13, 12, 20, false}};
  const auto scores =
      Rows({{0.9f, 0.9f}, {0.0f, 0.7f}, {0.6f, 0.0f}, {0.1f, 0.1f}, {0.0f, 0.95f}, {0.9f, 0.9f}});
  SpliceSiteCollector collector({0.5, true, true, 100}, 115);
  auto added = collector.AddWindow(window, tokens, scores.data(), 3, 2, 1);
  CATCH_REQUIRE(added.ok());
  CATCH_CHECK(*added == 3);  // the special token's row and the padding row past the tokens: none
  const auto& sites = collector.sites();
  CATCH_REQUIRE(sites.size() == 3);
  CATCH_CHECK(sites[0].type == SiteType::kDonor);
  CATCH_CHECK(sites[0].start == 100);
  CATCH_CHECK(sites[0].end == 104);
  CATCH_CHECK(sites[0].token_index == 1);
  CATCH_CHECK(sites[1].type == SiteType::kAcceptor);
  CATCH_CHECK(sites[1].start == 104);
  CATCH_CHECK(sites[1].end == 105);  // a one-base token
  CATCH_CHECK(sites[2].start == 112);
  CATCH_CHECK(sites[2].end == 115);  // clipped at the sequence end
  CATCH_CHECK(sites[2].token_index == 4);
  CATCH_CHECK(sites[2].window_index == 1);

  const auto slices = TrackSlices(window, tokens, 115);
  CATCH_REQUIRE(slices.size() == 4);
  CATCH_CHECK(slices[0].token_index == 1);
  CATCH_CHECK(slices[0].start == 100);
  CATCH_CHECK(slices[3].start == 112);
  CATCH_CHECK(slices[3].end == 115);
  for (size_t i = 1; i < slices.size(); ++i) CATCH_CHECK(slices[i].start == slices[i - 1].end);
}

CATCH_TEST_CASE("track slices of overlapping k-mers never overlap", "[tokenizer][splice]") {
  auto threemers = Load({TokenizerType::kKmer, 3, 1, ""});
  const WindowSpan window{0, 0, 8, 0};
  const auto tokens = threemers->Encode("ACGTACGT");  // [0,3) [1,4) ... [5,8)
  const auto slices = TrackSlices(window, tokens, 8);
  CATCH_REQUIRE(slices.size() == 6);
  for (int t = 0; t < 5; ++t) {
    CATCH_CHECK(slices[t].start == t);
    CATCH_CHECK(slices[t].end == t + 1);  // one stride each
  }
  CATCH_CHECK(slices[5].start == 5);
  CATCH_CHECK(slices[5].end == 8);  // the last k-mer speaks for all of its bases
  // Tokens wholly in the padding get no slice.
  CATCH_CHECK(TrackSlices(window, tokens, 4).size() == 4);
}

CATCH_TEST_CASE("splice with a BPE vocabulary: sites and tracks follow token spans",
                "[tokenizer][splice]") {
  ModelManifest manifest = TestManifest(Task::kSplice);
  manifest.tokenizer = ChrBpe();
  manifest.package_dir = FixtureDir();
  auto bpe = Load(manifest.tokenizer, manifest.package_dir);
  const int64_t pad = *bpe->pad_id();
  // Donor at token 5 of every window, acceptor at token 9; padding rows score high and must be
  // ignored.
  FakeModel model([&](const std::vector<IdTensor>& in) -> StatusOr<std::vector<FloatTensor>> {
    const int64_t batch = in[0].shape[0];
    const int64_t width = in[0].shape[1];
    FloatTensor out{{batch, width, 3}, {}};
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t t = 0; t < width; ++t) {
        const bool padding = in[0].data[b * width + t] == pad;
        const float donor = padding || t == 5 ? 0.9f : 0.0f;
        const float acceptor = padding || t == 9 ? 0.8f : 0.0f;
        out.data.insert(out.data.end(), {1 - donor - acceptor, acceptor, donor});
      }
    }
    return std::vector<FloatTensor>{out};
  });
  v1::PredictRequest request;
  const std::string seq = RandomBases(20000, 5);  // two windows, the second 10,000 bp of N
  request.set_sequence(seq);
  request.mutable_splice()->set_threshold(0.5);
  auto result = RunPrediction(model, manifest, *bpe, request, RunHooks{});
  CATCH_REQUIRE(result.ok());
  const auto& splice = result->splice();
  CATCH_REQUIRE(splice.windows_size() == 2);
  CATCH_REQUIRE(splice.sites_size() == 4);
  const auto windows = PlanWindows(20000, 15000, 15000);
  for (int w = 0; w < 2; ++w) {
    const auto tokens = bpe->Encode(PaddedWindow(seq, windows[w], 15000));
    CATCH_CHECK(splice.windows(w).tokens() == static_cast<int32_t>(tokens.size()));
    const auto& donor = splice.sites(2 * w);
    const auto& acceptor = splice.sites(2 * w + 1);
    CATCH_CHECK(donor.type() == v1::SPLICE_SITE_TYPE_DONOR);
    CATCH_CHECK(donor.token_index() == 5);
    CATCH_CHECK(donor.start() == windows[w].start + tokens[5].start);
    CATCH_CHECK(donor.end() == windows[w].start + tokens[5].end);
    CATCH_CHECK(acceptor.type() == v1::SPLICE_SITE_TYPE_ACCEPTOR);
    CATCH_CHECK(acceptor.token_index() == 9);
    CATCH_CHECK(acceptor.end() - acceptor.start() == tokens[9].end - tokens[9].start);
  }
  // BPE tokens are several bases long on chr20 statistics: the donor spans are not one base.
  CATCH_CHECK(splice.sites(0).end() - splice.sites(0).start() >= 1);
  // The per-token track covers [0, 20000) once: rows follow token spans, padding has none.
  const std::string& track = result->tracks().at("donor");
  int64_t at = 0;
  size_t rows = 0;
  std::istringstream lines(track);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("track", 0) == 0) continue;
    std::istringstream fields(line);
    std::string seqid;
    int64_t start = 0;
    int64_t end = 0;
    fields >> seqid >> start >> end;
    CATCH_CHECK(start == at);
    at = end;
    ++rows;
  }
  CATCH_CHECK(at == 20000);
  CATCH_CHECK(rows > 2000);  // about one row per token, not per base
}

}  // namespace
}  // namespace dnaserve::worker
