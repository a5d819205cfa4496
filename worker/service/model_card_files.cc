#include "worker/service/model_card_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "common/file_text.h"
#include "worker/manifest/variant_background.h"

namespace dnaserve::worker {
namespace {

constexpr std::string_view kPng = ".png";

bool IsFigureName(std::string_view name) {
  if (name.size() <= kPng.size() || name.size() > kMaxCardFigureNameLength) return false;
  if (name.front() == '.' || name.substr(name.size() - kPng.size()) != kPng) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

// Reads a regular file (never through a symlink) of at most `max_bytes`.
StatusOr<std::string> ReadBounded(const std::string& path, int64_t max_bytes,
                                  const std::string& what) {
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return NotFound(what + " is not in the model package");
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return NotFound(what + " is not in the model package");
  }
  if (st.st_size > max_bytes) {
    close(fd);
    return Internal(what + " is larger than the " + std::to_string(max_bytes) +
                    " bytes a worker serves");
  }
  std::string content(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = read(fd, content.data() + done, content.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  content.resize(done);
  return content;
}

}  // namespace

std::vector<std::string> CardFigureNames(std::string_view card) {
  std::vector<std::string> names;
  // `![caption](target)`: the target runs from "](" to the next ")".
  for (size_t at = card.find("!["); at != std::string_view::npos; at = card.find("![", at + 2)) {
    size_t open = card.find("](", at + 2);
    if (open == std::string_view::npos) break;
    size_t close = card.find(')', open + 2);
    if (close == std::string_view::npos) break;
    std::string_view target = card.substr(open + 2, close - open - 2);
    if (IsFigureName(target) && std::find(names.begin(), names.end(), target) == names.end()) {
      names.emplace_back(target);
    }
  }
  return names;
}

StatusOr<CardFile> ReadCardFile(const ModelManifest& manifest, std::string_view file) {
  const std::string card_path = manifest.package_dir + "/" + manifest.model_card_file;
  auto card = ReadBounded(card_path, kMaxModelCardBytes, "the model card");
  if (!card.ok()) return card.status();
  if (file.empty()) return CardFile{"text/markdown; charset=utf-8", std::move(*card)};
  if (file == kVariantBackgroundCardFile) {  // the file the manifest names, not the caller
    auto manifest_text = ReadFileText(manifest.package_dir + "/manifest.json");
    if (!manifest_text) return Internal("the manifest of model '" + manifest.id + "' is unreadable");
    auto background = LoadPackageBackground(manifest.package_dir, *manifest_text);
    if (!background.ok()) return background.status();
    if (!*background) {
      return NotFound("the package of model '" + manifest.id + "' ships no variant background");
    }
    return CardFile{"application/json",
                    VariantBackgroundJson(**background, manifest.id, manifest.package_digest)};
  }
  const auto figures = CardFigureNames(*card);
  if (!IsFigureName(file) || std::find(figures.begin(), figures.end(), file) == figures.end()) {
    return NotFound("the card of model '" + manifest.id + "' embeds no such figure");
  }
  auto png = ReadBounded(manifest.package_dir + "/" + std::string(file), kMaxCardFigureBytes,
                         "the figure");
  if (!png.ok()) return png.status();
  return CardFile{"image/png", std::move(*png)};
}

}  // namespace dnaserve::worker
