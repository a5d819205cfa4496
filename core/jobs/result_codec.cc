#include "core/jobs/result_codec.h"

#include <zlib.h>

#include <algorithm>
#include <climits>

namespace dnaserve::core {
namespace {

constexpr size_t kChunkBytes = 64 * 1024;
constexpr int kGzipWindowBits = 15 + 16;  // 15: the largest window; +16: gzip framing
constexpr int kLevel = 6;

}  // namespace

std::string GzipCompress(std::string_view data) {
  z_stream z{};
  // Only fails on bad parameters or out of memory; an empty result then makes the caller
  // store the body uncompressed.
  if (deflateInit2(&z, kLevel, Z_DEFLATED, kGzipWindowBits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return {};
  }
  std::string out;
  char chunk[kChunkBytes];
  const char* next = data.data();
  size_t left = data.size();
  int rc = Z_OK;
  do {
    const size_t take = std::min<size_t>(left, UINT_MAX);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(next));
    z.avail_in = static_cast<uInt>(take);
    next += take;
    left -= take;
    const int flush = left == 0 ? Z_FINISH : Z_NO_FLUSH;
    do {
      z.next_out = reinterpret_cast<Bytef*>(chunk);
      z.avail_out = kChunkBytes;
      rc = deflate(&z, flush);
      out.append(chunk, kChunkBytes - z.avail_out);
    } while (z.avail_out == 0);
  } while (left > 0);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return {};
  return out;
}

StatusOr<std::string> GzipDecompress(std::string_view gz, size_t max_bytes) {
  z_stream z{};
  if (inflateInit2(&z, kGzipWindowBits) != Z_OK) return Internal("cannot start gzip decoding");
  std::string out;
  // The trailer's last four bytes hold the data's length (mod 2^32): one allocation of the
  // right size instead of doubling, which would briefly hold one and a half copies.
  if (gz.size() >= 18) {
    const auto* tail = reinterpret_cast<const unsigned char*>(gz.data() + gz.size() - 4);
    const size_t expected = tail[0] | (tail[1] << 8) | (tail[2] << 16) | (size_t{tail[3]} << 24);
    out.reserve(std::min(expected, max_bytes));
  }
  char chunk[kChunkBytes];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(std::min<size_t>(gz.size(), UINT_MAX));
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = kChunkBytes;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    out.append(chunk, kChunkBytes - z.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&z);
      return Internal("a stored result inflates past " + std::to_string(max_bytes) + " bytes");
    }
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) break;  // input ended mid-stream
  }
  const bool complete = rc == Z_STREAM_END && z.avail_in == 0;
  inflateEnd(&z);
  if (!complete) return Internal("a stored result is not one complete gzip stream");
  return out;
}

}  // namespace dnaserve::core
