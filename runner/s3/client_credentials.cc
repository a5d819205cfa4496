#include "runner/s3/client_credentials.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <sys/stat.h>

#include "common/file_text.h"

namespace dnaserve::s3 {
namespace {

constexpr size_t kMaxClientIdLength = 128;  // as the keys file's client_id

Status FileError(const std::string& message) {
  return BadRequest("S3 client credentials file: " + message);
}

// A required (or, with `optional`, absent-or-non-empty) string field of one entry.
Status StringField(const rapidjson::Value& entry, const char* field, const std::string& where,
                   bool optional, std::string* out) {
  auto it = entry.FindMember(field);
  if (it == entry.MemberEnd()) {
    return optional ? Status::Ok() : FileError(where + ": missing \"" + field + "\"");
  }
  if (!it->value.IsString() || it->value.GetStringLength() == 0) {
    return FileError(where + ": \"" + field + "\" must be a non-empty string");
  }
  out->assign(it->value.GetString(), it->value.GetStringLength());
  for (char c : *out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return FileError(where + ": \"" + field + "\" contains a control character");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::map<std::string, S3Credentials>> ParseS3ClientCredentials(std::string_view json) {
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError()) {
    // The offset only: the text around it may be a secret.
    return FileError("invalid JSON at offset " + std::to_string(doc.GetErrorOffset()) + ": " +
                     rapidjson::GetParseError_En(doc.GetParseError()));
  }
  if (!doc.IsObject()) {
    return FileError("the top level must be an object {\"<client_id>\": {\"access_key_id\": ...}}");
  }
  std::map<std::string, S3Credentials> out;
  for (auto m = doc.MemberBegin(); m != doc.MemberEnd(); ++m) {
    const std::string client(m->name.GetString(), m->name.GetStringLength());
    if (client.empty() || client.size() > kMaxClientIdLength) {
      return FileError("a client id must have 1-" + std::to_string(kMaxClientIdLength) +
                       " characters");
    }
    const std::string where = "client \"" + client + "\"";
    if (out.count(client) != 0) return FileError(where + " appears twice");
    const rapidjson::Value& entry = m->value;
    if (!entry.IsObject()) return FileError(where + " must map to an object");
    for (auto f = entry.MemberBegin(); f != entry.MemberEnd(); ++f) {
      const std::string name(f->name.GetString(), f->name.GetStringLength());
      if (name != "access_key_id" && name != "secret_access_key" && name != "session_token") {
        return FileError(where + ": unknown field \"" + name + "\"");
      }
    }
    S3Credentials credentials;
    for (const Status& s :
         {StringField(entry, "access_key_id", where, false, &credentials.access_key_id),
          StringField(entry, "secret_access_key", where, false, &credentials.secret_access_key),
          StringField(entry, "session_token", where, true, &credentials.session_token)}) {
      if (!s.ok()) return s;
    }
    out.emplace(client, std::move(credentials));
  }
  return out;
}

StatusOr<std::map<std::string, S3Credentials>> LoadS3ClientCredentials(const std::string& path,
                                                                       bool* too_open) {
  std::string reason;
  auto content = ReadFileText(path, &reason);
  if (!content) return FileError(path + ": cannot open (" + reason + ")");
  struct stat info {};
  *too_open = stat(path.c_str(), &info) == 0 && (info.st_mode & (S_IRWXG | S_IRWXO)) != 0;
  auto parsed = ParseS3ClientCredentials(*content);
  if (!parsed.ok()) return BadRequest(path + ": " + parsed.status().message());
  return parsed;
}

}  // namespace dnaserve::s3
