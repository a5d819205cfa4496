// Splice-site signal sensors for the exon-chain decoder (BuildChainInputs in
// exon_chain.cc): first-order position-specific log-odds models of the sequence around
// donor and acceptor sites, true sites against motif-matching non-sites.
// scripts/training/annotation_splice_signal.py counts them on the training part of chr20 and
// writes the table file a package's manifest names ("decoder.splice_signal"); the format is
// documented there and in worker/README.md.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dnaserve::worker {

// One site kind's model. The window holds the bases at offsets first..first+length-1 from the
// decoder's site position (sense coordinates: a donor at i is an intron beginning at i, an
// acceptor at i an exon resuming at i). Row j gives, for the base at offset first + j,
// natural-log probabilities indexed [previous base * 4 + base] (A=0 C=1 G=2 T=3), at true
// sites and at non-sites; the previous base of row 0 is the base before the window.
struct SignalWindow {
  int first = 0;
  std::vector<std::array<double, 16>> site, nonsite;
};

struct SpliceSignal {
  SignalWindow donor, acceptor;
};

// Largest window the format allows.
inline constexpr int kMaxSignalWindow = 64;

// Parses a table file's text: '#' comment lines and blank lines; "donor FIRST LENGTH" then
// LENGTH lines "OFFSET" + 32 numbers (offsets FIRST, FIRST+1, ...; 16 log-probabilities at true
// sites then 16 at non-sites, each finite and <= 0, each group of four summing to 1 within
// 1e-3); then "acceptor FIRST LENGTH" and its lines likewise. LENGTH is 1..kMaxSignalWindow and
// |FIRST| <= kMaxSignalWindow. Errors name the line, e.g. "signal.tsv: line 4: expected offset
// -2 and 32 log-probabilities".
StatusOr<SpliceSignal> ParseSpliceSignal(std::string_view text, std::string_view name);

// Reads and parses a file (ParseSpliceSignal, named by its file name).
StatusOr<SpliceSignal> LoadSpliceSignal(const std::string& path);

// The log-odds (log P_site - log P_nonsite) of each base of a sense sequence as a site of the
// window's kind: the sum over the window's rows of their ratios; 0 where the window (or the base
// before it) runs off the sequence or holds a base that is not ACGT (either case).
std::vector<double> SignalScores(const SignalWindow& window, std::string_view sense_sequence);

}  // namespace dnaserve::worker
