#include "gateway/server/header_block.h"

#include <cstring>

namespace dnaserve::gateway {
namespace {

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// `name` is lower case.
bool NameIs(std::string_view line_name, std::string_view name) {
  if (line_name.size() != name.size()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (Lower(line_name[i]) != name[i]) return false;
  }
  return true;
}

bool IsWhitespace(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsWhitespace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsWhitespace(s.back())) s.remove_suffix(1);
  return s;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// RFC 9110 5.6.2: the characters of a token (method, header name, transfer coding).
bool IsTokenChar(char c) {
  return IsAlpha(c) || IsDigit(c) || (c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

// RFC 9110 5.5: a field value holds visible characters, obs-text, spaces and tabs; CR, LF, NUL
// and the other control characters are refused rather than passed on.
bool IsFieldValueByte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return c == '\t' || (u >= 0x20 && u != 0x7f);
}

void AppendListItem(std::optional<std::string>& list, std::string_view item) {
  if (list) {
    list->push_back(',');
    list->append(item);
  } else {
    list.emplace(item);
  }
}

// The methods Pistache parses (HTTP_METHODS in pistache/http_defs.h); it would answer any other
// with its own plain-text 400.
bool MethodKnown(std::string_view method) {
  for (const char* known :
       {"GET", "POST", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"}) {
    if (method == known) return true;
  }
  return false;
}

// RFC 9112 3.2: origin-form ("/path?query"), asterisk-form ("*", OPTIONS only), or an absolute
// or authority form ("scheme:..." / "host:port"). Visible ASCII only, no fragment.
bool TargetValid(std::string_view method, std::string_view target) {
  for (char c : target) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '#') return false;
  }
  if (target.empty()) return false;
  if (target.front() == '/') return true;
  if (target == "*") return method == "OPTIONS";
  size_t i = 0;
  if (!IsAlpha(target[0])) return false;
  while (i < target.size() && (IsAlpha(target[i]) || IsDigit(target[i]) || target[i] == '+' ||
                               target[i] == '-' || target[i] == '.')) {
    ++i;
  }
  return i < target.size() && target[i] == ':';
}

// request-line = method SP request-target SP HTTP-version, single spaces (RFC 9112 3).
std::optional<std::string> CheckRequestLine(std::string_view line, HeaderBlockFacts* facts) {
  const size_t first_space = line.find(' ');
  if (first_space == std::string_view::npos) {
    return "the request line is not 'method target version'";
  }
  const std::string_view method = line.substr(0, first_space);
  const size_t second_space = line.find(' ', first_space + 1);
  if (second_space == std::string_view::npos) return "the request line has no HTTP version";
  const std::string_view target = line.substr(first_space + 1, second_space - first_space - 1);
  const std::string_view version = line.substr(second_space + 1);
  if (!IsToken(method)) return "the request line's method is not a token (RFC 9112 3.1)";
  if (!TargetValid(method, target)) {
    return "the request target is not a valid URI form (RFC 9112 3.2): one space on either "
           "side, visible ASCII, no fragment";
  }
  const bool version_syntax = version.size() == 8 && version.substr(0, 5) == "HTTP/" &&
                              IsDigit(version[5]) && version[6] == '.' && IsDigit(version[7]);
  if (!version_syntax) return "the request line does not end in an HTTP version such as HTTP/1.1";
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return "HTTP version " + std::string(version) + " is not supported (HTTP/1.1 or HTTP/1.0)";
  }
  facts->http10 = version == "HTTP/1.0";
  if (!MethodKnown(method)) return "the request method is not one this server implements";
  return std::nullopt;
}

// RFC 3986 3.2.2-3.2.3: host [":" port], where host is a bracketed IP literal, an IPv4 address
// or a registered name (unreserved, percent-encoded and sub-delimiter characters).
bool HostValid(std::string_view value) {
  std::string_view host = value;
  std::string_view port;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    for (char c : host.substr(1, close - 1)) {
      if (!(IsAlpha(c) || IsDigit(c) || c == ':' || c == '.' || c == '%' || c == '-' || c == '_' ||
            c == '~')) {
        return false;
      }
    }
    const std::string_view rest = host.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return false;
    if (!rest.empty()) port = rest.substr(1);
  } else {
    const size_t colon = host.find(':');
    if (colon != std::string_view::npos) {
      port = host.substr(colon + 1);
      host = host.substr(0, colon);
    }
    for (char c : host) {
      if (!(IsAlpha(c) || IsDigit(c) || std::strchr("-._~%!$&'()*+,;=", c) != nullptr) ||
          c == '\0') {
        return false;
      }
    }
  }
  // An empty port is allowed (RFC 3986: port = *DIGIT); one past 65535 names no TCP port.
  if (port.size() > 5) return false;
  uint32_t number = 0;
  for (char c : port) {
    if (!IsDigit(c)) return false;
    number = number * 10 + static_cast<uint32_t>(c - '0');
  }
  return number <= 65535;
}

