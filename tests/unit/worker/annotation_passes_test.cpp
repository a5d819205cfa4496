// The annotation runner's passes (worker/tasks/annotation_passes.h) for packages with
// strand-complete channels (the manifest's strand_complete_labels): the reverse-complement pass
// asks the model to skip them and they come from the forward pass alone; every other channel is
// averaged as before, and packages without the field run exactly as they always did.
// With a fake model: what each forward call receives, and what is stitched. (The committed
// annotation-human is not strand-complete: neither composite tried met its tuning-block rule,
// scripts/training/annotation.py; tests/training/test_annotation_sites.py checks the
// strand-complete composite against the two composites.)
#include "worker/tasks/annotation_passes.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "common/sequence.h"
#include "tests/unit/worker/worker_test_support.h"

namespace dnaserve::worker {
namespace {

using testing::FakeModel;
using testing::RandomBases;
using testing::TestManifest;

constexpr int64_t kA = 1, kC = 2, kG = 3, kT = 4;  // char tokenizer ids

// What the fake saw per call: the number of inputs, the second input's values and the third's.
struct Calls {
  std::vector<size_t> inputs;
  std::vector<std::vector<int64_t>> wanted;
  std::vector<IdTensor> neighbours;
};

// A strand-asymmetric fake annotation model with the composite's contract: exon_plus and
// TSS_plus read the base (so the reverse pass, which sees the other strand, disagrees with the
// forward pass), the minus channels other values; with a second input, rows where it is 0 get
// 0 in the TSS channels (as the composite leaves out its promoter track there).
FakeModel StrandFake(const AnnotationChannels& ch, Calls* calls) {
  return FakeModel([ch, calls](const std::vector<IdTensor>& in) {
    calls->inputs.push_back(in.size());
    if (in.size() > 1) calls->wanted.push_back(in[1].data);
    if (in.size() > 2) calls->neighbours.push_back(in[2]);
    const int64_t batch = in[0].shape[0], width = in[0].shape[1];
    FloatTensor labels{{batch, width, ch.count}, std::vector<float>(batch * width * ch.count, 0)};
    for (int64_t b = 0; b < batch; ++b) {
      const bool tss = in.size() < 2 || in[1].data[b] != 0;
      for (int64_t j = 0; j < width; ++j) {
        const int64_t id = in[0].data[b * width + j];
        float* row = labels.data.data() + (b * width + j) * ch.count;
        row[ch.plus.exon] = id == kG ? 0.9f : 0.1f;
        row[ch.minus.exon] = id == kC ? 0.7f : 0.2f;
        if (tss) {
          row[ch.plus.tss] = id == kA ? 0.8f : 0.05f;
          row[ch.minus.tss] = id == kT ? 0.6f : 0.15f;
        }
      }
    }
    FloatTensor types{{batch, 2}, std::vector<float>(batch * 2, 0.5f)};
    return StatusOr<std::vector<FloatTensor>>(std::vector<FloatTensor>{labels, types});
  });
}

StatusOr<AnnotationScores> Passes(Model& model, const ModelManifest& manifest,
                                  const std::string& sequence, bool reverse_complement,
                                  int batch_size = 8) {
  auto tokenizer = LoadTokenizer(manifest);
  if (!tokenizer.ok()) return tokenizer.status();
  auto channels = ResolveAnnotationChannels(manifest.output_labels);
  if (!channels.ok()) return channels.status();
  return RunAnnotationPasses(model, manifest, **tokenizer, sequence, *channels,
                             {reverse_complement, batch_size}, RunHooks{});
}

// Largest |a - b| over the channels where `take` is true.
float MaxDifference(const PositionScores& a, const PositionScores& b, const std::vector<bool>& take) {
  float worst = 0;
  for (int64_t i = 0; i < a.length; ++i) {
    for (int c = 0; c < a.channels; ++c) {
      if (take[c]) worst = std::max(worst, std::abs(a.at(i, c) - b.at(i, c)));
    }
  }
  return worst;
}

std::vector<bool> Not(std::vector<bool> mask) {
  for (size_t c = 0; c < mask.size(); ++c) mask[c] = !mask[c];
  return mask;
}

CATCH_TEST_CASE("annotation: a strand-complete package's reverse pass skips those channels",
                "[tasks][annotation]") {
  ModelManifest full = TestManifest(Task::kAnnotation);  // 2,000 bp windows, 13 labels
  ModelManifest complete = full;
  complete.strand_complete_labels = {"TSS_plus", "TSS_minus"};
  const AnnotationChannels ch = *ResolveAnnotationChannels(full.output_labels);
  const std::vector<bool> tss = StrandCompleteChannels(complete.strand_complete_labels,
                                                       complete.output_labels);
  // 5,000 bp: forward windows [0, 2000) [2000, 4000) [4000, 5000), reverse windows cut at 1000
  // and 3000, so the passes disagree near every cut.
  const std::string sequence = RandomBases(5000, 29);

  Calls old_calls, new_calls, forward_calls;
  FakeModel old_model = StrandFake(ch, &old_calls);
  FakeModel new_model = StrandFake(ch, &new_calls);
  FakeModel forward_model = StrandFake(ch, &forward_calls);
  auto old_path = Passes(old_model, full, sequence, true, 2);
  auto new_path = Passes(new_model, complete, sequence, true, 2);
  auto forward_only = Passes(forward_model, full, sequence, false, 2);
  CATCH_REQUIRE(old_path.ok());
  CATCH_REQUIRE(new_path.ok());
  CATCH_REQUIRE(forward_only.ok());

  // Without the field: one input per call, as always. With it: the second input, [B], 1 on
  // the forward pass's calls and 0 on the reverse pass's.
  CATCH_CHECK(old_calls.inputs == std::vector<size_t>{1, 1, 1, 1});
  CATCH_CHECK(new_calls.inputs == std::vector<size_t>{2, 2, 2, 2});
  CATCH_CHECK(new_calls.wanted ==
              std::vector<std::vector<int64_t>>{{1, 1}, {1}, {0, 0}, {0}});
  CATCH_CHECK(new_path->windows_processed == 6);
  CATCH_CHECK(new_path->forward_passes == 4);
  CATCH_CHECK(new_path->type_scores.size() == old_path->type_scores.size());

  // Every other channel is averaged exactly as before; the TSS channels are the forward
  // pass's, which the old path's average differs from.
  CATCH_CHECK(MaxDifference(new_path->stitched, old_path->stitched, Not(tss)) == 0.0f);
  CATCH_CHECK(MaxDifference(new_path->stitched, forward_only->stitched, tss) == 0.0f);
  CATCH_CHECK(MaxDifference(old_path->stitched, forward_only->stitched, tss) > 0.1f);
  CATCH_CHECK(MaxDifference(new_path->stitched, forward_only->stitched, Not(tss)) > 0.1f);
}

// The char ids of `bases` (A=1 C=2 G=3 T=4 N=5).
std::vector<int64_t> CharIds(const std::string& bases) {
  std::vector<int64_t> out;
  for (char b : bases) out.push_back(std::string("ACGTN").find(b) + 1);
  return out;
}

CATCH_TEST_CASE("annotation: neighbour_bp sends each window's real neighbours on both passes",
                "[tasks][annotation]") {
  ModelManifest complete = TestManifest(Task::kAnnotation);  // 2,000 bp windows
  complete.strand_complete_labels = {"TSS_plus", "TSS_minus"};
  complete.neighbour_bp = 3;
  const AnnotationChannels ch = *ResolveAnnotationChannels(complete.output_labels);
  const std::string sequence = RandomBases(5000, 30);
  const std::string reverse = ReverseComplement(sequence);
  Calls calls;
  FakeModel model = StrandFake(ch, &calls);
  auto passes = Passes(model, complete, sequence, true, 2);
  CATCH_REQUIRE(passes.ok());
  CATCH_CHECK(calls.inputs == std::vector<size_t>{3, 3, 3, 3});
  CATCH_REQUIRE(calls.neighbours.size() == 4);
  for (const IdTensor& n : calls.neighbours) CATCH_CHECK(n.shape[1] == 6);
  // Forward windows [0, 2000) [2000, 4000) | [4000, 5000) + N; each row: 3 bases before the
  // window, then 3 after its 2,000 (N beyond the sequence, also after the padded last window).
  auto row = [](const IdTensor& t, int r) {
    return std::vector<int64_t>(t.data.begin() + r * 6, t.data.begin() + r * 6 + 6);
  };
  CATCH_CHECK(row(calls.neighbours[0], 0) == CharIds("NNN" + sequence.substr(2000, 3)));
  CATCH_CHECK(row(calls.neighbours[0], 1) ==
              CharIds(sequence.substr(1997, 3) + sequence.substr(4000, 3)));
  CATCH_CHECK(row(calls.neighbours[1], 0) == CharIds(sequence.substr(3997, 3) + "NNN"));
  // The reverse pass reads its own sequence, the reverse complement.
  CATCH_CHECK(row(calls.neighbours[2], 1) ==
              CharIds(reverse.substr(1997, 3) + reverse.substr(4000, 3)));
  CATCH_CHECK(row(calls.neighbours[3], 0) == CharIds(reverse.substr(3997, 3) + "NNN"));
}

}  // namespace
}  // namespace dnaserve::worker
