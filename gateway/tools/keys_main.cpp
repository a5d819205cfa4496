// dnaserve-keys: issues API keys and hashes them for the keys file.
//   dnaserve-keys new --client acme [--rate 60] [--concurrency 2] [--disabled]
//                     [--s3-read s3://bucket/prefix/]... [--s3-write s3://bucket/prefix/]...
//     line 1: the new key (shown once; only its hash is stored)
//     line 2: the entry to add to the "keys" array of the keys file
//   dnaserve-keys hash <key|->   prints the hex SHA-256 of a key ("-" reads it from stdin)
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "gateway/auth/key_entry_json.h"
#include "gateway/auth/key_store.h"

namespace {

using dnaserve::gateway::KeyEntry;

int NewKey(const KeyEntry& settings) {
  const std::string key = dnaserve::gateway::GenerateApiKey();
  if (key.empty()) {
    std::cerr << "dnaserve-keys: the random number generator failed; no key issued\n";
    return 1;
  }
  KeyEntry entry = settings;
  entry.key_sha256 = dnaserve::gateway::Sha256Hex(key);
  const std::string line = dnaserve::gateway::KeyEntryJson(entry);
  // Never print an entry the gateway would refuse to load.
  auto check = dnaserve::gateway::KeyStore::FromJson("{\"keys\": [" + line + "]}");
  if (!check.ok()) {
    std::cerr << "dnaserve-keys: " << check.status().message() << "\n";
    return 2;
  }
  std::cout << key << "\n" << line << "\n";
  std::cerr << "Give the key (line 1) to the client now: only its hash (line 2) is kept.\n";
  return 0;
}

int HashKey(std::string key) {
  if (key == "-" && !std::getline(std::cin, key)) {
    std::cerr << "dnaserve-keys: no key on stdin\n";
    return 2;
  }
  std::cout << dnaserve::gateway::Sha256Hex(key) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Issue dnaserve API keys and hash them for the keys file"};
  app.require_subcommand(1);

  KeyEntry settings;
  bool disabled = false;
  CLI::App* create = app.add_subcommand("new", "Print a new key and its keys-file entry");
  create->add_option("--client", settings.principal.client_id, "Client id owning the key")
      ->required()
      ->check([](const std::string& v) { return v.empty() ? "must not be empty" : ""; });
  create->add_option("--rate", settings.principal.rate_per_minute, "Requests per minute")
      ->default_val(60)
      ->check(CLI::Range(int64_t{1}, int64_t{6'000'000}));
  create
      ->add_option("--concurrency", settings.principal.max_concurrency,
                   "Requests in flight at once")
      ->default_val(2)
      ->check(CLI::Range(int64_t{1}, int64_t{100'000}));
  create->add_flag("--disabled", disabled, "Write the entry with enabled: false");
  std::vector<std::string> s3_read;
  std::vector<std::string> s3_write;
  const auto grant_form = [](const std::string& v) {
    auto grant = dnaserve::ParseS3Grant(v);
    return grant.ok() ? std::string() : grant.status().message();
  };
  create
      ->add_option("--s3-read", s3_read,
                   "An s3://bucket/prefix/ the client may read (repeatable; none: no object)")
      ->check(grant_form);
  create
      ->add_option("--s3-write", s3_write,
                   "An s3://bucket/prefix/ the client may write outputs into (repeatable)")
      ->check(grant_form);

  std::string key;
  CLI::App* hash = app.add_subcommand("hash", "Print the SHA-256 of a key");
  hash->add_option("key", key, "The key, or - to read it from stdin")->required();

  CLI11_PARSE(app, argc, argv);
  settings.enabled = !disabled;
  if (!s3_read.empty() || !s3_write.empty()) {
    dnaserve::S3Grants grants;
    for (const auto& g : s3_read) grants.read.push_back(*dnaserve::ParseS3Grant(g));
    for (const auto& g : s3_write) grants.write.push_back(*dnaserve::ParseS3Grant(g));
    settings.principal.s3 = std::make_shared<const dnaserve::S3Grants>(std::move(grants));
  }
  if (create->parsed()) return NewKey(settings);
  return HashKey(key);
}
