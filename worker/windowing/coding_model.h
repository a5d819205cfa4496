// A coding content sensor for the exon-chain decoder (ChainParseFramed in exon_chain.h):
// a 3-periodic Markov model of protein-coding sequence against a homogeneous one of non-coding
// sequence. scripts/training/annotation_coding.py counts it on the training part of chr20 and
// writes the table file a package's manifest names ("decoder.coding_model"); the file format is
// documented there and in worker/README.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dnaserve::worker {

struct CodingModel {
  int order = 0;  // bases of context
  // Natural-log probabilities of the next base, indexed [context * 4 + base] where the context
  // is the previous `order` bases as a base-4 number (A=0 C=1 G=2 T=3, the oldest base the most
  // significant digit): coding[q] with the base at codon position q, then non-coding.
  std::array<std::vector<double>, 3> coding;
  std::vector<double> noncoding;
};

// Largest context the table format allows (4^8 contexts).
inline constexpr int kMaxCodingOrder = 8;

// Parses a table file's text: '#' comment lines and blank lines, "order K" (1..kMaxCodingOrder),
// then 4^K lines "CONTEXT" + 16 numbers, contexts in lexicographic order, each number a finite
// log-probability (<= 0) whose four per group of four sum to 1 (within 1e-3). Errors name the
// line, e.g. "coding.tsv: line 7: expected context \"AAAG\"".
StatusOr<CodingModel> ParseCodingModel(std::string_view text, std::string_view name);

// Reads and parses a file (ParseCodingModel, named by its file name).
StatusOr<CodingModel> LoadCodingModel(const std::string& path);

// Per codon position q (0..2) and base i of a sense sequence: log P_coding(base i | context,
// q) - log P_noncoding(base i | context); 0 where base i or a context base is not ACGT (either
// case) or i < order.
std::array<std::vector<double>, 3> CodingLogRatios(const CodingModel& model,
                                                   std::string_view sense_sequence);

// What the framed chain decoder reads off a sense sequence and its CodingLogRatios. "Frame g"
// gives base j the codon position (j - g) mod 3.
struct CodingTables {
  // frame_sums[g][i]: sum over j < i of ratios[(j - g) mod 3][j] (size n + 1).
  std::array<std::vector<double>, 3> frame_sums;
  // next_stop[g][a]: the first j >= a where a stop codon (TAA, TAG, TGA) starts in frame g
  // ((j - g) mod 3 == 0), n + 3 when none (size n + 1).
  std::array<std::vector<int64_t>, 3> next_stop;
  // previous_stop[g][i]: the last such j <= i, -3 when none (size n).
  std::array<std::vector<int64_t>, 3> previous_stop;
  // atg[g]: ascending starts j of ATG in frame g.
  std::array<std::vector<int64_t>, 3> atg;
};
CodingTables BuildCodingTables(std::string_view sense_sequence,
                               const std::array<std::vector<double>, 3>& ratios);

}  // namespace dnaserve::worker
