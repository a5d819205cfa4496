// The per-task runners driven by fake models whose outputs are simple functions of the input ids,
// so windowing, padding, stitching, coordinates and rendering can be checked exactly.
#include "worker/tasks/task_runner.h"

#include <algorithm>
#include <google/protobuf/util/message_differencer.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <set>
#include <string>

#include "common/task.h"
#include "proto/status_codec.h"
#include "tests/unit/worker/worker_test_support.h"
#include "worker/windowing/annotation_decode.h"
#include "worker/windowing/chromatin_features.h"

namespace dnaserve::worker {
namespace {

using testing::FakeModel;
using testing::TestManifest;
using Outputs = StatusOr<std::vector<FloatTensor>>;

constexpr int64_t kA = 1, kC = 2, kG = 3, kN = 5;  // char tokenizer ids

int64_t Count(const IdTensor& t, int64_t row, int64_t id) {
  const int64_t width = t.shape[1];
  return std::count(t.data.begin() + row * width, t.data.begin() + (row + 1) * width, id);
}

struct Run {
  StatusOr<v1::PredictResult> result = Status(ErrorCode::kInternal, "not run");
  std::vector<std::pair<int, int>> progress;
};

Run Predict(Model& model, const ModelManifest& manifest, const v1::PredictRequest& request) {
  Run run;
  RunHooks hooks;
  hooks.progress = [&](int done, int total) { run.progress.emplace_back(done, total); };
  run.result = RunPrediction(model, manifest, request, hooks);
  return run;
}

std::set<std::string> FormatKeys(const v1::PredictResult& r) {
  std::set<std::string> keys;
  for (const auto& [k, v] : r.formats()) keys.insert(k);
  return keys;
}

std::set<std::string> ExpectedFormats(Task task) {
  std::set<std::string> keys;
  for (OutputFormat f : SupportedFormats(task)) {
    if (f != OutputFormat::kJson) keys.insert(std::string(FormatName(f)));
  }
  return keys;
}

size_t Lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

// Promoter: score = fraction of G in the window.
FakeModel PromoterFake() {
  return FakeModel([](const std::vector<IdTensor>& in) -> Outputs {
    FloatTensor out{{in[0].shape[0]}, {}};
    for (int64_t b = 0; b < in[0].shape[0]; ++b) {
      out.data.push_back(static_cast<float>(Count(in[0], b, kG)) / in[0].shape[1]);
    }
    return std::vector<FloatTensor>{out};
  });
}

CATCH_TEST_CASE("promoter: windows, regions, tracks and formats", "[tasks][promoter]") {
  FakeModel model = PromoterFake();
  v1::PredictRequest request;
  request.set_sequence(std::string(3000, 'G') + std::string(7000, 'A'));
  request.set_sequence_name("chr9");
  request.mutable_promoter()->set_threshold(0.5);
  Run run = Predict(model, TestManifest(Task::kPromoter), request);
  CATCH_REQUIRE(run.result.ok());
  const auto& r = *run.result;
  CATCH_CHECK(r.windows_processed() == 9);
  CATCH_CHECK(model.batches == std::vector<int64_t>{8, 1});
  CATCH_CHECK(run.progress == std::vector<std::pair<int, int>>{{8, 9}, {9, 9}});
  const auto& p = r.promoter();
  CATCH_REQUIRE(p.windows_size() == 9);
  CATCH_CHECK(p.windows(0).score() == 1.0);
  CATCH_CHECK(p.windows(2).score() == 0.5);  // [2000, 4000): half G
  CATCH_CHECK(p.windows(2).is_promoter());
  CATCH_CHECK_FALSE(p.windows(3).is_promoter());
  CATCH_CHECK(p.windows(8).start() == 8000);
  CATCH_CHECK(p.windows(8).end() == 10000);
  CATCH_REQUIRE(p.regions_size() == 1);
  CATCH_CHECK(p.regions(0).start() == 0);
  CATCH_CHECK(p.regions(0).end() == 4000);
  CATCH_CHECK(p.regions(0).score() == 1.0);
  CATCH_CHECK(FormatKeys(r) == ExpectedFormats(Task::kPromoter));
  CATCH_CHECK(r.formats().at("bed") == "chr9\t0\t4000\tpromoter\t1000\t.\n");
  const std::string& bedgraph = r.formats().at("bedgraph");
  CATCH_CHECK(Lines(bedgraph) == 10);  // track line + one row per window
  CATCH_CHECK(bedgraph.find("chr9\t0\t1500\t1\n") != std::string::npos);  // first window's share
  CATCH_CHECK(bedgraph.find("chr9\t8500\t10000\t0\n") != std::string::npos);
  CATCH_CHECK(r.tracks().at("promoter") == bedgraph);
}

CATCH_TEST_CASE("promoter: input shorter than the context is padded with N", "[tasks][promoter]") {
  int64_t n_seen = -1;
  int64_t width = -1;
  FakeModel model([&](const std::vector<IdTensor>& in) -> Outputs {
    n_seen = Count(in[0], 0, kN);
    width = in[0].shape[1];
    return std::vector<FloatTensor>{{{1}, {0.9f}}};
  });
  v1::PredictRequest request;
  request.set_sequence(std::string(300, 'C'));
  Run run = Predict(model, TestManifest(Task::kPromoter), request);  // options unset: defaults
  CATCH_REQUIRE(run.result.ok());
  CATCH_CHECK(width == 2000);
  CATCH_CHECK(n_seen == 1700);
  const auto& w = run.result->promoter().windows(0);
  CATCH_CHECK(w.end() == 300);
  CATCH_CHECK(w.padded_bp() == 1700);
  CATCH_CHECK(run.result->promoter().regions(0).end() == 300);
  CATCH_CHECK(run.result->formats().at("bed").rfind("sequence\t0\t300\t", 0) == 0);
}

// Splice: token AAAAAA -> donor 0.9, GGGGGG -> acceptor 0.8, anything else neither.
FakeModel SpliceFake() {
  return FakeModel([](const std::vector<IdTensor>& in) -> Outputs {
    const int64_t batch = in[0].shape[0], tokens = in[0].shape[1];
    const int64_t aaaaaa = 2, gggggg = 2 + 2 * (1 + 4 + 16 + 64 + 256 + 1024);
    FloatTensor out{{batch, tokens, 3}, {}};
    for (int64_t id : in[0].data) {
      float donor = id == aaaaaa ? 0.9f : 0.01f;
      float acceptor = id == gggggg ? 0.8f : 0.01f;
      out.data.insert(out.data.end(), {1 - donor - acceptor, acceptor, donor});
    }
    return std::vector<FloatTensor>{out};
  });
}

std::string SpliceSequence() {
  std::string seq(20000, 'C');
  seq.replace(60, 6, "AAAAAA");     // window 0, token 10
  seq.replace(15006, 6, "GGGGGG");  // window 1, token 1
  return seq;
}

CATCH_TEST_CASE("splice: sites, windows, tracks and formats", "[tasks][splice]") {
  FakeModel model = SpliceFake();
  v1::PredictRequest request;
  request.set_sequence(SpliceSequence());
  request.set_sequence_name("tx");
  auto* options = request.mutable_splice();
  options->set_threshold(0.5);
  options->add_site_types(v1::SPLICE_SITE_TYPE_DONOR);
  options->add_site_types(v1::SPLICE_SITE_TYPE_ACCEPTOR);
  options->set_max_sites(20000);
  Run run = Predict(model, TestManifest(Task::kSplice), request);
  CATCH_REQUIRE(run.result.ok());
  const auto& r = *run.result;
  CATCH_CHECK(r.windows_processed() == 2);
  CATCH_CHECK(run.progress.size() == 2);
  const auto& s = r.splice();
  CATCH_REQUIRE(s.sites_size() == 2);
  CATCH_CHECK(s.sites(0).type() == v1::SPLICE_SITE_TYPE_DONOR);
  CATCH_CHECK(s.sites(0).start() == 60);
  CATCH_CHECK(s.sites(0).end() == 66);
  CATCH_CHECK(s.sites(0).token_index() == 10);
  CATCH_CHECK(s.sites(0).score() == Approx(0.9));
  CATCH_CHECK(s.sites(1).type() == v1::SPLICE_SITE_TYPE_ACCEPTOR);
  CATCH_CHECK(s.sites(1).start() == 15006);
  CATCH_CHECK(s.sites(1).token_index() == 1);
  CATCH_CHECK(s.sites(1).window_index() == 1);
  CATCH_REQUIRE(s.windows_size() == 2);
  CATCH_CHECK(s.windows(1).padded_bp() == 10000);
  CATCH_CHECK(s.windows(1).tokens() == 2500);
  CATCH_CHECK(s.windows(0).sites() == 1);
  CATCH_CHECK(FormatKeys(r) == ExpectedFormats(Task::kSplice));
  CATCH_CHECK(r.formats().at("bed") ==
              "tx\t60\t66\tdonor\t900\t+\ntx\t15006\t15012\tacceptor\t800\t+\n");
  const std::string& gff = r.formats().at("gff3");
  CATCH_CHECK(gff.rfind("##gff-version 3\n##sequence-region tx 1 20000\n", 0) == 0);
  CATCH_CHECK(gff.find("tx\tsplice-test\tfive_prime_cis_splice_site\t61\t66\t0.9\t+\t.\tID=site_1;"
                       "Name=donor;window_index=0;token_index=10\n") != std::string::npos);
  CATCH_CHECK(gff.find("three_prime_cis_splice_site\t15007\t15012\t0.8\t+") != std::string::npos);
  // One row per token inside the sequence: 2,500 + 834 (the last clipped to [19998, 20000)).
  const std::string& donor = r.tracks().at("donor");
  CATCH_CHECK(Lines(donor) == 1 + 2500 + 834);
  CATCH_CHECK(donor.find("tx\t19998\t20000\t") != std::string::npos);
  CATCH_CHECK(donor.find("\t20000\t20004\t") == std::string::npos);
  CATCH_CHECK(r.tracks().count("acceptor") == 1);
}

CATCH_TEST_CASE("splice: site_types and the record cap", "[tasks][splice]") {
  FakeModel model = SpliceFake();
  v1::PredictRequest request;
  request.set_sequence(SpliceSequence());
  auto* options = request.mutable_splice();
  options->set_threshold(0.5);
  options->add_site_types(v1::SPLICE_SITE_TYPE_ACCEPTOR);
  Run only_acceptors = Predict(model, TestManifest(Task::kSplice), request);
  CATCH_REQUIRE(only_acceptors.result.ok());
  CATCH_REQUIRE(only_acceptors.result->splice().sites_size() == 1);
  CATCH_CHECK(only_acceptors.result->splice().sites(0).type() == v1::SPLICE_SITE_TYPE_ACCEPTOR);

  options->clear_site_types();
  options->set_max_sites(1);
  Run capped = Predict(model, TestManifest(Task::kSplice), request);
  CATCH_REQUIRE_FALSE(capped.result.ok());
  CATCH_CHECK(capped.result.status().code() == ErrorCode::kValidationFailed);
  const auto* cap = std::get_if<RecordCapDetails>(&capped.result.status().details());
  CATCH_REQUIRE(cap != nullptr);
  CATCH_CHECK(cap->record_count == 2);
  CATCH_CHECK(cap->maximum_records == 1);
  CATCH_CHECK(cap->threshold == 0.5);

  // Every token is now a donor and an acceptor: 5,000 sites per full window. 60,001 bp = four
  // full windows (exactly 20,000 sites, still allowed) + one token in a fifth window.
  options->set_threshold(0.001);
  options->set_max_sites(0);  // 0 = the contract's 20,000
  request.set_sequence(std::string(60001, 'C'));
  Run flood = Predict(model, TestManifest(Task::kSplice), request);
  CATCH_REQUIRE_FALSE(flood.result.ok());
  cap = std::get_if<RecordCapDetails>(&flood.result.status().details());
  CATCH_REQUIRE(cap != nullptr);
  CATCH_CHECK(cap->maximum_records == kSpliceMaxSites);
  CATCH_CHECK(cap->record_count == 20002);
  request.set_sequence(std::string(60000, 'C'));
  CATCH_CHECK(Predict(model, TestManifest(Task::kSplice), request).result.ok());
}

CATCH_TEST_CASE("enhancer: consecutive 249 bp windows with dev and hk", "[tasks][enhancer]") {
  FakeModel model([](const std::vector<IdTensor>& in) -> Outputs {
    FloatTensor out{{in[0].shape[0], 2}, {}};
    for (int64_t b = 0; b < in[0].shape[0]; ++b) {
      out.data.push_back(static_cast<float>(Count(in[0], b, kA)));   // dev
      out.data.push_back(-static_cast<float>(Count(in[0], b, kN)));  // hk
    }
    return std::vector<FloatTensor>{out};
  });
  v1::PredictRequest request;
  request.set_sequence(std::string(249, 'A') + std::string(251, 'C'));
  request.mutable_enhancer();
  Run run = Predict(model, TestManifest(Task::kEnhancer), request);
  CATCH_REQUIRE(run.result.ok());
  const auto& r = *run.result;
  CATCH_CHECK(r.windows_processed() == 3);
  const auto& e = r.enhancer();
  CATCH_REQUIRE(e.windows_size() == 3);
  CATCH_CHECK(e.windows(0).dev() == 249);
  CATCH_CHECK(e.windows(1).dev() == 0);
  CATCH_CHECK(e.windows(2).start() == 498);
  CATCH_CHECK(e.windows(2).end() == 500);
  CATCH_CHECK(e.windows(2).padded_bp() == 247);
  CATCH_CHECK(e.windows(2).hk() == -247);
  CATCH_CHECK(FormatKeys(r) == ExpectedFormats(Task::kEnhancer));
  CATCH_CHECK(r.tracks().at("dev") ==
              "track type=bedGraph name=\"dev\" description=\"enhancer-test developmental "
              "enhancer activity per window\"\n"
              "sequence\t0\t249\t249\nsequence\t249\t498\t0\nsequence\t498\t500\t0\n");
  CATCH_CHECK(r.tracks().at("hk").find("sequence\t498\t500\t-247\n") != std::string::npos);
  CATCH_CHECK(r.formats().at("bedgraph") == r.tracks().at("dev") + r.tracks().at("hk"));
}

CATCH_TEST_CASE("chromatin: 1,000 bp windows every 200 bp, features by category",
                "[tasks][chromatin]") {
  // Labels: DNase, CTCF, Pol2(phosphoS2), H3K27ac, ZNF274 (Other).
  FakeModel model([](const std::vector<IdTensor>& in) -> Outputs {
    FloatTensor out{{in[0].shape[0], 5}, {}};
    for (int64_t b = 0; b < in[0].shape[0]; ++b) {
      float g = static_cast<float>(Count(in[0], b, kG)) / 1000.0f;
      out.data.insert(out.data.end(), {g, 0.9f, 0.1f, 0.5f, 0.3f});
    }
    return std::vector<FloatTensor>{out};
  });
  v1::PredictRequest request;
  request.set_sequence(std::string(800, 'G') + std::string(700, 'T'));
  request.mutable_chromatin()->set_threshold(0.5);  // strictly above: H3K27ac (0.5) is out
  Run run = Predict(model, TestManifest(Task::kChromatin), request);
  CATCH_REQUIRE(run.result.ok());
  const auto& r = *run.result;
  const auto& c = r.chromatin();
  CATCH_CHECK(r.windows_processed() == 4);
  CATCH_REQUIRE(c.windows_size() == 4);
  CATCH_CHECK(c.windows(3).start() == 600);
  CATCH_CHECK(c.windows(3).end() == 1500);
  CATCH_CHECK(c.windows(3).padded_bp() == 100);
  // Window 0 is 80% G: DNase 0.8 and CTCF 0.9 are above 0.5.
  CATCH_REQUIRE(c.windows(0).features_size() == 2);
  CATCH_CHECK(c.windows(0).features(0).name() == "A|DNase|None");
  CATCH_CHECK(c.windows(0).features(0).category() == "DNase");
  CATCH_CHECK(c.windows(0).features(0).probability() == Approx(0.8));
  CATCH_CHECK(c.windows(0).features(1).index() == 1);
  CATCH_CHECK(c.windows(0).features(1).category() == "CTCF");
  // Window 3 holds 200 G of 1,000 bases: only CTCF.
  CATCH_REQUIRE(c.windows(3).features_size() == 1);
  CATCH_CHECK(c.features_total() == 5);
  CATCH_CHECK(c.categories_size() == 8);
  CATCH_CHECK(FormatKeys(r) == ExpectedFormats(Task::kChromatin));
  CATCH_CHECK(r.formats().at("bed").rfind("sequence\t0\t1000\tA|DNase|None\t800\t.\n", 0) == 0);
  std::set<std::string> tracks;
  for (const auto& [k, v] : r.tracks()) tracks.insert(k);
  CATCH_CHECK(tracks == std::set<std::string>{"DNase", "CTCF", "Pol2", "H3K27ac", "Other"});
  // Owned spans: [0, 600) [600, 800) [800, 1000) [1000, 1500); Pol2 is its one feature's 0.1.
  CATCH_CHECK(r.tracks().at("Pol2").find("sequence\t0\t600\t0.1\nsequence\t600\t800\t0.1\n") !=
              std::string::npos);
  CATCH_CHECK(r.tracks().at("DNase").find("sequence\t1000\t1500\t0.2\n") != std::string::npos);
}

CATCH_TEST_CASE("chromatin: the record cap trips while windows accumulate", "[tasks][chromatin]") {
  // Every one of 919 features scores 0.9 in every window: 919 records per window, so the
  // 100,000-record cap is passed in window 109 (100,171 records).
  FakeModel model([](const std::vector<IdTensor>& in) -> Outputs {
    FloatTensor out{{in[0].shape[0], 919}, {}};
    out.data.assign(static_cast<size_t>(in[0].shape[0]) * 919, 0.9f);
    return std::vector<FloatTensor>{out};
  });
  ModelManifest manifest = TestManifest(Task::kChromatin);
  manifest.output_labels.clear();
  for (int f = 0; f < 919; ++f) {
    manifest.output_labels.push_back("Cell" + std::to_string(f) + "|CTCF|None");
  }
  v1::PredictRequest request;
  request.mutable_chromatin()->set_threshold(0.5);

  // 108 windows (22,400 bp): 99,252 records, under the cap.
  request.set_sequence(std::string(22400, 'A'));
  Run under = Predict(model, manifest, request);
  CATCH_REQUIRE(under.result.ok());
  CATCH_CHECK(under.result->chromatin().windows_size() == 108);

  // 110 windows: refused, counted through the window where the cap tripped, nothing returned.
  request.set_sequence(std::string(22800, 'A'));
  Run capped = Predict(model, manifest, request);
  CATCH_REQUIRE_FALSE(capped.result.ok());
  CATCH_CHECK(capped.result.status().code() == ErrorCode::kValidationFailed);
  const auto* cap = std::get_if<RecordCapDetails>(&capped.result.status().details());
  CATCH_REQUIRE(cap != nullptr);
  CATCH_CHECK(cap->task == "chromatin");
  CATCH_CHECK(cap->record_count == 109 * 919);
  CATCH_CHECK(cap->maximum_records == kChromatinMaxFeatures);
  CATCH_CHECK(cap->threshold == 0.5);
  CATCH_CHECK(capped.result.status().message().find("raise options.threshold") !=
              std::string::npos);

  // A threshold above every score: no records, no cap.
  request.mutable_chromatin()->set_threshold(0.95);
  Run quiet = Predict(model, manifest, request);
  CATCH_REQUIRE(quiet.result.ok());
  CATCH_CHECK(quiet.result->chromatin().windows(0).features_size() == 0);

  CATCH_CHECK(CheckChromatinRecordCap(kChromatinMaxFeatures, kChromatinMaxFeatures, 0.5, 1).ok());
  CATCH_CHECK(CheckChromatinRecordCap(kChromatinMaxFeatures + 1, kChromatinMaxFeatures, 0.5, 1)
                  .code() == ErrorCode::kValidationFailed);
}

// Annotation fake. Symmetric: plus exon/intron at G/C and minus exon/intron at C/G, so the
// reverse-complement pass agrees with the forward pass. Asymmetric: plus strand only.
FakeModel AnnotationFake(bool symmetric, bool coding, float mrna) {
  return FakeModel([=](const std::vector<IdTensor>& in) -> Outputs {
    const AnnotationChannels ch = *ResolveAnnotationChannels(
        std::vector<std::string>(kAnnotationLabels.begin(), kAnnotationLabels.end()));
    const int64_t batch = in[0].shape[0], width = in[0].shape[1];
    FloatTensor labels{{batch, width, ch.count}, std::vector<float>(batch * width * ch.count, 0)};
    FloatTensor types{{batch, 2}, {}};
    for (int64_t i = 0; i < batch * width; ++i) {
      float* row = labels.data.data() + i * ch.count;
      const int64_t id = in[0].data[i];
      if (id == kG) {
        row[ch.plus.exon] = 0.9f;
        if (coding) row[ch.plus.cds] = 0.9f;
        if (symmetric) row[ch.minus.intron] = 0.9f;
      }
      if (id == kC) {
        row[ch.plus.intron] = 0.9f;
        if (symmetric) row[ch.minus.exon] = 0.9f;
        if (symmetric && coding) row[ch.minus.cds] = 0.9f;
      }
    }
    for (int64_t b = 0; b < batch; ++b) types.data.insert(types.data.end(), {mrna, 1 - mrna});
    return std::vector<FloatTensor>{labels, types};
  });
}

v1::PredictRequest AnnotationRequest(bool reverse_complement, int batch_size) {
  v1::PredictRequest request;
  request.set_sequence(std::string(500, 'A') + std::string(200, 'G') + std::string(300, 'C') +
                       std::string(200, 'G') + std::string(1800, 'A'));
  request.set_sequence_name("region");
  auto* options = request.mutable_annotation();
  options->set_batch_size(batch_size);
  options->set_reverse_complement(reverse_complement);
  return request;
}

CATCH_TEST_CASE("annotation: forward pass decodes transcripts on both strands",
                "[tasks][annotation]") {
  FakeModel model = AnnotationFake(true, true, 0.7f);
  Run run = Predict(model, TestManifest(Task::kAnnotation), AnnotationRequest(false, 8));
  CATCH_REQUIRE(run.result.ok());
  const auto& r = *run.result;
  CATCH_CHECK(r.windows_processed() == 2);  // 3,000 bp in 2,000 bp windows
  CATCH_CHECK(r.annotation().forward_passes() == 1);
  CATCH_CHECK(model.batches == std::vector<int64_t>{2});
  const auto& a = r.annotation();
  CATCH_REQUIRE(a.transcripts_size() == 2);
  const auto& plus = a.transcripts(0);
  CATCH_CHECK(plus.strand() == "+");
  CATCH_CHECK(plus.start() == 500);
  CATCH_CHECK(plus.end() == 1200);
  CATCH_CHECK(plus.tss_position() == 500);
  CATCH_CHECK(plus.polya_position() == 1199);
  CATCH_CHECK(plus.transcript_type() == "mRNA");
  CATCH_CHECK(plus.transcript_type_score() == Approx(0.7));
  CATCH_REQUIRE(plus.exons_size() == 2);
  CATCH_CHECK(plus.exons(1).start() == 1000);
  CATCH_REQUIRE(plus.introns_size() == 1);
  CATCH_CHECK(plus.introns(0).start() == 700);
  CATCH_CHECK(plus.introns(0).end() == 1000);
  CATCH_REQUIRE(plus.cds_size() == 2);
  const auto& minus = a.transcripts(1);
  CATCH_CHECK(minus.strand() == "-");
  CATCH_CHECK(minus.start() == 700);
  CATCH_CHECK(minus.end() == 1000);
  CATCH_CHECK(minus.tss_position() == 999);
  CATCH_CHECK(FormatKeys(r) == ExpectedFormats(Task::kAnnotation));
  const std::string& gff = r.formats().at("gff3");
  CATCH_CHECK(gff.rfind("##gff-version 3\n##sequence-region region 1 3000\n", 0) == 0);
  CATCH_CHECK(gff.find("region\tannotation-test\tgene\t501\t1200\t") != std::string::npos);
  CATCH_CHECK(gff.find("\tmRNA\t501\t1200\t") != std::string::npos);
  CATCH_CHECK(gff.find("ID=tx_1;Parent=gene_1;") != std::string::npos);
  CATCH_CHECK(gff.find("\texon\t1001\t1200\t.\t+\t.\tID=tx_1.exon_2;Parent=tx_1\n") !=
              std::string::npos);
  // CDS phases: the second segment starts 200 bp into the CDS, 200 % 3 = 2 -> phase 1.
  CATCH_CHECK(gff.find("\tCDS\t501\t700\t.\t+\t0\tID=tx_1.cds;Parent=tx_1\n") != std::string::npos);
  CATCH_CHECK(gff.find("\tCDS\t1001\t1200\t.\t+\t1\tID=tx_1.cds;Parent=tx_1\n") !=
              std::string::npos);
  CATCH_CHECK(r.formats().at("bed").find("region\t500\t1200\ttx_1\t900\t+\t500\t1200\t0\t2\t"
                                         "200,200,\t0,500,\n") != std::string::npos);
}

CATCH_TEST_CASE("annotation: reverse-complement pass is run and averaged", "[tasks][annotation]") {
  FakeModel symmetric = AnnotationFake(true, true, 0.7f);
  Run single = Predict(symmetric, TestManifest(Task::kAnnotation), AnnotationRequest(false, 1));
  Run both = Predict(symmetric, TestManifest(Task::kAnnotation), AnnotationRequest(true, 1));
  CATCH_REQUIRE(single.result.ok());
  CATCH_REQUIRE(both.result.ok());
  CATCH_CHECK(both.result->windows_processed() == 4);
  CATCH_CHECK(both.result->annotation().forward_passes() == 4);  // batch_size 1
  CATCH_CHECK(both.progress.back() == std::pair<int, int>{4, 4});
  // A strand-symmetric model gives the same transcripts with and without averaging.
  CATCH_CHECK(both.result->annotation().transcripts_size() == 2);
  CATCH_CHECK(both.result->formats().at("gff3") == single.result->formats().at("gff3"));

  // A plus-only model: the reverse-complement pass sees the signal on its own plus strand,
  // which is our minus strand. Where both passes' rows are trusted alike averaging halves the
  // probabilities to 0.45: the exon at [500, 700) is lost. The exon at [1000, 1200) lies at the
  // start of a reverse window (reverse windows cover [1000, 3000) and [0, 1000) here), whose
  // rows weigh (distance + 1) / kEdgeRampBp, so the forward pass dominates there and it stays,
  // with a lower score.
  FakeModel plus_only = AnnotationFake(false, false, 0.7f);
  Run forward = Predict(plus_only, TestManifest(Task::kAnnotation), AnnotationRequest(false, 8));
  Run averaged = Predict(plus_only, TestManifest(Task::kAnnotation), AnnotationRequest(true, 8));
  CATCH_REQUIRE(forward.result.ok());
  CATCH_REQUIRE(averaged.result.ok());
  CATCH_CHECK(forward.result->annotation().transcripts_size() == 1);
  CATCH_REQUIRE(averaged.result->annotation().transcripts_size() == 1);
  const auto& kept = averaged.result->annotation().transcripts(0);
  CATCH_CHECK(kept.start() == 1000);
  CATCH_CHECK(kept.end() == 1200);
  CATCH_CHECK(kept.score() > 0.45);
  CATCH_CHECK(kept.score() < 0.8);
}

CATCH_TEST_CASE("annotation: coordinate offset, seqid, lnc_RNA has no CDS", "[tasks][annotation]") {
  FakeModel model = AnnotationFake(false, true, 0.2f);
  v1::PredictRequest request = AnnotationRequest(false, 8);
  request.mutable_annotation()->set_coordinate_offset(1000000);
  request.mutable_annotation()->set_seqid("chr20");
  Run run = Predict(model, TestManifest(Task::kAnnotation), request);
  CATCH_REQUIRE(run.result.ok());
  const auto& t = run.result->annotation().transcripts(0);
  CATCH_CHECK(t.start() == 1000500);
  CATCH_CHECK(t.tss_position() == 1000500);
  CATCH_CHECK(t.exons(1).end() == 1001200);
  CATCH_CHECK(t.transcript_type() == "lnc_RNA");
  CATCH_CHECK(t.transcript_type_score() == Approx(0.8));
  CATCH_CHECK(t.cds_size() == 0);
  const std::string& gff = run.result->formats().at("gff3");
  CATCH_CHECK(gff.find("##sequence-region chr20 1000001 1003000\n") != std::string::npos);
  CATCH_CHECK(gff.find("chr20\tannotation-test\tlnc_RNA\t1000501\t1001200\t") != std::string::npos);
  CATCH_CHECK(gff.find("\tCDS\t") == std::string::npos);
}

FakeModel ExpressionFake() {
  return FakeModel([](const std::vector<IdTensor>& in) -> Outputs {
    if (in.size() != 2 || in[1].shape[0] != 1) return Internal("unexpected inputs");
    float value = static_cast<float>(in[1].shape[1]) / 100.0f +
                  static_cast<float>(Count(in[0], 0, kG)) / in[0].shape[1];
    return std::vector<FloatTensor>{{{1}, {value}}};
  });
}

CATCH_TEST_CASE("expression: one window, the description is model input", "[tasks][expression]") {
  FakeModel model = ExpressionFake();
  v1::PredictRequest request;
  request.set_sequence(std::string(9198, 'G'));
  request.mutable_expression()->set_description("liver");
  Run run = Predict(model, TestManifest(Task::kExpression), request);
  CATCH_REQUIRE(run.result.ok());
  CATCH_CHECK(run.result->windows_processed() == 1);
  CATCH_CHECK(run.result->expression().expression_log_tpm() == Approx(1.05));
  CATCH_CHECK(run.result->formats().empty());
  CATCH_CHECK(FormatKeys(*run.result) == ExpectedFormats(Task::kExpression));
  request.mutable_expression()->set_description("heart left ventricle");
  Run other = Predict(model, TestManifest(Task::kExpression), request);
  CATCH_CHECK(other.result->expression().expression_log_tpm() == Approx(1.20));

  request.set_sequence(std::string(9197, 'G'));
  Run short_input = Predict(model, TestManifest(Task::kExpression), request);
  CATCH_REQUIRE_FALSE(short_input.result.ok());
  CATCH_CHECK(short_input.result.status().code() == ErrorCode::kValidationFailed);
  request.set_sequence(std::string(9198, 'G'));
  request.mutable_expression()->set_description("");
  Run empty = Predict(model, TestManifest(Task::kExpression), request);
  CATCH_REQUIRE_FALSE(empty.result.ok());
  CATCH_CHECK(empty.result.status().code() == ErrorCode::kValidationFailed);
  CATCH_CHECK(model.calls == 2);  // the invalid requests never reached the model
}

// ---------------------------------------------------------------- result_format

// A fake model and a request that finds something for each task (so that every text payload
// the task renders is non-empty), as in the per-task tests above.
FakeModel FakeFor(Task task) {
  switch (task) {
    case Task::kPromoter:
      return PromoterFake();
    case Task::kSplice:
      return SpliceFake();
    case Task::kEnhancer:
      return FakeModel([](const std::vector<IdTensor>& in) -> Outputs {
        FloatTensor out{{in[0].shape[0], 2}, {}};
        for (int64_t b = 0; b < in[0].shape[0]; ++b) {
          out.data.push_back(static_cast<float>(Count(in[0], b, kA)));
          out.data.push_back(-static_cast<float>(Count(in[0], b, kN)));
        }
        return std::vector<FloatTensor>{out};
      });
    case Task::kChromatin:
      return FakeModel([](const std::vector<IdTensor>& in) -> Outputs {
        FloatTensor out{{in[0].shape[0], 5}, {}};
        for (int64_t b = 0; b < in[0].shape[0]; ++b) {
          float g = static_cast<float>(Count(in[0], b, kG)) / 1000.0f;
          out.data.insert(out.data.end(), {g, 0.9f, 0.1f, 0.5f, 0.3f});
        }
        return std::vector<FloatTensor>{out};
      });
    case Task::kAnnotation:
      return AnnotationFake(true, true, 0.7f);
    case Task::kExpression:
      return ExpressionFake();
  }
  return PromoterFake();
}

v1::PredictRequest FindingRequest(Task task) {
  v1::PredictRequest request;
  switch (task) {
    case Task::kPromoter:
      request.set_sequence(std::string(3000, 'G') + std::string(7000, 'A'));
      request.mutable_promoter()->set_threshold(0.5);
      break;
    case Task::kSplice: {
      request.set_sequence(SpliceSequence());
      auto* options = request.mutable_splice();
      options->set_threshold(0.5);
      options->add_site_types(v1::SPLICE_SITE_TYPE_DONOR);
      options->add_site_types(v1::SPLICE_SITE_TYPE_ACCEPTOR);
      break;
    }
    case Task::kEnhancer:
      request.set_sequence(std::string(249, 'A') + std::string(251, 'C'));
      request.mutable_enhancer();
      break;
    case Task::kChromatin:
      request.set_sequence(std::string(800, 'G') + std::string(700, 'T'));
      request.mutable_chromatin()->set_threshold(0.5);
      break;
    case Task::kAnnotation:
      request = AnnotationRequest(false, 8);
      break;
    case Task::kExpression:
      request.set_sequence(std::string(9198, 'G'));
      request.mutable_expression()->set_description("liver");
      break;
  }
  return request;
}

StatusOr<v1::PredictResult> PredictAs(Task task, v1::ResultFormat format) {
  FakeModel model = FakeFor(task);
  v1::PredictRequest request = FindingRequest(task);
  request.set_result_format(format);
  return Predict(model, TestManifest(task), request).result;
}

std::set<std::string> TrackKeys(const v1::PredictResult& r) {
  std::set<std::string> keys;
  for (const auto& [k, v] : r.tracks()) keys.insert(k);
  return keys;
}

v1::ResultFormat ResultFormatOf(OutputFormat format) {
  switch (format) {
    case OutputFormat::kBed:
      return v1::RESULT_FORMAT_BED;
    case OutputFormat::kBedGraph:
      return v1::RESULT_FORMAT_BEDGRAPH;
    case OutputFormat::kGff3:
      return v1::RESULT_FORMAT_GFF3;
    case OutputFormat::kJson:
      return v1::RESULT_FORMAT_JSON;
  }
  return v1::RESULT_FORMAT_UNSPECIFIED;
}

CATCH_TEST_CASE("result_format unset: every format, every track, the structured result",
                "[tasks][result_format]") {
  // What callers older than the field read: promoter's bedGraph twice, as before.
  for (Task task : kAllTasks) {
    CATCH_INFO("task " << TaskName(task));
    auto r = PredictAs(task, v1::RESULT_FORMAT_UNSPECIFIED);
    CATCH_REQUIRE(r.ok());
    CATCH_CHECK(FormatKeys(*r) == ExpectedFormats(task));
    for (const auto& [name, text] : r->formats()) CATCH_CHECK_FALSE(text.empty());
    CATCH_CHECK(r->result_case() ==
                static_cast<v1::PredictResult::ResultCase>(static_cast<int>(task) + 10));
  }
  auto promoter = PredictAs(Task::kPromoter, v1::RESULT_FORMAT_UNSPECIFIED);
  CATCH_REQUIRE(promoter.ok());
  CATCH_CHECK(TrackKeys(*promoter) == std::set<std::string>{"promoter"});
  CATCH_CHECK(promoter->tracks().at("promoter") == promoter->formats().at("bedgraph"));
  auto splice = PredictAs(Task::kSplice, v1::RESULT_FORMAT_UNSPECIFIED);
  CATCH_REQUIRE(splice.ok());
  CATCH_CHECK(TrackKeys(*splice) == std::set<std::string>{"acceptor", "donor"});
  auto enhancer = PredictAs(Task::kEnhancer, v1::RESULT_FORMAT_UNSPECIFIED);
  CATCH_REQUIRE(enhancer.ok());
  CATCH_CHECK(TrackKeys(*enhancer) == std::set<std::string>{"dev", "hk"});
}

CATCH_TEST_CASE("result_format JSON: what the JSON data publishes, and nothing else",
                "[tasks][result_format]") {
  // data.formats carries every text format; data.tracks exists for splice, enhancer and
  // chromatin only. So the reply is the unset one less promoter's copy of its bedGraph.
  for (Task task : kAllTasks) {
    CATCH_INFO("task " << TaskName(task));
    auto before = PredictAs(task, v1::RESULT_FORMAT_UNSPECIFIED);
    auto json = PredictAs(task, v1::RESULT_FORMAT_JSON);
    CATCH_REQUIRE(before.ok());
    CATCH_REQUIRE(json.ok());
    v1::PredictResult expected = *before;
    if (task == Task::kPromoter) expected.mutable_tracks()->erase("promoter");
    CATCH_CHECK(google::protobuf::util::MessageDifferencer::Equals(*json, expected));
  }
  auto promoter = PredictAs(Task::kPromoter, v1::RESULT_FORMAT_JSON);
  CATCH_REQUIRE(promoter.ok());
  CATCH_CHECK(promoter->tracks().empty());
  CATCH_CHECK(FormatKeys(*promoter) == std::set<std::string>{"bed", "bedgraph"});
  CATCH_CHECK(promoter->promoter().windows_size() == 9);
  auto chromatin = PredictAs(Task::kChromatin, v1::RESULT_FORMAT_JSON);
  CATCH_REQUIRE(chromatin.ok());
  CATCH_CHECK(TrackKeys(*chromatin) ==
              std::set<std::string>{"CTCF", "DNase", "H3K27ac", "Other", "Pol2"});
}

CATCH_TEST_CASE("result_format text: that one format, no tracks, no structured result",
                "[tasks][result_format]") {
  for (Task task : kAllTasks) {
    auto before = PredictAs(task, v1::RESULT_FORMAT_UNSPECIFIED);
    CATCH_REQUIRE(before.ok());
    for (OutputFormat format : SupportedFormats(task)) {
      if (format == OutputFormat::kJson) continue;
      const std::string name(FormatName(format));
      CATCH_INFO("task " << TaskName(task) << ", " << name);
      auto text = PredictAs(task, ResultFormatOf(format));
      CATCH_REQUIRE(text.ok());
      CATCH_CHECK(FormatKeys(*text) == std::set<std::string>{name});
      CATCH_CHECK(text->formats().at(name) == before->formats().at(name));  // the same bytes
      CATCH_CHECK(text->tracks().empty());
      CATCH_CHECK(text->result_case() == v1::PredictResult::RESULT_NOT_SET);
      CATCH_CHECK(text->windows_processed() == before->windows_processed());
    }
  }
}

CATCH_TEST_CASE("result_format: a text format the task lacks is refused before the model runs",
                "[tasks][result_format]") {
  const std::vector<std::pair<Task, v1::ResultFormat>> refused = {
      {Task::kPromoter, v1::RESULT_FORMAT_GFF3},
      {Task::kSplice, v1::RESULT_FORMAT_BEDGRAPH},
      {Task::kEnhancer, v1::RESULT_FORMAT_BED},
      {Task::kChromatin, v1::RESULT_FORMAT_GFF3},
      {Task::kAnnotation, v1::RESULT_FORMAT_BEDGRAPH},
      {Task::kExpression, v1::RESULT_FORMAT_BED},
      {Task::kPromoter, static_cast<v1::ResultFormat>(99)},  // a value of a newer proto
  };
  for (const auto& [task, format] : refused) {
    CATCH_INFO("task " << TaskName(task) << ", result_format " << static_cast<int>(format));
    FakeModel model = FakeFor(task);
    v1::PredictRequest request = FindingRequest(task);
    request.set_result_format(format);
    auto r = Predict(model, TestManifest(task), request).result;
    CATCH_REQUIRE_FALSE(r.ok());
    CATCH_CHECK(r.status().code() == ErrorCode::kValidationFailed);
    CATCH_CHECK(r.status().message().find("result_format") != std::string::npos);
    CATCH_CHECK(model.calls == 0);
  }
}

CATCH_TEST_CASE("runner errors: wrong task, bad sequence, bad model output, cancellation",
                "[tasks]") {
  FakeModel promoter = PromoterFake();
  v1::PredictRequest request;
  request.set_sequence(std::string(5000, 'A'));
  request.mutable_splice();
  auto wrong = Predict(promoter, TestManifest(Task::kPromoter), request).result;
  CATCH_REQUIRE_FALSE(wrong.ok());
  CATCH_CHECK(wrong.status().code() == ErrorCode::kTaskNotSupportedByModel);

  request.mutable_promoter()->set_threshold(0.5);
  request.set_sequence("ACGTX");
  auto bad = Predict(promoter, TestManifest(Task::kPromoter), request).result;
  CATCH_REQUIRE_FALSE(bad.ok());
  CATCH_CHECK(bad.status().code() == ErrorCode::kValidationFailed);
  request.set_sequence("");
  CATCH_CHECK(Predict(promoter, TestManifest(Task::kPromoter), request).result.status().code() ==
              ErrorCode::kValidationFailed);
  CATCH_CHECK(promoter.calls == 0);

  request.set_sequence(std::string(5000, 'A'));
  FakeModel wrong_shape([](const std::vector<IdTensor>&) -> Outputs {
    return std::vector<FloatTensor>{{{1, 2}, {0.1f, 0.2f}}};
  });
  auto shape = Predict(wrong_shape, TestManifest(Task::kPromoter), request).result;
  CATCH_REQUIRE_FALSE(shape.ok());
  CATCH_CHECK(shape.status().code() == ErrorCode::kInternal);
  CATCH_CHECK(shape.status().message() ==
              "model 'promoter-test' output 0 has shape [1, 2], expected [4]");

  FakeModel nan_model([](const std::vector<IdTensor>& in) -> Outputs {
    return std::vector<FloatTensor>{
        {{in[0].shape[0]}, std::vector<float>(in[0].shape[0], std::nanf(""))}};
  });
  auto nan = Predict(nan_model, TestManifest(Task::kPromoter), request).result;
  CATCH_REQUIRE_FALSE(nan.ok());
  CATCH_CHECK(nan.status().message().find("non-finite") != std::string::npos);

  FakeModel failing([](const std::vector<IdTensor>&) -> Outputs {
    return Internal("model forward failed: boom");
  });
  auto failed = Predict(failing, TestManifest(Task::kPromoter), request).result;
  CATCH_REQUIRE_FALSE(failed.ok());
  CATCH_CHECK(failed.status().message() == "model forward failed: boom");

  // Cancellation is honoured between batches: 41 windows of 8 -> stop after the first batch.
  FakeModel model = PromoterFake();
  request.set_sequence(std::string(42000, 'A'));
  RunHooks hooks;
  int events = 0;
  hooks.progress = [&](int, int) { ++events; };
  hooks.cancelled = [&] { return events >= 1; };
  auto cancelled = RunPrediction(model, TestManifest(Task::kPromoter), request, hooks);
  CATCH_REQUIRE_FALSE(cancelled.ok());
  CATCH_CHECK(IsRunCancelled(cancelled.status()));
  CATCH_CHECK(cancelled.status().code() == ErrorCode::kCancelled);
  CATCH_CHECK(model.calls == 1);
  // Over gRPC the code is CANCELLED and the peer reads it back as kCancelled, whatever the text.
  const grpc::Status wire = ToGrpcStatus(cancelled.status());
  CATCH_CHECK(wire.error_code() == grpc::StatusCode::CANCELLED);
  CATCH_CHECK(FromGrpcStatus(wire).code() == ErrorCode::kCancelled);
  CATCH_CHECK_FALSE(IsRunCancelled(Unavailable("the request was cancelled before it finished")));
}

}  // namespace
}  // namespace dnaserve::worker
