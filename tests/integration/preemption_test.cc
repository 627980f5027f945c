// Issue 17, part 1: preemption end to end through the real API server (Fleet.spec.preemption).
// These tests play the kubelet (simulated nodes, so a gang can span two topology domains); the
// test on real kubelets, where the victim's container really gets SIGTERM, is in realnodes_test.

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "engine_fixture.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;

const std::string kQueue = "  retry: {onEvents: [no-capacity], duration: \"off\"}\n";
const std::string kRequeue = "  retry: {onEvents: [interruption], duration: \"off\"}\n";

class Preemption : public EngineTest {
 protected:
  std::string Priority(int p) { return "  priority: " + std::to_string(p) + "\n"; }
  // Events of the test namespace about `run` with `reason`: their messages.
  std::vector<std::string> EventMessages(const std::string& run, const std::string& reason) {
    std::vector<std::string> out;
    auto l = client()->List(k8s::resources::kEvents.Path(ns_));
    if (!l.ok()) return out;
    for (auto& e : l->items) {
      if (json::GetString(json::Find(e, {"involvedObject", "name"})) == run && json::GetString(e, "reason") == reason) {
        out.push_back(json::GetString(e, "message"));
      }
    }
    return out;
  }
  // One 8-GPU machine in fleet `name` (extra spec lines after `blocks: 1`) held by the running
  // run "low" of priority `low`; then "high" of priority `high` waits for the machine.
  void FullMachineAndAWaitingRun(const std::string& name, const std::string& fleet_spec, int low, int high) {
    Nodes(name, 1, "16", "64Gi", 8);
    Fleet(name, name, "  blocks: 1\n" + fleet_spec);
    Run("low", Priority(low) + "  resources: {gpu: 8}\n");
    ASSERT_TRUE(WaitPhase("low", "Scheduled")) << Message("low");
    StartRun("low");
    Run("high", Priority(high) + "  resources: {gpu: 8}\n" + kQueue);
    ASSERT_TRUE(Eventually([&] { return Phase("high") == "Pending" && !Message("high").empty(); })) << Message("high");
  }
  // One 8-GPU machine cut into `blocks` in fleet `name` (LowerPriority, minRuntime 0s), a running
  // run `low` of priority 10 asking `gpus` of it, and a namespace "<ns>-other" (returned) for
  // another team's runs (ApplyRunIn).
  std::string MachineALowRunAndAnotherNamespace(const std::string& name, int blocks, const std::string& low, int gpus) {
    Nodes(name, 1, "16", "64Gi", 8);
    Fleet(name, name, "  blocks: " + std::to_string(blocks) + "\n  preemption: {policy: LowerPriority, minRuntime: 0s}\n");
    Run(low, Priority(10) + "  resources: {gpu: " + std::to_string(gpus) + "}\n");
    EXPECT_TRUE(WaitPhase(low, "Scheduled")) << Message(low);
    StartRun(low);
    const std::string other = ns_ + "-other";
    EXPECT_EQ(cp().Kubectl({"create", "namespace", other}).exit_code, 0);
    return other;
  }
  // Run `name` of `priority` asking `gpus` GPUs (and `extra` spec lines) in namespace `ns`, as
  // `as` ("": the admin).
  void ApplyRunIn(const std::string& ns, const std::string& name, int priority, int gpus,
                      const std::string& extra = {}, const std::string& as = {}) {
    std::vector<std::string> args = {"apply", "-n", ns, "-f", "-"};
    if (!as.empty()) args.insert(args.begin(), "--as=" + as);
    CommandResult r = cp().Kubectl(args, "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name +
                                             "}\nspec:\n" + Priority(priority) + "  resources: {gpu: " +
                                             std::to_string(gpus) + "}\n" + extra +
                                             "  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // Stays true for `window` (checked every 200 ms).
  bool Holds(const std::function<bool()>& cond, std::chrono::milliseconds window) {
    auto end = std::chrono::steady_clock::now() + window;
    while (std::chrono::steady_clock::now() < end) {
      if (!cond()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return cond();
  }
};

// A gang preempts whole instances of one topology domain, the cheapest: two runs in zone b
// rather than three in zone a. The other domain's runs keep running; the victim with retry on
// interruption goes back to the queue, the one without fails; both say who preempted them.
TEST_F(Preemption, GangPreemptsWholeInstancesOfTheCheapestDomain) {
  auto a = Nodes("g", 2, "16", "64Gi", 8, {{"zone", "a"}});
  auto b = Nodes("g", 2, "16", "64Gi", 8, {{"zone", "b"}});
  Fleet("g", "g",
        "  blocks: 2\n  placement: cluster\n  topologyKey: zone\n"
        "  preemption: {policy: LowerPriority, minRuntime: 0s}\n");
  // Best fit, in this order: a1 and a2 share a[0], a3 takes a[1], b1 and b2 take b[0] and b[1].
  for (const char* name : {"a1", "a2", "a3"}) {
    Run(name, Priority(10) + "  resources: {gpu: 4}\n");
    ASSERT_TRUE(WaitPhase(name, "Scheduled")) << name << ": " << Message(name);
    StartRun(name);
  }
  Run("b1", Priority(10) + "  resources: {gpu: 8}\n" + kRequeue);
  ASSERT_TRUE(WaitPhase("b1", "Scheduled")) << Message("b1");
  StartRun("b1");
  Run("b2", Priority(20) + "  resources: {gpu: 8}\n");
  ASSERT_TRUE(WaitPhase("b2", "Scheduled")) << Message("b2");
  StartRun("b2");
  ASSERT_EQ(PlacementNodes("a1"), std::vector<std::string>{a[0]});
  ASSERT_EQ(PlacementNodes("a3"), std::vector<std::string>{a[1]});
  ASSERT_EQ(PlacementNodes("b1"), std::vector<std::string>{b[0]});
  ASSERT_EQ(PlacementNodes("b2"), std::vector<std::string>{b[1]});

  Run("hot", Priority(90) + "  nodes: 2\n  resources: {gpu: 8}\n" + kQueue);
  ASSERT_TRUE(Eventually([&] { return Phase("hot") == "Scheduled"; }, std::chrono::seconds(60)))
      << Phase("hot") << ": " << Message("hot");
  auto nodes = PlacementNodes("hot");
  EXPECT_EQ(std::set<std::string>(nodes.begin(), nodes.end()), (std::set<std::string>{b[0], b[1]}));
  EXPECT_EQ(Phase("b1"), "Pending");
  EXPECT_EQ(Reason("b1"), "Preempted") << Message("b1");
  EXPECT_EQ(StatusInt("b1", "resubmissions"), 1);
  // Events are written off the engine's thread (EventRecorder): wait for them.
  std::vector<std::string> retrying;
  ASSERT_TRUE(Eventually([&] { return !(retrying = EventMessages("b1", "Retrying")).empty(); }));
  EXPECT_NE(retrying.front().find("preempted by " + ns_ + "/hot (priority 90)"), std::string::npos) << retrying.front();
  EXPECT_EQ(Phase("b2"), "Failed");
  EXPECT_EQ(Reason("b2"), "Preempted") << Message("b2");
  EXPECT_NE(Message("b2").find("preempted by " + ns_ + "/hot"), std::string::npos) << Message("b2");
  for (const char* name : {"a1", "a2", "a3"}) EXPECT_EQ(Phase(name), "Running") << name << ": " << Message(name);
  // Placed: its record of the preemption is gone; the Events say what happened.
  EXPECT_EQ(json::Find(RunDoc("hot"), {"status", "preemption"}), nullptr);
  EXPECT_TRUE(Eventually([&] { return !EventMessages("hot", "Preempting").empty(); }));
  EXPECT_TRUE(Eventually([&] { return !EventMessages("b2", "Preempted").empty(); }));
  // The resubmitted victim waits: it can never preempt its preemptor (lower base priority).
  EXPECT_TRUE(Holds([&] { return Phase("hot") != "Pending" && Phase("b1") == "Pending"; }, std::chrono::seconds(3)))
      << Phase("hot") << " / " << Phase("b1") << ": " << Message("b1");
}

// Issue 44, item 11: whoever reads a run's status and Events may see only its namespace, so a
// run of another namespace is not named there. A priority-90 run of another namespace preempts
// this namespace's run: before, the victim's status said "preempted by <namespace>/<name>" and
// the preemptor's Event named the victim; now each says "a run of another namespace" (runs of the
// same namespace are still named: GangPreemptsWholeInstancesOfTheCheapestDomain).
TEST_F(Preemption, ARunOfAnotherNamespaceIsNotNamedInAStatusOrEvent) {
  const std::string other = MachineALowRunAndAnotherNamespace("x", 1, "low", 8);
  ASSERT_FALSE(HasFailure());
  ApplyRunIn(other, "secret-project", 90, 8, kQueue);
  auto other_run = [&](const std::string& path) {
    return cp().Kubectl({"get", "run", "secret-project", "-n", other, "-o", "jsonpath={" + path + "}"}).out;
  };
  ASSERT_TRUE(WaitPhase("low", "Failed", std::chrono::seconds(60))) << Phase("low") << ": " << Message("low");
  EXPECT_EQ(Reason("low"), "Preempted");
  EXPECT_NE(Message("low").find("preempted by a run of another namespace (priority 90) on fleet " + FleetName("x")),
            std::string::npos)
      << Message("low");
  EXPECT_EQ(Message("low").find("secret-project"), std::string::npos) << Message("low");
  std::vector<std::string> preempted;
  ASSERT_TRUE(Eventually([&] { return !(preempted = EventMessages("low", "Preempted")).empty(); }));
  for (const auto& m : preempted) EXPECT_EQ(m.find("secret-project"), std::string::npos) << m;
  ASSERT_TRUE(Eventually([&] { return other_run(".status.phase") == "Scheduled"; }, std::chrono::seconds(60)))
      << other_run(".status.message");
  // The preemptor's Event names no run of this namespace either.
  std::string preempting;
  ASSERT_TRUE(Eventually([&] {
    preempting = cp().Kubectl({"get", "events", "-n", other, "--field-selector", "involvedObject.name=secret-project,reason=Preempting",
                               "-o", "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}"})
                     .out;
    return !preempting.empty();
  })) << preempting;
  EXPECT_NE(preempting.find("preempting a run of another namespace on fleet " + FleetName("x")), std::string::npos) << preempting;
  EXPECT_EQ(preempting.find(ns_ + "/low"), std::string::npos) << preempting;
  // No kubelet plays the other namespace's part: its Pods are removed by force, then the run goes.
  cp().Kubectl({"delete", "run", "secret-project", "-n", other, "--wait=false"});
  EXPECT_TRUE(Eventually([&] {
    cp().Kubectl({"delete", "pods", "--all", "-n", other, "--grace-period=0", "--force", "--wait=false"});
    return cp().Kubectl({"get", "run", "secret-project", "-n", other}).exit_code != 0;
  }, std::chrono::seconds(60)));
  cp().Kubectl({"delete", "namespace", other, "--wait=false"});
}

// Issue 44 (item 11, the rest): a tenant reading its own preempting run learns no run name of
// another namespace. Its status.preemption names the victims of its namespace, counts the others
// (otherVictims) and keeps every victim's uid (berth's record, read back after a restart); its
// message and Events say "a run of another namespace". The other namespace's victim holds the
// preemption open (a finalizer on its Pod keeps it stopping) while the tenant reads. Failed on
// c2cf428: status.preemption.victims listed "<other>/secret-project".
TEST_F(Preemption, ATenantsPreemptingRunNamesNoRunOfAnotherNamespace) {
  GrantTenantNamespaceRights();
  Apply(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: tenant-reads-events}
rules:
- apiGroups: [""]
  resources: [events]
  verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenant-reads-events}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tenant-reads-events}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: tenant}]
)");
  const std::string other = MachineALowRunAndAnotherNamespace("t", 2, "mine-low", 4);
  ASSERT_FALSE(HasFailure());
  struct Drop {
    const std::string& ns;
    ~Drop() {
      ControlPlane::Get().Kubectl({"patch", "pod", "secret-project-0", "-n", ns, "--type=merge", "-p",
                                   R"({"metadata":{"finalizers":null}})"});
      ControlPlane::Get().Kubectl({"delete", "runs", "--all", "-n", ns, "--wait=false"});
      ControlPlane::Get().Kubectl({"delete", "pods", "--all", "-n", ns, "--grace-period=0", "--force", "--wait=false"});
      ControlPlane::Get().Kubectl({"delete", "namespace", ns, "--wait=false"});
    }
  } drop{other};
  ApplyRunIn(other, "secret-project", 10, 4);
  // Its Pod stays while stopping: the preemption waits for it, the tenant reads meanwhile.
  ASSERT_TRUE(Eventually([&] {
    return cp().Kubectl({"patch", "pod", "secret-project-0", "-n", other, "--type=merge", "-p",
                         R"({"metadata":{"finalizers":["berth.dev/test-hold"]}})"})
               .exit_code == 0;
  })) << "the other namespace's run never got its Pod";
  const std::string other_uid =
      cp().Kubectl({"get", "run", "secret-project", "-n", other, "-o", "jsonpath={.metadata.uid}"}).out;
  const std::string mine_uid = cp().Kubectl({"get", "run", "mine-low", "-n", ns_, "-o", "jsonpath={.metadata.uid}"}).out;
  ASSERT_FALSE(other_uid.empty());

  // The tenant's own run of priority 90 needs the whole machine: it preempts both.
  ApplyRunIn(ns_, "high", 90, 8, kQueue, "tenant");
  auto as_tenant = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--as=tenant", "-n", ns_});
    return cp().Kubectl(args).out;
  };
  std::string seen;  // the run as the tenant reads it, once both victims are being stopped
  ASSERT_TRUE(Eventually([&] {
    seen = as_tenant({"get", "run", "high", "-o", "json"});
    auto doc = json::Parse(seen);
    const json::Value* uids = doc.ok() ? json::Find(*doc, {"status", "preemption", "victimUIDs"}) : nullptr;
    return uids != nullptr && uids->IsArray() && uids->Size() == 2 && Phase("mine-low") == "Failed" &&
           cp().Kubectl({"get", "run", "secret-project", "-n", other, "-o", "jsonpath={.status.phase}"}).out == "Failed";
  }, std::chrono::seconds(60))) << seen;
  EXPECT_EQ(seen.find("secret-project"), std::string::npos) << seen;
  EXPECT_EQ(seen.find(other), std::string::npos) << seen;
  auto doc = json::Parse(seen);
  ASSERT_TRUE(doc.ok());
  const json::Value* record = json::Find(*doc, {"status", "preemption"});
  ASSERT_NE(record, nullptr);
  const json::Value* victims = json::Find(*record, {"victims"});
  ASSERT_TRUE(victims != nullptr && victims->IsArray() && victims->Size() == 1u) << seen;
  EXPECT_EQ(json::GetString(&(*victims)[0]), ns_ + "/mine-low");
  EXPECT_EQ(json::GetInt(*record, "otherVictims", -1), 1) << seen;
  std::set<std::string> uids;
  for (const auto& u : json::Find(*record, {"victimUIDs"})->GetArray()) uids.insert(json::GetString(&u));
  EXPECT_EQ(uids, (std::set<std::string>{other_uid, mine_uid}));
  EXPECT_EQ(json::GetString(json::Find(*doc, {"status", "reason"})), "Preempting");
  EXPECT_NE(seen.find("preempting 2 runs (" + ns_ + "/mine-low, a run of another namespace)"), std::string::npos) << seen;
  // Nor does any Event of the tenant's namespace name it.
  std::string events;
  ASSERT_TRUE(Eventually([&] {
    events = as_tenant({"get", "events", "-o", "json"});
    return events.find("\"Preempting\"") != std::string::npos;
  })) << events;
  EXPECT_EQ(events.find("secret-project"), std::string::npos) << events;
  EXPECT_EQ(events.find(other), std::string::npos) << events;

  // The victim's Pod goes (no kubelet plays the other namespace's part: removed by force): the
  // preemptor is placed and its record is gone.
  ASSERT_EQ(cp().Kubectl({"patch", "pod", "secret-project-0", "-n", other, "--type=merge", "-p",
                          R"({"metadata":{"finalizers":null}})"})
                .exit_code,
            0);
  cp().Kubectl({"delete", "pod", "secret-project-0", "-n", other, "--grace-period=0", "--force", "--wait=false"});
  EXPECT_TRUE(WaitPhase("high", "Scheduled", std::chrono::seconds(60))) << Phase("high") << ": " << Message("high");
  EXPECT_EQ(json::Find(RunDoc("high"), {"status", "preemption"}), nullptr);
}

