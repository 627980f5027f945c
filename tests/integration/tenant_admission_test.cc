// Issue 44: what the API server refuses of a tenant, whatever admits Runs. The chart's
// ValidatingAdmissionPolicies (templates/admission-policies.yaml, rendered by real Helm as for a
// release in the test's namespace and applied to the real API server: served as v1 from
// Kubernetes 1.30, so these tests run in the 1.35 compatibility group too) and the controller's
// --default-max-priority. The tenant is a user with namespace rights only (a Role over Runs, Pods
// and Services, impersonated with `kubectl --as`), as in tenant_test.cc.

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "engine_fixture.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;

const std::string kQueue = "  retry: {onEvents: [no-capacity], duration: \"off\"}\n";

class TenantAdmission : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    GrantTenantNamespaceRights();
  }
  void TearDown() override {
    if (!applied_.empty()) cp().Kubectl({"delete", "-f", "-", "--ignore-not-found"}, applied_);
    for (const auto& t : teams_) cp().Kubectl({"delete", "team", t, "--ignore-not-found", "--wait=false"});
    EngineTest::TearDown();
  }

  // kubectl as the tenant, in the test namespace.
  CommandResult AsTenant(std::vector<std::string> args, const std::string& input = {}) {
    args.insert(args.begin(), {"--as=tenant", "-n", ns_});
    return cp().Kubectl(args, input);
  }

  // The chart's policy objects whose name starts with "<fullname>-<kind>." (the policy and its
  // binding), rendered by Helm for release "berth-<ns>" in the test namespace with the webhook
  // (so that no MutatingAdmissionPolicy is rendered, which 1.35 does not serve), and applied.
  // Applies nothing when the chart has no such policy.
  void ApplyChartPolicy(const std::string& kind, std::vector<std::string> values = {}) {
    std::vector<std::string> argv = {"helm", "template", "berth-" + ns_, std::string(BERTH_SOURCE_DIR) + "/deploy/helm/berth",
                                     "--namespace", ns_, "--set", "admissionPolicies=false", "--show-only",
                                     "templates/admission-policies.yaml"};
    for (const auto& v : values) argv.insert(argv.end(), {"--set", v});
    CommandResult r = RunCommand(argv);
    if (r.err.find("could not find template") != std::string::npos) return;  // a chart without any such policy
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string docs = YamlDocumentsNamed(r.out, {"berth-" + ns_ + "-controller-" + kind + "." + ns_});
    if (docs.empty()) return;
    CommandResult applied = cp().Kubectl({"apply", "-f", "-"}, docs);
    ASSERT_EQ(applied.exit_code, 0) << applied.err << docs;
    applied_ += docs;
  }

  // Retries `attempt` (a server-side dry run: nothing is stored) until it is refused: an admission
  // policy takes effect a moment after it is created. The last refusal.
  CommandResult RefusedInTime(const std::function<CommandResult()>& attempt) {
    CommandResult r;
    Eventually([&] {
      r = attempt();
      return r.exit_code != 0;
    }, std::chrono::seconds(60));
    return r;
  }

  std::string Template(const std::string& run) {
    return Kubectl({"get", "run", run, "-o", "jsonpath={.spec.template.spec.containers[0].image}"}).out;
  }

  std::string applied_;
  std::vector<std::string> teams_;
};

