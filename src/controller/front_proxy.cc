#include "controller/front_proxy.h"

#include <algorithm>
#include <cctype>

namespace berth::controller {

namespace json = k8s::json;

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A data key holding a JSON array of strings ("[\"X-Remote-User\"]"); empty when absent or not one.
std::vector<std::string> StringList(const json::Value& data, const char* key, bool lower) {
  std::vector<std::string> out;
  const std::string text = json::GetString(data, key);
  if (text.empty()) return out;
  auto doc = json::Parse(text);
  if (!doc.ok() || !doc->IsArray()) return out;
  for (const auto& v : doc->GetArray()) {
    if (!v.IsString()) continue;
    std::string s(v.GetString(), v.GetStringLength());
    if (!s.empty()) out.push_back(lower ? Lower(s) : s);
  }
  return out;
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

k8s::Status Unauthorized(const std::string& why) { return k8s::Status::Error(why, 401, "Unauthorized"); }

}  // namespace

std::string UnescapeExtraKey(std::string_view key) {
  std::string out;
  for (size_t i = 0; i < key.size(); ++i) {
    if (key[i] == '%' && i + 2 < key.size() && Hex(key[i + 1]) >= 0 && Hex(key[i + 2]) >= 0) {
      out += static_cast<char>(Hex(key[i + 1]) * 16 + Hex(key[i + 2]));
      i += 2;
    } else {
      out += key[i];
    }
  }
  return out;
}

k8s::Result<FrontProxyConfig> ParseFrontProxyConfig(const json::Value& config_map) {
  const json::Value* data = json::Find(config_map, {"data"});
  if (data == nullptr || !data->IsObject()) {
    return k8s::Status::Error("the ConfigMap kube-system/extension-apiserver-authentication has no data");
  }
  FrontProxyConfig c;
  c.client_ca_pem = json::GetString(*data, "requestheader-client-ca-file");
  if (c.client_ca_pem.empty()) {
    return k8s::Status::Error(
        "the ConfigMap kube-system/extension-apiserver-authentication has no requestheader-client-ca-file: "
        "kube-apiserver runs without --requestheader-client-ca-file, so it cannot proxy the queue API to berth");
  }
  c.allowed_names = StringList(*data, "requestheader-allowed-names", false);
  c.username_headers = StringList(*data, "requestheader-username-headers", true);
  c.uid_headers = StringList(*data, "requestheader-uid-headers", true);
  c.group_headers = StringList(*data, "requestheader-group-headers", true);
  c.extra_prefixes = StringList(*data, "requestheader-extra-headers-prefix", true);
  return c;
}

k8s::Result<UserInfo> AuthenticateFrontProxy(const FrontProxyConfig& config, const HttpRequestView& req) {
  if (!req.client_verified) {
    return Unauthorized(
        "the queue API answers only the Kubernetes API server's proxy (a client certificate signed by the "
        "request-header CA): ask through the API server, e.g. kubectl get --raw /apis/queue.berth.dev/v1alpha1/queue");
  }
  if (!config.allowed_names.empty() &&
      std::find(config.allowed_names.begin(), config.allowed_names.end(), req.client_cn) == config.allowed_names.end()) {
    return Unauthorized("the client certificate's common name \"" + req.client_cn +
                        "\" is not one of requestheader-allowed-names");
  }
  UserInfo user;
  for (const auto& h : config.username_headers) {
    for (const auto& v : req.Values(h)) {
      if (!v.empty()) {
        user.name = v;
        break;
      }
    }
    if (!user.name.empty()) break;
  }
  if (user.name.empty()) return Unauthorized("the API server's proxy named no user");
  for (const auto& h : config.uid_headers) {
    for (const auto& v : req.Values(h)) {
      if (!v.empty() && user.uid.empty()) user.uid = v;
    }
  }
  for (const auto& h : config.group_headers) {
    for (const auto& v : req.Values(h)) user.groups.push_back(v);
  }
  for (const auto& [name, value] : req.fields) {
    for (const auto& prefix : config.extra_prefixes) {
      if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0) {
        user.extra[UnescapeExtraKey(name.substr(prefix.size()))].push_back(value);
        break;
      }
    }
  }
  return user;
}

}  // namespace berth::controller