// Content-Length = 1*DIGIT (RFC 9110 8.6). nullopt when the value is anything else or does
// not fit in 64 bits.
std::optional<uint64_t> DecimalLength(std::string_view value) {
  if (value.empty()) return std::nullopt;
  uint64_t n = 0;
  for (char c : value) {
    if (!IsDigit(c)) return std::nullopt;
    const auto digit = static_cast<uint64_t>(c - '0');
    if (n > (UINT64_MAX - digit) / 10) return std::nullopt;
    n = n * 10 + digit;
  }
  return n;
}

// The transfer codings named across every Transfer-Encoding line (RFC 9110 5.6.1 lists: empty
// elements are ignored, elements are trimmed).
struct Codings {
  int lines = 0;
  int count = 0;
  int chunked = 0;
  bool last_is_chunked = false;

  void Add(std::string_view value) {
    ++lines;
    size_t start = 0;
    while (start <= value.size()) {
      size_t comma = value.find(',', start);
      if (comma == std::string_view::npos) comma = value.size();
      const std::string_view item = Trim(value.substr(start, comma - start));
      if (!item.empty()) {
        ++count;
        last_is_chunked = NameIs(item, "chunked");
        if (last_is_chunked) ++chunked;
      }
      start = comma + 1;
    }
  }

  // RFC 9112 6.1 and 6.3: the final coding must be chunked, applied once; this server decodes
  // no other coding (gzip, deflate, ...), so a list naming one is refused too.
  std::optional<std::string> Problem() const {
    if (count == 0) return "Transfer-Encoding names no transfer coding";
    if (!last_is_chunked) {
      return "Transfer-Encoding must end with chunked (RFC 9112 6.3): without it the body's "
             "length is unknown";
    }
    if (chunked > 1) return "Transfer-Encoding applies chunked more than once (RFC 9112 6.1)";
    if (count > 1) {
      return "Transfer-Encoding may only be chunked: no other transfer coding is supported";
    }
    return std::nullopt;
  }
};

// One header block line by line; every line must end in CRLF, and no CR may stand alone.
class LineReader {
 public:
  explicit LineReader(std::string_view block) : block_(block) {}

  // The next line without its CRLF; false at the end of the block or (with `error` set) at a
  // line ending in a bare LF or holding a bare CR.
  bool Next(std::string_view* line, std::optional<std::string>* error) {
    if (pos_ >= block_.size()) return false;
    const size_t lf = block_.find('\n', pos_);
    const size_t end = lf == std::string_view::npos ? block_.size() : lf;
    if (lf != std::string_view::npos && (lf == pos_ || block_[lf - 1] != '\r')) {
      *error = "a line ends in a bare LF; HTTP/1.1 lines end in CRLF (RFC 9112 2.2)";
      return false;
    }
    *line = block_.substr(pos_, (lf == std::string_view::npos ? end : end - 1) - pos_);
    pos_ = end + 1;
    if (line->find('\r') != std::string_view::npos) {
      *error = "a bare CR outside a line ending (RFC 9112 2.2)";
      return false;
    }
    return true;
  }

 private:
  std::string_view block_;
  size_t pos_ = 0;
};

// What one field line says, for the facts the scan collects.
struct HeaderCounts {
  int content_length_lines = 0;
  int host_lines = 0;
  Codings codings;
};

