#include "worker/writers/gff3.h"

#include <cstring>

#include "common/percent_encoding.h"
#include "worker/writers/text_util.h"

namespace dnaserve::worker {

std::string Gff3Escape(std::string_view text, Gff3Field field) {
  static const char kSeqidAllowed[] = ".:^*$@!+_?|-";
  return PercentEncode(text, [field](unsigned char c) {
    bool escape = c < 0x20 || c == 0x7f || c == '%';
    if (field == Gff3Field::kAttribute) {
      escape = escape || c == ';' || c == '=' || c == '&' || c == ',';
    } else if (field == Gff3Field::kSeqid) {
      bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      escape = escape || !(alnum || (c != 0 && std::strchr(kSeqidAllowed, c) != nullptr));
    }
    return escape;
  });
}

std::string WriteGff3(const std::vector<Gff3Region>& regions,
                      const std::vector<Gff3Feature>& features) {
  std::string out = "##gff-version 3\n";
  for (const auto& r : regions) {
    out += "##sequence-region " + Gff3Escape(r.seqid, Gff3Field::kSeqid) + ' ' +
           std::to_string(r.start + 1) + ' ' + std::to_string(r.end) + '\n';
  }
  for (const auto& f : features) {
    out += Gff3Escape(f.seqid, Gff3Field::kSeqid) + '\t' +
           Gff3Escape(f.source, Gff3Field::kColumn) + '\t' +
           Gff3Escape(f.type, Gff3Field::kColumn) + '\t' + std::to_string(f.start + 1) + '\t' +
           std::to_string(f.end) + '\t' + (f.score ? FormatValue(*f.score) : ".") + '\t' +
           f.strand + '\t' + (f.phase ? std::to_string(*f.phase) : ".") + '\t';
    if (f.attributes.empty()) {
      out += '.';
    } else {
      for (size_t i = 0; i < f.attributes.size(); ++i) {
        if (i) out += ';';
        out += Gff3Escape(f.attributes[i].first, Gff3Field::kAttribute) + '=' +
               Gff3Escape(f.attributes[i].second, Gff3Field::kAttribute);
      }
    }
    out += '\n';
  }
  return out;
}

}  // namespace dnaserve::worker
