// Admission of Runs, by either of the chart's two mechanisms (values admissionPolicies): the
// controller's webhook, or the admission policies the API server evaluates itself (Kubernetes
// 1.36+; the chart's templates/admission-policies.yaml rendered by Helm). Both add berth's
// finalizer at creation (admission needs one write less) and enforce the namespace label
// berth.dev/max-priority with the same messages.

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "engine_fixture.h"
#include "k8s/config.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A CA and a serving certificate for 127.0.0.1 in `dir` (ca.crt, tls.crt, tls.key).
void MakeCerts(const std::string& dir) {
  RunCommand({"mkdir", "-p", dir});
  auto openssl = [](std::vector<std::string> args) {
    args.insert(args.begin(), "openssl");
    CommandResult r = RunCommand(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  openssl({"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir + "/ca.key", "-out", dir + "/ca.crt", "-days", "1",
           "-subj", "/CN=berth-webhook-test-ca"});
  openssl({"req", "-newkey", "rsa:2048", "-nodes", "-keyout", dir + "/tls.key", "-out", dir + "/tls.csr", "-subj",
           "/CN=127.0.0.1"});
  std::ofstream(dir + "/san.ext") << "subjectAltName=IP:127.0.0.1\n";
  openssl({"x509", "-req", "-in", dir + "/tls.csr", "-CA", dir + "/ca.crt", "-CAkey", dir + "/ca.key", "-CAcreateserial",
           "-out", dir + "/tls.crt", "-days", "1", "-extfile", dir + "/san.ext"});
}

// How Runs are admitted in a test.
enum class Mechanism { kWebhook, kPolicies };

class Webhook : public EngineTest, public ::testing::WithParamInterface<Mechanism> {
 protected:
  Webhook() {
    if (GetParam() != Mechanism::kWebhook) return;
    port_ = FreePort();
    cert_dir_ = ControlPlane::Get().dir() + "/webhook-certs-" + std::to_string(port_);
    MakeCerts(cert_dir_);
    controller_args_ = {"--webhook-bind-address=127.0.0.1:" + std::to_string(port_), "--webhook-cert-dir=" + cert_dir_};
  }
  void SetUp() override {
    EngineTest::SetUp();
    config_ = "berth-runs-" + ns_;
    if (GetParam() == Mechanism::kPolicies) {
      // The chart's policies as Helm renders them for a cluster that serves them (release named
      // after the test's namespace: the objects are cluster-scoped), applied to the API server.
      std::vector<std::string> argv = {"helm", "template", "p", std::string(BERTH_SOURCE_DIR) + "/deploy/helm/berth",
                                       "--namespace", ns_, "--set", "admissionPolicies=true", "--api-versions",
                                       "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy", "--api-versions",
                                       "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy", "--show-only",
                                       "templates/admission-policies.yaml"};
      for (const auto& v : chart_values_) argv.insert(argv.end(), {"--set", v});
      CommandResult r = RunCommand(argv);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      // Without the policy on Pods (issue 44): it lets only the chart's ServiceAccount make berth's
      // Pods, and the controller here runs as the test's admin (tenant_tenant_admission_test.cc, rbac_test.cc).
      const std::string pods_policy = "name: p-berth-controller-pods." + ns_ + "\n";
      for (size_t pos = 0; pos < r.out.size();) {
        size_t next = r.out.find("\n---", pos);
        std::string doc = r.out.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
        pos = next == std::string::npos ? r.out.size() : next + 4;
        if (doc.find(pods_policy) == std::string::npos) policies_ += "---\n" + doc + "\n";
      }
      CommandResult applied = cp().Kubectl({"apply", "-f", "-"}, policies_);
      ASSERT_EQ(applied.exit_code, 0) << applied.err;
      // Until the API server has the Run schema for the mutating policy (it loads CRD schemas
      // from its OpenAPI a while after they change), a create it matches is refused with 503
      // "Resource kind ... not found. There can be a delay ..." (docs/install.md#admission). The
      // policy itself is loaded a moment after it is created, and a create before that is
      // admitted without it: wait until a Run is admitted WITH the policy's finalizer, as a
      // server-side dry run (an admitted dry run alone may have come before the policy).
      CommandResult dry;
      ASSERT_TRUE(Eventually([&] {
        dry = Kubectl({"apply", "--dry-run=server", "-o", "jsonpath={.metadata.finalizers}", "-f", "-"},
                      "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: dry}\nspec:\n  template:\n    spec:\n"
                      "      containers: [{name: main, image: busybox}]\n");
        return dry.exit_code == 0 && dry.out.find("berth.dev/run-cleanup") != std::string::npos;
      }, std::chrono::seconds(90))) << dry.err << dry.out;
      return;
    }
    std::string ca = k8s::Base64Encode(ReadFile(cert_dir_ + "/ca.crt"));
    std::string yaml = "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: " +
                       config_ + "}\nwebhooks:\n- name: runs.berth.dev\n  admissionReviewVersions: [v1]\n  sideEffects: None\n"
                       "  failurePolicy: Ignore\n  timeoutSeconds: 5\n  clientConfig:\n    url: https://127.0.0.1:" +
                       std::to_string(port_) + "/mutate-runs\n    caBundle: " + ca +
                       "\n  rules:\n  - apiGroups: [berth.dev]\n    apiVersions: [v1alpha1]\n    operations: [CREATE, UPDATE]\n"
                       "    resources: [runs]\n";
    CommandResult r = cp().Kubectl({"apply", "-f", "-"}, yaml);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  void TearDown() override {
    if (!policies_.empty()) {
      cp().Kubectl({"delete", "-f", "-", "--ignore-not-found"}, policies_);
    } else {
      cp().Kubectl({"delete", "mutatingwebhookconfiguration", config_, "--ignore-not-found"});
    }
    EngineTest::TearDown();
  }
  std::string Finalizers(const std::string& run) {
    return Kubectl({"get", "run", run, "-o", "jsonpath={.metadata.finalizers}"}).out;
  }
  int port_ = 0;
  std::string cert_dir_, config_, policies_;
  std::vector<std::string> chart_values_;  // --set values of the policies' render (set in a constructor)
};

TEST_P(Webhook, NewRunsCarryTheFinalizerFromCreation) {
  // Wait until the webhook answers (the controller starts serving it before its caches sync).
  ASSERT_TRUE(Eventually([&] {
    Run("probe", "  retry: {onEvents: [no-capacity], duration: \"off\"}\n");
    bool has = Finalizers("probe").find("berth.dev/run-cleanup") != std::string::npos;
    if (!has) Kubectl({"delete", "run", "probe", "--wait=false"});
    return has;
  }, std::chrono::seconds(20))) << controller_->Log();
  // A run nobody admits yet already has it (without the webhook it would get it at admission).
  Run("waiting", "  retry: {onEvents: [no-capacity], duration: \"off\"}\n");
  EXPECT_EQ(Finalizers("waiting"), R"(["berth.dev/run-cleanup"])");
  // Admitted runs keep exactly one, and deleting still cleans up.
  Nodes("wh", 1, "4", "8Gi");
  Fleet("wh", "wh", "  blocks: 4\n");  // room for "waiting" (first in the queue) and "admitted"
  Run("admitted");
  StartRun("admitted");
  EXPECT_EQ(Finalizers("admitted"), R"(["berth.dev/run-cleanup"])");
  ASSERT_EQ(Kubectl({"delete", "run", "admitted", "--wait=false"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return !GetRun("admitted").IsObject(); }));
}

// Issue 17: the namespace label berth.dev/max-priority caps the priority of its runs; the webhook
// refuses a create or a priority change above it, naming the cap; kubectl berth priority shows it.
TEST_P(Webhook, NamespaceMaxPriorityRefusesCreatesAndPatchesAboveTheCap) {
  ASSERT_EQ(cp().Kubectl({"label", "namespace", ns_, "berth.dev/max-priority=70"}).exit_code, 0);
  auto yaml = [](const std::string& name, int priority) {
    return "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name + "}\nspec:\n  priority: " +
           std::to_string(priority) + "\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n"
           "  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n";
  };
  // Applies the run until the webhook refuses it (a run let in meanwhile is deleted again): the
  // controller serves the webhook before its caches sync, and a label change reaches the webhook
  // through berth's watch of Namespaces.
  auto refused_in_time = [&](const std::string& name, int priority) {
    CommandResult r;
    EXPECT_TRUE(Eventually([&] {
      r = Kubectl({"apply", "-f", "-"}, yaml(name, priority));
      if (r.exit_code == 0) Kubectl({"delete", "run", name, "--wait=false"});
      return r.exit_code != 0;
    }, std::chrono::seconds(20))) << controller_->Log();
    return r;
  };
  CommandResult refused = refused_in_time("eager", 80);
  ASSERT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("spec.priority 80 is above 70, the highest priority runs in namespace " + ns_ +
                             " may have (namespace label berth.dev/max-priority: \"70\")"),
            std::string::npos)
      << refused.err;
  EXPECT_FALSE(GetRun("eager").IsObject());
  // At the cap: created. A patch above it is refused, the run unchanged; below it, allowed.
  CommandResult at = Kubectl({"apply", "-f", "-"}, yaml("capped", 70));
  ASSERT_EQ(at.exit_code, 0) << at.err;
  CommandResult up = Kubectl({"patch", "run", "capped", "--type", "merge", "-p", R"({"spec":{"priority":80}})"});
  EXPECT_NE(up.exit_code, 0);
  EXPECT_NE(up.err.find("spec.priority 80 is above 70"), std::string::npos) << up.err;
  EXPECT_EQ(json::GetInt(*json::Find(GetRun("capped"), {"spec"}), "priority"), 70);
  // kubectl berth priority: the API server's refusal names the cap.
  std::string plugin = BERTH_CONTROLLER_BIN;
  plugin = plugin.substr(0, plugin.rfind("/src/controller/")) + "/src/cli/kubectl-berth";
  CommandResult cli = RunCommand({plugin, "--kubeconfig", cp().kubeconfig(), "-n", ns_, "priority", "capped", "90"});
  EXPECT_NE(cli.exit_code, 0);
  EXPECT_NE((cli.err + cli.out).find("spec.priority 90 is above 70"), std::string::npos) << cli.err << cli.out;
  EXPECT_EQ(Kubectl({"patch", "run", "capped", "--type", "merge", "-p", R"({"spec":{"priority":60}})"}).exit_code, 0);
  // A malformed value caps at 0 (fail closed) and says so.
  ASSERT_EQ(cp().Kubectl({"label", "--overwrite", "namespace", ns_, "berth.dev/max-priority=seventy"}).exit_code, 0);
  CommandResult bad = refused_in_time("any", 1);
  EXPECT_NE(bad.err.find("is not a whole number from 0 to 100, so berth counts it as 0"), std::string::npos) << bad.err;
  // Changes that leave the priority as it was pass whatever the cap (the run can still be stopped).
  EXPECT_EQ(Kubectl({"patch", "run", "capped", "--type", "merge", "-p", R"({"spec":{"stop":true}})"}).exit_code, 0);
}

// A namespace created in the same manifest as its runs: the webhook has not seen it through its
// watch yet, reads it from the API server, and refuses the run above the cap.
TEST_P(Webhook, ANamespaceCreatedWithItsRunsIsCappedAtOnce) {
  const std::string fresh = ns_ + "-capped";
  auto manifest = [&](const std::string& run) {
    return "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + fresh +
           "\n  labels: {berth.dev/max-priority: \"20\"}\n---\napiVersion: berth.dev/v1alpha1\nkind: Run\n"
           "metadata: {name: " + run + ", namespace: " + fresh + "}\nspec:\n  priority: 90\n"
           "  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n";
  };
  // Wait until the webhook answers (then it refuses): the first manifest may meet no webhook yet
  // (failurePolicy: Ignore lets that run in; the namespace's deletion removes it).
  CommandResult r;
  int tries = 0;
  ASSERT_TRUE(Eventually([&] {
    r = cp().Kubectl({"apply", "-f", "-"}, manifest("hot-" + std::to_string(tries++)));
    return r.exit_code != 0;
  }, std::chrono::seconds(20))) << controller_->Log();
  EXPECT_NE(r.err.find("spec.priority 90 is above 20, the highest priority runs in namespace " + fresh), std::string::npos)
      << r.err;
  cp().Kubectl({"delete", "namespace", fresh, "--wait=false"});
}

// Issue 29 (6): a template over 256 KiB as JSON, made of strings the CRD schema allows (six env
// values of 50,000 characters). The webhook refuses it with a sentence that says the bound, and
// nothing is stored; the admission policies cannot measure a template (CEL has no size of an
// object), so there the Run is stored and the controller fails it InvalidSpec with the same
// sentence. `kubectl create`: `kubectl apply` would add a copy in its last-applied-configuration
// annotation, which the API server itself bounds at 256 KiB.
TEST_P(Webhook, ATemplateOverTheBoundIsRefusedSayingTheBound) {
  std::string env;
  for (int i = 0; i < 6; ++i) {
    env += std::string(i == 0 ? "" : ",") + R"({"name":"PART)" + std::to_string(i) + R"(","value":")" +
           std::string(50000, static_cast<char>('a' + i)) + R"("})";
  }
  auto run_json = [&](const std::string& name) {
    return R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":")" + name +
           R"("},"spec":{"template":{"spec":{"containers":[{"name":"main","image":"busybox","env":[)" + env + "]}]}}}}";
  };
  const std::string sentence = " bytes as JSON; berth takes templates of at most 262144 bytes (256 KiB): put large data "
                               "in a ConfigMap or Secret and mount it, or pass it with envFrom";
  if (GetParam() == Mechanism::kWebhook) {
    // Until the webhook answers (the controller serves it before its caches sync, and
    // failurePolicy: Ignore lets a Run in meanwhile), a Run that got in is deleted again.
    CommandResult r;
    int tries = 0;
    ASSERT_TRUE(Eventually([&] {
      const std::string name = "wide-" + std::to_string(tries++);
      r = Kubectl({"create", "-f", "-"}, run_json(name));
      if (r.exit_code == 0) Kubectl({"delete", "run", name, "--wait=false"});
      return r.exit_code != 0;
    }, std::chrono::seconds(20))) << controller_->Log();
    EXPECT_NE(r.err.find("denied the request: spec.template is "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(sentence), std::string::npos) << r.err;
    EXPECT_FALSE(GetRun("wide-" + std::to_string(tries - 1)).IsObject());
    return;
  }
  CommandResult r = Kubectl({"create", "-f", "-"}, run_json("wide"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitPhase("wide", "Failed")) << Phase("wide") << " " << Message("wide");
  EXPECT_EQ(Reason("wide"), "InvalidSpec");
  EXPECT_EQ(Message("wide").rfind("spec.template is ", 0), 0u) << Message("wide");
  EXPECT_NE(Message("wide").find(sentence), std::string::npos) << Message("wide");
}

// Issue 44 (2): a placed run's template does not change, by either mechanism (the webhook for
// installs that use it; the chart's ValidatingAdmissionPolicy, which holds on every version:
// tenant_admission_test.cc); a pending run's may.
TEST_P(Webhook, APlacedRunsTemplateCannotChange) {
  Nodes("one", 1, "4", "8Gi");
  Fleet("one", "one");
  Run("placed", "  fleets: [" + FleetName("one") + "]\n");
  ASSERT_TRUE(WaitPhase("placed", "Scheduled")) << Message("placed");
  StartRun("placed");
  Run("waiting", "  fleets: [" + FleetName("one") + "]\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n");
  auto patch_image = [&](const std::string& run, const std::string& image, bool dry_run) {
    std::vector<std::string> args = {"patch", "run", run, "--type", "merge", "-p",
                                     R"({"spec":{"template":{"spec":{"containers":[{"name":"main","image":")" + image + R"("}]}}}})"};
    if (dry_run) args.push_back("--dry-run=server");
    return Kubectl(args);
  };
  // Until the webhook or the policy answers (server-side dry runs store nothing).
  ASSERT_TRUE(Eventually([&] { return patch_image("placed", "probe", true).exit_code != 0; }, std::chrono::seconds(60)))
      << controller_->Log();
  CommandResult r = patch_image("placed", "escape", false);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("spec.template cannot change while the run is placed (phase Running): its Pods were made from it; "
                       "stop the run (kubectl berth stop) and submit a new one"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(Kubectl({"get", "run", "placed", "-o", "jsonpath={.spec.template.spec.containers[0].image}"}).out, "busybox");
  CommandResult pending = patch_image("waiting", "alpine", false);
  EXPECT_EQ(pending.exit_code, 0) << pending.err;
}

// Issue 44 (7): the controller's --default-max-priority and the chart's defaultMaxPriority cap the
// namespaces without the label berth.dev/max-priority, with one sentence; a namespace's label wins.
class WebhookDefaultCap : public Webhook {
 protected:
  WebhookDefaultCap() {
    controller_args_.push_back("--default-max-priority=60");
    chart_values_ = {"defaultMaxPriority=60"};
  }
};

TEST_P(WebhookDefaultCap, NamespacesWithoutTheLabelAreCappedAtTheDefault) {
  auto yaml = [](const std::string& name, int priority) {
    return "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name + "}\nspec:\n  priority: " +
           std::to_string(priority) + "\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n"
           "  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n";
  };
  CommandResult r;
  ASSERT_TRUE(Eventually([&] {
    r = Kubectl({"apply", "--dry-run=server", "-f", "-"}, yaml("eager", 90));
    return r.exit_code != 0;
  }, std::chrono::seconds(60))) << controller_->Log();
  r = Kubectl({"apply", "-f", "-"}, yaml("eager", 90));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("spec.priority 90 is above 60, the highest priority runs in namespace " + ns_ +
                       " may have (no namespace label berth.dev/max-priority: berth's default cap, defaultMaxPriority)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(GetRun("eager").IsObject());
  CommandResult at = Kubectl({"apply", "-f", "-"}, yaml("at-cap", 60));
  EXPECT_EQ(at.exit_code, 0) << at.err;
  // The namespace's own cap wins over the default (the webhook sees the label through its watch).
  ASSERT_EQ(cp().Kubectl({"label", "namespace", ns_, "berth.dev/max-priority=95"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return Kubectl({"apply", "-f", "-"}, yaml("labelled", 90)).exit_code == 0; }))
      << controller_->Log();
}

INSTANTIATE_TEST_SUITE_P(Admission, WebhookDefaultCap, ::testing::Values(Mechanism::kWebhook, Mechanism::kPolicies),
                         [](const ::testing::TestParamInfo<Mechanism>& info) {
                           return info.param == Mechanism::kWebhook ? "ByWebhook" : "ByPolicies";
                         });

// Issue 29 (9): the webhook serves a renewed certificate without a restart. The files are replaced
// as the kubelet replaces a mounted Secret's (a new file renamed over the old), the API server is
// given the new CA, and new connections get the new certificate.
class WebhookCertificate : public Webhook {};

TEST_P(WebhookCertificate, ARenewedCertificateIsServedWithoutARestart) {
  ASSERT_TRUE(Eventually([&] {
    Run("probe", "  retry: {onEvents: [no-capacity], duration: \"off\"}\n");
    bool has = Finalizers("probe").find("berth.dev/run-cleanup") != std::string::npos;
    Kubectl({"delete", "run", "probe", "--wait=false"});
    return has;
  }, std::chrono::seconds(20))) << controller_->Log();
  auto served_fingerprint = [&] {
    CommandResult r = RunCommand({"bash", "-c", "openssl s_client -connect 127.0.0.1:" + std::to_string(port_) +
                                                    " </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256"});
    return r.out;
  };
  auto file_fingerprint = [](const std::string& crt) {
    return RunCommand({"openssl", "x509", "-in", crt, "-noout", "-fingerprint", "-sha256"}).out;
  };
  ASSERT_EQ(served_fingerprint(), file_fingerprint(cert_dir_ + "/tls.crt"));

  // A new CA and serving certificate, renamed over the served files.
  const std::string renewed = cert_dir_ + "-renewed";
  MakeCerts(renewed);
  for (const char* f : {"tls.key", "tls.crt"}) {
    RunCommand({"cp", renewed + "/" + f, cert_dir_ + "/" + f + ".new"});
    ASSERT_EQ(std::rename((cert_dir_ + "/" + f + ".new").c_str(), (cert_dir_ + "/" + f).c_str()), 0);
  }
  const std::string ca = k8s::Base64Encode(ReadFile(renewed + "/ca.crt"));
  CommandResult patched = cp().Kubectl({"patch", "mutatingwebhookconfiguration", config_, "--type", "json", "-p",
                                        R"([{"op":"replace","path":"/webhooks/0/clientConfig/caBundle","value":")" + ca + R"("}])"});
  ASSERT_EQ(patched.exit_code, 0) << patched.err;

  // New connections get the new certificate, and the API server (trusting only the new CA) reaches
  // the webhook again: a new run carries the finalizer from its creation.
  EXPECT_TRUE(Eventually([&] { return served_fingerprint() == file_fingerprint(renewed + "/tls.crt"); },
                         std::chrono::seconds(30)))
      << controller_->Log();
  int tries = 0;
  EXPECT_TRUE(Eventually([&] {
    const std::string name = "after-" + std::to_string(tries++);
    Run(name, "  retry: {onEvents: [no-capacity], duration: \"off\"}\n");
    return Finalizers(name) == R"(["berth.dev/run-cleanup"])";
  }, std::chrono::seconds(30))) << controller_->Log();
  EXPECT_NE(controller_->Log().find("certificate reloaded"), std::string::npos) << controller_->Log();
}

INSTANTIATE_TEST_SUITE_P(Admission, WebhookCertificate, ::testing::Values(Mechanism::kWebhook),
                         [](const ::testing::TestParamInfo<Mechanism>&) { return "ByWebhook"; });

// Issue 47: berth.dev/submitted-by, by either mechanism, with the chart's
// ValidatingAdmissionPolicy <fullname>-submitted-by (rendered on every version; with the webhook
// it is applied here beside it) and usage.onBehalfOf listing one ServiceAccount.
class SubmittedBy : public Webhook {
 protected:
  static constexpr const char* kCi = "system:serviceaccount:ci:argo";
  static constexpr const char* kOther = "system:serviceaccount:ci:other";
  SubmittedBy() { chart_values_ = {"usage.onBehalfOf={" + std::string(kCi) + "}"}; }
  void SetUp() override {
    Webhook::SetUp();
    if (HasFatalFailure()) return;
    GrantTenantNamespaceRights();
    // The ServiceAccounts act in the test's namespace with the tenant's rights.
    Apply("apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: ci}\nroleRef: {apiGroup: "
          "rbac.authorization.k8s.io, kind: Role, name: tenant}\nsubjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: User, "
          "name: \"" + std::string(kCi) + "\"}\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: \"" + kOther + "\"}\n");
    if (GetParam() != Mechanism::kWebhook) return;
    CommandResult r = RunCommand({"helm", "template", "p", std::string(BERTH_SOURCE_DIR) + "/deploy/helm/berth", "--namespace", ns_,
                                  "--set", "admissionPolicies=false", "--set", chart_values_[0], "--show-only",
                                  "templates/admission-policies.yaml"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    extra_ = YamlDocumentsNamed(r.out, {"p-berth-controller-submitted-by." + ns_});
    ASSERT_NE(extra_.find("kind: ValidatingAdmissionPolicyBinding"), std::string::npos) << r.out;
    CommandResult applied = cp().Kubectl({"apply", "-f", "-"}, extra_);
    ASSERT_EQ(applied.exit_code, 0) << applied.err;
  }
  void TearDown() override {
    if (!extra_.empty()) cp().Kubectl({"delete", "-f", "-", "--ignore-not-found"}, extra_);
    Webhook::TearDown();
  }
  // kubectl create of Run `name` (naming `submitter` when not empty) as `user`.
  CommandResult CreateAs(const std::string& user, const std::string& name, const std::string& submitter,
                         bool dry_run = false) {
    std::string meta = "{name: " + name + (submitter.empty() ? "" : ", annotations: {berth.dev/submitted-by: \"" + submitter + "\"}") + "}";
    std::vector<std::string> args = {"--as=" + user, "-n", ns_, "create", "-f", "-"};
    if (dry_run) args.push_back("--dry-run=server");
    return cp().Kubectl(args, "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: " + meta +
                                  "\nspec:\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n  fleets: [none-" + ns_ +
                                  "]\n  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n");
  }
  std::string Submitter(const std::string& run) {
    return Kubectl({"get", "run", run, "-o", R"(jsonpath={.metadata.annotations.berth\.dev/submitted-by})"}).out;
  }
  std::string extra_;
};

// The creator is recorded; a tenant cannot name someone else, at creation or later, nor remove
// it; a listed ServiceAccount may name the user it submits for, an unlisted one may not.
TEST_P(SubmittedBy, RunsRecordTheirCreatorAndOnlyListedServiceAccountsNameAnother) {
  // Until the policy and the mutation both act (each is loaded a moment after it is created).
  CommandResult dry;
  ASSERT_TRUE(Eventually([&] {
    dry = CreateAs("tenant", "probe", "bob", true);
    if (dry.exit_code == 0) return false;
    CommandResult own = CreateAs("tenant", "probe-" + std::to_string(FreePort()), "");
    return own.exit_code == 0 && own.out.find("created") != std::string::npos &&
           Submitter(own.out.substr(own.out.find('/') + 1, own.out.find(' ') - own.out.find('/') - 1)) == "tenant";
  }, std::chrono::seconds(90))) << dry.err << (controller_ ? controller_->Log() : "");

  ASSERT_EQ(CreateAs("tenant", "mine", "").exit_code, 0);
  EXPECT_EQ(Submitter("mine"), "tenant");
  CommandResult forged = CreateAs("tenant", "forged", "bob");
  EXPECT_NE(forged.exit_code, 0) << "a tenant named someone else";
  EXPECT_NE(forged.err.find("annotation berth.dev/submitted-by records who submitted this Run: it is set to you (tenant), "
                            "not \"bob\"; only the ServiceAccounts the chart lists (usage.onBehalfOf) submit on another "
                            "user's behalf"),
            std::string::npos)
      << forged.err;
  EXPECT_NE(Kubectl({"get", "run", "forged"}).exit_code, 0) << "the refused run was stored";
  CommandResult own = CreateAs("tenant", "named-self", "tenant");
  EXPECT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(Submitter("named-self"), "tenant");

  // Later: neither changed nor removed.
  CommandResult changed = cp().Kubectl({"--as=tenant", "-n", ns_, "annotate", "--overwrite", "run", "mine",
                                        "berth.dev/submitted-by=bob"});
  EXPECT_NE(changed.exit_code, 0);
  EXPECT_NE(changed.err.find("annotation berth.dev/submitted-by records who submitted this Run (\"tenant\"): it does not change"),
            std::string::npos)
      << changed.err;
  CommandResult removed = cp().Kubectl({"--as=tenant", "-n", ns_, "annotate", "run", "mine", "berth.dev/submitted-by-"});
  EXPECT_NE(removed.exit_code, 0) << "the annotation was removed";
  EXPECT_EQ(Submitter("mine"), "tenant");
  EXPECT_EQ(cp().Kubectl({"--as=tenant", "-n", ns_, "annotate", "run", "mine", "note=x"}).exit_code, 0);

  // The listed ServiceAccount submits for alice; without a name it is the submitter itself.
  CommandResult ci = CreateAs(kCi, "for-alice", "alice");
  EXPECT_EQ(ci.exit_code, 0) << ci.err;
  EXPECT_EQ(Submitter("for-alice"), "alice");
  ASSERT_EQ(CreateAs(kCi, "by-ci", "").exit_code, 0);
  EXPECT_EQ(Submitter("by-ci"), kCi);
  CommandResult other = CreateAs(kOther, "other-for-alice", "alice");
  EXPECT_NE(other.exit_code, 0) << "an unlisted ServiceAccount named someone else";
  EXPECT_NE(other.err.find("it is set to you (" + std::string(kOther) + "), not \"alice\""), std::string::npos) << other.err;

  // Queued workloads record their creator too, in the patch that holds them (on 1.36+ the chart's
  // MutatingAdmissionPolicies; the 1.35 webhooks: admission_test.cc), and cannot name another.
  if (GetParam() != Mechanism::kPolicies) return;
  Run("by-admin");
  const std::string admin = Submitter("by-admin");
  ASSERT_FALSE(admin.empty());
  const std::string job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: held, labels: {berth.dev/queue: \"true\"}}\nspec:\n"
                          "  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: main, image: busybox}]\n";
  const std::string pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: held, labels: {berth.dev/queue: \"true\"}}\nspec:\n"
                          "  containers: [{name: main, image: busybox}]\n";
  const std::string jsonpath = R"(jsonpath={.metadata.annotations.berth\.dev/submitted-by} {.kind})";
  CommandResult held_job, held_pod;
  EXPECT_TRUE(Eventually([&] {
    held_job = Kubectl({"create", "--dry-run=server", "-o", jsonpath, "-f", "-"}, job);
    held_pod = Kubectl({"create", "--dry-run=server", "-o", jsonpath, "-f", "-"}, pod);
    return held_job.out == admin + " Job" && held_pod.out == admin + " Pod";
  }, std::chrono::seconds(60))) << held_job.out << held_job.err << held_pod.out << held_pod.err;
  std::string forged_job = job;
  forged_job.replace(forged_job.find("labels:"), 0, "annotations: {berth.dev/submitted-by: bob}, ");
  CommandResult refused = Kubectl({"create", "--dry-run=server", "-f", "-"}, forged_job);
  EXPECT_NE(refused.exit_code, 0) << "a Job named someone else";
  EXPECT_NE(refused.err.find("annotation berth.dev/submitted-by records who submitted this Job: it is set to you (" + admin +
                             "), not \"bob\""),
            std::string::npos)
      << refused.err;
}

INSTANTIATE_TEST_SUITE_P(Admission, SubmittedBy, ::testing::Values(Mechanism::kWebhook, Mechanism::kPolicies),
                         [](const ::testing::TestParamInfo<Mechanism>& info) {
                           return info.param == Mechanism::kWebhook ? "ByWebhook" : "ByPolicies";
                         });

// Issue 48: a queued workload's topology label or annotation is checked at admission by the
// chart's ValidatingAdmissionPolicies (Jobs, JobSets, Pods): a label key, and not both.
class WorkloadTopology : public Webhook {};

TEST_P(WorkloadTopology, AQueuedWorkloadsTopologyMustNameALevelAndNotBoth) {
  // A queued Job or Pod with these annotations and, beside berth.dev/queue, these labels.
  auto meta = [](const std::string& annotations, const std::string& labels) {
    return "metadata: {name: topo, labels: {berth.dev/queue: \"true\"" + (labels.empty() ? "" : ", " + labels) +
           "}, annotations: {" + annotations + "}}\n";
  };
  auto job = [&](const std::string& annotations, const std::string& labels = "") {
    return "apiVersion: batch/v1\nkind: Job\n" + meta(annotations, labels) +
           "spec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: main, image: busybox}]\n";
  };
  auto pod = [&](const std::string& annotations, const std::string& labels = "") {
    return "apiVersion: v1\nkind: Pod\n" + meta(annotations, labels) + "spec:\n  containers: [{name: main, image: busybox}]\n";
  };
  auto create = [&](const std::string& yaml) { return Kubectl({"create", "--dry-run=server", "-f", "-"}, yaml); };
  const std::string bad = "berth.dev/topology-required: \"rack!\"";
  CommandResult refused;
  // Until the policy is loaded (a moment after it is created).
  ASSERT_TRUE(Eventually([&] { return (refused = create(job(bad))).exit_code != 0; }, std::chrono::seconds(60))) << refused.out;
  EXPECT_NE(refused.err.find("label or annotation berth.dev/topology-required must name a topology level's label key "
                             "(such as example.com/rack), not \"rack!\""),
            std::string::npos)
      << refused.err;
  CommandResult r = create(pod("berth.dev/topology-preferred: \"example.com/rack/x\""));
  EXPECT_NE(r.exit_code, 0) << "a Pod's preferred level with two slashes";
  EXPECT_NE(r.err.find("berth.dev/topology-preferred must name a topology level's label key"), std::string::npos) << r.err;
  r = create(job("berth.dev/topology-required: example.com/rack", "berth.dev/topology-preferred: rack"));
  EXPECT_NE(r.exit_code, 0) << "required and preferred together";
  EXPECT_NE(r.err.find("berth.dev/topology-required and berth.dev/topology-preferred are exclusive"), std::string::npos) << r.err;
  // What berth reads is admitted: a prefixed key as an annotation, a plain one as a label; an
  // unqueued workload is not berth's to check.
  r = create(job("berth.dev/topology-required: example.com/rack"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = create(pod("", "berth.dev/topology-preferred: rack"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = Kubectl({"create", "--dry-run=server", "-f", "-"},
              "apiVersion: batch/v1\nkind: Job\nmetadata: {name: free, annotations: {berth.dev/topology-required: \"rack!\"}}\n"
              "spec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: main, image: busybox}]\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Admission, WorkloadTopology, ::testing::Values(Mechanism::kPolicies),
                         [](const ::testing::TestParamInfo<Mechanism>&) { return "ByPolicies"; });

// On Kubernetes 1.35 (the compatibility group) the policies are not served as v1: the webhook only.
INSTANTIATE_TEST_SUITE_P(Admission, Webhook, ::testing::Values(Mechanism::kWebhook, Mechanism::kPolicies),
                         [](const ::testing::TestParamInfo<Mechanism>& info) {
                           return info.param == Mechanism::kWebhook ? "ByWebhook" : "ByPolicies";
                         });

}  // namespace
}  // namespace berth::testing
