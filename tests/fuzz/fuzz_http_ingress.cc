// What the gateway's HTTP edge reads from raw bytes before any parser: chunked framing
// (gateway/server/chunked_body.h), the request's header block (gateway/server/header_block.h)
// and the client address behind trusted proxies (gateway/server/client_address.h).
//  - byte 0 % 4 == 0: the rest is a chunked body; its verdict, size, end and data must not depend
//    on how the bytes are split across reads (the split points come from the input too), and a
//    body the reader accepts must re-encode to framing it accepts with the same size;
//  - byte 0 % 4 == 2: the rest is a header block; a block the scan accepts must obey, checked
//    here independently, the RFC 9112 rules it enforces (CRLF lines only, no folding, no space
//    before a colon, one Host in HTTP/1.1, at most one all-digit Content-Length, chunked alone),
//    a refusal must say why, a bare LF must be found wherever a read splits the block, and a
//    chunked block re-written for Pistache must scan the same with one plain chunked line;
//  - byte 0 odd: the rest is "<trusted proxies>\n<peer>\n<raw header block>"; the client address
//    is the canonical peer or a canonical address taken from X-Forwarded-For, never anything else.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/server/chunked_body.h"
#include "gateway/server/client_address.h"
#include "gateway/server/header_block.h"

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

bool NameIs(std::string_view line, std::string_view lower_name) {
  if (line.size() <= lower_name.size() || line[lower_name.size()] != ':') return false;
  for (size_t i = 0; i < lower_name.size(); ++i) {
    const char c = line[i];
    const char lower = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    if (lower != lower_name[i]) return false;
  }
  return true;
}

// The block's lines up to the blank line (or the end), split on CRLF; false if a CR or LF
// stands anywhere else in them.
bool CrlfLines(std::string_view block, std::vector<std::string_view>* lines) {
  size_t pos = 0;
  while (pos < block.size()) {
    const size_t crlf = block.find("\r\n", pos);
    const size_t end = crlf == std::string_view::npos ? block.size() : crlf;
    const std::string_view line = block.substr(pos, end - pos);
    if (line.find_first_of("\r\n") != std::string_view::npos) return false;
    if (line.empty() && !lines->empty()) return true;
    lines->push_back(line);
    pos = end + 2;
  }
  return true;
}

void CheckAcceptedBlock(std::string_view block, const HeaderBlockFacts& facts) {
  std::vector<std::string_view> lines;
  if (!CrlfLines(block, &lines)) Violation("accepted a bare CR or LF");
  if (lines.empty()) Violation("accepted a block without a request line");
  const std::string_view request_line = lines[0];
  if (request_line.size() < 14 || request_line.find("  ") != std::string_view::npos ||
      request_line.find('\t') != std::string_view::npos) {
    Violation("accepted a malformed request line");
  }
  if (facts.http10 != (request_line.substr(request_line.size() - 9) == " HTTP/1.0")) {
    Violation("HTTP/1.0 misread");
  }
  int hosts = 0;
  int lengths = 0;
  int codings = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    if (line[0] == ' ' || line[0] == '\t') Violation("accepted a folded or indented line");
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) Violation("accepted a line without a name");
    if (line[colon - 1] == ' ' || line[colon - 1] == '\t') {
      Violation("accepted space before a colon");
    }
    hosts += NameIs(line, "host");
    codings += NameIs(line, "transfer-encoding");
    if (NameIs(line, "content-length")) {
      ++lengths;
      std::string_view value = line.substr(colon + 1);
      const size_t first = value.find_first_not_of(" \t");
      value = first == std::string_view::npos ? std::string_view() : value.substr(first);
      value = value.substr(0, value.find_last_not_of(" \t") + 1);
      if (value.empty() || value.find_first_not_of("0123456789") != std::string_view::npos) {
        Violation("accepted a Content-Length that is not all digits");
      }
    }
  }
  if (!facts.http10 && hosts != 1) Violation("accepted HTTP/1.1 without exactly one Host");
  if (facts.http10 && hosts > 1) Violation("accepted two Host lines");
  if (lengths > 1) Violation("accepted two Content-Length lines");
  if (facts.content_length.has_value() != (lengths == 1)) Violation("Content-Length misread");
  if (facts.chunked != (codings > 0)) Violation("Transfer-Encoding accepted but not chunked");
  if (facts.chunked && (lengths > 0 || facts.http10)) Violation("accepted chunked beside a length");
  if (facts.chunked) {
    // What Pistache is given instead: the same facts, one plain Transfer-Encoding line.
    std::string whole(block.substr(0, block.find("\r\n\r\n") == std::string_view::npos
                                          ? block.size()
                                          : block.find("\r\n\r\n") + 2));
    if (whole.size() < 2 || whole.compare(whole.size() - 2, 2, "\r\n") != 0) whole += "\r\n";
    const std::string plain = WithPlainChunkedLine(whole + "\r\n");
    const HeaderBlockFacts again = ScanHeaderBlock(plain);
    if (again.malformed || !again.chunked || again.forwarded_for != facts.forwarded_for ||
        again.authorization_lines != facts.authorization_lines) {
      Violation("the block re-written for Pistache scans differently");
    }
    if (plain.find("\r\nTransfer-Encoding: chunked\r\n\r\n") == std::string::npos) {
      Violation("the re-written block has no plain chunked line");
    }
  }
}

void FuzzHeaderBlock(std::string_view block) {
  // A bare LF is found whichever read it arrives in.
  if (!block.empty()) {
    const size_t split = static_cast<uint8_t>(block[0]) % block.size();
    const std::string_view first = block.substr(0, split);
    const std::string_view second = block.substr(split);
    const bool whole = FindBareLf(block, '\0') != std::string_view::npos;
    const bool parts =
        FindBareLf(first, '\0') != std::string_view::npos ||
        FindBareLf(second, split == 0 ? '\0' : first.back()) != std::string_view::npos;
    if (whole != parts) Violation("a bare LF depends on where the read split");
  }
  const HeaderBlockFacts facts = ScanHeaderBlock(block);
  if (facts.malformed) {
    if (facts.malformed->empty()) Violation("refusal without a reason");
    return;
  }
  CheckAcceptedBlock(block, facts);
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
  if (data[0] % 4 == 0) {
    FuzzChunked(rest);
  } else if (data[0] % 4 == 2) {
    FuzzHeaderBlock(rest);
  } else {
    FuzzClientAddress(rest);
  }
  return 0;
}
