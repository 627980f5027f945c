#include "k8s/config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <yaml-cpp/yaml.h>

namespace berth::k8s {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TrimSpace(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
  return s.substr(i);
}

std::string Resolve(const std::string& base_dir, const std::string& p) {
  if (p.empty() || p[0] == '/') return p;
  return (std::filesystem::path(base_dir) / p).string();
}

// One named entry of a kubeconfig list, remembering which file it came from.
struct Entry {
  YAML::Node node;
  std::string dir;
};

std::string Str(const YAML::Node& n, const char* key) {
  if (!n || !n.IsMap()) return {};
  YAML::Node v = n[key];
  if (!v || !v.IsScalar()) return {};
  return v.as<std::string>();
}

// Reads `inline_key` (base64 -data) or `file_key` (path) of `n`.
Result<std::string> DataOrFile(const Entry& e, const char* inline_key, const char* file_key) {
  std::string data = Str(e.node, inline_key);
  if (!data.empty()) {
    auto decoded = Base64Decode(data);
    if (!decoded) return Status::Error(std::string(inline_key) + ": " + decoded.status().message());
    return decoded.value();
  }
  std::string file = Str(e.node, file_key);
  if (!file.empty()) return ReadFile(Resolve(e.dir, file));
  return std::string();
}

}  // namespace

Status CheckCaBundle(const std::string& pem, const std::string& what) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  int certs = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    ++certs;
    X509_free(cert);
  }
  ERR_clear_error();
  BIO_free(bio);
  if (certs > 0) return Status();
  return Status::Error(what + " holds no certificate (expected PEM \"-----BEGIN CERTIFICATE-----\" blocks); it would "
                       "be the only trust anchor for the API server");
}

std::shared_ptr<TokenSource> TokenSource::Static(std::string token) {
  auto t = std::make_shared<TokenSource>();
  t->token_ = std::move(token);
  return t;
}

std::shared_ptr<TokenSource> TokenSource::File(std::string path, std::chrono::milliseconds refresh) {
  auto t = std::make_shared<TokenSource>();
  t->path_ = std::move(path);
  t->refresh_ = refresh;
  return t;
}

std::string TokenSource::Token() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!path_.empty()) {
    auto now = std::chrono::steady_clock::now();
    if (token_.empty() || now - read_at_ >= refresh_) {
      auto content = ReadFile(path_);
      // Keep the last good token when the file is briefly missing during rotation.
      if (content.ok()) token_ = TrimSpace(content.value());
      read_at_ = now;
    }
  }
  return token_;
}

bool TokenSource::Reload() {
  std::lock_guard<std::mutex> lock(mu_);
  if (path_.empty()) return false;
  auto content = ReadFile(path_);
  read_at_ = std::chrono::steady_clock::now();
  if (!content.ok()) return false;
  std::string fresh = TrimSpace(content.value());
  if (fresh.empty() || fresh == token_) return false;
  token_ = std::move(fresh);
  return true;
}

