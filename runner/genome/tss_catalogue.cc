#include "runner/genome/tss_catalogue.h"

#include <algorithm>
#include <map>

#include "common/digest.h"
#include "common/file_text.h"
#include "runner/genome/contig_name.h"

namespace dnaserve::variant {
namespace {

constexpr std::string_view kMagic = "##dnaserve-tss-catalogue=1";
constexpr std::string_view kColumns = "#contig\ttss\tstrand\tgene_symbol\tgene_id\ttranscript_id";

std::vector<std::string_view> SplitTabs(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string_view::npos ? tab : tab - start));
    if (tab == std::string_view::npos) break;
    start = tab + 1;
  }
  return out;
}

bool ParseInt(std::string_view text, int64_t* out) {
  if (text.empty() || text.size() > 12) return false;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  *out = value;
  return true;
}

bool Printable(std::string_view field) {
  if (field.empty()) return false;
  for (char c : field) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '|' || c == ',' || c == ';' ||
        c == '=') {
      return false;  // these would break the GEX_ANN INFO value
    }
  }
  return true;
}

}  // namespace

StatusOr<TssCatalogue> TssCatalogue::Load(const std::string& path) {
  auto text = ReadFileText(path);
  if (!text) return Internal("start-site catalogue " + path + " cannot be opened");
  const std::string content = std::move(*text);
  auto fail = [&](int64_t line, const std::string& why) {
    return Internal("start-site catalogue " + path + " line " + std::to_string(line) + ": " + why);
  };

  TssCatalogue catalogue;
  std::map<std::string, std::string> meta;
  bool columns_seen = false;
  int64_t offset = 0;  // 1 when the file's positions are 1-based
  int64_t line_no = 0;
  size_t pos = 0;
  while (pos < content.size()) {
    size_t end = content.find('\n', pos);
    if (end == std::string::npos) end = content.size();
    std::string_view line(content.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_no == 1 && line != kMagic) {
      return fail(1, "not a dnaserve start-site catalogue (the first line must be '" +
                         std::string(kMagic) + "')");
    }
    if (line.empty()) continue;
    if (line.substr(0, 2) == "##") {
      if (columns_seen) return fail(line_no, "'##' header lines must come before the columns");
      size_t eq = line.find('=');
      if (eq == std::string_view::npos) return fail(line_no, "header line without '='");
      meta[std::string(line.substr(2, eq - 2))] = std::string(line.substr(eq + 1));
      continue;
    }
    if (line[0] == '#') {
      if (line != kColumns) {
        return fail(line_no, "the column line must be '" + std::string(kColumns) + "'");
      }
      for (const char* key : {"build", "annotation_release", "transcripts", "position_base"}) {
        if (meta[key].empty()) {
          return fail(line_no, std::string("header '##") + key + "=' is missing");
        }
      }
      if (meta["position_base"] != "0" && meta["position_base"] != "1") {
        return fail(line_no, "##position_base must be 0 or 1");
      }
      offset = meta["position_base"] == "1" ? 1 : 0;
      columns_seen = true;
      continue;
    }
    if (!columns_seen) return fail(line_no, "data before the '#contig...' column line");
    auto fields = SplitTabs(line);
    if (fields.size() != 6) {
      return fail(line_no,
                  "expected 6 tab-separated fields, found " + std::to_string(fields.size()));
    }
    StartSite site;
    site.index = catalogue.sites_.size();
    site.contig = std::string(fields[0]);
    int64_t position = 0;
    if (!ParseInt(fields[1], &position)) return fail(line_no, "tss is not a whole number");
    if (position < offset) return fail(line_no, "tss lies before the contig's first base");
    site.tss = position - offset;
    if (fields[2] == "+") {
      site.strand = Strand::kPlus;
    } else if (fields[2] == "-") {
      site.strand = Strand::kMinus;
    } else {
      return fail(line_no, "strand must be + or -");
    }
    site.gene_symbol = std::string(fields[3]);
    site.gene_id = std::string(fields[4]);
    site.transcript_id = std::string(fields[5]);
    if (!Printable(site.contig) || !Printable(site.gene_symbol) || !Printable(site.gene_id) ||
        !Printable(site.transcript_id)) {
      return fail(line_no,
                  "contig, gene_symbol, gene_id and transcript_id must be non-empty, "
                  "without spaces or any of | , ; =");
    }
    catalogue.sites_.push_back(std::move(site));
  }
  if (!columns_seen) return fail(line_no, "no '#contig...' column line");
  if (catalogue.sites_.empty()) return fail(line_no, "the catalogue has no start sites");

  catalogue.info_.build = meta["build"];
  catalogue.info_.annotation_release = meta["annotation_release"];
  catalogue.info_.transcripts = meta["transcripts"];
  catalogue.info_.description = meta["description"];
  catalogue.info_.md5 = HexDigest(DigestAlgorithm::kMd5, content);
  catalogue.info_.start_sites = static_cast<int64_t>(catalogue.sites_.size());
  for (const auto& site : catalogue.sites_) {
    catalogue.by_contig_[ContigKey(site.contig)].push_back(site.index);
  }
  for (auto& [contig, indices] : catalogue.by_contig_) {
    std::stable_sort(indices.begin(), indices.end(), [&](size_t a, size_t b) {
      return catalogue.sites_[a].tss < catalogue.sites_[b].tss;
    });
  }
  return catalogue;
}

bool TssCatalogue::HasContig(std::string_view contig) const {
  return by_contig_.count(ContigKey(contig)) > 0;
}

std::vector<const StartSite*> TssCatalogue::SitesBetween(std::string_view contig, int64_t first,
                                                         int64_t last) const {
  std::vector<const StartSite*> out;
  auto it = by_contig_.find(ContigKey(contig));
  if (it == by_contig_.end() || first > last) return out;
  const auto& indices = it->second;
  auto lo = std::lower_bound(indices.begin(), indices.end(), first,
                             [&](size_t i, int64_t v) { return sites_[i].tss < v; });
  for (; lo != indices.end() && sites_[*lo].tss <= last; ++lo) out.push_back(&sites_[*lo]);
  return out;
}

}  // namespace dnaserve::variant
