#include "gateway/http/accept_encoding.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "common/text.h"

namespace dnaserve::gateway {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The weight of one list member's parameters ("q=0.5"): 1 without a q parameter; 0 for a
// malformed one. RFC 9110 qvalue: "0" ["." 0-3 digits] or "1" ["." 0-3 zeros].
double Weight(std::string_view params) {
  double weight = 1.0;
  while (!params.empty()) {
    size_t semicolon = params.find(';');
    std::string_view param = Trim(params.substr(0, semicolon));
    params = semicolon == std::string_view::npos ? std::string_view() : params.substr(semicolon + 1);
    size_t eq = param.find('=');
    if (eq == std::string_view::npos || !EqualsIgnoringAsciiCase(Trim(param.substr(0, eq)), "q")) {
      continue;
    }
    std::string_view value = Trim(param.substr(eq + 1));
    if (value.empty() || (value[0] != '0' && value[0] != '1')) return 0;
    if (value.size() > 1 && (value[1] != '.' || value.size() > 5)) return 0;
    for (size_t i = 2; i < value.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(value[i]))) return 0;
    }
    weight = std::stod(std::string(value));
    if (weight > 1) return 0;
  }
  return weight;
}

}  // namespace

bool AcceptsGzip(std::optional<std::string_view> accept_encoding) {
  if (!accept_encoding) return false;
  std::optional<double> gzip;
  std::optional<double> any;
  std::string_view rest = *accept_encoding;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view member = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    size_t semicolon = member.find(';');
    std::string_view coding = Trim(member.substr(0, semicolon));
    const double weight =
        semicolon == std::string_view::npos ? 1.0 : Weight(member.substr(semicolon + 1));
    if (EqualsIgnoringAsciiCase(coding, "gzip") || EqualsIgnoringAsciiCase(coding, "x-gzip")) {
      gzip = gzip ? std::max(*gzip, weight) : weight;
    } else if (coding == "*") {
      any = weight;
    }
  }
  if (gzip) return *gzip > 0;
  return any && *any > 0;
}

}  // namespace dnaserve::gateway
