// Interval input at admission (core/validation/genome_interval.h): the region string, the
// interval object, exactly one of sequence and interval, the length bounds, the fields an
// interval excludes, and the queue command that carries an admitted interval to a runner.
#ifndef CATCH_CONFIG_PREFIX_ALL
#define CATCH_CONFIG_PREFIX_ALL
#endif
#include <catch2/catch.hpp>
#include <string>
#include <variant>

#include "core/admission/interval_commands.h"
#include "core/validation/find_genes_request.h"
#include "core/validation/genome_interval.h"
#include "core/validation/predict_request.h"

namespace dnaserve::core {
namespace {

const FieldError* FirstError(const Status& s) {
  const auto* details = std::get_if<ValidationDetails>(&s.details());
  if (details == nullptr || details->errors.empty()) return nullptr;
  return &details->errors.front();
}

std::string Loc(const FieldError& e) {
  std::string out;
  for (const auto& part : e.loc) out += (out.empty() ? "" : ".") + part;
  return out;
}

}  // namespace

CATCH_TEST_CASE("interval: region strings are samtools regions, 1-based inclusive",
                "[interval][validation]") {
  std::string why;
  auto r = ParseRegionString("chr20:5,750,001-5,760,000", &why);
  CATCH_REQUIRE(r.has_value());
  CATCH_CHECK(r->contig == "chr20");
  CATCH_CHECK(r->start == 5750001);
  CATCH_CHECK(r->end == 5760000);
  CATCH_CHECK(r->length() == 10000);
  CATCH_CHECK(r->Label() == "chr20:5750001-5760000");
  auto one = ParseRegionString("NC_000020.10:7-7", &why);
  CATCH_REQUIRE(one.has_value());
  CATCH_CHECK(one->contig == "NC_000020.10");
  CATCH_CHECK(one->length() == 1);

  for (const char* bad : {"chr20", "chr20:100", "chr20:100-", "chr20:-100", ":1-10",
                          "chr 20:1-10", "chr20:0-10", "chr20:1,,000-2,000", "chr20:,1-10",
                          "chr20:1-10,", "chr20:a-10", "chr20:+1-10", "chr20:10-1",
                          "chr20:1-99999999999999999"}) {
    CATCH_INFO(bad);
    why.clear();
    CATCH_CHECK_FALSE(ParseRegionString(bad, &why).has_value());
    CATCH_CHECK_FALSE(why.empty());
  }
  ParseRegionString("chr20:10-1", &why);
  CATCH_CHECK(why.find("after end") != std::string::npos);
}

CATCH_TEST_CASE("interval: a predict body names an interval instead of a sequence",
                "[interval][validation]") {
  auto by_region =
      ValidatePredictBody(Task::kPromoter, R"({"interval":{"region":"chr20:5,750,001-5,760,000"}})");
  CATCH_REQUIRE(by_region.ok());
  CATCH_REQUIRE(by_region->interval.has_value());
  CATCH_CHECK(by_region->interval->assembly == "GRCh37");
  CATCH_CHECK(by_region->interval->strand == '+');
  CATCH_CHECK(by_region->sequence_length == 10000);
  CATCH_CHECK(by_region->sequence_name == "chr20");
  CATCH_CHECK(by_region->request.sequence_name() == "chr20");
  CATCH_CHECK(by_region->request.sequence().empty());

  auto by_fields = ValidatePredictBody(
      Task::kSplice,
      R"({"interval":{"assembly":"grch37","contig":"20","start":1001,"end":2000,"strand":"-"}})");
  CATCH_REQUIRE(by_fields.ok());
  CATCH_CHECK(by_fields->interval->assembly == "grch37");
  CATCH_CHECK(by_fields->interval->contig == "20");
  CATCH_CHECK(by_fields->interval->strand == '-');
  CATCH_CHECK(by_fields->sequence_length == 1000);

  // Expression: a 9,198 bp interval needs no tss_index; another length needs one in bounds.
  auto expression = ValidatePredictBody(
      Task::kExpression,
      R"({"interval":{"contig":"chr20","start":5750001,"end":5759198},"options":{"description":"E066"}})");
  CATCH_REQUIRE(expression.ok());
  CATCH_CHECK(expression->tss_index == 4599);
  CATCH_CHECK(expression->request.sequence().empty());  // cut by the runner
  auto no_tss = ValidatePredictBody(
      Task::kExpression,
      R"({"interval":{"contig":"chr20","start":5750001,"end":5760000},"options":{"description":"E066"}})");
  CATCH_REQUIRE_FALSE(no_tss.ok());
  CATCH_CHECK(no_tss.status().message().find("tss_index") != std::string::npos);
}

CATCH_TEST_CASE("interval: hostile bodies are 422 at the field, never accepted",
                "[interval][validation]") {
  struct Case {
    const char* body;
    const char* loc;
    const char* words;
  };
  const std::string seq(300, 'A');
  const std::string both = R"({"sequence":")" + seq + R"(","interval":{"region":"chr20:1-300"}})";
  const Case cases[] = {
      {"{}", "body.sequence", "exactly one of sequence"},
      {both.c_str(), "body", "not both"},
      {R"({"interval":{"region":"chr20:300-1"}})", "body.interval.region", "after end"},
      {R"({"interval":{"region":"chr20"}})", "body.interval.region", "contig:start-end"},
      {R"({"interval":{"region":"chr20:1-600,000"}})", "body.interval", "500,000 bp"},
      {R"({"interval":{"region":"chr20:1-10"}})", "body.interval", "to 500,000 bp"},
      {R"({"interval":{"contig":"chr20","start":300,"end":1}})", "body.interval", "after end"},
      {R"({"interval":{"contig":"chr20","start":1}})", "body.interval", "needs region"},
      {R"({"interval":{"contig":"chr 20","start":1,"end":300}})", "body.interval.contig",
       "not a contig name"},
      {R"({"interval":{"region":"chr20:1-300","contig":"chr20"}})", "body.interval", "either"},
      {R"({"interval":{"region":"chr20:1-300","strand":"x"}})", "body.interval.strand", ""},
      {R"({"interval":{"contig":"chr20","start":0,"end":300}})", "body.interval.start", ""},
      {R"({"interval":{"region":"chr20:1-300","chrom":"chr20"}})", "body.interval.chrom", ""},
      {R"({"interval":"chr20:1-300"})", "body.interval", ""},
      {R"({"interval":{"region":"chr20:1-300"},"sequence_name":"x"})", "body.sequence_name",
       "not used with interval"},
  };
  for (const Case& c : cases) {
    CATCH_INFO(c.body);
    auto v = ValidatePredictBody(Task::kPromoter, c.body);
    CATCH_REQUIRE_FALSE(v.ok());
    CATCH_CHECK(v.status().code() == ErrorCode::kValidationFailed);
    const FieldError* e = FirstError(v.status());
    CATCH_REQUIRE(e != nullptr);
    CATCH_CHECK(Loc(*e) == c.loc);
    CATCH_CHECK(e->msg.find(c.words) != std::string::npos);
  }
  auto shift = ValidatePredictBody(
      Task::kAnnotation,
      R"({"interval":{"region":"chr20:1-3000"},"options":{"shift_coordinates":"UCSC"}})");
  CATCH_REQUIRE_FALSE(shift.ok());
  CATCH_CHECK(Loc(*FirstError(shift.status())) == "body.options.shift_coordinates");
}

CATCH_TEST_CASE("interval: find-genes takes one too, and the queue command carries it",
                "[interval][validation]") {
  auto find = ValidateFindGenesBody(
      R"({"interval":{"region":"chr20:5,750,001-5,790,000","strand":"-"},"options":{"description":"liver"}})");
  CATCH_REQUIRE(find.ok());
  CATCH_CHECK(find->sequence.empty());
  CATCH_CHECK(find->sequence_length == 40000);
  CATCH_CHECK(find->sequence_name == "chr20");
  CATCH_CHECK(find->annotation.seqid() == "chr20");
  CATCH_CHECK(find->annotation.coordinate_offset() == 0);
  auto tiny = ValidateFindGenesBody(
      R"({"interval":{"region":"chr20:1-500"},"options":{"description":"liver"}})");
  CATCH_CHECK_FALSE(tiny.ok());

  AdmittedFindGenes admitted{std::move(find).value(), "annotation-m", "expression-m"};
  auto command = IntervalCommandFor(admitted);
  CATCH_REQUIRE(command.has_interval());
  CATCH_CHECK(command.interval().interval().strand() == "-");
  auto back = FromIntervalCommand(command.interval());
  CATCH_REQUIRE(back.ok());
  const auto& restored = std::get<AdmittedFindGenes>(*back);
  CATCH_CHECK(restored.input.interval->start == 5750001);
  CATCH_CHECK(restored.input.interval->end == 5790000);
  CATCH_CHECK(restored.input.interval->strand == '-');
  CATCH_CHECK(restored.input.interval->region == "chr20:5,750,001-5,790,000");
  CATCH_CHECK(restored.expression_model == "expression-m");

  auto predict = ValidatePredictBody(Task::kChromatin,
                                     R"({"interval":{"contig":"NC_000020.10","start":1,"end":2000}})");
  CATCH_REQUIRE(predict.ok());
  AdmittedPredict ap{std::move(predict).value(), OutputFormat::kBed};
  auto pc = IntervalCommandFor(ap);
  auto pback = FromIntervalCommand(pc.interval());
  CATCH_REQUIRE(pback.ok());
  const auto& p = std::get<AdmittedPredict>(*pback);
  CATCH_CHECK(p.format == OutputFormat::kBed);
  CATCH_CHECK(p.input.interval->contig == "NC_000020.10");
  CATCH_CHECK(p.input.sequence_name == "NC_000020.10");

  jobs::v1::IntervalCommand empty;
  CATCH_CHECK_FALSE(FromIntervalCommand(empty).ok());
}

}  // namespace dnaserve::core
