#include "worker/windowing/gene_groups.h"

#include <numeric>

namespace dnaserve::worker {
namespace {

// Both exon lists are ascending and disjoint within a transcript: one merge-like pass.
bool ExonsShareABase(const std::vector<Span>& a, const std::vector<Span>& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i].start < b[j].end && b[j].start < a[i].end) return true;
    if (a[i].end <= b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return false;
}

int Root(std::vector<int>& parent, int i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]];
    i = parent[i];
  }
  return i;
}

}  // namespace

std::vector<int> GeneOfTranscript(const std::vector<DecodedTranscript>& transcripts) {
  const int n = static_cast<int>(transcripts.size());
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      const DecodedTranscript& a = transcripts[i];
      const DecodedTranscript& b = transcripts[j];
      if (a.strand != b.strand || a.span.end <= b.span.start || b.span.end <= a.span.start) {
        continue;
      }
      if (ExonsShareABase(a.exons, b.exons)) parent[Root(parent, j)] = Root(parent, i);
    }
  }
  std::vector<int> gene_of_root(n, -1);
  std::vector<int> gene(n);
  int genes = 0;
  for (int i = 0; i < n; ++i) {
    int& g = gene_of_root[Root(parent, i)];
    if (g < 0) g = genes++;
    gene[i] = g;
  }
  return gene;
}

}  // namespace dnaserve::worker
