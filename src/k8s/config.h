#pragma once
// Where the API server is and how to talk to it: from a kubeconfig or from inside a Pod.

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "k8s/result.h"

namespace berth::k8s {

// Supplies the bearer token for each request. The in-cluster token is a file that the kubelet
// rotates, so it is re-read at most `refresh` after the last read, and at once by Reload (the
// client calls it when the API server answers 401, so a rotated token takes effect immediately).
class TokenSource {
 public:
  static std::shared_ptr<TokenSource> Static(std::string token);
  static std::shared_ptr<TokenSource> File(std::string path,
                                           std::chrono::milliseconds refresh = std::chrono::seconds(60));
  // The token to send now; empty when none is configured or the file cannot be read.
  std::string Token();
  // Re-reads the file now. Returns whether the token changed (always false for a static token
  // or an unreadable file: the last good token is kept).
  bool Reload();
  bool from_file() const { return !path_.empty(); }

 private:
  std::mutex mu_;
  std::string token_;
  std::string path_;
  std::chrono::milliseconds refresh_{0};
  std::chrono::steady_clock::time_point read_at_{};
};

struct ClientConfig {
  std::string server;               // "https://host:port" (no trailing slash)
  // The CA bundle (PEM, at least one certificate): when set, the only trust anchors for the
  // server; empty = the system's roots.
  std::string ca_pem;
  std::string client_cert_pem;      // client certificate chain (mutual TLS), optional
  std::string client_key_pem;
  bool insecure_skip_tls_verify = false;  // only when the kubeconfig says so
  std::shared_ptr<TokenSource> token;     // may be null
  std::string default_namespace = "default";
  // Sent with every request; the API server's audit log and managedFields show it.
  std::string user_agent = "berth/0.1";
  // How long one request (not a watch stream) may take before it fails without an answer. A
  // leader's must stay below its lease's renew deadline (controller/leader_election.h).
  std::chrono::milliseconds request_timeout{60000};
};

// Loads a kubeconfig. `paths` are merged like kubectl does for KUBECONFIG=a:b (the first file
// that sets a cluster, user, context or current-context wins). `context` overrides
// current-context when non-empty. File references are relative to the file that names them.
Result<ClientConfig> LoadKubeconfig(const std::vector<std::string>& paths, const std::string& context = {});

// The config of a Pod's service account: KUBERNETES_SERVICE_HOST/PORT, the token (re-read every
// minute) and CA under `sa_dir`.
Result<ClientConfig> InClusterConfig(const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// The controller's and the plugin's rule: an explicit --kubeconfig; else, when `allow_in_cluster`
// and running in a Pod, the in-cluster config; else $KUBECONFIG (':'-separated); else ~/.kube/config.
Result<ClientConfig> LoadDefaultConfig(const std::string& kubeconfig_flag, const std::string& context_flag,
                                       bool allow_in_cluster);

// OK when `pem` holds at least one PEM certificate OpenSSL can read; else an error naming `what`
// (the file or field it came from).
Status CheckCaBundle(const std::string& pem, const std::string& what);

// Base64 (standard alphabet, padding optional, whitespace ignored).
Result<std::string> Base64Decode(std::string_view in);
// Base64 with the standard alphabet and padding.
std::string Base64Encode(std::string_view in);

}  // namespace berth::k8s
