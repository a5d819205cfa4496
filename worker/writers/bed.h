// BED writer: BED6 records, or BED12 when a record carries blocks (exons).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "worker/windowing/window_plan.h"
#include "worker/writers/text_util.h"  // BedScore

namespace dnaserve::worker {

struct BedRecord {
  BedRecord() = default;
  BedRecord(std::string chrom_name, int64_t start_bp, int64_t end_bp, std::string record_name,
            int bed_score, char strand_char)
      : chrom(std::move(chrom_name)),
        start(start_bp),
        end(end_bp),
        name(std::move(record_name)),
        score(bed_score),
        strand(strand_char) {}

  std::string chrom;
  int64_t start = 0;  // 0-based, half-open (BED's own convention)
  int64_t end = 0;
  std::string name;
  int score = 0;  // 0-1000
  char strand = '.';
  // BED12 columns, written when `blocks` is non-empty. Blocks are absolute, ascending spans; the
  // writer turns them into sizes and offsets relative to `start`.
  int64_t thick_start = 0;
  int64_t thick_end = 0;
  std::vector<Span> blocks;
};

// One line per record, no header. Whitespace in chrom and name becomes '_'.
std::string WriteBed(const std::vector<BedRecord>& records);

}  // namespace dnaserve::worker
