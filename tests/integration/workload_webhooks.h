// Issue 45 on Kubernetes 1.35 (no MutatingAdmissionPolicy): the chart holds queued workloads with
// berth's webhooks instead (templates/webhook.yaml: <full>-jobs, <full>-jobsets, <full>-pods).
// jobsets_test and podgroups_test render the chart as Helm does for the API server they run
// against; where it renders the webhooks, this points their entries at the berth-controller each
// test runs on this machine (https://127.0.0.1:PORT/<path>, a self-signed certificate).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "harness.h"

namespace berth::testing {

struct WorkloadWebhooks {
  bool webhook = false;  // the API server serves no MutatingAdmissionPolicy: the chart's webhooks
  int port = 0;
  std::string cert_dir;

  // Whether `cp` serves no MutatingAdmissionPolicy (1.35).
  static bool Needed(ControlPlane& cp) {
    return cp.Kubectl({"get", "--raw", "/apis/admissionregistration.k8s.io/v1"}).out.find("\"kind\":\"MutatingAdmissionPolicy\"") ==
           std::string::npos;
  }

  // The chart's documents named `names` (templates/admission-policies.yaml, and with `webhook`
  // templates/webhook.yaml), rendered for a release in berth-system as Helm renders them: the MAPs
  // where served, the webhook configurations where not. The chart's ServiceAccount is replaced by
  // "admin" (berth-controller runs as the control plane's admin user in tests).
  static std::string Render(bool webhook, const std::vector<std::string>& names) {
    std::vector<std::string> argv = {"helm", "template", "berth", std::string(BERTH_SOURCE_DIR) + "/deploy/helm/berth",
                                     "--namespace", "berth-system", "--show-only", "templates/admission-policies.yaml"};
    if (webhook) {
      argv.insert(argv.end(), {"--show-only", "templates/webhook.yaml"});
    } else {
      argv.insert(argv.end(), {"--set", "admissionPolicies=true", "--api-versions",
                               "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy", "--api-versions",
                               "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy"});
    }
    CommandResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string docs = YamlDocumentsNamed(r.out, names);
    const std::string sa = "system:serviceaccount:berth-system:berth-controller";
    for (size_t at = docs.find(sa); at != std::string::npos; at = docs.find(sa, at)) docs.replace(at, sa.size(), "admin");
    return docs;
  }

  // A serving certificate for 127.0.0.1 and a free port; then both entries of each configuration
  // (name, path) call https://127.0.0.1:port/path trusting it. Returns "" or what failed.
  std::string PointAtThisMachine(ControlPlane& cp, const std::vector<std::pair<std::string, std::string>>& configurations) {
    port = FreePort();
    cert_dir = cp.dir() + "/workload-webhook-certs";
    RunCommand({"mkdir", "-p", cert_dir});
    CommandResult cert = RunCommand({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", cert_dir + "/tls.key",
                                     "-out", cert_dir + "/tls.crt", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
                                     "subjectAltName=IP:127.0.0.1"});
    if (cert.exit_code != 0) return cert.err;
    CommandResult pem = RunCommand({"base64", "-w0", cert_dir + "/tls.crt"});
    if (pem.exit_code != 0) return pem.err;
    for (const auto& [name, path] : configurations) {
      const std::string client_config =
          R"({"url":"https://127.0.0.1:)" + std::to_string(port) + path + R"(","caBundle":")" + pem.out + R"("})";
      CommandResult patched = cp.Kubectl({"patch", "mutatingwebhookconfiguration", name, "--type", "json", "-p",
                                          R"([{"op":"replace","path":"/webhooks/0/clientConfig","value":)" + client_config +
                                              R"(},{"op":"replace","path":"/webhooks/1/clientConfig","value":)" + client_config +
                                              "}]"});
      if (patched.exit_code != 0) return name + ": " + patched.err;
    }
    return "";
  }

  // berth-controller's flags that serve the webhooks (none where the policies hold).
  std::vector<std::string> ControllerArgs() const {
    if (!webhook) return {};
    return {"--webhook-bind-address=127.0.0.1:" + std::to_string(port), "--webhook-cert-dir=" + cert_dir};
  }
};

}  // namespace berth::testing
