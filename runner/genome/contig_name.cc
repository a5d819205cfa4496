#include "runner/genome/contig_name.h"

#include <cctype>

namespace dnaserve::variant {

std::string ContigKey(std::string_view name) {
  if (name.size() > 3 && std::tolower(static_cast<unsigned char>(name[0])) == 'c' &&
      std::tolower(static_cast<unsigned char>(name[1])) == 'h' &&
      std::tolower(static_cast<unsigned char>(name[2])) == 'r') {
    name.remove_prefix(3);
  }
  return std::string(name);
}

}  // namespace dnaserve::variant