// Checks one field line (RFC 9112 5) and records what it says; the reason it is malformed,
// or nullopt.
std::optional<std::string> TakeFieldLine(std::string_view line, bool first, HeaderBlockFacts* facts,
                                         HeaderCounts* counts) {
  if (IsWhitespace(line.front())) {
    if (first) return "whitespace before the first header line (RFC 9112 2.2)";
    return "obsolete line folding (a header line starting with whitespace) is not accepted "
           "(RFC 9112 5.2)";
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return "a header line without a colon (RFC 9112 5)";
  const std::string_view name = line.substr(0, colon);
  if (name.empty()) return "a header line with an empty name";
  if (IsWhitespace(name.back())) {
    return "whitespace between a header name and its colon (RFC 9112 5.1)";
  }
  if (!IsToken(name)) return "a header name that is not a token (RFC 9110 5.1)";
  const std::string_view raw_value = line.substr(colon + 1);
  for (char c : raw_value) {
    if (!IsFieldValueByte(c)) return "a control character in a header value (RFC 9110 5.5)";
  }
  const std::string_view value = Trim(raw_value);
  // Cheap first-letter dispatch: most lines are none of these.
  switch (Lower(name[0])) {
    case 'a':
      if (NameIs(name, "authorization")) ++facts->authorization_lines;
      break;
    case 'c':
      if (NameIs(name, "content-length")) {
        // One line, one number: a list or a repeat, even of the same value, is refused
        // (RFC 9110 8.6 allows either refusing or merging equal values; a proxy in front may
        // have merged differently).
        if (++counts->content_length_lines > 1) {
          return "more than one Content-Length (RFC 9110 8.6): the body's length is ambiguous";
        }
        facts->content_length = DecimalLength(value);
        if (!facts->content_length) {
          return "Content-Length must be a single decimal number of bytes below 2^64 "
                 "(RFC 9110 8.6)";
        }
      }
      break;
    case 'h':
      if (NameIs(name, "host")) {
        if (++counts->host_lines > 1) return "more than one Host (RFC 9112 3.2)";
        if (!HostValid(value)) return "Host is not a valid host[:port] (RFC 9112 3.2)";
      }
      break;
    case 't':
      if (NameIs(name, "transfer-encoding")) counts->codings.Add(value);
      break;
    case 'x':
      if (NameIs(name, "x-forwarded-for")) AppendListItem(facts->forwarded_for, value);
      break;
    default:
      break;
  }
  return std::nullopt;
}

// The rules that span lines: Host in HTTP/1.1, and how the body's length is given (RFC 9112
// 6.1-6.3).
std::optional<std::string> CheckFraming(const HeaderCounts& counts, HeaderBlockFacts* facts) {
  if (!facts->http10 && counts.host_lines == 0) {
    return "an HTTP/1.1 request must carry Host (RFC 9112 3.2)";
  }
  if (counts.codings.lines == 0) return std::nullopt;
  if (facts->http10) {
    return "Transfer-Encoding in an HTTP/1.0 request: its framing is faulty (RFC 9112 6.1)";
  }
  if (counts.content_length_lines > 0) {
    return "Transfer-Encoding and Content-Length together (RFC 9112 6.3): the body's length is "
           "ambiguous";
  }
  if (auto problem = counts.codings.Problem()) return problem;
  facts->chunked = true;
  return std::nullopt;
}

}  // namespace

HeaderBlockFacts ScanHeaderBlock(std::string_view block) {
  HeaderBlockFacts facts;
  LineReader lines(block);
  std::string_view line;
  std::optional<std::string> error;
  if (!lines.Next(&line, &error)) {
    facts.malformed = error ? *error : "an empty request line";
    return facts;
  }
  if (auto problem = CheckRequestLine(line, &facts)) {
    facts.malformed = std::move(problem);
    return facts;
  }
  HeaderCounts counts;
  bool first = true;
  while (lines.Next(&line, &error)) {
    if (line.empty()) break;  // the blank line: the block ends
    if (auto problem = TakeFieldLine(line, first, &facts, &counts)) {
      facts.malformed = std::move(problem);
      return facts;
    }
    first = false;
  }
  if (error) {
    facts.malformed = std::move(error);
    return facts;
  }
  facts.malformed = CheckFraming(counts, &facts);
  return facts;
}

size_t FindBareLf(std::string_view text, char before) {
  for (size_t i = text.find('\n'); i != std::string_view::npos; i = text.find('\n', i + 1)) {
    if ((i == 0 ? before : text[i - 1]) != '\r') return i;
  }
  return std::string_view::npos;
}

std::string WithPlainChunkedLine(std::string_view block) {
  std::string out;
  out.reserve(block.size() + 28);
  size_t pos = 0;
  while (pos < block.size()) {
    size_t end = block.find("\r\n", pos);
    end = end == std::string_view::npos ? block.size() : end + 2;
    const std::string_view line = block.substr(pos, end - pos);
    pos = end;
    if (line == "\r\n") {
      out.append("Transfer-Encoding: chunked\r\n\r\n");
      break;
    }
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos && NameIs(line.substr(0, colon), "transfer-encoding")) {
      continue;
    }
    out.append(line);
  }
  return out;
}

}  // namespace dnaserve::gateway
