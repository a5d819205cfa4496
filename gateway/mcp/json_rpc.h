// JSON-RPC 2.0 framing for the MCP endpoint: parsing a POST body into messages (one, or a batch)
// and writing responses, errors and notifications. Nothing MCP-specific lives here.
//
// The error codes are JSON-RPC 2.0's (section 5.1) and MCP uses them as they are: a body that is
// not JSON (or that repeats a key within an object) is a parse error, a JSON value that is not a
// request an invalid request, an unknown method "method not found", and params of the wrong
// shape (or an unknown tool) invalid params.
#pragma once

#include <rapidjson/document.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dnaserve::gateway::mcp {

enum class RpcErrorCode : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
};

struct RpcError {
  RpcErrorCode code;
  std::string message;
};

struct RpcMessage {
  enum class Kind {
    kRequest,       // method and id: answered
    kNotification,  // method, no id: never answered
    kResponse,      // result or error: an answer to a server request (this server sends none)
    kInvalid,       // answered with `error`, under `id_json` when the id could be read
  };
  Kind kind = Kind::kInvalid;
  // The id as JSON text ("7", "\"a\""); "null" when absent or unreadable.
  std::string id_json = "null";
  std::string method;
  // The params object, or null when absent; points into RpcBody::document.
  const rapidjson::Value* params = nullptr;
  std::optional<RpcError> error;  // kInvalid only
};

struct RpcBody {
  bool batch = false;
  std::vector<RpcMessage> messages;
  // The whole body is unusable (not JSON, a key repeated in an object, too deeply nested, not
  // an object or array, an empty batch): answer this one error with a null id.
  std::optional<RpcError> error;
  std::shared_ptr<rapidjson::Document> document;  // owns what `params` point at
};

// Never throws; every failure is described in the result.
RpcBody ParseRpcBody(std::string_view body);

// {"jsonrpc":"2.0","id":<id>,"result":<result_json>}
std::string RpcResultJson(const std::string& id_json, const std::string& result_json);
// {"jsonrpc":"2.0","id":<id>,"error":{"code","message"[,"data"]}}; data_json is JSON text.
std::string RpcErrorJson(const std::string& id_json, const RpcError& error,
                         const std::string& data_json = "");
// {"jsonrpc":"2.0","method":<method>,"params":<params_json>}
std::string RpcNotificationJson(std::string_view method, const std::string& params_json);

// A JSON value as compact JSON text.
std::string ToJson(const rapidjson::Value& value);

}  // namespace dnaserve::gateway::mcp
