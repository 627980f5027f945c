#include "engine_fixture.h"

#include <algorithm>
#include <thread>

namespace berth::testing {

namespace json = k8s::json;
using k8s::resources::kFleets;
using k8s::resources::kNodes;
using k8s::resources::kPods;
using k8s::resources::kRuns;

void EngineTest::SetUp() {
  IntegrationTest::SetUp();
  controller_ = std::make_unique<ControllerProcess>(controller_args_, "controller", controller_kubeconfig_);
  controller_->Start();
  if (finish_deleted_pods_) {
    finisher_ = std::thread([this] {
      while (!finisher_stop_) {
        auto l = client()->List(kPods.Path(ns_));
        if (l.ok()) {
          for (auto& item : l->items) {
            if (json::Find(item, {"metadata", "deletionTimestamp"}) == nullptr) continue;
            if (json::GetString(json::Find(item, {"spec", "nodeName"})).empty()) continue;
            k8s::DeleteOptions o;
            o.grace_period_seconds = 0;
            o.precondition_uid = json::GetString(json::Find(item, {"metadata", "uid"}));
            (void)client()->Delete(kPods.Path(ns_, json::GetString(json::Find(item, {"metadata", "name"}))), o);
          }
        }
        for (int i = 0; i < 4 && !finisher_stop_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
}

void EngineTest::TearDown() {
  finisher_stop_ = true;
  if (finisher_.joinable()) finisher_.join();
  // Delete the runs while the controller runs (it removes their finalizers), then everything else.
  if (!keep_runs_) {
    cp().Kubectl({"-n", ns_, "delete", "runs", "--all", "--wait=false"});
    ForceDeletePodsOnApiOnlyNodes();
  }
  bool gone = keep_runs_ || Eventually([&] {
    auto l = client()->List(kRuns.Path(ns_));
    return l.ok() && l->items.empty();
  }, std::chrono::seconds(30));
  if (!gone) {
    auto l = client()->List(kRuns.Path(ns_));
    if (l.ok()) {
      for (auto& item : l->items) {
        std::string name = json::GetString(json::Find(item, {"metadata", "name"}));
        (void)client()->MergePatch(kRuns.Path(ns_, name), R"({"metadata":{"finalizers":null}})");
      }
    }
  }
  if (::testing::Test::HasFailure()) {
    std::printf("---- controller log (%s) ----\n%s\n", controller_->log_path().c_str(), controller_->Log().c_str());
  }
  controller_->Stop();
  cp().Kubectl({"-n", ns_, "delete", "pods", "--all", "--grace-period=0", "--force", "--wait=false"});
  for (const auto& f : created_fleets_) (void)client()->Delete(kFleets.Path("", f));
  for (const auto& n : created_nodes_) (void)client()->Delete(kNodes.Path("", n));
  IntegrationTest::TearDown();
}

void EngineTest::ForceDeletePodsOnApiOnlyNodes() {
  // No kubelet confirms the end of a Pod on a node made by Nodes() (a Node object only), so a run
  // placed there keeps its finalizer until the wait below gives up (30 s a test): its Pods go at
  // once instead. A Pod on a real kubelet's node ends as the kubelet stops it (RealWorkloadTest
  // waits for that, so that the next test starts on empty machines).
  auto pods = client()->List(kPods.Path(ns_));
  if (!pods.ok()) return;
  std::vector<std::string> args = {"-n", ns_, "delete", "pods", "--grace-period=0", "--force", "--wait=false"};
  const size_t fixed = args.size();
  for (const auto& item : pods->items) {
    const std::string node = json::GetString(json::Find(item, {"spec", "nodeName"}));
    if (std::find(created_nodes_.begin(), created_nodes_.end(), node) != created_nodes_.end()) {
      args.push_back(json::GetString(json::Find(item, {"metadata", "name"})));
    }
  }
  if (args.size() > fixed) cp().Kubectl(args);
}

std::vector<std::string> EngineTest::Nodes(const std::string& pool, int count, const std::string& cpu,
                                           const std::string& memory, int gpus,
                                           const std::map<std::string, std::string>& labels,
                                           const std::map<std::string, std::string>& annotations) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    std::string name = Pool(pool) + "-" + std::to_string(created_nodes_.size());
    std::string label_json = R"("pool":)" + json::Quote(Pool(pool));
    for (const auto& [k, v] : labels) label_json += "," + json::Quote(k) + ":" + json::Quote(v);
    std::string ann_json;
    for (const auto& [k, v] : annotations) ann_json += (ann_json.empty() ? "" : ",") + json::Quote(k) + ":" + json::Quote(v);
    std::string gpu = gpus > 0 ? R"(,"nvidia.com/gpu":")" + std::to_string(gpus) + "\"" : "";
    std::string res = R"({"cpu":")" + cpu + R"(","memory":")" + memory + R"(","pods":"110")" + gpu + "}";
    std::string body = R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name + R"(","labels":{)" + label_json +
                       R"(},"annotations":{)" + ann_json + R"(}},"status":{"capacity":)" + res + R"(,"allocatable":)" + res +
                       R"(,"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}})";
    auto r = client()->Create(kNodes.Path(), body);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    (void)client()->JsonPatch(kNodes.Path("", name), R"([{"op":"remove","path":"/spec/taints"}])");
    created_nodes_.push_back(name);
    names.push_back(name);
  }
  return names;
}

