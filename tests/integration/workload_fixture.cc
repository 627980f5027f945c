#include "workload_fixture.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kPods;

// The machines' pool and the probe of the binary's suite (StartWorkloads).
std::string& PoolOfBinary() {
  static std::string pool;
  return pool;
}
std::function<bool()>& HeldProbe() {
  static std::function<bool()> held;
  return held;
}

std::string Joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

WorkloadWebhooks& RealWorkloadTest::Hooks() {
  static WorkloadWebhooks hooks;
  return hooks;
}

void RealWorkloadTest::StartWorkloads(const std::string& pool, std::vector<std::string> policies,
                                      const std::vector<std::pair<std::string, std::string>>& routes,
                                      std::function<bool()> held) {
  PoolOfBinary() = pool;
  HeldProbe() = std::move(held);
  RealNodes::Start({{pool + "-0", 8, "4Gi", {{"pool", pool}, {"zone", "z1"}}}, {pool + "-1", 8, "4Gi", {{"pool", pool}, {"zone", "z1"}}}},
                   /*workload_controllers=*/true);
  ControlPlane& cp = ControlPlane::Get();
  WorkloadWebhooks& hooks = Hooks();
  hooks.webhook = WorkloadWebhooks::Needed(cp);
  if (hooks.webhook) {
    for (const auto& [name, path] : routes) {
      if (std::find(policies.begin(), policies.end(), name) == policies.end()) policies.push_back(name);
    }
  }
  const std::string rendered = WorkloadWebhooks::Render(hooks.webhook, policies);
  ASSERT_NE(rendered.find(hooks.webhook ? "kind: MutatingWebhookConfiguration" : "kind: MutatingAdmissionPolicy"), std::string::npos)
      << rendered;
  for (const auto& name : policies) ASSERT_NE(rendered.find("name: " + name), std::string::npos) << name << " not in\n" << rendered;
  CommandResult applied = cp.Kubectl({"apply", "-f", "-"}, rendered);
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  if (hooks.webhook) {
    // 1.35: each test's berth-controller serves the chart's webhooks (SetUp waits for them).
    ASSERT_EQ(hooks.PointAtThisMachine(cp, routes), "");
    return;
  }
  ASSERT_TRUE(HeldProbe()()) << "the chart's MutatingAdmissionPolicies never held a queued workload";
}

void RealWorkloadTest::SetUp() {
  controller_args_ = Hooks().ControllerArgs();
  EngineTest::SetUp();
  if (Hooks().webhook) {
    ASSERT_TRUE(HeldProbe()()) << "berth's webhook never held a queued workload";
  }
}

void RealWorkloadTest::TearDown() {
  if (reclaim_teams_) {
    cp().Kubectl({"delete", "team", OwnerTeam(), "borrower-" + ns_, "--ignore-not-found", "--wait=false"});
    cp().Kubectl({"-n", OwnerNamespace(), "delete", "runs", "--all", "--wait=false"});
    EXPECT_TRUE(Eventually([&] {
      auto l = client()->List(kPods.Path(OwnerNamespace()));
      return l.ok() && l->items.empty();
    }, std::chrono::seconds(90))) << "pods of " << OwnerNamespace() << " were not gone 90 s after the test";
    cp().Kubectl({"delete", "namespace", OwnerNamespace(), "--wait=false"});
  }
  if (HasFailure()) {
    for (const auto& args : dump_) {
      std::vector<std::string> get = {"get"};
      get.insert(get.end(), args.begin(), args.end());
      std::printf("---- kubectl get %s ----\n%s\n", Joined(args).c_str(), Kubectl(get).out.c_str());
    }
  }
  for (const auto& kind : delete_first_) Kubectl({"delete", kind, "--all", "--wait=false", "--cascade=background"});
  if (!wait_gone_.empty()) {
    EXPECT_TRUE(Eventually([&] {
      CommandResult r = Kubectl({"get", Joined(wait_gone_), "-o", "name"});
      return r.exit_code == 0 && r.out.empty();
    }, std::chrono::seconds(90))) << Joined(wait_gone_) << " of " << ns_ << " were not gone 90 s after the test";
  }
  EngineTest::TearDown();
  // The next test starts on empty machines: the kubelets have stopped every container of this one.
  EXPECT_TRUE(Eventually([&] {
    auto l = client()->List(kPods.Path(ns_));
    return l.ok() && l->items.empty();
  }, std::chrono::seconds(90))) << "pods of " << ns_ << " were not gone 90 s after the test";
  if (marks_) RunCommand({"rm", "-rf", Marks()});
}

