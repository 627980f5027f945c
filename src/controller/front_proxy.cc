#include "controller/front_proxy.h"

#include <algorithm>
#include <cctype>

#include "k8s/core_types.h"

namespace berth::controller {

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A data key holding a JSON array of strings ("[\"X-Remote-User\"]"); empty values dropped.
std::vector<std::string> StringList(const std::map<std::string, std::string>& data, const char* key, bool lower) {
  std::vector<std::string> out;
  auto it = data.find(key);
  if (it == data.end()) return out;
  for (std::string& v : k8s::DecodeStringArray(it->second)) {
    if (!v.empty()) out.push_back(lower ? Lower(v) : std::move(v));
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

k8s::Result<FrontProxyConfig> ParseFrontProxyConfig(const k8s::json::Value& config_map) {
  const std::map<std::string, std::string> data = k8s::DecodeConfigMapData(config_map);
  if (data.empty()) return k8s::Status::Error("the ConfigMap kube-system/extension-apiserver-authentication has no data");
  FrontProxyConfig c;
  if (auto it = data.find("requestheader-client-ca-file"); it != data.end()) c.client_ca_pem = it->second;
  if (c.client_ca_pem.empty()) {
    return k8s::Status::Error(
        "the ConfigMap kube-system/extension-apiserver-authentication has no requestheader-client-ca-file: "
        "kube-apiserver runs without --requestheader-client-ca-file, so it cannot proxy the queue API to berth");
  }
  c.allowed_names = StringList(data, "requestheader-allowed-names", false);
  c.username_headers = StringList(data, "requestheader-username-headers", true);
  c.uid_headers = StringList(data, "requestheader-uid-headers", true);
  c.group_headers = StringList(data, "requestheader-group-headers", true);
  c.extra_prefixes = StringList(data, "requestheader-extra-headers-prefix", true);
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
