// What the gateway's HTTP edge reads from raw bytes before any parser: chunked framing
// (gateway/server/chunked_body.h) and the client address behind trusted proxies
// (gateway/server/client_address.h).
//  - byte 0 even: the rest is a chunked body; its verdict, size, end and data must not depend on
//    how the bytes are split across reads (the split points come from the input too), and a body
//    the reader accepts must re-encode to framing it accepts with the same size;
//  - byte 0 odd: the rest is "<trusted proxies>\n<peer>\n<raw header block>"; the client address
//    is the canonical peer or a canonical address taken from X-Forwarded-For, never anything else.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gateway/server/chunked_body.h"
#include "gateway/server/client_address.h"

using namespace dnaserve::gateway;

namespace {

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "ingress invariant broken: %s\n", what);
  std::abort();
}

struct Outcome {
  ChunkedBodyReader::Verdict verdict;
  uint64_t body_bytes;
  size_t end;        // offset of the first byte after the body (kComplete only)
  std::string data;  // the chunk data, concatenated
};

Outcome Read(std::string_view body, uint64_t limit, uint8_t split_seed) {
  ChunkedBodyReader reader(limit);
  size_t at = 0;
  uint32_t state = split_seed * 2654435761u + 1;
  ChunkedBodyReader::Verdict v = ChunkedBodyReader::Verdict::kNeedMore;
  std::string data;
  while (at < body.size()) {
    state = state * 1103515245u + 12345u;
    const size_t piece = split_seed == 0 ? body.size() : 1 + (state >> 16) % 37;
    const std::string_view part = body.substr(at, piece);
    v = reader.Feed(part, &data);
    if (v == ChunkedBodyReader::Verdict::kComplete) {
      if (reader.consumed() > part.size()) Violation("consumed more than was fed");
      if (data.size() != reader.body_bytes()) Violation("data size differs from the body size");
      return {v, reader.body_bytes(), at + reader.consumed(), data};
    }
    if (v != ChunkedBodyReader::Verdict::kNeedMore) return {v, 0, 0, ""};
    if (reader.consumed() != part.size()) Violation("a partial read left bytes unconsumed");
    at += part.size();
  }
  return {v, reader.body_bytes(), 0, data};
}

void FuzzChunked(std::string_view rest) {
  if (rest.size() < 2) return;
  const uint64_t limit = static_cast<uint8_t>(rest[0]) * 64;
  const uint8_t split_seed = static_cast<uint8_t>(rest[1]);
  const std::string_view body = rest.substr(2);
  const Outcome whole = Read(body, limit, 0);
  const Outcome split = Read(body, limit, split_seed == 0 ? 1 : split_seed);
  if (whole.verdict != split.verdict) Violation("verdict depends on how the bytes were split");
  if (whole.verdict == ChunkedBodyReader::Verdict::kComplete) {
    if (whole.body_bytes != split.body_bytes || whole.end != split.end ||
        whole.data != split.data) {
      Violation("size, end or data depends on how the bytes were split");
    }
    if (whole.body_bytes > limit) Violation("accepted more than the limit");
    // Re-encoded as one chunk, the same number of bytes is accepted again.
    std::string again;
    if (whole.body_bytes > 0) {
      char size_line[32];
      std::snprintf(size_line, sizeof(size_line), "%llx\r\n",
                    static_cast<unsigned long long>(whole.body_bytes));
      again = size_line + std::string(whole.body_bytes, 'x') + "\r\n";
    }
    again += "0\r\n\r\n";
    const Outcome re = Read(again, limit, 0);
    if (re.verdict != ChunkedBodyReader::Verdict::kComplete || re.body_bytes != whole.body_bytes) {
      Violation("a re-encoded accepted body was refused");
    }
  }
}

void FuzzClientAddress(std::string_view rest) {
  const size_t first = rest.find('\n');
  if (first == std::string_view::npos) return;
  const size_t second = rest.find('\n', first + 1);
  if (second == std::string_view::npos) return;
  auto trusted = TrustedProxies::Parse(rest.substr(0, first));
  if (!trusted.ok()) {
    if (trusted.status().message().empty()) Violation("refusal without a message");
    return;
  }
  const std::string peer(rest.substr(first + 1, second - first - 1));
  const std::string block = "GET / HTTP/1.1\r\n" + std::string(rest.substr(second + 1));
  const auto forwarded = ForwardedForOf(block);
  const std::string client = ClientAddress(peer, forwarded, *trusted);
  const auto canonical_peer = CanonicalAddress(peer);
  if (client == canonical_peer.value_or(peer)) return;
  // Anything else must be a canonical address that X-Forwarded-For named, from a trusted peer.
  if (!canonical_peer || !trusted->Contains(*canonical_peer)) {
    Violation("header believed from an untrusted peer");
  }
  if (CanonicalAddress(client) != client) Violation("client address not canonical");
  if (!forwarded) Violation("client address from nowhere");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] % 2 == 0) {
    FuzzChunked(rest);
  } else {
    FuzzClientAddress(rest);
  }
  return 0;
}
