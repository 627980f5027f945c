#pragma once
// Who asks the aggregated queue API (issue 44, 4): berth never sees a user's credential. The API
// server authenticates the user, then proxies the request to berth over TLS with its own proxy
// client certificate and the user's identity in front-proxy headers (X-Remote-User,
// X-Remote-Group, X-Remote-Extra-*, X-Remote-Uid). berth believes those headers only from a
// client whose certificate verified against the request-header client CA and whose common name is
// one of the allowed names, as every aggregated API server does (k8s.io/apiserver's
// RequestHeaderAuthenticationOptions): the CA, the names and the header names come from the
// ConfigMap kube-system/extension-apiserver-authentication that kube-apiserver publishes.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "controller/http_request.h"
#include "k8s/json.h"
#include "k8s/result.h"

namespace berth::controller {

// An authenticated user as the API server names it (authentication.k8s.io UserInfo).
struct UserInfo {
  std::string name;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
};

// The request-header settings of kube-apiserver (--requestheader-* flags).
struct FrontProxyConfig {
  std::string client_ca_pem;                  // requestheader-client-ca-file
  std::vector<std::string> allowed_names;     // empty: any common name the CA signed
  std::vector<std::string> username_headers;  // lower-case
  std::vector<std::string> uid_headers;
  std::vector<std::string> group_headers;
  std::vector<std::string> extra_prefixes;
};

inline constexpr const char* kAuthenticationConfigMapPath =
    "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication";

// The request-header settings of the ConfigMap above (its data's requestheader-* keys; the lists
// are JSON arrays of strings). An error when it holds no requestheader-client-ca-file (the API
// server was started without --requestheader-client-ca-file: it cannot proxy to berth).
k8s::Result<FrontProxyConfig> ParseFrontProxyConfig(const k8s::json::Value& config_map);

// The user of `req` (a request that reached berth's aggregated API port), or an error with code 401
// and a sentence: no client certificate that verified against the request-header CA (the
// request did not come from the API server's proxy: its X-Remote-* headers mean nothing), a common
// name that is not allowed, or no user name in the username headers.
k8s::Result<UserInfo> AuthenticateFrontProxy(const FrontProxyConfig& config, const HttpRequestView& req);

// "%3A" -> ":" in an extra key (the API server escapes keys, RFC 3986 percent-encoding).
std::string UnescapeExtraKey(std::string_view key);

}  // namespace berth::controller