Result<std::string> Base64Decode(std::string_view in) {
  static constexpr signed char kTable[256] = {
#define X -1
      X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
      X, X, X, X, X, X, X, X, X, X, X, 62, X, X, X, 63, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, X, X, X, X, X, X,
      X, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, X, X, X, X, X,
      X, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, X, X, X, X, X,
      X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
      X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
      X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
      X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
#undef X
  };
  std::string out;
  out.reserve(in.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  bool padding = false;
  for (unsigned char c : in) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') { padding = true; continue; }
    if (padding || kTable[c] < 0) return Status::Error("invalid base64 data");
    acc = (acc << 6) | static_cast<uint32_t>(kTable[c]);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  // One character left over carries 6 bits, not a byte: the data was cut short.
  if (bits == 6) return Status::Error("invalid base64 data (truncated)");
  return out;
}

std::string Base64Encode(std::string_view in) {
  static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                 static_cast<unsigned char>(in[i + 2]);
    out += {kChars[(v >> 18) & 63], kChars[(v >> 12) & 63], kChars[(v >> 6) & 63], kChars[v & 63]};
  }
  if (i + 1 == in.size()) {
    uint32_t v = static_cast<unsigned char>(in[i]) << 16;
    out += {kChars[(v >> 18) & 63], kChars[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    uint32_t v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += {kChars[(v >> 18) & 63], kChars[(v >> 12) & 63], kChars[(v >> 6) & 63], '='};
  }
  return out;
}

namespace {

// The clusters, users and contexts of one or more kubeconfig files, merged as kubectl does (the
// first file that names an entry wins).
struct Kubeconfig {
  std::map<std::string, Entry> clusters, users, contexts;
  std::string current;
};

Status MergeKubeconfigs(const std::vector<std::string>& paths, Kubeconfig& into) {
  bool any = false;
  for (const std::string& path : paths) {
    if (path.empty()) continue;
    auto text = ReadFile(path);
    if (!text) {
      if (paths.size() > 1) continue;  // kubectl skips missing files in a KUBECONFIG list
      return Status::Error("kubeconfig " + path + " cannot be read");
    }
    YAML::Node root;
    try {
      root = YAML::Load(text.value());
    } catch (const YAML::Exception& e) {
      return Status::Error("kubeconfig " + path + " is not valid YAML: " + e.what());
    }
    any = true;
    std::string dir = std::filesystem::path(path).parent_path().string();
    auto collect = [&](const char* list, const char* inner, std::map<std::string, Entry>& entries) {
      YAML::Node items = root[list];
      if (!items || !items.IsSequence()) return;
      for (const auto& item : items) {
        std::string name = Str(item, "name");
        if (name.empty() || entries.count(name)) continue;
        entries[name] = Entry{item[inner], dir};
      }
    };
    collect("clusters", "cluster", into.clusters);
    collect("users", "user", into.users);
    collect("contexts", "context", into.contexts);
    if (into.current.empty()) into.current = Str(root, "current-context");
  }
  if (!any) return Status::Error("no kubeconfig found (tried " + std::to_string(paths.size()) + " path(s))");
  return Status();
}

// The server and its CA from a cluster entry.
Status ApplyCluster(const Entry& cl, const std::string& cluster_name, ClientConfig& cfg) {
  cfg.server = Str(cl.node, "server");
  while (!cfg.server.empty() && cfg.server.back() == '/') cfg.server.pop_back();
  if (cfg.server.empty()) return Status::Error("cluster \"" + cluster_name + "\" has no server");
  cfg.insecure_skip_tls_verify = Str(cl.node, "insecure-skip-tls-verify") == "true";
  auto ca = DataOrFile(cl, "certificate-authority-data", "certificate-authority");
  if (!ca) return Status::Error("cluster \"" + cluster_name + "\": " + ca.status().message());
  cfg.ca_pem = ca.value();
  if (!cfg.ca_pem.empty() || !Str(cl.node, "certificate-authority-data").empty() ||
      !Str(cl.node, "certificate-authority").empty()) {
    const std::string what = !Str(cl.node, "certificate-authority-data").empty()
                                 ? std::string("certificate-authority-data")
                                 : "certificate-authority " + Resolve(cl.dir, Str(cl.node, "certificate-authority"));
    if (Status s = CheckCaBundle(cfg.ca_pem, what); !s.ok()) {
      return Status::Error("cluster \"" + cluster_name + "\": " + s.message());
    }
  }
  return Status();
}

// The client certificate and token from a user entry.
Status ApplyUser(const Entry& us, const std::string& user_name, ClientConfig& cfg) {
  auto cert = DataOrFile(us, "client-certificate-data", "client-certificate");
  if (!cert) return Status::Error("user \"" + user_name + "\": " + cert.status().message());
  auto key = DataOrFile(us, "client-key-data", "client-key");
  if (!key) return Status::Error("user \"" + user_name + "\": " + key.status().message());
  cfg.client_cert_pem = cert.value();
  cfg.client_key_pem = key.value();
  std::string token = Str(us.node, "token");
  std::string token_file = Str(us.node, "tokenFile");
  if (!token.empty()) {
    cfg.token = TokenSource::Static(token);
  } else if (!token_file.empty()) {
    cfg.token = TokenSource::File(Resolve(us.dir, token_file));
  }
  return Status();
}

}  // namespace

Result<ClientConfig> LoadKubeconfig(const std::vector<std::string>& paths, const std::string& context) {
  Kubeconfig kc;
  if (Status s = MergeKubeconfigs(paths, kc); !s.ok()) return s;
  std::string ctx_name = context.empty() ? kc.current : context;
  if (ctx_name.empty()) return Status::Error("kubeconfig has no current-context; pass --context");
  auto ctx_it = kc.contexts.find(ctx_name);
  if (ctx_it == kc.contexts.end()) return Status::Error("context \"" + ctx_name + "\" not found in kubeconfig");
  const Entry& ctx = ctx_it->second;
  std::string cluster_name = Str(ctx.node, "cluster");
  std::string user_name = Str(ctx.node, "user");
  auto cl_it = kc.clusters.find(cluster_name);
  if (cl_it == kc.clusters.end()) return Status::Error("cluster \"" + cluster_name + "\" of context \"" + ctx_name + "\" not found in kubeconfig");

  ClientConfig cfg;
  if (Status s = ApplyCluster(cl_it->second, cluster_name, cfg); !s.ok()) return s;
  std::string ns = Str(ctx.node, "namespace");
  if (!ns.empty()) cfg.default_namespace = ns;

  auto us_it = kc.users.find(user_name);
  if (us_it != kc.users.end()) {
    if (Status s = ApplyUser(us_it->second, user_name, cfg); !s.ok()) return s;
  } else if (!user_name.empty()) {
    return Status::Error("user \"" + user_name + "\" of context \"" + ctx_name + "\" not found in kubeconfig");
  }
  return cfg;
}

Result<ClientConfig> InClusterConfig(const std::string& sa_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0') {
    return Status::Error("not running in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set");
  }
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6
  ClientConfig cfg;
  cfg.server = "https://" + h + ":" + port;
  auto ca = ReadFile(sa_dir + "/ca.crt");
  if (!ca) return Status::Error("in-cluster CA: " + ca.status().message());
  if (Status s = CheckCaBundle(ca.value(), "in-cluster CA " + sa_dir + "/ca.crt"); !s.ok()) return s;
  cfg.ca_pem = ca.value();
  cfg.token = TokenSource::File(sa_dir + "/token");
  if (cfg.token->Token().empty()) return Status::Error("in-cluster token " + sa_dir + "/token cannot be read");
  auto ns = ReadFile(sa_dir + "/namespace");
  if (ns) cfg.default_namespace = TrimSpace(ns.value());
  return cfg;
}

Result<ClientConfig> LoadDefaultConfig(const std::string& kubeconfig_flag, const std::string& context_flag,
                                       bool allow_in_cluster) {
  if (!kubeconfig_flag.empty()) return LoadKubeconfig({kubeconfig_flag}, context_flag);
  if (allow_in_cluster && std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) return InClusterConfig();
  const char* env = std::getenv("KUBECONFIG");
  if (env != nullptr && *env != '\0') {
    std::vector<std::string> paths;
    std::stringstream ss(env);
    std::string p;
    while (std::getline(ss, p, ':')) {
      if (!p.empty()) paths.push_back(p);
    }
    return LoadKubeconfig(paths, context_flag);
  }
  const char* home = std::getenv("HOME");
  return LoadKubeconfig({std::string(home ? home : "") + "/.kube/config"}, context_flag);
}

}  // namespace berth::k8s
