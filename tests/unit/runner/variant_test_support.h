// Shared by the variant tests: the default chr20 catalogue and reference, built from Debian
// packages by scripts/build-catalogue (once per data cache) and loaded.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "runner/genome/reference_genome.h"
#include "runner/genome/tss_catalogue.h"

namespace dnaserve::testing {

struct DefaultChr20 {
  variant::TssCatalogue catalogue;
  std::unique_ptr<variant::ReferenceGenome> reference;
};

// nullopt with `why` when the Debian packages cannot be had (the caller skips); a catalogue or
// FASTA that was built but does not load is a test failure.
std::optional<DefaultChr20> LoadDefaultChr20(std::string* why);

}  // namespace dnaserve::testing

// Declares `var` (std::optional<DefaultChr20>) or ends the test case with a "skipped" warning.
#define DEFAULT_CHR20_OR_SKIP(var)                              \
  std::string var##_why;                                        \
  auto var = ::dnaserve::testing::LoadDefaultChr20(&var##_why); \
  if (!var) {                                                   \
    WARN("skipped: " << var##_why);                             \
    return;                                                     \
  }
