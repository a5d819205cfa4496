// The files of a model's card that a worker serves (GetModelCard): the package's model card
// (MODEL_CARD.md), the PNG figures that card embeds and, when the package ships one, its variant
// background as JSON (variant_background.json, worker/manifest/variant_background.h), nothing
// else. A requested figure name is
// matched against the names the card itself links (`![caption](name.png)`, plain names of
// [A-Za-z0-9_.-] ending in .png, no leading dot), so no caller-chosen path ever reaches the
// filesystem; the file must be a regular file inside the package (a symlink is refused) and
// within the size bounds below.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "worker/manifest/manifest.h"

namespace dnaserve::worker {

inline constexpr int64_t kMaxModelCardBytes = 256 * 1024;
inline constexpr int64_t kMaxCardFigureBytes = 1024 * 1024;
inline constexpr size_t kMaxCardFigureNameLength = 128;

struct CardFile {
  std::string content_type;  // "text/markdown; charset=utf-8", "image/png", "application/json"
  std::string content;
};

// The PNG names a card's markdown embeds, in order, each once; links to anything else (paths,
// URLs, other extensions) are ignored.
std::vector<std::string> CardFigureNames(std::string_view card_markdown);

// `file` empty -> the card; else one of CardFigureNames(card). Unknown or refused names ->
// not_found (the message never echoes a path); a file over its bound -> internal.
StatusOr<CardFile> ReadCardFile(const ModelManifest& manifest, std::string_view file);

}  // namespace dnaserve::worker
