// Data for the variant workflow's tests: small indexed FASTAs the tests write, files out of
// Debian packages (fetched with `apt-get download` into the data cache by
// scripts/debian_files.py), and the default catalogue built by scripts/build-catalogue.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dnaserve::testing {

// $DNASERVE_DATA_CACHE, else <build>/data-cache (as the scripts default to).
std::string DataCacheDir();

// Runs argv[0] with argv; stdout (and stderr unless `drop_stderr`) into `output`. Returns the
// exit status (-1 if it did not run).
int RunCommand(const std::vector<std::string>& argv, std::string* output,
               const std::map<std::string, std::string>& env = {}, bool drop_stderr = false);

struct FastaContig {
  std::string name;
  std::string bases;
};
// Writes a FASTA (60 bases a line) with its .fai; with `bgzip`, compresses it with `bgzip -i`
// (tabix package) into `path` + its .gzi. Returns false on any failure.
bool WriteIndexedFasta(const std::string& path, const std::vector<FastaContig>& contigs,
                       bool bgzip);

// A file from a Debian package; nullopt with `why` when the package cannot be downloaded.
std::optional<std::string> DebianPackageFile(const std::string& package, const std::string& member,
                                             std::string* why);

struct BuiltCatalogue {
  std::string catalogue;
  std::string fasta;  // chr20 catalogues only
};
// scripts/build-catalogue with `args` into <data cache>/catalogue; nullopt with `why` when the
// Debian packages (or ../shared data) are not available.
std::optional<BuiltCatalogue> BuildCatalogue(const std::vector<std::string>& args,
                                             std::string* why);

// One complete gzip stream (a member) of `text`; throws if zlib fails. Several members one after
// another are still one gzip file to zlib, htslib and gzip alike, so a bomb is a few repeated.
std::string GzipMember(const std::string& text, int level = 9);

}  // namespace dnaserve::testing
