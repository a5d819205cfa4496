// A VCF body for POST /v1/variants/score (core/validation/variant_score_vcf.h): records -> the
// batch's variants, one per ALT, each problem its own; the bounds on hostile bodies; the
// command's batch flag and its queue entry version.
#ifndef CATCH_CONFIG_PREFIX_ALL
#define CATCH_CONFIG_PREFIX_ALL
#endif
#include <catch2/catch.hpp>
#include <zlib.h>

#include <string>
#include <vector>

#include "core/admission/commands.h"
#include "core/validation/variant_score_vcf.h"

using namespace dnaserve;
using namespace dnaserve::core;

namespace {

const std::string kHeader =
    "##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n";

// `text` as one gzip member.
std::string Gzip(const std::string& text) {
  z_stream z{};
  CATCH_REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(&out[0]);
  z.avail_out = static_cast<uInt>(out.size());
  CATCH_REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return out;
}

ValidatedVariantScore Valid(const std::string& body, std::optional<std::string> scorers = {}) {
  VcfScoreCall call;
  call.body = body;
  call.scorers = std::move(scorers);
  auto v = ValidateVariantScoreVcf(call);
  CATCH_INFO((v.ok() ? "ok" : v.status().message()));
  CATCH_REQUIRE(v.ok());
  return std::move(v).value();
}

ErrorCode Refused(const std::string& body, std::optional<std::string> scorers = {}) {
  VcfScoreCall call;
  call.body = body;
  call.scorers = std::move(scorers);
  auto v = ValidateVariantScoreVcf(call);
  CATCH_REQUIRE_FALSE(v.ok());
  return v.status().code();
}

std::string CodeOf(const RequestedVariant& v) { return v.problem ? v.problem->code : ""; }

}  // namespace

CATCH_TEST_CASE("a VCF's records become variants, one per ALT, each problem its own",
                "[variants][vcf]") {
  const std::string text = kHeader +
                           "20\t100\trs1\tA\tG,T\t.\t.\t.\n"          // two variants
                           "20\t200\t.\tc\tt\t.\t.\t.\n"              // lower case: upper-cased
                           "20\t300\t.\tA\t<DEL>\t.\t.\t.\n"          // symbolic
                           "20\t300\t.\tA\t*\t.\t.\t.\n"              // '*'
                           "20\tx\t.\tA\tG\t.\t.\t.\n"                // POS not a number
                           "20\t400\t.\tA\t" + std::string(60, 'C') + "\t.\t.\t.\n"  // 59 bp
                           "20\t500\n";                                 // too few columns
  for (const std::string& body : {text, Gzip(text), Gzip(text.substr(0, 80)) +
                                                        Gzip(text.substr(80))}) {
    auto v = Valid(body);
    CATCH_REQUIRE(v.variants.size() == 8);
    CATCH_CHECK(v.splice);  // the default scorer
    CATCH_CHECK(v.variants[0].input == "20:100:A:G");
    CATCH_CHECK(v.variants[1].alt == "T");
    CATCH_CHECK(v.variants[1].assembly == "GRCh37");
    CATCH_CHECK(CodeOf(v.variants[0]).empty());
    CATCH_CHECK(CodeOf(v.variants[2]).empty());
    CATCH_CHECK(v.variants[2].ref == "C");
    CATCH_CHECK(CodeOf(v.variants[3]) == "unsupported_allele");
    CATCH_CHECK(CodeOf(v.variants[4]) == "unsupported_allele");
    CATCH_CHECK(CodeOf(v.variants[5]) == "invalid_variant");
    CATCH_CHECK(CodeOf(v.variants[6]) == "indel_too_long");
    CATCH_CHECK(CodeOf(v.variants[7]) == "invalid_variant");
  }
  auto chosen = Valid(kHeader + "20\t100\t.\tA\tG\t.\t.\t.\n", "promoter, chromatin");
  CATCH_CHECK_FALSE(chosen.splice);
  CATCH_CHECK(chosen.promoter);
  CATCH_CHECK(chosen.chromatin);
}

CATCH_TEST_CASE("hostile VCF bodies: bounds named in a 413, garbage a 400", "[variants][vcf]") {
  const std::string one = "20\t100\t.\tA\tG\t.\t.\t.\n";
  std::string at_limit = kHeader, past_limit;
  for (int64_t i = 0; i < kMaxBatchScoreVariants; ++i) at_limit += one;
  past_limit = at_limit + one;
  CATCH_CHECK(Valid(at_limit).variants.size() == static_cast<size_t>(kMaxBatchScoreVariants));
  CATCH_CHECK(Refused(past_limit) == ErrorCode::kPayloadTooLarge);
  // Multi-allelic records count per ALT.
  std::string alts = kHeader;
  for (int64_t i = 0; i < kMaxBatchScoreVariants / 2 + 1; ++i) alts += "20\t5\t.\tA\tG,T\t.\t.\t.\n";
  CATCH_CHECK(Refused(alts) == ErrorCode::kPayloadTooLarge);
  // A bomb: stops inflating at the bound.
  const std::string zeros(static_cast<size_t>(kMaxVcfTextBytes) + (1 << 20), '\0');
  auto bomb = InflateVcfBody(Gzip(zeros), kMaxVcfTextBytes);
  CATCH_REQUIRE_FALSE(bomb.ok());
  CATCH_CHECK(bomb.status().code() == ErrorCode::kPayloadTooLarge);
  CATCH_CHECK(bomb.status().message().find("64 MiB") != std::string::npos);
  auto small = InflateVcfBody(Gzip("abc"), 3);
  CATCH_REQUIRE(small.ok());
  CATCH_CHECK(*small == "abc");
  const std::string gz = Gzip(kHeader + one);
  CATCH_CHECK(Refused(gz.substr(0, gz.size() / 2)) == ErrorCode::kBadRequest);  // truncated
  CATCH_CHECK(Refused(std::string("\x1f\x8b\x08\x00garbage", 12)) == ErrorCode::kBadRequest);
  CATCH_CHECK(Refused("20\t100\t.\tA\tG\n") == ErrorCode::kBadRequest);  // no header
  CATCH_CHECK(Refused(kHeader) == ErrorCode::kBadRequest);              // no records
  CATCH_CHECK(Refused("BCF\x02\x02rest") == ErrorCode::kBadRequest);
  CATCH_CHECK(Refused(kHeader + one, "expression") == ErrorCode::kValidationFailed);
  CATCH_CHECK(Refused(kHeader + one, "splice,enhancer") == ErrorCode::kValidationFailed);
}

CATCH_TEST_CASE("VCF media types, and a batch command's queue entry version", "[variants][vcf]") {
  CATCH_CHECK(IsVcfContentType("text/x-vcf"));
  CATCH_CHECK(IsVcfContentType("Text/VCF; charset=utf-8"));
  CATCH_CHECK(IsVcfContentType("application/gzip"));
  CATCH_CHECK(IsVcfContentType("application/x-gzip"));
  CATCH_CHECK_FALSE(IsVcfContentType("application/json"));
  AdmittedVariantScore admitted;
  admitted.input = Valid(kHeader + "20\t100\t.\tA\tG\t.\t.\t.\n");
  admitted.splice_model = "splice-human";
  CATCH_CHECK(VariantScoreEntryVersion(admitted) == 3);
  admitted.batch = true;
  CATCH_CHECK(VariantScoreEntryVersion(admitted) == 5);
  jobs::v1::JobCommand read;
  CATCH_REQUIRE(read.ParseFromString(VariantScoreCommandFor(admitted).SerializeAsString()));
  CATCH_CHECK(VariantScoreFromCommand(read.variant_score()).batch);
}