void RealWorkloadTest::RealFleet(const std::string& name, const std::string& extra_spec, const std::string& hostname) {
  const std::string selector = hostname.empty() ? "{pool: " + PoolOfBinary() + "}" : "{kubernetes.io/hostname: " + hostname + "}";
  Apply("apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + FleetName(name) + "}\nspec:\n  nodeSelector: " +
        selector + "\n" + extra_spec);
  created_fleets_.push_back(FleetName(name));
  // A workload berth sees before its fleet would be judged against no fleet at all.
  const size_t instances = hostname.empty() ? 2 : 1;
  ASSERT_TRUE(Eventually([&] {
    auto f = client()->Get(k8s::resources::kFleets.Path("", FleetName(name)));
    const json::Value* list = f.ok() ? json::Find(*f, {"status", "instances"}) : nullptr;
    return list != nullptr && list->IsArray() && list->Size() == instances;
  }, std::chrono::seconds(60))) << "berth never wrote the instances of fleet " << FleetName(name);
}

void RealWorkloadTest::ShellRun(const std::string& name, const std::string& extra_spec, const std::string& script) {
  Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name + "}\nspec:\n" + extra_spec +
        "  template:\n    spec:\n      terminationGracePeriodSeconds: 1\n      containers:\n      - name: main\n"
        "        image: " + std::string(RealNodes::kBusybox) + "\n        command: [sh, -c, " + json::Quote(script) + "]\n");
}

CommandResult RealWorkloadTest::Berth(std::vector<std::string> args) {
  args.insert(args.end(), {"-n", ns_});
  return RunPlugin(cp().kubeconfig(), args);
}

std::set<std::string> TicketsIn(k8s::Client& client, const std::string& ns) {
  std::set<std::string> out;
  auto l = client.List(k8s::resources::kRuns.Path(ns));
  if (!l.ok()) return out;
  for (const auto& r : l->items) {
    if (json::Find(r, {"spec", "workloadRef"}) != nullptr) out.insert(json::GetString(json::Find(r, {"metadata", "name"})));
  }
  return out;
}

bool HasTrueCondition(const json::Value& obj, const std::string& type) {
  const json::Value* conds = obj.IsObject() ? json::Find(obj, {"status", "conditions"}) : nullptr;
  if (conds == nullptr || !conds->IsArray()) return false;
  for (const auto& c : conds->GetArray()) {
    if (json::GetString(c, "type") == type && json::GetString(c, "status") == "True") return true;
  }
  return false;
}

std::map<std::string, PodRow> PodsIn(k8s::Client& client, const std::string& ns, const std::string& selector) {
  std::map<std::string, PodRow> out;
  k8s::ListOptions o;
  o.label_selector = selector;
  auto l = client.List(kPods.Path(ns), o);
  if (!l.ok()) return out;
  for (const auto& p : l->items) {
    PodRow& row = out[json::GetString(json::Find(p, {"metadata", "name"}))];
    row.node = json::GetString(json::Find(p, {"spec", "nodeName"}));
    row.phase = json::GetString(json::Find(p, {"status", "phase"}));
    row.rank = json::GetString(json::Find(p, {"metadata", "labels", "berth.dev/rank"}));
    row.ticket = json::GetString(json::Find(p, {"metadata", "labels", "berth.dev/ticket"}));
    row.deleting = json::Find(p, {"metadata", "deletionTimestamp"}) != nullptr;
    if (const json::Value* gates = json::Find(p, {"spec", "schedulingGates"}); gates != nullptr && gates->IsArray()) {
      for (const auto& g : gates->GetArray()) row.gated = row.gated || json::GetString(g, "name") == "berth.dev/admission";
    }
    if (const json::Value* conds = json::Find(p, {"status", "conditions"}); conds != nullptr && conds->IsArray()) {
      for (const auto& c : conds->GetArray()) {
        if (json::GetString(c, "type") == "PodScheduled") row.scheduled_reason = json::GetString(c, "reason");
      }
    }
  }
  return out;
}

std::string TenantRole(const std::string& name, const std::string& rules) {
  return "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: " + name + "}\nrules:\n" + rules +
         "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: " + name +
         "}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: " + name +
         "}\nsubjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: tenant}]\n";
}

std::string AllVerbsOn(const std::string& group, const std::string& resources) {
  return "- apiGroups: [\"" + group + "\"]\n  resources: " + resources + "\n  verbs: [get, list, watch, create, update, patch, delete]\n";
}

