#include "gateway/server/client_address.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "gateway/server/header_block.h"

namespace dnaserve::gateway {
namespace {

struct ParsedIp {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};  // IPv4 uses the first 4
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> SplitCommas(std::string_view s) {
  std::vector<std::string_view> out;
  while (true) {
    size_t comma = s.find(',');
    out.push_back(Trim(s.substr(0, comma)));
    if (comma == std::string_view::npos) return out;
    s.remove_prefix(comma + 1);
  }
}

// A bare IPv4 or IPv6 address (no port, no brackets).
std::optional<ParsedIp> ParseBareIp(std::string_view text) {
  if (text.empty() || text.size() > INET6_ADDRSTRLEN) return std::nullopt;
  const std::string s(text);
  ParsedIp ip;
  if (inet_pton(AF_INET, s.c_str(), ip.bytes.data()) == 1) return ip;
  if (inet_pton(AF_INET6, s.c_str(), ip.bytes.data()) != 1) return std::nullopt;
  static constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(ip.bytes.data(), kMappedPrefix, sizeof(kMappedPrefix)) == 0) {
    std::memmove(ip.bytes.data(), ip.bytes.data() + 12, 4);  // ::ffff:a.b.c.d is a.b.c.d
    std::fill(ip.bytes.begin() + 4, ip.bytes.end(), 0);
    return ip;
  }
  ip.v6 = true;
  return ip;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && s.size() <= 5 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// An address as proxies write it: bare, "[v6]", "[v6]:port" or "v4:port".
std::optional<ParsedIp> ParseEntry(std::string_view text) {
  text = Trim(text);
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty() && !(rest.front() == ':' && AllDigits(rest.substr(1)))) return std::nullopt;
    auto ip = ParseBareIp(text.substr(1, close - 1));
    return ip;
  }
  if (auto ip = ParseBareIp(text)) return ip;
  size_t colon = text.rfind(':');
  if (colon != std::string_view::npos && text.find(':') == colon && AllDigits(text.substr(colon + 1))) {
    auto ip = ParseBareIp(text.substr(0, colon));
    if (ip && !ip->v6) return ip;
  }
  return std::nullopt;
}

std::string Format(const ParsedIp& ip) {
  char buf[INET6_ADDRSTRLEN] = {0};
  inet_ntop(ip.v6 ? AF_INET6 : AF_INET, ip.bytes.data(), buf, sizeof(buf));
  return buf;
}

}  // namespace

StatusOr<TrustedProxies> TrustedProxies::Parse(std::string_view spec) {
  TrustedProxies out;
  if (Trim(spec).empty()) return out;
  for (std::string_view entry : SplitCommas(spec)) {
    std::string_view address = entry;
    std::optional<int> prefix;
    if (size_t slash = entry.find('/'); slash != std::string_view::npos) {
      std::string_view bits = entry.substr(slash + 1);
      if (!AllDigits(bits) || bits.size() > 3) {
        return BadRequest("trusted proxy entry '" + std::string(entry) +
                          "' has an invalid prefix length");
      }
      prefix = std::stoi(std::string(bits));
      address = entry.substr(0, slash);
    }
    auto ip = ParseBareIp(address);
    if (!ip) {
      return BadRequest("trusted proxy entry '" + std::string(entry) +
                        "' is not an IP address or CIDR block");
    }
    const int max_bits = ip->v6 ? 128 : 32;
    if (prefix && *prefix > max_bits) {
      return BadRequest("trusted proxy entry '" + std::string(entry) + "' has a prefix longer than " +
                        std::to_string(max_bits) + " bits");
    }
    out.networks_.push_back({ip->v6, ip->bytes, prefix.value_or(max_bits)});
  }
  return out;
}

bool TrustedProxies::Contains(std::string_view address) const {
  auto ip = ParseBareIp(address);
  if (!ip) return false;
  for (const Network& net : networks_) {
    if (net.v6 != ip->v6) continue;
    const int whole = net.prefix_bits / 8;
    const int rest = net.prefix_bits % 8;
    if (!std::equal(net.bytes.begin(), net.bytes.begin() + whole, ip->bytes.begin())) continue;
    if (rest != 0) {
      const uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
      if ((net.bytes[whole] & mask) != (ip->bytes[whole] & mask)) continue;
    }
    return true;
  }
  return false;
}

std::optional<std::string> CanonicalAddress(std::string_view text) {
  auto ip = ParseEntry(text);
  if (!ip) return std::nullopt;
  return Format(*ip);
}

std::string RateLimitKey(std::string_view address) {
  auto ip = ParseBareIp(address);
  if (!ip) return std::string(address);
  if (!ip->v6) return Format(*ip);
  std::fill(ip->bytes.begin() + 8, ip->bytes.end(), 0);  // keep the /64
  return Format(*ip) + "/64";
}

std::string ClientAddress(std::string_view peer, const std::optional<std::string>& forwarded_for,
                          const TrustedProxies& trusted) {
  std::string current = CanonicalAddress(peer).value_or(std::string(peer));
  if (!forwarded_for || !trusted.Contains(current)) return current;
  std::vector<std::string_view> hops = SplitCommas(*forwarded_for);
  for (auto it = hops.rbegin(); it != hops.rend(); ++it) {
    auto hop = CanonicalAddress(*it);
    if (!hop) return current;  // garbage: believe nothing left of it
    current = *hop;
    if (!trusted.Contains(current)) return current;
  }
  return current;  // every hop is a trusted proxy: the leftmost is the best we know
}

std::optional<std::string> ForwardedForOf(std::string_view header_block) {
  return ScanHeaderBlock(header_block).forwarded_for;
}

}  // namespace dnaserve::gateway
