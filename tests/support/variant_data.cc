#include "tests/support/variant_data.h"

#include <zlib.h>

#include <stdexcept>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "tests/support/service_launcher.h"
#include "tests/support/test_env.h"

namespace dnaserve::testing {
namespace {

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

std::string DataCacheDir() {
  const char* env = std::getenv("DNASERVE_DATA_CACHE");
  return env && *env ? env : BinaryDir() + "/data-cache";
}

int RunCommand(const std::vector<std::string>& argv, std::string* output,
               const std::map<std::string, std::string>& env, bool drop_stderr) {
  std::string command;
  for (const auto& [k, v] : env) command += k + "=" + ShellQuote(v) + " ";
  for (const auto& a : argv) command += ShellQuote(a) + " ";
  command += drop_stderr ? "2>/dev/null" : "2>&1";
  std::FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return -1;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) {
    if (output) output->append(buf, n);
  }
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool WriteIndexedFasta(const std::string& path, const std::vector<FastaContig>& contigs,
                       bool bgzip) {
  const std::string plain = bgzip ? path + ".plain" : path;
  constexpr size_t kWidth = 60;
  std::ofstream fasta(plain, std::ios::binary);
  std::ofstream fai((bgzip ? plain : path) + ".fai", std::ios::binary);
  size_t offset = 0;
  for (const auto& contig : contigs) {
    std::string header = ">" + contig.name + "\n";
    fasta << header;
    offset += header.size();
    fai << contig.name << '\t' << contig.bases.size() << '\t' << offset << '\t' << kWidth << '\t'
        << kWidth + 1 << '\n';
    for (size_t i = 0; i < contig.bases.size(); i += kWidth) {
      std::string line = contig.bases.substr(i, kWidth) + "\n";
      fasta << line;
      offset += line.size();
    }
  }
  fasta.close();
  fai.close();
  if (!fasta || !fai) return false;
  if (!bgzip) return true;
  // bgzip -i writes <file>.gz and <file>.gz.gzi; the .fai keeps uncompressed offsets.
  std::string out;
  if (RunCommand({"/usr/bin/bgzip", "-f", "-i", plain}, &out) != 0) return false;
  return std::rename((plain + ".gz").c_str(), path.c_str()) == 0 &&
         std::rename((plain + ".gz.gzi").c_str(), (path + ".gzi").c_str()) == 0 &&
         std::rename((plain + ".fai").c_str(), (path + ".fai").c_str()) == 0;
}

std::optional<std::string> DebianPackageFile(const std::string& package, const std::string& member,
                                             std::string* why) {
  std::string out;
  int rc =
      RunCommand({"/usr/bin/python3", SourceDir() + "/scripts/debian_files.py", package, member},
                 &out, {{"DNASERVE_DATA_CACHE", DataCacheDir()}});
  if (rc != 0) {
    *why = "cannot fetch " + member + " from Debian package " + package + ": " + Trim(out);
    return std::nullopt;
  }
  out = Trim(out);
  size_t newline = out.rfind('\n');  // the path is the last line
  return newline == std::string::npos ? out : out.substr(newline + 1);
}

std::optional<BuiltCatalogue> BuildCatalogue(const std::vector<std::string>& args,
                                             std::string* why) {
  std::vector<std::string> argv = {SourceDir() + "/scripts/build-catalogue", "--out",
                                   DataCacheDir() + "/catalogue"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string out;
  int rc = RunCommand(argv, &out, {{"DNASERVE_DATA_CACHE", DataCacheDir()}});
  if (rc != 0) {
    *why = "scripts/build-catalogue failed (Debian packages or ../shared data unavailable?): " +
           Trim(out);
    return std::nullopt;
  }
  BuiltCatalogue built;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t end = out.find('\n', pos);
    if (end == std::string::npos) end = out.size();
    std::string line = out.substr(pos, end - pos);
    if (line.rfind("catalogue=", 0) == 0) built.catalogue = line.substr(10);
    if (line.rfind("fasta=", 0) == 0) built.fasta = line.substr(6);
    pos = end + 1;
  }
  if (built.catalogue.empty()) {
    *why = "scripts/build-catalogue printed no catalogue path";
    return std::nullopt;
  }
  return built;
}

std::string GzipMember(const std::string& text, int level) {
  z_stream z{};
  // A failure throws: Catch reports it as the calling test's failure.
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::string out(deflateBound(&z, text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const bool done = deflate(&z, Z_FINISH) == Z_STREAM_END;
  out.resize(z.total_out);
  deflateEnd(&z);
  if (!done) throw std::runtime_error("deflate did not finish the gzip member");
  return out;
}

}  // namespace dnaserve::testing
