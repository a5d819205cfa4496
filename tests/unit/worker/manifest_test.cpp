#include "worker/manifest/manifest.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <string>

#include "tests/support/test_env.h"
#include "tests/unit/worker/worker_test_support.h"

namespace dnaserve::worker {
namespace {

using testing::WriteFile;

const char kPromoter[] = R"({
  "format_version": 1,
  "id": "promoter-x",
  "task": "promoter",
  "description": "a promoter model",
  "is_default": true,
  "tokenizer": {"type": "char"},
  "context_window_bp": 2000,
  "trained_window_bp": null,
  "stride_bp": 1000,
  "output_labels": ["promoter"],
  "trained": false,
  "seed": 7,
  "weights": "model.pt",
  "model_card": "MODEL_CARD.md"
})";

// kPromoter with the first occurrence of `from` replaced by `to`.
std::string With(const std::string& from, const std::string& to) {
  std::string json = kPromoter;
  size_t at = json.find(from);
  if (at == std::string::npos) return "<replacement target missing: " + from + ">";
  return json.replace(at, from.size(), to);
}

std::string ErrorOf(const std::string& json, std::string_view expected_id = {}) {
  auto parsed = ParseManifest(json, expected_id);
  return parsed.ok() ? "<parsed>" : parsed.status().message();
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

CATCH_TEST_CASE("a valid promoter manifest parses into every field", "[manifest]") {
  auto parsed = ParseManifest(kPromoter, "promoter-x");
  CATCH_REQUIRE(parsed.ok());
  const ModelManifest& m = *parsed;
  CATCH_CHECK(m.id == "promoter-x");
  CATCH_CHECK(m.task == Task::kPromoter);
  CATCH_CHECK(m.is_default);
  CATCH_CHECK(m.tokenizer.type == TokenizerType::kChar);
  CATCH_CHECK(m.context_window_bp == 2000);
  CATCH_CHECK_FALSE(m.trained_window_bp.has_value());
  CATCH_CHECK(m.stride_bp == 1000);
  CATCH_CHECK(m.output_labels == std::vector<std::string>{"promoter"});
  CATCH_CHECK_FALSE(m.trained);
  CATCH_CHECK(m.seed == 7);
  CATCH_CHECK(m.weights_file == "model.pt");
  CATCH_CHECK(TokenizerLabel(m.tokenizer) == "char");
  CATCH_CHECK_FALSE(m.batch_rows_per_pass.has_value());  // absent: the worker's default
}

CATCH_TEST_CASE("a package may name its rows per forward pass", "[manifest]") {
  auto one = ParseManifest(With("\"seed\": 7,", "\"seed\": 7, \"batch_rows_per_pass\": 1,"));
  CATCH_REQUIRE(one.ok());
  CATCH_CHECK(one->batch_rows_per_pass == 1);
  auto any = ParseManifest(With("\"seed\": 7,", "\"seed\": 7, \"batch_rows_per_pass\": 0,"));
  CATCH_REQUIRE(any.ok());
  CATCH_CHECK(any->batch_rows_per_pass == 0);
  for (const char* bad : {"-1", "4097", "1.5", "\"1\"", "null"}) {
    CATCH_INFO(bad);
    CATCH_CHECK(Contains(
        ErrorOf(With("\"seed\": 7,", std::string("\"seed\": 7, \"batch_rows_per_pass\": ") + bad + ",")),
        "batch_rows_per_pass"));
  }
}

CATCH_TEST_CASE("manifest errors name the offending field", "[manifest]") {
  CATCH_CHECK(Contains(ErrorOf("{not json"), "not valid JSON"));
  CATCH_CHECK(Contains(ErrorOf("[1, 2]"), "top level must be an object"));
  CATCH_CHECK(Contains(ErrorOf(With("\"format_version\": 1", "\"format_version\": 2")),
                       "unsupported format_version 2"));
  CATCH_CHECK(
      Contains(ErrorOf(With("\"id\": \"promoter-x\",", "")), "missing required field 'id'"));
  CATCH_CHECK(Contains(ErrorOf(With("promoter-x", "bad/id")), "'id' must be"));
  CATCH_CHECK(Contains(ErrorOf(kPromoter, "other-dir"), "does not match the package directory"));
  CATCH_CHECK(Contains(ErrorOf(With("\"task\": \"promoter\"", "\"task\": \"variant\"")),
                       "'task' \"variant\" is not one of"));
  CATCH_CHECK(Contains(ErrorOf(With("\"is_default\": true", "\"is_default\": \"yes\"")),
                       "'is_default' must be true or false"));
  CATCH_CHECK(Contains(ErrorOf(With("{\"type\": \"char\"}", "{\"type\": \"wordpiece\"}")),
                       "'tokenizer.type' must be"));
  CATCH_CHECK(Contains(ErrorOf(With("{\"type\": \"char\"}", "{\"type\": \"kmer\", \"k\": 3}")),
                       "missing required field 'tokenizer.stride'"));
  CATCH_CHECK(Contains(
      ErrorOf(With("{\"type\": \"char\"}", "{\"type\": \"kmer\", \"k\": 3, \"stride\": 4}")),
      "must not exceed"));
  CATCH_CHECK(Contains(ErrorOf(With("\"context_window_bp\": 2000", "\"context_window_bp\": 0")),
                       "'context_window_bp' must be an integer in [1, "));
  CATCH_CHECK(Contains(ErrorOf(With("\"context_window_bp\": 2000", "\"context_window_bp\": 2e3")),
                       "'context_window_bp' must be an integer"));
  CATCH_CHECK(Contains(ErrorOf(With("\"trained_window_bp\": null,", "")),
                       "missing required field 'trained_window_bp'"));
  CATCH_CHECK(Contains(ErrorOf(With("\"stride_bp\": 1000", "\"stride_bp\": 3000")),
                       "'stride_bp' must be an integer in [1, 2000]"));
  CATCH_CHECK(
      Contains(ErrorOf(With("\"stride_bp\": 1000,", "")), "missing required field 'stride_bp'"));
  CATCH_CHECK(
      Contains(ErrorOf(With("[\"promoter\"]", "[]")), "'output_labels' must be a non-empty"));
  CATCH_CHECK(Contains(ErrorOf(With("[\"promoter\"]", "[\"a\", \"b\"]")), "exactly one label"));
  CATCH_CHECK(Contains(ErrorOf(With("\"model.pt\"", "\"../model.pt\"")),
                       "'weights' must be a file name inside the package"));
  CATCH_CHECK(Contains(ErrorOf(With("\"seed\": 7,", "\"sede\": 7,")), "unknown field 'sede'"));
  CATCH_CHECK(Contains(ErrorOf(With("\"trained\": false", "\"trained\": 0")),
                       "'trained' must be true or false"));
}

CATCH_TEST_CASE("task-specific manifest rules", "[manifest]") {
  // Non-overlapping tasks: stride defaults to the context and may not differ from it.
  std::string enhancer = With("\"task\": \"promoter\"", "\"task\": \"enhancer\"");
  enhancer.replace(enhancer.find("\"stride_bp\": 1000,"), 18, "");
  enhancer.replace(enhancer.find("[\"promoter\"]"), 12, "[\"dev\", \"hk\"]");
  auto parsed = ParseManifest(enhancer);
  CATCH_REQUIRE(parsed.ok());
  CATCH_CHECK(parsed->stride_bp == 2000);

  std::string enhancer_overlap = enhancer;
  enhancer_overlap.replace(enhancer_overlap.find("\"trained\""), 0, "\"stride_bp\": 100, ");
  CATCH_CHECK(Contains(ErrorOf(enhancer_overlap), "must equal 'context_window_bp'"));

  std::string enhancer_labels = enhancer;
  enhancer_labels.replace(enhancer_labels.find("[\"dev\", \"hk\"]"), 13, "[\"dev\"]");
  CATCH_CHECK(Contains(ErrorOf(enhancer_labels), "must include \"hk\""));

  std::string splice = With("\"task\": \"promoter\"", "\"task\": \"splice\"");
  splice.replace(splice.find("\"stride_bp\": 1000,"), 18, "");
  splice.replace(splice.find("[\"promoter\"]"), 12, "[\"neither\", \"acceptor\"]");
  CATCH_CHECK(Contains(ErrorOf(splice), "must include \"donor\""));

  std::string annotation = With("\"task\": \"promoter\"", "\"task\": \"annotation\"");
  annotation.replace(annotation.find("\"stride_bp\": 1000,"), 18, "");
  CATCH_CHECK(Contains(ErrorOf(annotation), "must include \"intergenic\""));

  std::string expression = With("\"task\": \"promoter\"", "\"task\": \"expression\"");
  expression.replace(expression.find("\"stride_bp\": 1000,"), 18, "");
  CATCH_CHECK(Contains(ErrorOf(expression), "'trained_window_bp' of an expression model"));
  expression.replace(expression.find("\"trained_window_bp\": null"), 25,
                     "\"trained_window_bp\": 2000");
  CATCH_CHECK(Contains(ErrorOf(expression), "missing required field 'text_tokenizer'"));
  expression.replace(expression.find("\"trained\""), 0,
                     "\"text_tokenizer\": {\"type\": \"bytes\", \"max_tokens\": 64}, ");
  auto expr = ParseManifest(expression);
  CATCH_REQUIRE(expr.ok());
  CATCH_CHECK(expr->text_tokenizer->max_tokens == 64);
  CATCH_CHECK(expr->trained_window_bp == 2000);

  CATCH_CHECK(Contains(ErrorOf(With("\"trained\"",
                                    "\"text_tokenizer\": {\"type\": \"bytes\", \"max_tokens\": 4}, "
                                    "\"trained\"")),
                       "only valid for expression"));
}

CATCH_TEST_CASE("an annotation manifest may set the decoder's costs", "[manifest]") {
  std::string annotation = With("\"task\": \"promoter\"", "\"task\": \"annotation\"");
  annotation.replace(annotation.find("\"stride_bp\": 1000,"), 18, "");
  annotation.replace(annotation.find("[\"promoter\"]"), 12,
                     "[\"intergenic\", \"exon_plus\", \"intron_plus\", \"CDS_plus\", "
                     "\"UTR_plus\", \"TSS_plus\", \"transcript_end_plus\", \"exon_minus\", "
                     "\"intron_minus\", \"CDS_minus\", \"UTR_minus\", \"TSS_minus\", "
                     "\"transcript_end_minus\"], \"transcript_types\": [\"mRNA\"]");
  // Without a "decoder" object: the defaults.
  auto plain = ParseManifest(annotation);
  CATCH_REQUIRE(plain.ok());
  CATCH_CHECK(plain->decoder.emission_weight == DecodeOptions{}.emission_weight);
  CATCH_CHECK(plain->decoder.start_cost == DecodeOptions{}.start_cost);

  auto with_decoder = [&](const std::string& decoder) {
    std::string json = annotation;
    json.replace(json.find("\"trained\""), 0, "\"decoder\": " + decoder + ", ");
    return json;
  };
  auto tuned = ParseManifest(with_decoder(
      R"({"emission_weight": 0.03, "start_cost": 4, "splice_cost": 0, "site_pass_weight": 1,
          "min_terminal_exon_bp": 20})"));
  CATCH_REQUIRE(tuned.ok());
  CATCH_CHECK(tuned->decoder.emission_weight == 0.03);
  CATCH_CHECK(tuned->decoder.start_cost == 4.0);
  CATCH_CHECK(tuned->decoder.splice_cost == 0.0);
  CATCH_CHECK(tuned->decoder.site_pass_weight == 1.0);
  CATCH_CHECK(tuned->decoder.min_terminal_exon_bp == 20);
  CATCH_CHECK(tuned->decoder.site_weight == DecodeOptions{}.site_weight);  // not given: default

  CATCH_CHECK(Contains(ErrorOf(with_decoder(R"({"start_costs": 4})")),
                       "unknown field 'decoder.start_costs'"));
  CATCH_CHECK(Contains(ErrorOf(with_decoder(R"({"start_cost": -1})")),
                       "'decoder.start_cost' must be a number in [0, 1000]"));
  CATCH_CHECK(Contains(ErrorOf(with_decoder(R"({"cds_threshold": "high"})")),
                       "'decoder.cds_threshold' must be a number in [0, 1]"));
  CATCH_CHECK(Contains(ErrorOf(with_decoder(R"({"min_transcript_bp": 1.5})")),
                       "'decoder.min_transcript_bp' must be an integer"));
  CATCH_CHECK(Contains(ErrorOf(with_decoder("[4]")), "'decoder' must be an object"));

  // The exon-chain decoder's settings.
  auto chain = ParseManifest(with_decoder(
      R"({"exon_chain": true, "orf_cds": true, "site_min": 0.05, "terminal_block_bp": 200,
          "intron_log_mean": 7.5, "intron_log_sd": 1.5, "max_intron_bp": 50000})"));
  CATCH_REQUIRE(chain.ok());
  CATCH_CHECK(chain->decoder.exon_chain);
  CATCH_CHECK(chain->decoder.orf_cds);
  CATCH_CHECK(chain->decoder.site_min == 0.05);
  auto alternative = ParseManifest(with_decoder(
      R"({"alternative_starts": true, "alternative_start_min": 0.4,
          "alternative_start_spacing_bp": 1500, "alternative_span_bp": 100000})"));
  CATCH_REQUIRE(alternative.ok());
  CATCH_CHECK(alternative->decoder.alternative_starts);
  CATCH_CHECK(alternative->decoder.alternative_start_min == 0.4);
  CATCH_CHECK(alternative->decoder.alternative_start_spacing_bp == 1500);
  CATCH_CHECK(alternative->decoder.alternative_span_bp == 100000);
  CATCH_CHECK_FALSE(plain->decoder.alternative_starts);
  CATCH_CHECK(Contains(ErrorOf(with_decoder(R"({"alternative_start_min": 2})")),
                       "'decoder.alternative_start_min' must be a number in [0, 1]"));
  CATCH_CHECK(Contains(ErrorOf(with_decoder(R"({"alternative_span_bp": 0})")),
                       "'decoder.alternative_span_bp'"));
  CATCH_CHECK(chain->decoder.terminal_block_bp == 200);
  CATCH_CHECK(chain->decoder.intron_log_mean == 7.5);
  CATCH_CHECK(chain->decoder.intron_log_sd == 1.5);
  CATCH_CHECK(chain->decoder.max_intron_bp == 50000);
  CATCH_CHECK(!tuned->decoder.exon_chain);  // not given: the per-base parse
  CATCH_CHECK(Contains(ErrorOf(with_decoder(R"({"exon_chain": 1})")),
                       "'decoder.exon_chain' must be true or false"));
  CATCH_CHECK(Contains(ErrorOf(with_decoder(R"({"intron_log_sd": 0})")),
                       "'decoder.intron_log_sd' must be a number in [0.01, 20]"));
  CATCH_CHECK(Contains(ErrorOf(with_decoder(R"({"terminal_block_bp": 0})")),
                       "'decoder.terminal_block_bp' must be an integer"));
  CATCH_CHECK(Contains(ErrorOf(With("\"trained\"", "\"decoder\": {}, \"trained\"")),
                       "'decoder' is only valid for annotation models"));
}

CATCH_TEST_CASE("an annotation manifest may name its strand-complete channels",
                "[manifest][annotation]") {
  std::string annotation = With("\"task\": \"promoter\"", "\"task\": \"annotation\"");
  annotation.replace(annotation.find("\"stride_bp\": 1000,"), 18, "");
  annotation.replace(annotation.find("[\"promoter\"]"), 12,
                     "[\"intergenic\", \"exon_plus\", \"intron_plus\", \"CDS_plus\", "
                     "\"UTR_plus\", \"TSS_plus\", \"transcript_end_plus\", \"exon_minus\", "
                     "\"intron_minus\", \"CDS_minus\", \"UTR_minus\", \"TSS_minus\", "
                     "\"transcript_end_minus\", \"donor_plus\", \"acceptor_plus\", "
                     "\"donor_minus\", \"acceptor_minus\"], \"transcript_types\": [\"mRNA\"]");
  auto with_labels = [&](const std::string& labels) {
    std::string json = annotation;
    json.replace(json.find("\"trained\""), 0, "\"strand_complete_labels\": " + labels + ", ");
    return json;
  };
  // Without the field (every package before it): no strand-complete channel.
  auto plain = ParseManifest(annotation);
  CATCH_REQUIRE(plain.ok());
  CATCH_CHECK(plain->strand_complete_labels.empty());

  auto listed = ParseManifest(with_labels(
      R"(["TSS_plus", "TSS_minus", "donor_plus", "acceptor_plus", "donor_minus",
          "acceptor_minus"])"));
  CATCH_REQUIRE(listed.ok());
  CATCH_CHECK(listed->strand_complete_labels ==
              std::vector<std::string>{"TSS_plus", "TSS_minus", "donor_plus", "acceptor_plus",
                                       "donor_minus", "acceptor_minus"});
  const std::vector<bool> mask =
      StrandCompleteChannels(listed->strand_complete_labels, listed->output_labels);
  CATCH_REQUIRE(mask.size() == 17);
  for (size_t c = 0; c < mask.size(); ++c) {
    CATCH_INFO("channel " << c << " " << listed->output_labels[c]);
    CATCH_CHECK(mask[c] == (c == 5 || c == 11 || c >= 13));
  }

  CATCH_CHECK(Contains(ErrorOf(with_labels("[]")), "'strand_complete_labels' must be a non-empty"));
  CATCH_CHECK(Contains(ErrorOf(with_labels("true")), "'strand_complete_labels' must be a non-empty"));
  CATCH_CHECK(Contains(ErrorOf(with_labels(R"(["TSS_plus", 5])")),
                       "'strand_complete_labels' must be a non-empty array of non-empty strings"));
  CATCH_CHECK(Contains(ErrorOf(with_labels(R"(["TSS_plus", "TSS_minus", "TSS_plus"])")),
                       "\"TSS_plus\" is named twice"));
  CATCH_CHECK(Contains(ErrorOf(with_labels(R"(["polyA_plus", "polyA_minus"])")),
                       "\"polyA_plus\" is not one of 'output_labels'"));
  CATCH_CHECK(Contains(ErrorOf(with_labels(R"(["intergenic"])")),
                       "\"intergenic\" names no strand"));
  CATCH_CHECK(Contains(ErrorOf(with_labels(R"(["donor_plus", "acceptor_plus"])")),
                       "\"donor_plus\" is listed without its twin \"donor_minus\""));
  CATCH_CHECK(Contains(ErrorOf(with_labels(R"(["TSS_minus"])")),
                       "\"TSS_minus\" is listed without its twin \"TSS_plus\""));
  CATCH_CHECK(Contains(ErrorOf(with_labels(R"(["TSS_plus"])")), "manifest.json: "));
  CATCH_CHECK(Contains(ErrorOf(With("\"trained\"",
                                    "\"strand_complete_labels\": [\"a_plus\"], \"trained\"")),
                       "'strand_complete_labels' is only valid for annotation models"));

  // neighbour_bp: the third input of such a model; never without the labels.
  const std::string pair = R"(["TSS_plus", "TSS_minus"], "neighbour_bp": )";
  auto neighbours = ParseManifest(with_labels(pair + "1000"));
  CATCH_REQUIRE(neighbours.ok());
  CATCH_CHECK(neighbours->neighbour_bp == 1000);
  CATCH_CHECK(listed->neighbour_bp == 0);
  CATCH_CHECK(Contains(ErrorOf(with_labels(pair + "0")),
                       "'neighbour_bp' must be an integer in [1, 1000000]"));
  CATCH_CHECK(Contains(ErrorOf(with_labels(pair + "\"1000\"")),
                       "'neighbour_bp' must be an integer"));
  std::string without_labels = annotation;
  without_labels.replace(without_labels.find("\"trained\""), 0, "\"neighbour_bp\": 1000, ");
  CATCH_CHECK(Contains(ErrorOf(without_labels), "'neighbour_bp' needs 'strand_complete_labels'"));
  CATCH_CHECK(Contains(ErrorOf(With("\"trained\"", "\"neighbour_bp\": 10, \"trained\"")),
                       "'neighbour_bp' is only valid for annotation models"));
}

CATCH_TEST_CASE("an annotation package's coding model is read and checked at load",
                "[manifest][annotation]") {
  std::string annotation = With("\"task\": \"promoter\"", "\"task\": \"annotation\"");
  annotation.replace(annotation.find("\"stride_bp\": 1000,"), 18, "");
  annotation.replace(annotation.find("[\"promoter\"]"), 12,
                     "[\"intergenic\", \"exon_plus\", \"intron_plus\", \"CDS_plus\", "
                     "\"UTR_plus\", \"TSS_plus\", \"transcript_end_plus\", \"exon_minus\", "
                     "\"intron_minus\", \"CDS_minus\", \"UTR_minus\", \"TSS_minus\", "
                     "\"transcript_end_minus\"], \"transcript_types\": [\"mRNA\"]");
  auto with_decoder = [&](const std::string& decoder) {
    std::string json = annotation;
    json.replace(json.find("\"trained\""), 0, "\"decoder\": " + decoder + ", ");
    return json;
  };
  // Parsing alone: the keys, their ranges, a file name inside the package, and a weight needs
  // a model.
  auto parsed = ParseManifest(with_decoder(R"({"coding_model": "c.tsv", "coding_weight": 0.3})"));
  CATCH_REQUIRE(parsed.ok());
  CATCH_CHECK(parsed->decoder.coding_model == "c.tsv");
  CATCH_CHECK(parsed->decoder.coding_weight == 0.3);
  CATCH_CHECK(parsed->decoder.coding == nullptr);  // read by LoadManifest
  CATCH_CHECK(Contains(ErrorOf(with_decoder(R"({"coding_weight": 0.3})")),
                       "'decoder.coding_weight' > 0 needs 'decoder.coding_model'"));
  CATCH_CHECK(Contains(ErrorOf(with_decoder(R"({"coding_model": "../c.tsv"})")),
                       "'decoder.coding_model' must be a file name inside the package"));
  CATCH_CHECK(Contains(ErrorOf(with_decoder(R"({"coding_model": "c.tsv", "coding_weight": -1})")),
                       "'decoder.coding_weight' must be a number in [0, 100]"));

  // Loading: the file must exist and parse; then the model is there.
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-manifest-coding");
  const std::string package = dir + "/promoter-x";  // the id the manifest carries
  mkdir(package.c_str(), 0755);
  WriteFile(package + "/manifest.json",
            with_decoder(R"({"coding_model": "c.tsv", "coding_weight": 0.3})"));
  WriteFile(package + "/model.pt", "x");
  WriteFile(package + "/MODEL_CARD.md", "# card");
  auto missing = LoadManifest(package);
  CATCH_REQUIRE_FALSE(missing.ok());
  CATCH_CHECK(Contains(missing.status().message(), "coding model 'c.tsv' is missing"));
  WriteFile(package + "/c.tsv", "order 1\nAAAA\n");
  auto bad = LoadManifest(package);
  CATCH_REQUIRE_FALSE(bad.ok());
  CATCH_CHECK(Contains(bad.status().message(), "decoder.coding_model: c.tsv: line 2"));
  std::string table = "# a flat model\norder 1\n";
  for (const char* context : {"A", "C", "G", "T"}) {
    table += context;
    for (int k = 0; k < 16; ++k) table += " -1.386294";
    table += "\n";
  }
  WriteFile(package + "/c.tsv", table);
  auto loaded = LoadManifest(package);
  CATCH_INFO(loaded.status().message());
  CATCH_REQUIRE(loaded.ok());
  CATCH_REQUIRE(loaded->decoder.coding != nullptr);
  CATCH_CHECK(loaded->decoder.coding->order == 1);
  CATCH_CHECK(loaded->decoder.coding->noncoding.size() == 16);
  CATCH_CHECK(loaded->decoder.signal == nullptr);  // none named

  // The splice signal table likewise: parsed keys, a weight needs a table, the file must exist
  // and parse.
  auto signal = ParseManifest(with_decoder(R"({"splice_signal": "s.tsv", "signal_weight": 0.05})"));
  CATCH_REQUIRE(signal.ok());
  CATCH_CHECK(signal->decoder.splice_signal == "s.tsv");
  CATCH_CHECK(signal->decoder.signal_weight == 0.05);
  CATCH_CHECK(signal->decoder.signal == nullptr);
  CATCH_CHECK(Contains(ErrorOf(with_decoder(R"({"signal_weight": 0.1})")),
                       "'decoder.signal_weight' > 0 needs 'decoder.splice_signal'"));
  CATCH_CHECK(Contains(ErrorOf(with_decoder(R"({"splice_signal": "a/s.tsv"})")),
                       "'decoder.splice_signal' must be a file name inside the package"));
  CATCH_CHECK(Contains(ErrorOf(with_decoder(R"({"splice_signal": "s.tsv", "signal_weight": 101})")),
                       "'decoder.signal_weight' must be a number in [0, 100]"));
  WriteFile(package + "/manifest.json",
            with_decoder(R"({"coding_model": "c.tsv", "coding_weight": 0.3, )"
                         R"("splice_signal": "s.tsv", "signal_weight": 0.05})"));
  auto no_signal = LoadManifest(package);
  CATCH_REQUIRE_FALSE(no_signal.ok());
  CATCH_CHECK(Contains(no_signal.status().message(), "splice signal 's.tsv' is missing"));
  WriteFile(package + "/s.tsv", "donor 0 1\n0 -1\n");
  auto bad_signal = LoadManifest(package);
  CATCH_REQUIRE_FALSE(bad_signal.ok());
  CATCH_CHECK(Contains(bad_signal.status().message(), "decoder.splice_signal: s.tsv: line 2"));
  std::string row = " -1.386294 -1.386294 -1.386294 -1.386294";
  std::string rows;
  for (int k = 0; k < 8; ++k) rows += row;
  WriteFile(package + "/s.tsv", "donor 0 1\n0" + rows + "\nacceptor -1 1\n-1" + rows + "\n");
  auto with_signal = LoadManifest(package);
  CATCH_INFO(with_signal.status().message());
  CATCH_REQUIRE(with_signal.ok());
  CATCH_REQUIRE(with_signal->decoder.signal != nullptr);
  CATCH_CHECK(with_signal->decoder.signal->acceptor.first == -1);
  CATCH_CHECK(with_signal->decoder.signal->donor.site.size() == 1);
  testing::RemoveScratch(dir);
}

CATCH_TEST_CASE("ScanModelsDir keeps valid packages of its task and reports broken ones",
                "[manifest]") {
  const std::string dir = dnaserve::testing::MakeTempDir("dnaserve-manifest-scan");
  auto package = [&](const std::string& name, const std::string& manifest, bool weights,
                     bool card) {
    mkdir((dir + "/" + name).c_str(), 0755);
    WriteFile(dir + "/" + name + "/manifest.json", manifest);
    if (weights) WriteFile(dir + "/" + name + "/model.pt", "x");
    if (card) WriteFile(dir + "/" + name + "/MODEL_CARD.md", "# card");
  };
  package("promoter-x", kPromoter, true, true);
  std::string second = With("promoter-x", "promoter-b");
  second.replace(second.find("\"is_default\": true"), 18, "\"is_default\": false");
  package("promoter-b", second, true, true);
  package("promoter-noweights", With("promoter-x", "promoter-noweights"), false, true);
  package("promoter-nocard", With("promoter-x", "promoter-nocard"), true, false);
  package("promoter-broken", "{ this is not json", true, true);
  std::string enhancer = With("promoter-x", "enhancer-y");
  enhancer.replace(enhancer.find("\"task\": \"promoter\""), 18, "\"task\": \"enhancer\"");
  package("enhancer-y", enhancer, false, false);  // broken, but of another task: not reported
  mkdir((dir + "/not-a-package").c_str(), 0755);
  mkdir((dir + "/.staging").c_str(), 0755);

  ManifestScan scan = ScanModelsDir(dir, Task::kPromoter);
  CATCH_REQUIRE(scan.models.size() == 2);
  CATCH_CHECK(scan.models[0].id == "promoter-b");  // sorted by id
  CATCH_CHECK(scan.models[1].id == "promoter-x");
  CATCH_CHECK(scan.models[1].WeightsPath() == dir + "/promoter-x/model.pt");
  CATCH_REQUIRE(scan.errors.size() == 3);
  std::string all;
  for (const auto& e : scan.errors) all += e + "\n";
  CATCH_CHECK(Contains(all, "promoter-broken: manifest.json: not valid JSON"));
  CATCH_CHECK(
      Contains(all, "promoter-nocard: manifest.json: model card 'MODEL_CARD.md' is missing"));
  CATCH_CHECK(
      Contains(all, "promoter-noweights: manifest.json: weights file 'model.pt' is missing"));

  ManifestScan none = ScanModelsDir(dir + "/does-not-exist", Task::kPromoter);
  CATCH_CHECK(none.models.empty());
  CATCH_REQUIRE(none.errors.size() == 1);
  CATCH_CHECK(Contains(none.errors[0], "models directory cannot be read"));
  testing::RemoveScratch(dir);
}

CATCH_TEST_CASE("the generated packages pass validation", "[manifest][models]") {
  std::string why;
  auto dir = testing::GeneratedModelsDir(&why);
  if (!dir) {
    CATCH_WARN("skipped: " << why);
    return;
  }
  const std::pair<Task, const char*> expected[] = {
      {Task::kPromoter, "promoter-human-tiny"},     {Task::kSplice, "splice-human-tiny"},
      {Task::kEnhancer, "enhancer-tiny"},           {Task::kChromatin, "chromatin-human-tiny"},
      {Task::kAnnotation, "annotation-human-tiny"}, {Task::kExpression, "expression-human-tiny"}};
  for (auto [task, id] : expected) {
    ManifestScan scan = ScanModelsDir(*dir, task);
    CATCH_INFO("task " << TaskName(task));
    CATCH_CHECK(scan.errors.empty());
    CATCH_REQUIRE(scan.models.size() == 1);
    const ModelManifest& m = scan.models[0];
    CATCH_CHECK(m.id == id);
    CATCH_CHECK(m.is_default);
    CATCH_CHECK_FALSE(m.trained);
    CATCH_CHECK(Contains(m.description, "Untrained weights (random initialisation, seed "));
    CATCH_CHECK(Contains(m.description,
                         "outputs are not biological predictions; for pipeline testing only."));
    CATCH_CHECK(m.trained_window_bp.has_value() == (task == Task::kExpression));
  }
  ManifestScan chromatin = ScanModelsDir(*dir, Task::kChromatin);
  CATCH_CHECK(chromatin.models[0].output_labels.size() == 919);
  CATCH_CHECK(chromatin.models[0].stride_bp == 200);
  ManifestScan splice = ScanModelsDir(*dir, Task::kSplice);
  CATCH_CHECK(TokenizerLabel(splice.models[0].tokenizer) == "kmer(k=6,stride=6)");
}

}  // namespace
}  // namespace dnaserve::worker
