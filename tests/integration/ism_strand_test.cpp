// POST /v1/ism on an interval on strand '-' (issue 25), end to end over real HTTP on the shared
// reference stack (reference_stack.h): the model is given the reverse complement of the
// stretch, and the matrix is reported as on '+' (contig positions ascending, the plus strand's
// REF and ALT bases, as a VCF names them). The oracle is the same ISM asked by sequence with the
// reverse complement cut here: the same bases seen by the model, so every cell must be equal,
// position p of the contig being position (end - p + 1) of that sequence and each base its
// complement. The promoter scorer reads strand (its windows are scored on the sense strand), so
// a job that ignored '-' would not match. Skips with a message when the Debian packages the
// reference comes from cannot be had.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "common/sequence.h"
#include "tests/integration/reference_stack.h"
#include "tests/integration/service_fixture.h"

using namespace dnaserve::testing;

namespace {

std::unique_ptr<ReferenceStack> MakeStrandStack(std::string* reason) {
  auto s = std::make_unique<ReferenceStack>();
  if (!s->Open("dnaserve-ism-strand-it", reason)) return nullptr;
  // Database 9: a queue and job store of its own; the service's workers (promoter, chromatin).
  if (!s->Start(9, false, "promoter", reason)) return nullptr;
  return s;
}

// chr20:5,752,601-5,754,600 (no N), the window in its middle.
constexpr int64_t kStart = 5752601;
constexpr int64_t kEnd = 5754600;
constexpr int64_t kFirst = 5753598;
constexpr int64_t kLast = 5753603;

char Complement(char b) { return dnaserve::ReverseComplement(std::string(1, b))[0]; }

// data.positions as position -> ALT -> delta.
std::map<int64_t, std::map<char, double>> Cells(const rapidjson::Value& data) {
  std::map<int64_t, std::map<char, double>> out;
  for (const auto& p : data["positions"].GetArray()) {
    auto& row = out[p["position"].GetInt64()];
    for (rapidjson::SizeType i = 0; i < p["alt"].Size(); ++i) {
      row[p["alt"][i].GetString()[0]] = p["delta"][i].GetDouble();
    }
  }
  return out;
}

std::string Body(const std::string& context, int64_t first, int64_t last) {
  return "{" + context + ", \"window\": {\"start\": " + std::to_string(first) +
         ", \"end\": " + std::to_string(last) +
         "}, \"scorers\": {\"promoter\": {\"distance\": 100}}}";
}

}  // namespace

TEST_CASE("ism: an interval on strand - is scored reverse-complemented and reported on the "
          "plus strand",
          "[ism]") {
  REQUIRE_SHARED_FIXTURE(ReferenceStack, s, MakeStrandStack);
  const std::string plus = s->Cut(kStart, kEnd);
  REQUIRE(plus.find('N') == std::string::npos);

  auto minus = s->Post("/v1/ism", Body("\"interval\": {\"contig\": \"chr20\", \"start\": " +
                                           std::to_string(kStart) + ", \"end\": " +
                                           std::to_string(kEnd) + ", \"strand\": \"-\"}",
                                       kFirst, kLast));
  INFO(minus.body.substr(0, 3000));
  REQUIRE(minus.status == 200);
  auto minus_doc = ParseJson(minus.body);
  const auto& data = (*minus_doc)["data"];
  CHECK(std::string((*minus_doc)["meta"]["interval"]["strand"].GetString()) == "-");
  CHECK(std::string(data["context"]["coordinates"].GetString()) == "contig");
  CHECK(data["window"]["start"].GetInt64() == kFirst);

  // Contig positions ascending, the plus strand's REF, its other three bases in A, C, G, T order.
  const auto& positions = data["positions"];
  REQUIRE(positions.Size() == static_cast<rapidjson::SizeType>(kLast - kFirst + 1));
  for (rapidjson::SizeType i = 0; i < positions.Size(); ++i) {
    const int64_t pos = kFirst + static_cast<int64_t>(i);
    INFO("position " << pos);
    CHECK(positions[i]["position"].GetInt64() == pos);
    const char ref = plus[static_cast<size_t>(pos - kStart)];
    CHECK(positions[i]["ref"].GetString() == std::string(1, ref));
    std::string alts;
    for (const auto& a : positions[i]["alt"].GetArray()) alts += a.GetString();
    std::string expected;
    for (char b : std::string("ACGT")) {
      if (b != ref) expected += b;
    }
    CHECK(alts == expected);
  }

  // The oracle: the reverse complement sent as the sequence; contig position p is its
  // position kEnd - p + 1.
  const std::string reversed = dnaserve::ReverseComplement(plus);
  auto by_sequence = s->Post("/v1/ism", Body("\"sequence\": \"" + reversed + "\"",
                                             kEnd - kLast + 1, kEnd - kFirst + 1));
  INFO(by_sequence.body.substr(0, 3000));
  REQUIRE(by_sequence.status == 200);
  auto sequence_doc = ParseJson(by_sequence.body);
  const auto expected = Cells((*sequence_doc)["data"]);
  const auto got = Cells(data);
  REQUIRE(got.size() == expected.size());
  int differing_from_zero = 0;
  for (const auto& [pos, row] : got) {
    const int64_t seq_pos = kEnd - pos + 1;
    REQUIRE(expected.count(seq_pos) == 1);
    for (const auto& [alt, delta] : row) {
      INFO("chr20:" << pos << " ALT " << alt << " = sequence position " << seq_pos << " ALT "
                    << Complement(alt));
      REQUIRE(expected.at(seq_pos).count(Complement(alt)) == 1);
      CHECK(delta == expected.at(seq_pos).at(Complement(alt)));
      if (delta != 0) ++differing_from_zero;
    }
  }
  // Some cell moved: a matrix of zeros would match any oracle.
  CHECK(differing_from_zero > 0);
}
