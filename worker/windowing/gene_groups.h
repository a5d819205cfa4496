// Which decoded transcripts are isoforms of one gene, for the GFF3 track's gene -> mRNA
// hierarchy. Small and pure: its own unit tests (tests/unit/worker/gene_groups_test.cpp).
#pragma once

#include <vector>

#include "worker/windowing/annotation_decode.h"

namespace dnaserve::worker {

// Transcripts on one strand whose exons share a base belong to one gene (the rule RefSeq and
// GENCODE loci follow), transitively; the decoder's alternative starts add such isoforms beside
// the chain it found first. Per transcript, its gene's index: genes are numbered 0, 1, ... in
// the order of their first transcript in `transcripts`.
std::vector<int> GeneOfTranscript(const std::vector<DecodedTranscript>& transcripts);

}  // namespace dnaserve::worker
