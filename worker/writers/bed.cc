#include "worker/writers/bed.h"

#include "worker/writers/text_util.h"

namespace dnaserve::worker {

std::string WriteBed(const std::vector<BedRecord>& records) {
  std::string out;
  for (const auto& r : records) {
    out += TabField(r.chrom);
    out += '\t' + std::to_string(r.start) + '\t' + std::to_string(r.end) + '\t' + TabField(r.name) +
           '\t' + std::to_string(r.score) + '\t' + r.strand;
    if (!r.blocks.empty()) {
      std::string sizes;
      std::string starts;
      for (const auto& b : r.blocks) {
        sizes += std::to_string(b.end - b.start) + ',';
        starts += std::to_string(b.start - r.start) + ',';
      }
      out += '\t' + std::to_string(r.thick_start) + '\t' + std::to_string(r.thick_end) + "\t0\t" +
             std::to_string(r.blocks.size()) + '\t' + sizes + '\t' + starts;
    }
    out += '\n';
  }
  return out;
}

}  // namespace dnaserve::worker
