// Interval input (issue 25, scope 2): a predict task or the find-genes workflow names a stretch
// of a reference genome the service holds instead of sending its bases.
//
// Convention, the one samtools regions and VCF use: `start` and `end` are 1-based and inclusive,
// so chr20:5,750,001-5,760,000 is 10,000 bp. `strand` '-' asks for the reverse complement of
// that stretch to be analysed; outputs are still reported on the contig's plus-strand
// coordinates (runner/workflows/interval_coordinates.h says exactly how).
//
// What the gateway checks here needs no reference: the shape, start <= end, the length bounds.
// Whether the assembly and contig exist and the interval lies on the contig is checked by the
// runner that reads the reference (runner/workflows/interval_job.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "core/validation/request_schema.h"

namespace dnaserve::core {

class CheckedObject;  // json_walk.h

// The assembly an interval without one is on: the reference the runners hold by default.
inline constexpr std::string_view kDefaultIntervalAssembly = "GRCh37";

struct GenomeInterval {
  std::string assembly;  // as given; kDefaultIntervalAssembly when omitted
  std::string contig;    // as given ("chr20", "20", "NC_000020.10"): output tracks use it
  int64_t start = 0;     // 1-based, inclusive
  int64_t end = 0;       // 1-based, inclusive
  char strand = '+';
  std::string region;    // the region string as sent, "" when the fields were

  int64_t length() const { return end - start + 1; }
  // "chr20:5750001-5760000" (no commas), the form the echo and messages use.
  std::string Label() const;
};

// A samtools-style region "contig:start-end" (commas allowed in the numbers, 1-based
// inclusive). nullopt with *why set when malformed; start > end is malformed too.
std::optional<GenomeInterval> ParseRegionString(std::string_view text, std::string* why);

// The closed `interval` object of the request tables.
const ObjectSpec& GenomeIntervalSchema();
// The `interval` field of a request body (nullable, optional; exactly one of it and sequence).
FieldSpec IntervalField(const std::string& strand_rule);

// The interval of a checked request body, or nullopt (with errors reported at
// [body, interval, ...]) when it is absent or wrong. `min_bp`: the task's floor; the ceiling is
// kMaxSequenceBp. Also reports "exactly one of sequence and interval".
std::optional<GenomeInterval> ReadInterval(const CheckedObject& body, int64_t min_bp,
                                           std::vector<FieldError>* errors);

}  // namespace dnaserve::core