// Item 2: the tenant patches the template of its running run (to something berth could not read,
// or just to another image): refused with a sentence, the run unchanged; a pending run's template
// may still change. On 1.35 too (compatibility group).
TEST_F(TenantAdmission, APlacedRunsTemplateCannotChangeAPendingRunsCan) {
  ASSERT_NO_FATAL_FAILURE(ApplyChartPolicy("placed-runs"));
  Nodes("one", 1, "4", "8Gi");
  Fleet("one", "one");  // one block: "placed" takes it, "waiting" waits
  Run("placed", "  fleets: [" + FleetName("one") + "]\n");
  ASSERT_TRUE(WaitPhase("placed", "Scheduled")) << Message("placed");
  StartRun("placed");
  Run("waiting", "  fleets: [" + FleetName("one") + "]\n" + kQueue);
  ASSERT_TRUE(Eventually([&] { return Phase("waiting") == "Pending"; })) << Phase("waiting");

  auto patch_image = [&](const std::string& run, const std::string& image, bool dry_run) {
    std::vector<std::string> args = {"patch", "run", run, "--type", "merge", "-p",
                                     R"({"spec":{"template":{"spec":{"containers":[{"name":"main","image":")" + image + R"("}]}}}})"};
    if (dry_run) args.push_back("--dry-run=server");
    return AsTenant(args);
  };
  RefusedInTime([&] { return patch_image("placed", "probe", true); });
  CommandResult r = patch_image("placed", "escape", false);
  EXPECT_NE(r.exit_code, 0) << "the template of a running run was changed";
  EXPECT_NE(r.err.find("spec.template cannot change while the run is placed (phase Running): its Pods were made from it; "
                       "stop the run (kubectl berth stop) and submit a new one"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(Template("placed"), "busybox");
  // A deeper template (the issue's escape: nesting berth cannot read) is refused the same way.
  std::string deep = "0";
  for (int i = 0; i < 200; ++i) deep = "[" + deep + "]";
  CommandResult nested = AsTenant({"patch", "run", "placed", "--type", "merge", "-p",
                                   R"({"spec":{"template":{"metadata":{"annotations":{}},"spec":{"x-deep":)" + deep + "}}}}"});
  EXPECT_NE(nested.exit_code, 0);
  EXPECT_NE(nested.err.find("spec.template cannot change while the run is placed"), std::string::npos) << nested.err;
  EXPECT_EQ(Phase("placed"), "Running");

  // Pending: the tenant may still change it.
  CommandResult pending = patch_image("waiting", "alpine", false);
  EXPECT_EQ(pending.exit_code, 0) << pending.err;
  EXPECT_EQ(Template("waiting"), "alpine");
}

// Items 3 and 10: Pods that tolerate the fleet taint (or every taint), carry the label
// berth.dev/run or an ownerReference to a Run are berth's marks: the tenant's are refused, at
// create and when an update adds a mark. An ordinary Pod is created.
TEST_F(TenantAdmission, TenantPodsCarryingBerthsMarksAreRefused) {
  ASSERT_NO_FATAL_FAILURE(ApplyChartPolicy("pods"));
  Run("mine", "  fleets: [none-" + ns_ + "]\n" + kQueue);  // the tenant's own Run, waiting
  const std::string uid = json::GetString(json::Find(RunDoc("mine"), {"metadata", "uid"}));
  ASSERT_FALSE(uid.empty());
  auto pod = [](const std::string& name, const std::string& metadata, const std::string& spec) {
    return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n" + metadata +
           "spec:\n  containers: [{name: main, image: busybox}]\n" + spec;
  };
  const std::string tolerates = "  tolerations: [{key: berth.dev/fleet, operator: Exists}]\n";
  RefusedInTime([&] { return AsTenant({"create", "--dry-run=server", "-f", "-"}, pod("probe", "", tolerates)); });

  struct Case {
    std::string what, yaml, says;
  };
  const std::vector<Case> cases = {
      {"a toleration of the fleet taint", pod("tolerating", "", tolerates),
       "only berth creates Pods that tolerate the fleet taint berth.dev/fleet (NoExecute): submit a Run to use a fleet's "
       "machines"},
      {"a toleration of the fleet taint's NoExecute effect",
       pod("tolerating-noexecute", "", "  tolerations: [{key: berth.dev/fleet, operator: Equal, value: gpu, effect: NoExecute}]\n"),
       "only berth creates Pods that tolerate the fleet taint"},
      {"a toleration of every taint", pod("tolerating-all", "", "  tolerations: [{operator: Exists}]\n"),
       "only berth creates Pods that tolerate the fleet taint"},
      {"the label berth.dev/run", pod("labelled", "  labels: {berth.dev/run: mine}\n", ""),
       "the label berth.dev/run marks the Pods berth makes for a Run: only berth sets it"},
      {"an ownerReference to the tenant's own Run",
       pod("owned",
           "  ownerReferences: [{apiVersion: berth.dev/v1alpha1, kind: Run, name: mine, uid: " + uid + ", controller: true}]\n", ""),
       "an ownerReference to a Run marks the Pods berth makes for it: only berth sets one"},
  };
  for (const Case& c : cases) {
    CommandResult r = AsTenant({"create", "-f", "-"}, c.yaml);
    EXPECT_NE(r.exit_code, 0) << c.what << ": created";
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.what << ": " << r.err;
  }
  CommandResult pods = Kubectl({"get", "pods", "-o", "name"});
  EXPECT_EQ(pods.out, "") << "no such Pod exists";
  // A toleration of another taint's NoSchedule, and an ordinary Pod: created; a label added later
  // by an update is refused.
  CommandResult plain = AsTenant(
      {"create", "-f", "-"}, pod("plain", "  labels: {app: x}\n", "  tolerations: [{operator: Exists, effect: NoSchedule}]\n"));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  CommandResult label = AsTenant({"label", "pod", "plain", "berth.dev/run=mine"});
  EXPECT_NE(label.exit_code, 0);
  EXPECT_NE(label.err.find("the label berth.dev/run marks the Pods berth makes"), std::string::npos) << label.err;
  CommandResult relabel = AsTenant({"label", "--overwrite", "pod", "plain", "app=y"});
  EXPECT_EQ(relabel.exit_code, 0) << relabel.err;
  Kubectl({"delete", "pod", "plain", "--grace-period=0", "--force", "--wait=false"});
}

// Item 6: a namespace another Team lists already: the second Team is refused, naming the first.
// An update that keeps a Team's namespaces passes (the older one can still be edited).
TEST_F(TenantAdmission, ANamespaceASecondTeamListsIsRefusedNamingTheFirst) {
  ASSERT_NO_FATAL_FAILURE(ApplyChartPolicy("teams"));
  const std::string zeta = "zeta-" + ns_, alpha = "alpha-" + ns_, probe = "probe-" + ns_;
  teams_ = {zeta, alpha, probe};
  auto team = [](const std::string& name, const std::string& ns) {
    return "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + name + "}\nspec:\n  namespaces: [" + ns + "]\n";
  };
  CommandResult z = cp().Kubectl({"apply", "-f", "-"}, team(zeta, ns_));
  ASSERT_EQ(z.exit_code, 0) << z.err;
  RefusedInTime([&] { return cp().Kubectl({"apply", "--dry-run=server", "-f", "-"}, team(probe, ns_)); });
  CommandResult a = cp().Kubectl({"apply", "-f", "-"}, team(alpha, ns_));
  EXPECT_NE(a.exit_code, 0) << "a second Team took the namespace";
  EXPECT_NE(a.err.find("namespace " + ns_ + " belongs to Team " + zeta +
                       " already: a namespace belongs to one Team (remove it there first)"),
            std::string::npos)
      << a.err;
  EXPECT_NE(cp().Kubectl({"get", "team", alpha}).exit_code, 0) << "the refused Team was stored";
  // The first Team can still be changed; another namespace is free to take.
  EXPECT_EQ(cp().Kubectl({"label", "team", zeta, "owner=ml"}).exit_code, 0);
  CommandResult other = cp().Kubectl({"apply", "-f", "-"}, team(alpha, ns_ + "-elsewhere"));
  EXPECT_EQ(other.exit_code, 0) << other.err;
}

// Item 7: --default-max-priority caps namespaces without the label berth.dev/max-priority; the
// run is queued at the cap and says so; a namespace's own label still wins.
class DefaultCap : public TenantAdmission {
 protected:
  DefaultCap() { controller_args_ = {"--default-max-priority=60"}; }
};

TEST_F(DefaultCap, ARunAboveTheDefaultCapIsQueuedAtItAndSaysSo) {
  Run("eager", "  priority: 90\n  fleets: [none-" + ns_ + "]\n" + kQueue);  // waits: no such fleet
  EXPECT_TRUE(Eventually([&] {
    return StatusInt("eager", "effectivePriority") == 60 &&
           Message("eager").find("priority capped at 60 by namespace " + ns_ +
                                 " (no label berth.dev/max-priority: berth's default cap, defaultMaxPriority); "
                                 "spec.priority is 90") != std::string::npos;
  })) << StatusInt("eager", "effectivePriority") << " " << Message("eager") << "\n" << controller_->Log();
  EXPECT_EQ(Phase("eager"), "Pending");
  // The namespace's own label wins over the default, above it as below it.
  ASSERT_EQ(cp().Kubectl({"label", "namespace", ns_, "berth.dev/max-priority=95"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] {
    return StatusInt("eager", "effectivePriority") == 90 && Message("eager").find("capped") == std::string::npos;
  })) << Message("eager");
  ASSERT_EQ(cp().Kubectl({"label", "--overwrite", "namespace", ns_, "berth.dev/max-priority=40"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] {
    return StatusInt("eager", "effectivePriority") == 40 &&
           Message("eager").find("priority capped at 40 by namespace " + ns_ + " (label berth.dev/max-priority: \"40\")") !=
               std::string::npos;
  })) << Message("eager");
}

// A value outside 0..100 stops the controller at start-up with a sentence (exit code 2).
TEST_F(TenantAdmission, ADefaultMaxPriorityOutOfRangeStopsTheController) {
  CommandResult r = RunCommand({"timeout", "60", BERTH_CONTROLLER_BIN, "--kubeconfig=" + cp().kubeconfig(),
                                "--default-max-priority=101", "--metrics-bind-address=0", "--health-probe-bind-address=0"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--default-max-priority=101: must be a whole number from 0 to 100"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace berth::testing