void EngineTest::Fleet(const std::string& name, const std::string& pool, const std::string& extra_spec) {
  std::string yaml = "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + FleetName(name) +
                     "}\nspec:\n  nodeSelector: {pool: " + Pool(pool) + "}\n" + extra_spec;
  CommandResult r = cp().Kubectl({"apply", "-f", "-"}, yaml);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  created_fleets_.push_back(FleetName(name));
  // A run created next must meet a controller that knows the fleet (a run without retry on
  // no-capacity fails at once otherwise): wait until the fleet's status shows this generation
  // (written from the same caches that place runs, nodes included).
  if (controller_ && controller_->Running()) {
    EXPECT_TRUE(Eventually([&] {
      auto f = client()->Get(k8s::resources::kFleets.Path("", FleetName(name)));
      if (!f.ok()) return false;
      const json::Value* observed = json::Find(*f, {"status", "observedGeneration"});
      const json::Value* generation = json::Find(*f, {"metadata", "generation"});
      return observed != nullptr && generation != nullptr && observed->IsInt64() && generation->IsInt64() &&
             observed->GetInt64() >= generation->GetInt64();
    }, std::chrono::seconds(60))) << "the controller never wrote the status of fleet " << FleetName(name);
  }
}

void EngineTest::Run(const std::string& name, const std::string& extra_spec) {
  std::string yaml = "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name + "}\nspec:\n" + extra_spec +
                     "  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n";
  Apply(yaml);
}

json::Document EngineTest::RunDoc(const std::string& name) { return GetRun(name); }

std::string EngineTest::Phase(const std::string& name) {
  auto d = RunDoc(name);
  return d.IsObject() ? json::GetString(json::Find(d, {"status", "phase"})) : "";
}
std::string EngineTest::Reason(const std::string& name) {
  auto d = RunDoc(name);
  return d.IsObject() ? json::GetString(json::Find(d, {"status", "reason"})) : "";
}
std::string EngineTest::Message(const std::string& name) {
  auto d = RunDoc(name);
  return d.IsObject() ? json::GetString(json::Find(d, {"status", "message"})) : "";
}
int64_t EngineTest::StatusInt(const std::string& name, const char* field) {
  auto d = RunDoc(name);
  const json::Value* v = d.IsObject() ? json::Find(d, {"status", field}) : nullptr;
  return v != nullptr && v->IsInt64() ? v->GetInt64() : -1;
}

int EngineTest::CountPhase(const std::string& phase) {
  auto l = client()->List(kRuns.Path(ns_));
  if (!l.ok()) return -1;
  int n = 0;
  for (auto& item : l->items) n += json::GetString(json::Find(item, {"status", "phase"})) == phase;
  return n;
}

