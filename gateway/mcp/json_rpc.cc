#include "gateway/mcp/json_rpc.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "common/json_keys.h"
#include "core/validation/json_shape.h"

namespace dnaserve::gateway::mcp {
namespace {

RpcMessage Invalid(std::string id_json, RpcErrorCode code, std::string message) {
  RpcMessage m;
  m.kind = RpcMessage::Kind::kInvalid;
  m.id_json = std::move(id_json);
  m.error = RpcError{code, std::move(message)};
  return m;
}

// MCP narrows JSON-RPC's id: a string or an integer, never null (and never fractional).
bool ValidId(const rapidjson::Value& id) { return id.IsString() || id.IsInt64() || id.IsUint64(); }

RpcMessage ParseMessage(const rapidjson::Value& v) {
  if (!v.IsObject()) {
    return Invalid("null", RpcErrorCode::kInvalidRequest, "a JSON-RPC message must be an object");
  }
  std::string id_json = "null";
  const auto id = v.FindMember("id");
  const bool has_id = id != v.MemberEnd();
  if (has_id && ValidId(id->value)) id_json = ToJson(id->value);

  const auto version = v.FindMember("jsonrpc");
  if (version == v.MemberEnd() || !version->value.IsString() ||
      std::string_view(version->value.GetString(), version->value.GetStringLength()) != "2.0") {
    return Invalid(id_json, RpcErrorCode::kInvalidRequest, "\"jsonrpc\" must be \"2.0\"");
  }
  if (has_id && !ValidId(id->value)) {
    return Invalid("null", RpcErrorCode::kInvalidRequest,
                   "\"id\" must be a string or an integer (not null)");
  }

  const auto method = v.FindMember("method");
  if (method == v.MemberEnd()) {
    if (has_id && (v.HasMember("result") || v.HasMember("error"))) {
      RpcMessage m;
      m.kind = RpcMessage::Kind::kResponse;
      m.id_json = id_json;
      return m;
    }
    return Invalid(id_json, RpcErrorCode::kInvalidRequest, "\"method\" is missing");
  }
  if (!method->value.IsString()) {
    return Invalid(id_json, RpcErrorCode::kInvalidRequest, "\"method\" must be a string");
  }
  RpcMessage m;
  m.kind = has_id ? RpcMessage::Kind::kRequest : RpcMessage::Kind::kNotification;
  m.id_json = id_json;
  m.method.assign(method->value.GetString(), method->value.GetStringLength());
  const auto params = v.FindMember("params");
  if (params != v.MemberEnd()) {
    // JSON-RPC allows by-position (array) params; every MCP method takes an object.
    if (params->value.IsArray()) {
      return Invalid(id_json, RpcErrorCode::kInvalidParams, "\"params\" must be an object");
    }
    if (!params->value.IsObject() && !params->value.IsNull()) {
      return Invalid(id_json, RpcErrorCode::kInvalidRequest,
                     "\"params\" must be an object when present");
    }
    if (params->value.IsObject()) m.params = &params->value;
  }
  return m;
}

}  // namespace

RpcBody ParseRpcBody(std::string_view body) {
  RpcBody out;
  if (Status shape = core::CheckJsonShape(body); !shape.ok()) {
    out.error = RpcError{RpcErrorCode::kParseError, shape.message()};
    return out;
  }
  out.document = std::make_shared<rapidjson::Document>();
  out.document->Parse(body.data(), body.size());
  if (out.document->HasParseError()) {
    out.error = RpcError{RpcErrorCode::kParseError, "the body is not valid JSON"};
    return out;
  }
  // A key twice in one object is read differently by different JSON readers (common/json_keys.h):
  // refused as unparseable, like invalid JSON, wherever it is (a batch item, params.arguments).
  if (auto repeated = FindRepeatedKey(*out.document)) {
    const JsonPathStep key = repeated->back();
    repeated->pop_back();
    out.error = RpcError{RpcErrorCode::kParseError,
                         "the body repeats the key '" + JsonPathText("", {key}) + "' in " +
                             (repeated->empty() ? std::string("the top-level object")
                                                : JsonPathText("", *repeated)) +
                             ": a key may appear only once in a JSON object"};
    return out;
  }
  const rapidjson::Value& root = *out.document;
  if (root.IsArray()) {
    if (root.Empty()) {
      out.error = RpcError{RpcErrorCode::kInvalidRequest, "an empty batch"};
      return out;
    }
    out.batch = true;
    for (const auto& item : root.GetArray()) out.messages.push_back(ParseMessage(item));
    return out;
  }
  if (!root.IsObject()) {
    out.error = RpcError{RpcErrorCode::kInvalidRequest,
                         "the body must be a JSON-RPC message (an object) or a batch (an array)"};
    return out;
  }
  out.messages.push_back(ParseMessage(root));
  return out;
}

std::string ToJson(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string RpcResultJson(const std::string& id_json, const std::string& result_json) {
  return "{\"jsonrpc\":\"2.0\",\"id\":" + id_json + ",\"result\":" + result_json + "}";
}

std::string RpcErrorJson(const std::string& id_json, const RpcError& error,
                         const std::string& data_json) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("code");
  w.Int(static_cast<int>(error.code));
  w.Key("message");
  w.String(error.message.data(), static_cast<rapidjson::SizeType>(error.message.size()));
  w.EndObject();
  std::string object(buffer.GetString(), buffer.GetSize());
  if (!data_json.empty()) object.insert(object.size() - 1, ",\"data\":" + data_json);
  return "{\"jsonrpc\":\"2.0\",\"id\":" + id_json + ",\"error\":" + object + "}";
}

std::string RpcNotificationJson(std::string_view method, const std::string& params_json) {
  return "{\"jsonrpc\":\"2.0\",\"method\":\"" + std::string(method) +
         "\",\"params\":" + params_json + "}";
}

}  // namespace dnaserve::gateway::mcp