std::vector<AuditedWrite> AuditedWrites(const std::string& ns) {
  std::vector<AuditedWrite> out;
  std::ifstream in(ControlPlane::Get().dir() + "/audit.log");
  for (std::string line; std::getline(in, line);) {
    if (line.find(ns) == std::string::npos) continue;
    auto doc = json::Parse(line);
    if (!doc.ok() || json::GetString(*doc, "stage") != "ResponseComplete") continue;
    if (json::GetString(json::Find(*doc, {"objectRef", "namespace"})) != ns) continue;
    AuditedWrite w;
    w.verb = json::GetString(*doc, "verb");
    w.resource = json::GetString(json::Find(*doc, {"objectRef", "resource"}));
    w.subresource = json::GetString(json::Find(*doc, {"objectRef", "subresource"}));
    w.name = json::GetString(json::Find(*doc, {"objectRef", "name"}));
    w.user = json::GetString(json::Find(*doc, {"user", "username"}));
    w.agent = json::GetString(*doc, "userAgent");
    w.at = json::GetString(*doc, "stageTimestamp");
    if (const json::Value* st = json::Find(*doc, {"responseStatus"})) w.code = json::GetInt(*st, "code");
    if (const json::Value* body = json::Find(*doc, {"requestObject"})) w.body.CopyFrom(*body, w.body.GetAllocator());
    out.push_back(std::move(w));
  }
  return out;
}

std::set<std::string> RealWorkloadTest::Tickets() { return TicketsIn(*client(), ns_); }

CommandResult RealWorkloadTest::AsTenant(std::vector<std::string> args, const std::string& input) {
  args.insert(args.end(), {"--as=tenant"});
  return Kubectl(args, input);
}

std::string RealWorkloadTest::EventMessages(const std::string& name, const std::string& reason) {
  return Kubectl({"get", "events", "--field-selector", "involvedObject.name=" + name + ",reason=" + reason, "-o",
                  "jsonpath={.items[*].message}"})
      .out;
}

void RealWorkloadTest::ReclaimTeams(const std::string& fleet) {
  CommandResult r = cp().Kubectl({"create", "namespace", OwnerNamespace()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  reclaim_teams_ = true;
  r = cp().Kubectl({"apply", "-f", "-"},
                   "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + OwnerTeam() + "}\nspec:\n  namespaces: [" +
                       OwnerNamespace() + "]\n  shares:\n  - fleet: " + FleetName(fleet) + "\n    nominal: {gpu: 16}\n---\n"
                       "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: borrower-" + ns_ + "}\nspec:\n  namespaces: [" +
                       ns_ + "]\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

std::string RealWorkloadTest::WaitsForGracePeriod(const std::string& ticket, int64_t grace, const std::string& longest,
                                                  const std::string& fleet) {
  EXPECT_TRUE(Eventually([&] { return Reason(ticket) == "GracePeriodTooLong"; }, std::chrono::seconds(60)))
      << Phase(ticket) << " " << Reason(ticket) << ": " << Message(ticket);
  EXPECT_EQ(Phase(ticket), "Pending");
  const std::string why = Message(ticket);
  EXPECT_NE(why.find("terminationGracePeriodSeconds is " + std::to_string(grace)), std::string::npos) << why;
  EXPECT_NE(why.find("the longest: " + longest + ", fleet " + fleet), std::string::npos) << why;
  return why;
}

std::vector<std::string> RealWorkloadTest::Reclaimed(const std::vector<std::string>& tickets) {
  std::vector<std::string> out;
  for (const auto& ticket : tickets) {
    if (Reason(ticket) != "Reclaimed") {
      EXPECT_EQ(Phase(ticket), "Running") << ticket << ": " << Message(ticket);
      continue;
    }
    out.push_back(ticket);
    EXPECT_EQ(Phase(ticket), "Pending") << ticket << ": " << Message(ticket);
    EXPECT_TRUE(Eventually([&] { return EventMessages(ticket, "Retrying").find("reclaimed by team " + OwnerTeam()) != std::string::npos; }))
        << ticket << ": " << EventMessages(ticket, "Retrying");
  }
  return out;
}

void RealWorkloadTest::OwnerRun(const std::string& name) {
  CommandResult r = cp().Kubectl(
      {"apply", "-f", "-"},
      "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name + ", namespace: " + OwnerNamespace() +
          "}\nspec:\n  priority: 10\n  resources: {gpu: 8}\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n"
          "  template:\n    spec:\n      terminationGracePeriodSeconds: 1\n      containers:\n      - name: main\n"
          "        image: " + std::string(RealNodes::kBusybox) + "\n        command: [sh, -c, 'sleep 3600']\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

std::string RealWorkloadTest::OwnerPhase(const std::string& name) {
  auto d = client()->Get(k8s::resources::kRuns.Path(OwnerNamespace(), name));
  return d.ok() ? json::GetString(json::Find(*d, {"status", "phase"})) : "";
}

std::string RealWorkloadTest::Marks() {
  marks_ = true;
  return cp().dir() + "/marks-" + ns_;
}

}  // namespace berth::testing
