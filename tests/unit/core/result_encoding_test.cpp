// Stored results as gzip (core/jobs/result_codec.h) and the Accept-Encoding rule that decides
// whether a poll may send those bytes as they are (gateway/http/accept_encoding.h).
#include <zlib.h>

#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "gateway/http/accept_encoding.h"
#include "core/jobs/job_store_common.h"
#include "core/jobs/result_codec.h"

namespace dnaserve::gateway {
namespace {

// A JSON-like body: repetitive keys, varying numbers (what results look like).
std::string ResultLikeBody(size_t records) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> p(0, 1);
  std::string body = "{\"windows\":[";
  for (size_t i = 0; i < records; ++i) {
    body += "{\"index\":" + std::to_string(i) + ",\"name\":\"GM12878|CTCF|None\",\"probability\":" +
            std::to_string(p(rng)) + "},";
  }
  body += "{}]}";
  return body;
}

// An independent reader: zlib's gz* file-less API is not available for memory, so inflate by
// hand with automatic header detection (32 + 15), as a client's gzip decoder would.
std::string InflateIndependently(const std::string& gz) {
  z_stream z{};
  REQUIRE(inflateInit2(&z, 32 + 15) == Z_OK);
  std::string out(gz.size() * 50 + 1024, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&z, Z_FINISH);
  inflateEnd(&z);
  REQUIRE(rc == Z_STREAM_END);
  out.resize(z.total_out);
  return out;
}

TEST_CASE("results compress to a gzip stream any gzip reader decodes", "[jobs][gzip]") {
  const std::string body = ResultLikeBody(20000);
  const std::string gz = core::GzipCompress(body);
  REQUIRE(gz.size() > 18);
  CHECK(static_cast<unsigned char>(gz[0]) == 0x1f);  // gzip magic, as Content-Encoding needs
  CHECK(static_cast<unsigned char>(gz[1]) == 0x8b);
  CHECK(gz.size() * 4 < body.size());
  CHECK(InflateIndependently(gz) == body);
  auto back = core::GzipDecompress(gz);
  REQUIRE(back.ok());
  CHECK(*back == body);

  auto empty = core::GzipDecompress(core::GzipCompress(""));
  REQUIRE(empty.ok());
  CHECK(empty->empty());
}

TEST_CASE("a damaged stored result is an internal error, never a wrong body", "[jobs][gzip]") {
  const std::string gz = core::GzipCompress(ResultLikeBody(2000));
  CHECK(core::GzipDecompress(gz.substr(0, gz.size() / 2)).status().code() == ErrorCode::kInternal);
  CHECK(core::GzipDecompress("not gzip at all").status().code() == ErrorCode::kInternal);
  std::string flipped = gz;
  flipped[flipped.size() / 2] ^= 0x55;
  CHECK_FALSE(core::GzipDecompress(flipped).ok());
  CHECK(core::GzipDecompress(gz + "trailing").status().code() == ErrorCode::kInternal);
  // A bound on what a stored stream may inflate to.
  CHECK(core::GzipDecompress(core::GzipCompress(std::string(1 << 20, 'A')), 1000).status().code() ==
        ErrorCode::kInternal);
}

TEST_CASE("small bodies are stored as they are, large ones as gzip", "[jobs][gzip]") {
  core::StoredBody small = core::EncodeForStorage("{\"error\":{}}");
  CHECK(small.encoding.empty());
  CHECK(small.bytes == "{\"error\":{}}");
  const std::string body = ResultLikeBody(500);
  core::StoredBody large = core::EncodeForStorage(body);
  CHECK(large.encoding == "gzip");
  CHECK(large.bytes.size() < body.size());
  auto back = core::DecodeStored(large.bytes, large.encoding);
  REQUIRE(back.ok());
  CHECK(*back == body);
  CHECK(core::DecodeStored("x", "br").status().code() == ErrorCode::kInternal);
}

TEST_CASE("Accept-Encoding: gzip only when listed with a non-zero weight", "[http][gzip]") {
  CHECK(AcceptsGzip("gzip"));
  CHECK(AcceptsGzip("GZIP"));
  CHECK(AcceptsGzip("x-gzip"));
  CHECK(AcceptsGzip("gzip, deflate, br"));
  CHECK(AcceptsGzip("br;q=1.0, gzip;q=0.8, *;q=0.1"));
  CHECK(AcceptsGzip("deflate , gzip ; q=0.5"));
  CHECK(AcceptsGzip("*"));
  CHECK(AcceptsGzip("identity, *;q=0.5"));
  CHECK(AcceptsGzip("gzip;q=1"));
  CHECK(AcceptsGzip("gzip;q=0.001"));

  CHECK_FALSE(AcceptsGzip(std::nullopt));
  CHECK_FALSE(AcceptsGzip(""));
  CHECK_FALSE(AcceptsGzip("identity"));
  CHECK_FALSE(AcceptsGzip("deflate, br"));
  CHECK_FALSE(AcceptsGzip("gzip;q=0"));
  CHECK_FALSE(AcceptsGzip("gzip;q=0.000"));
  CHECK_FALSE(AcceptsGzip("GZIP; Q=0"));
  CHECK_FALSE(AcceptsGzip("*;q=0"));
  CHECK_FALSE(AcceptsGzip("gzip;q=0, *"));      // named explicitly: the wildcard does not apply
  CHECK_FALSE(AcceptsGzip("gzip;q=2"));         // not a qvalue
  CHECK_FALSE(AcceptsGzip("gzip;q=high"));      // malformed: never guess yes
  CHECK_FALSE(AcceptsGzip("gzip;q=0.5000"));    // at most three decimals
  CHECK_FALSE(AcceptsGzip("gzipx, xgzip"));
}

}  // namespace
}  // namespace dnaserve::gateway
