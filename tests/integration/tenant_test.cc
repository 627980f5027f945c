// Issue 29, "a tenant cannot harm the others": each case is played by a user who holds only
// namespace rights (a Role in the test namespace over Runs, Pods and Services, impersonated with
// `kubectl --as`), against the real API server and a real berth-controller. Each test shows that
// the harm the tenant could do before is gone (docs/reliability.md, "What a tenant cannot do").

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine_fixture.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kPods;
using k8s::resources::kRuns;
using k8s::resources::kServices;

class Tenant : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    // What a team gets in its own namespace: Runs, Pods and Services, nothing cluster-wide.
    Apply(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: tenant}
rules:
- apiGroups: [berth.dev]
  resources: [runs]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [""]
  resources: [pods, services]
  verbs: [get, list, watch, create, update, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenant}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tenant}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: tenant}]
)");
    // The tenant cannot act outside its namespace (the premise of every test here).
    CommandResult r = cp().Kubectl({"auth", "can-i", "create", "runs", "-n", "default", "--as=tenant"});
    ASSERT_EQ(Trim(r.out), "no") << r.out << r.err;
    r = cp().Kubectl({"auth", "can-i", "list", "nodes", "--as=tenant"});
    ASSERT_EQ(Trim(r.out), "no") << r.out << r.err;
  }

  static std::string Trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }

  // kubectl as the tenant, in the test namespace.
  CommandResult AsTenant(std::vector<std::string> args, const std::string& input = {}) {
    args.insert(args.begin(), {"--as=tenant", "-n", ns_});
    return cp().Kubectl(args, input);
  }
  // `kubectl apply -f -` as the tenant; fails the test on error.
  void TenantApply(const std::string& yaml) {
    CommandResult r = AsTenant({"apply", "-f", "-"}, yaml);
    ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << yaml;
  }
};

// Item 7: a controller whose leader-election timings would let two leaders write at once refuses
// to start, with a sentence that names the flags (exit code 2, nothing contacted).
TEST_F(Tenant, LeaderElectionTimingsThatOverlapStopTheControllerAtStartUp) {
  // `timeout`: a controller that accepted the flags would run until stopped (exit code 124).
  CommandResult r = RunCommand({"timeout", "60", BERTH_CONTROLLER_BIN, "--kubeconfig=" + cp().kubeconfig(), "--leader-elect",
                                "--leader-election-namespace=" + ns_, "--leader-election-lease-duration=15s",
                                "--leader-election-renew-deadline=10s", "--metrics-bind-address=0",
                                "--health-probe-bind-address=0"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("berth-controller: --leader-election-renew-deadline (10s) plus --request-timeout (5s) must stay "
                       "below --leader-election-lease-duration (15s) by at least a tenth of it (1s500ms)"),
            std::string::npos)
      << r.err;
  auto lease = client()->Get(k8s::resources::kLeases.Path(ns_, "berth-controller"));
  EXPECT_TRUE(lease.status().IsNotFound()) << "a refused controller took the Lease";
  // The defaults (the chart's: 15s, 8s, 2s) start and lead.
  ControllerProcess ok({"--leader-elect", "--leader-election-namespace=" + ns_}, "leader-defaults");
  ok.Start();
  EXPECT_TRUE(Eventually([&] { return ok.Log().find("became the leader") != std::string::npos; }, std::chrono::seconds(60)))
      << ok.Log();
  EXPECT_EQ(ok.Stop(), 0) << ok.Log();
}

}  // namespace
}  // namespace berth::testing