// minRuntime protects a run that started recently; lowering it on the Fleet lets the waiting
// higher-priority run preempt.
TEST_F(Preemption, MinRuntimeProtectsAFreshRun) {
  ASSERT_NO_FATAL_FAILURE(
      FullMachineAndAWaitingRun("m", "  preemption: {policy: LowerPriority, minRuntime: 1h}\n", 10, 90));
  EXPECT_TRUE(Holds([&] { return Phase("low") == "Running" && Phase("high") == "Pending"; }, std::chrono::seconds(4)))
      << Phase("low") << " / " << Message("high");
  EXPECT_EQ(Reason("high"), "NoCapacity") << Message("high");

  CommandResult r = cp().Kubectl({"patch", "fleet", FleetName("m"), "--type=merge", "-p",
                                  R"({"spec":{"preemption":{"minRuntime":"0s"}}})"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(Eventually([&] { return Phase("high") == "Scheduled"; }, std::chrono::seconds(60))) << Message("high");
  EXPECT_EQ(Phase("low"), "Failed");
  EXPECT_EQ(Reason("low"), "Preempted");
}

// A Fleet without spec.preemption (policy Never) never evicts: the priority-90 run waits.
TEST_F(Preemption, NeverFleetDoesNotPreempt) {
  ASSERT_NO_FATAL_FAILURE(FullMachineAndAWaitingRun("n", "", 0, 100));
  EXPECT_TRUE(Holds([&] { return Phase("low") == "Running" && Reason("high") == "NoCapacity"; }, std::chrono::seconds(4)))
      << Phase("low") << " / " << Reason("high") << ": " << Message("high");
  EXPECT_TRUE(EventMessages("low", "Preempted").empty());
}

// A bad policy is refused by the CRD's validation with a sentence naming the allowed values.
TEST_F(Preemption, UnknownPolicyIsRefused) {
  Nodes("v", 1, "16", "64Gi", 8);
  std::string yaml = "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + FleetName("v") +
                     "}\nspec:\n  nodeSelector: {pool: " + Pool("v") + "}\n  preemption: {policy: Always}\n";
  CommandResult r = cp().Kubectl({"apply", "-f", "-"}, yaml);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("LowerPriority"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace berth::testing
