// Which address a request comes from, for the edge per-IP limit.
//
// Behind an ingress or load balancer every request's socket peer is the proxy, so the gateway
// would give all clients one bucket. Proxies name the client in X-Forwarded-For, but any client
// can send that header too, so it is believed only as far as the operator vouches for the hops:
// starting from the socket peer, while the current hop is a configured trusted proxy, step one
// entry to the left in X-Forwarded-For (the proxy appended its own peer at the right). The first
// address that is not a trusted proxy is the client. An entry that is not an IP address stops
// the walk at the hop before it (the last address a trusted proxy vouched for). With no trusted
// proxies configured the header is ignored entirely.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dnaserve::gateway {

class TrustedProxies {
 public:
  TrustedProxies() = default;  // none
  // Comma-separated IPv4/IPv6 addresses and CIDR blocks, e.g. "10.0.0.0/8, 192.168.4.7,
  // fd00::/8". bad_request naming the first entry that is neither.
  static StatusOr<TrustedProxies> Parse(std::string_view spec);

  // `address` is a textual IP (IPv4-mapped IPv6 counts as its IPv4 address).
  bool Contains(std::string_view address) const;
  bool empty() const { return networks_.empty(); }

 private:
  struct Network {
    bool v6 = false;
    std::array<uint8_t, 16> bytes{};
    int prefix_bits = 0;
  };
  std::vector<Network> networks_;
};

// `text` as a canonical IP address ("::ffff:10.1.2.3" -> "10.1.2.3", "0:0::1" -> "::1");
// an X-Forwarded-For entry may also carry a port ("10.1.2.3:443", "[2001:db8::1]:443").
// nullopt when it is not an IP address.
std::optional<std::string> CanonicalAddress(std::string_view text);

// The network the per-IP limit counts `address` under: an IPv4 address is itself ("10.1.2.3",
// also when written "::ffff:10.1.2.3"); an IPv6 address is its /64 ("2001:db8:1:2::/64"), the
// smallest block ISPs and clouds hand a subscriber or an interface (RFC 6177), so a client
// holding a /64 cannot mint 2^64 buckets by rotating its interface id. Text that is not an IP
// address comes back unchanged.
std::string RateLimitKey(std::string_view address);

// The client address of a request whose socket peer is `peer` and whose X-Forwarded-For lines,
// joined with commas in order, are `forwarded_for` (nullopt: no such header).
std::string ClientAddress(std::string_view peer, const std::optional<std::string>& forwarded_for,
                          const TrustedProxies& trusted);

// The X-Forwarded-For lines of a raw HTTP header block, joined with commas in the order they
// appear (RFC 9110 5.3: repeated lines are one comma-separated list); nullopt when none.
// Pistache keeps only one line of a repeated header, so the server reads the raw block.
std::optional<std::string> ForwardedForOf(std::string_view header_block);

}  // namespace dnaserve::gateway
