// What a package's manifest says about the model's output, in words the models list and the MCP
// tool descriptions publish (ModelInfo.resolution, ModelInfo.outputs): derived from the manifest
// alone, so a tool text cannot claim what the served package does not do.
#pragma once

#include <string>

#include "worker/manifest/manifest.h"

namespace dnaserve::worker {

// Where one output value sits, e.g. "per base; 15,000 bp windows score their central 13,000 bp"
// (splice, char tokens), "one value per 2,000 bp window, a window every 1,000 bp" (promoter).
// Token-level models say so: "per 6-mer token (a token every base)", "per byte-pair token
// (variable length; a site spans its token, not one junction base)".
std::string Resolution(const ModelManifest& manifest);

// The output labels in one line: all of them when there are at most 8 ("neither, acceptor,
// donor"), else their number ("919 labels").
std::string OutputsLine(const ModelManifest& manifest);

}  // namespace dnaserve::worker
