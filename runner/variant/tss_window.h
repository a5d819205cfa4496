// The 9,198 bp windows the expression model scores, built around a start site on the gene's
// sense strand, with and without an allele; and the strand-aware distance convention.
//
// Reference window: the sense-strand sequence with the TSS at offset 4599 (on '+', genomic
// [TSS-4599, TSS+4599); on '-', genomic [TSS-4598, TSS+4600) reverse-complemented).
//
// Alternate window: the same, cut from the alternate haplotype (REF replaced by ALT). An indel
// shifts the sequence; the window stays 9,198 bp wide and centred on the TSS, which moves with
// the bases around it. A TSS deleted by the allele is placed on the next surviving transcribed
// base (the one after the deletion on '+', the one before it on '-'). Positions past either end
// of the contig are N.
//
//   + strand, deletion upstream of the TSS (REF=ACGT ALT=A):
//     reference  ....xxACGTyy.......TSS.......zz....
//     alternate  ..wwxxA   yy.......TSS.......zzvv..   two bases from further upstream enter
//                  ^ window start                 ^ window end (both 4599 bp from the TSS)
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/tss_window.h"
#include "runner/genome/tss_catalogue.h"

namespace dnaserve::variant {

// The window's geometry (width, where the TSS sits) is common/tss_window.h's.

// Upper-case bases [start, end) of the start site's contig (0-based), N outside the contig.
using FetchBases = std::function<StatusOr<std::string>(int64_t start, int64_t end)>;

// A sequence allele applied at 0-based `start` (the first REF base).
struct AlleleChange {
  int64_t start = 0;
  std::string_view ref;
  std::string_view alt;
};

StatusOr<std::string> ReferenceWindow(const StartSite& site, const FetchBases& fetch);
StatusOr<std::string> AlternateWindow(const StartSite& site, const AlleleChange& change,
                                      const FetchBases& fetch);

// Signed distance from the TSS to the nearest base of the REF allele, on the gene's strand: 0
// when REF covers the TSS, negative upstream (5'), positive downstream.
int64_t TssDistance(const StartSite& site, int64_t ref_start, int64_t ref_length);

// The convention in words, for ##GEXDistanceConvention.
inline constexpr const char* kDistanceConvention =
    "TSS_distance is the signed distance in bp from the start site to the nearest base of the REF "
    "allele (POS to POS+len(REF)-1) on the gene's strand: 0 when REF covers the TSS, negative "
    "upstream (5'), positive downstream (3'); a record is in the window when |TSS_distance| <= "
    "##GEXWindow";

}  // namespace dnaserve::variant
