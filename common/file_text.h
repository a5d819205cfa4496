// Reading a small file whole: manifests, keys files, decoder tables, catalogues, secrets. Every
// component reads its files this one way, so a directory or an I/O error is reported as
// "cannot be read" everywhere instead of becoming an empty text that fails later with a
// confusing parse error.
#pragma once

#include <optional>
#include <string>

#include "common/status.h"

namespace dnaserve {

// The file's bytes; nullopt when it cannot be opened or read (missing, a directory, no
// permission, an I/O error), and then *reason (when given) says why, as strerror words it.
std::optional<std::string> ReadFileText(const std::string& path, std::string* reason = nullptr);

// A secret mounted as a file (a Kubernetes Secret): its bytes without one trailing newline
// (editors and `echo` add one). bad_request when it cannot be read or is empty.
StatusOr<std::string> ReadSecretFile(const std::string& path);

}  // namespace dnaserve
