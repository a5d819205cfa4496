// %XX encoding (upper-case hex) of the bytes a format reserves: GFF3 columns and attributes, VCF
// INFO values. Each caller says which bytes its format reserves.
#pragma once

#include <string>
#include <string_view>

namespace dnaserve {

template <typename ShouldEscape>  // bool(unsigned char)
std::string PercentEncode(std::string_view text, ShouldEscape should_escape) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (should_escape(c)) {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

}  // namespace dnaserve