std::optional<std::map<int64_t, std::vector<std::string>>> EngineTest::PendingPositions() {
  auto l = client()->List(kRuns.Path(ns_));
  if (!l.ok()) return std::nullopt;
  std::map<int64_t, std::vector<std::string>> out;
  for (auto& item : l->items) {
    if (json::GetString(json::Find(item, {"status", "phase"})) != "Pending") continue;
    if (json::Find(item, {"metadata", "deletionTimestamp"}) != nullptr) continue;
    const json::Value* pos = json::Find(item, {"status", "queuePosition"});
    if (pos == nullptr || !pos->IsInt64()) continue;
    out[pos->GetInt64()].push_back(json::GetString(json::Find(item, {"metadata", "name"})));
  }
  return out;
}

bool EngineTest::PositionsAre(const std::vector<std::string>& in_order) {
  auto shown = PendingPositions();
  if (!shown) return false;
  std::map<int64_t, std::vector<std::string>> want;
  for (size_t i = 0; i < in_order.size(); ++i) want[static_cast<int64_t>(i) + 1] = {in_order[i]};
  return *shown == want;
}

std::vector<std::string> EngineTest::PlacementNodes(const std::string& name) {
  std::vector<std::string> out;
  auto d = RunDoc(name);
  const json::Value* p = d.IsObject() ? json::Find(d, {"status", "placement"}) : nullptr;
  if (p == nullptr || !p->IsArray()) return out;
  for (auto& e : p->GetArray()) out.push_back(json::GetString(e, "node"));
  return out;
}

bool EngineTest::WaitPhase(const std::string& name, const std::string& phase, std::chrono::milliseconds timeout) {
  return Eventually([&] { return Phase(name) == phase; }, timeout);
}

std::map<std::string, json::Document> EngineTest::PodsOf(const std::string& run) {
  std::map<std::string, json::Document> out;
  k8s::ListOptions lo;
  lo.label_selector = "berth.dev/run=" + run;
  auto l = client()->List(kPods.Path(ns_), lo);
  if (!l.ok()) return out;
  for (auto& item : l->items) {
    std::string name = json::GetString(json::Find(item, {"metadata", "name"}));
    out.emplace(name, std::move(item));
  }
  return out;
}

void EngineTest::SetPodPhase(const std::string& pod, const std::string& phase, const std::string& reason) {
  std::string body = R"({"status":{"phase":")" + phase + "\"";
  if (!reason.empty()) body += R"(,"reason":")" + reason + R"(","message":"set by the test kubelet")";
  body += "}}";
  auto r = client()->MergePatch(kPods.Path(ns_, pod, "status"), body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

void EngineTest::SetPodsPhase(const std::string& run, const std::string& phase, const std::string& reason) {
  for (auto& [name, doc] : PodsOf(run)) {
    if (json::GetString(json::Find(doc, {"spec", "nodeName"})).empty()) continue;
    if (json::Find(doc, {"metadata", "deletionTimestamp"}) != nullptr) continue;
    SetPodPhase(name, phase, reason);
  }
}

void EngineTest::StartRun(const std::string& run) {
  ASSERT_TRUE(Eventually([&] {
    auto pods = PodsOf(run);
    int bound = 0;
    for (auto& [n, d] : pods) bound += !json::GetString(json::Find(d, {"spec", "nodeName"})).empty();
    auto doc = RunDoc(run);
    const json::Value* p = doc.IsObject() ? json::Find(doc, {"status", "placement"}) : nullptr;
    return p != nullptr && p->IsArray() && bound == static_cast<int>(p->Size()) && bound > 0;
  })) << run << " never had all its pods bound; phase " << Phase(run) << ": " << Message(run);
  SetPodsPhase(run, "Running");
  ASSERT_TRUE(WaitPhase(run, "Running")) << run << " is " << Phase(run) << ": " << Message(run);
}

void EngineTest::FinishRun(const std::string& run) {
  SetPodsPhase(run, "Succeeded");
  ASSERT_TRUE(WaitPhase(run, "Succeeded")) << run << " is " << Phase(run) << ": " << Message(run);
}

}  // namespace berth::testing
