// The engine (RunController) in-process: whole scenarios on the in-memory API of tests/fakes
// (fakes/fake_api.h) and a fake clock (fakes/fake_wall_clock.h), each in milliseconds. Not an API
// server test: what the real API server does is tested by tests/integration (engine_test,
// faults_test) on kube-apiserver.
//
// The test plays the user (creates Nodes, Fleets, Runs), the kubelet (sets Pod phases, finishes
// Pods being deleted), time (advances the fake clock) and the engine's loop: the engine is stepped
// (RunController::StartStepped), so no loop or writer thread runs; the test makes each pass
// (Pass(now)) and carries out its writes (DrainWrites) on its own thread, after waiting for the
// informers to have handled every watch event the API sent (FakeApi::WaitWatchesIdle: a wait on
// events, never on time). Nothing waits on real time and no assertion is about timing; a check
// that something happens steps passes until it does, at most kMaxSteps of them. What a test checks
// is what a user would check: Run status, Pods, Fleet status, Events.

#include <gtest/gtest.h>

#include "base/memo.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fakes/fake_api.h"
#include "fakes/fake_wall_clock.h"
#include "k8s/client.h"
#include "k8s/json.h"
#include "k8s/timefmt.h"
#include "reconcilers/engine/run_controller.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kEvents;
using k8s::resources::kFleets;
using k8s::resources::kNodes;
using k8s::resources::kPods;
using k8s::resources::kRuns;
using k8s::resources::kTeams;

constexpr const char* kNs = "team";
// Waits for capacity instead of failing NoCapacity.
constexpr const char* kQueueRetry = R"("retry":{"onEvents":["no-capacity"],"duration":"off"})";

// Counts the engine's passes (its metrics hook), so a test can let a few passes go by.
class PassCounter : public reconcilers::EngineObserver {
 public:
  void OnPass(const PassSummary& s) override {
    ++(s.decided ? decided : stood);
    ++passes;
    size_t seen = most_writes_queued.load();
    while (s.writes_queued > seen && !most_writes_queued.compare_exchange_weak(seen, s.writes_queued)) {
    }
  }
  std::atomic<size_t> most_writes_queued{0};  // the engine's writes waiting or in flight after a pass
  void OnAdmitted(std::chrono::milliseconds) override {}
  void OnFinished(const std::string&, const std::string&) override {}
  void OnWriteFailed(const std::string&) override {}
  std::atomic<int> passes{0};
  std::atomic<int> decided{0}, stood{0};  // passes in which the core decided again, or its result stood
};

class EngineInProcess : public ::testing::Test {
 protected:
  EngineInProcess()
      : api_(std::make_shared<FakeApi>(clock_)),
        engine_client_(std::make_shared<k8s::Client>(k8s::ClientConfig{}, api_)),
        user_(std::make_shared<k8s::Client>(k8s::ClientConfig{}, api_)) {
    user_->SetMaxRetries(0);
    // The engine's request retries would sleep on the fake clock in the middle of DrainWrites: a
    // failed request fails its write, which backs off on the clock (KeyedWriter) instead.
    engine_client_->SetClock(clock_);
    engine_client_->SetMaxRetries(0);
  }
  ~EngineInProcess() override {
    if (engine_) engine_->Stop();
    base::SetMemoChecks(false);  // as it was (always on without NDEBUG)
  }

  void StartEngine(reconcilers::EngineOptions options = {}) {
    options.writers = 4;
    options.verify_kept_view = true;  // every kept cluster view is checked against one made anew
    base::SetMemoChecks(true);        // and every read of a memo (base/memo.h) against a value made anew
    engine_ = std::make_unique<reconcilers::RunController>(engine_client_, clock_, options);
    engine_->SetObserver(&passes_);
    engine_->StartStepped();
    Settle();
  }

  // ---- the user ----
  void Node(const std::string& name, const std::string& pool) {
    const std::string res = R"({"cpu":"8","memory":"32Gi","pods":"110"})";
    auto r = user_->Create(kNodes.Path(), R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name +
                                              R"(","labels":{"pool":")" + pool + R"("}},"status":{"capacity":)" + res +
                                              R"(,"allocatable":)" + res +
                                              R"(,"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}})");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  // A fleet of whole machines: one block per node.
  void Fleet(const std::string& name, const std::string& pool) {
    auto r = user_->Create(kFleets.Path(), R"({"apiVersion":"berth.dev/v1alpha1","kind":"Fleet","metadata":{"name":")" +
                                               name + R"("},"spec":{"nodeSelector":{"pool":")" + pool + R"("},"blocks":1}})");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  // `spec` are extra members of the Run's spec (JSON, without braces).
  void Run(const std::string& name, const std::string& spec) {
    auto r = user_->Create(kRuns.Path(kNs), R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":")" +
                                                name + R"("},"spec":{"fleets":["gpu"],)" + spec +
                                                R"(,"template":{"spec":{"containers":[{"name":"main","image":"busybox:1.35"}]}}}})");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  json::Document Get(const std::string& path) {
    auto r = user_->Get(path);
    return r.ok() ? std::move(r).value() : json::Document();
  }
  json::Document RunDoc(const std::string& name) { return Get(kRuns.Path(kNs, name)); }
  std::string StatusString(const std::string& run, const char* field) {
    json::Document d = RunDoc(run);
    return d.IsObject() ? json::GetString(json::Find(d, {"status", field})) : "";
  }
  std::string Phase(const std::string& run) { return StatusString(run, "phase"); }
  int64_t StatusInt(const std::string& run, const char* field) {
    json::Document d = RunDoc(run);
    const json::Value* v = d.IsObject() ? json::Find(d, {"status", field}) : nullptr;
    return v != nullptr && v->IsInt64() ? v->GetInt64() : -1;
  }
  std::vector<std::string> PlacementNodes(const std::string& run) {
    std::vector<std::string> out;
    json::Document d = RunDoc(run);
    const json::Value* p = d.IsObject() ? json::Find(d, {"status", "placement"}) : nullptr;
    if (p != nullptr && p->IsArray()) {
      for (const auto& e : p->GetArray()) out.push_back(json::GetString(e, "node"));
    }
    return out;
  }
  std::string Condition(const std::string& run, const std::string& type) {
    json::Document d = RunDoc(run);
    const json::Value* c = d.IsObject() ? json::Find(d, {"status", "conditions"}) : nullptr;
    if (c == nullptr || !c->IsArray()) return "";
    for (const auto& e : c->GetArray()) {
      if (json::GetString(e, "type") == type) return json::GetString(e, "status");
    }
    return "";
  }
  // The run's Pods (every attempt), by name.
  std::map<std::string, json::Document> Pods(const std::string& run) {
    std::map<std::string, json::Document> out;
    k8s::ListOptions o;
    o.label_selector = "berth.dev/run=" + run;
    auto l = user_->List(kPods.Path(kNs), o);
    if (!l.ok()) return out;
    for (auto& item : l->items) out.emplace(json::GetString(json::Find(item, {"metadata", "name"})), std::move(item));
    return out;
  }
  // Reasons of the Events about a run.
  std::set<std::string> EventReasons(const std::string& run) {
    std::set<std::string> out;
    auto l = user_->List(kEvents.Path(kNs));
    if (!l.ok()) return out;
    for (auto& e : l->items) {
      if (json::GetString(json::Find(e, {"involvedObject", "name"})) == run) out.insert(json::GetString(e, "reason"));
    }
    return out;
  }
  // The Fleet's status.instances[] entry of `node`, as "field" -> integer.
  int64_t InstanceInt(const std::string& fleet, const std::string& node, const char* field) {
    json::Document d = Get(kFleets.Path("", fleet));
    const json::Value* inst = d.IsObject() ? json::Find(d, {"status", "instances"}) : nullptr;
    if (inst == nullptr || !inst->IsArray()) return -1;
    for (const auto& e : inst->GetArray()) {
      if (json::GetString(e, "node") == node) return json::GetInt(e, field, -1);
    }
    return -1;
  }
  std::vector<std::string> CountedRuns(const std::string& fleet, const std::string& node) {
    std::vector<std::string> out;
    json::Document d = Get(kFleets.Path("", fleet));
    const json::Value* inst = d.IsObject() ? json::Find(d, {"status", "instances"}) : nullptr;
    if (inst == nullptr || !inst->IsArray()) return out;
    for (const auto& e : inst->GetArray()) {
      if (json::GetString(e, "node") != node) continue;
      if (const json::Value* c = json::Find(e, {"countedRuns"}); c != nullptr && c->IsArray()) {
        for (const auto& u : c->GetArray()) out.emplace_back(u.GetString());
      }
    }
    return out;
  }

  // ---- the kubelet ----
  // Sets every bound Pod of the run that is not being deleted to `phase`.
  void SetPodsPhase(const std::string& run, const std::string& phase) {
    const std::string state = phase == "Running" ? R"({"running":{"startedAt":"2023-11-14T22:13:20Z"}})"
                                                 : R"({"terminated":{"exitCode":)" + std::string(phase == "Succeeded" ? "0" : "1") +
                                                       R"(,"reason":"Completed"}})";
    for (auto& [name, pod] : Pods(run)) {
      if (json::GetString(json::Find(pod, {"spec", "nodeName"})).empty()) continue;
      if (json::Find(pod, {"metadata", "deletionTimestamp"}) != nullptr) continue;
      auto r = user_->MergePatch(kPods.Path(kNs, name, "status"),
                                 R"({"status":{"phase":")" + phase + R"(","containerStatuses":[{"name":"main","ready":)" +
                                     (phase == "Running" ? "true" : "false") + R"(,"state":)" + state + "}]}}");
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
  }
  // Confirms that the containers of every Pod being deleted stopped (a delete with grace period 0),
  // as a kubelet does; the fake API keeps such Pods until then.
  void FinishDeletedPods() {
    auto l = user_->List(kPods.Path(kNs));
    if (!l.ok()) return;
    for (auto& p : l->items) {
      if (json::Find(p, {"metadata", "deletionTimestamp"}) == nullptr) continue;
      k8s::DeleteOptions o;
      o.grace_period_seconds = 0;
      o.precondition_uid = json::GetString(json::Find(p, {"metadata", "uid"}));
      // Best effort, as a kubelet's: the Pod may be gone already or replaced (uid precondition).
      (void)user_->Delete(kPods.Path(kNs, json::GetString(json::Find(p, {"metadata", "name"}))), o);
    }
  }

  // ---- time ----
  void Advance(std::chrono::milliseconds d) { clock_.Advance(d); }

  // ---- the engine's loop ----
  // The engine's caches show everything the API did so far (every watch event handled).
  void Settle() { api_->WaitWatchesIdle(reconcilers::EngineCaches::kInformers); }
  // One pass at the clock's time, then its writes: carried out (`writes`), as by writers that
  // keep up, or left queued, as behind an API server that answers nothing.
  // Returns how many writes it carried out.
  size_t Step(bool writes = true) {
    Settle();
    engine_->Pass(clock_.Now());
    const size_t ran = writes ? engine_->DrainWrites() : 0;
    Settle();
    return ran;
  }
  // Steps the engine until `done` holds, at most kMaxSteps passes (a scenario's step needs a
  // handful). The kubelet finishes deleted Pods before each pass. A step that wrote nothing and
  // left no change behind waits for the engine's own clock (a failed write backing off): monotonic
  // time moves on by kBackoffTick, the wall clock stands.
  static constexpr int kMaxSteps = 100;
  static constexpr std::chrono::milliseconds kBackoffTick{100};
  bool Eventually(const std::function<bool()>& done) {
    for (int i = 0; i < kMaxSteps; ++i) {
      if (done()) return true;
      FinishDeletedPods();
      if (Step() == 0 && !engine_->PassDue()) clock_.AdvanceMonotonic(kBackoffTick);
    }
    return done();
  }
  // Lets `n` more passes of the engine go by.
  bool LetPassesGo(int n) {
    for (int i = 0; i < n; ++i) Step();
    return true;
  }
  // Steps until the engine has nothing left to do: no change came since the last pass began (the
  // echoes of its own writes included), so its loop would wait for a deadline.
  bool Quiet() {
    for (int i = 0; i < kMaxSteps; ++i) {
      Settle();
      if (!engine_->PassDue()) return true;
      Step();
    }
    return false;
  }
  // The queue view as /queue shows it when asked between passes.
  std::vector<reconcilers::QueueEntry> Queue() {
    engine_->MakeView();
    return engine_->Queue();
  }
  bool WaitPhase(const std::string& run, const std::string& phase) {
    return Eventually([&] { return Phase(run) == phase; });
  }
  // Waits until the run has Pods and every one is bound to a node (the kubelet sees only those).
  bool PodsBound(const std::string& run) {
    return Eventually([&] {
      auto pods = Pods(run);
      for (auto& [n, p] : pods) {
        if (json::GetString(json::Find(p, {"spec", "nodeName"})).empty()) return false;
      }
      return !pods.empty();
    });
  }
  // Starts and finishes a run as its kubelet would.
  void RunToSuccess(const std::string& run) {
    ASSERT_TRUE(PodsBound(run)) << run << ": no bound Pods\n" << Dump();
    SetPodsPhase(run, "Running");
    ASSERT_TRUE(WaitPhase(run, "Running")) << run << " is " << Phase(run);
    SetPodsPhase(run, "Succeeded");
    ASSERT_TRUE(WaitPhase(run, "Succeeded")) << run << " is " << Phase(run);
  }

  // What the API holds and was asked, for failure messages.
  std::string Dump() {
    std::string out = "---- requests (last 60) ----\n";
    auto requests = api_->Requests();
    for (size_t i = requests.size() > 60 ? requests.size() - 60 : 0; i < requests.size(); ++i) out += requests[i] + "\n";
    out += "---- changes (last 30) ----\n";
    auto history = api_->History();
    for (size_t i = history.size() > 30 ? history.size() - 30 : 0; i < history.size(); ++i) {
      out += std::to_string(history[i].resource_version) + " " + history[i].type + " " + history[i].path + " " +
             history[i].object.substr(0, 1500) + "\n";
    }
    return out;
  }

  // Replays every change the API made and returns the largest number of runs that held `node`
  // (Scheduled or Running with it in their placement) at one moment.
  int MostRunsOnNodeAtOnce(const std::string& node) {
    std::map<std::string, bool> on_node;  // run path -> holds the node
    int most = 0;
    for (const auto& c : api_->History()) {
      if (c.path.find("/runs/") == std::string::npos) continue;
      bool holds = false;
      if (c.type != "DELETED") {
        auto d = json::Parse(c.object);
        const std::string phase = d.ok() ? json::GetString(json::Find(*d, {"status", "phase"})) : "";
        const json::Value* p = d.ok() ? json::Find(*d, {"status", "placement"}) : nullptr;
        if ((phase == "Scheduled" || phase == "Running") && p != nullptr && p->IsArray()) {
          for (const auto& e : p->GetArray()) holds |= json::GetString(e, "node") == node;
        }
      }
      on_node[c.path] = holds;
      int now = 0;
      for (const auto& [path, h] : on_node) now += h;
      most = std::max(most, now);
    }
    return most;
  }
  // Pods the API ever created for a run.
  int PodsCreated(const std::string& run) {
    int n = 0;
    for (const auto& c : api_->History()) {
      if (c.type != "ADDED" || c.path.find("/pods/") == std::string::npos) continue;
      auto d = json::Parse(c.object);
      if (d.ok() && json::GetString(json::Find(*d, {"metadata", "labels", "berth.dev/run"})) == run) ++n;
    }
    return n;
  }

  FakeWallClock clock_;
  std::shared_ptr<FakeApi> api_;
  k8s::ClientPtr engine_client_, user_;
  PassCounter passes_;
  std::unique_ptr<reconcilers::RunController> engine_;
};

// Created -> admitted (Scheduled, placement, the Fleet counts it) -> Pods bound to the placed node
// -> Running -> Succeeded.
TEST_F(EngineInProcess, ARunIsAdmittedStartsAndSucceeds) {
  Node("n0", "a100");
  Fleet("gpu", "a100");
  StartEngine();
  Run("train", R"("priority":50)");

  ASSERT_TRUE(WaitPhase("train", "Scheduled")) << Phase("train");
  json::Document run = RunDoc("train");
  const std::string uid = json::GetString(json::Find(run, {"metadata", "uid"}));
  EXPECT_EQ(StatusString("train", "fleet"), "gpu");
  EXPECT_EQ(PlacementNodes("train"), std::vector<std::string>{"n0"});
  EXPECT_FALSE(StatusString("train", "scheduledAt").empty());
  EXPECT_EQ(StatusString("train", "submittedAt"), json::GetString(json::Find(run, {"metadata", "creationTimestamp"})));
  EXPECT_EQ(Condition("train", "Scheduled"), "True");
  const json::Value* finalizers = json::Find(run, {"metadata", "finalizers"});
  ASSERT_TRUE(finalizers != nullptr && finalizers->IsArray() && finalizers->Size() == 1);
  EXPECT_STREQ((*finalizers)[0].GetString(), "berth.dev/run-cleanup");

  // The Fleet counts the run on its instance, and only then are its Pods made and bound.
  ASSERT_TRUE(Eventually([&] { return InstanceInt("gpu", "n0", "runsStarted") == 1; }));
  EXPECT_EQ(CountedRuns("gpu", "n0"), std::vector<std::string>{uid});
  EXPECT_EQ(InstanceInt("gpu", "n0", "busyBlocks"), 1);
  ASSERT_TRUE(Eventually([&] {
    auto pods = Pods("train");
    return pods.size() == 1 && json::GetString(json::Find(pods.begin()->second, {"spec", "nodeName"})) == "n0";
  }));
  auto pods = Pods("train");
  const json::Value* owner = json::Find(pods.begin()->second, {"metadata", "ownerReferences"});
  ASSERT_TRUE(owner != nullptr && owner->IsArray() && owner->Size() == 1);
  EXPECT_EQ(json::GetString((*owner)[0], "uid"), uid);

  SetPodsPhase("train", "Running");
  ASSERT_TRUE(WaitPhase("train", "Running"));
  EXPECT_FALSE(StatusString("train", "startedAt").empty());
  EXPECT_EQ(Condition("train", "Ready"), "True");

  SetPodsPhase("train", "Succeeded");
  ASSERT_TRUE(WaitPhase("train", "Succeeded"));
  EXPECT_FALSE(StatusString("train", "finishedAt").empty());
  EXPECT_EQ(Condition("train", "Finished"), "True");
  EXPECT_TRUE(Eventually([&] { return InstanceInt("gpu", "n0", "busyBlocks") == 0; }));
  EXPECT_TRUE(Eventually([&] {
    auto reasons = EventReasons("train");
    return reasons.count("Scheduled") && reasons.count("Started") && reasons.count("Succeeded");
  }));
  EXPECT_EQ(PodsCreated("train"), 1);
}

// Issue 29, item 6: the cache does not keep a template larger than kKeptTemplateBytes; the run's
// Pod is made from the whole template, read with the run when the Pod is made.
TEST_F(EngineInProcess, APodIsMadeFromAWholeTemplateTheCacheDoesNotKeep) {
  Node("n0", "a100");
  Fleet("gpu", "a100");
  StartEngine();
  const std::string payload(2 * reconcilers::kKeptTemplateBytes, 'p');
  auto r = user_->Create(kRuns.Path(kNs), R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":"big"},)"
                                          R"("spec":{"fleets":["gpu"],"template":{"spec":{"containers":[{"name":"main",)"
                                          R"("image":"busybox:1.35","env":[{"name":"PAYLOAD","value":")" + payload + R"("}]}]}}}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(Eventually([&] { return Pods("big").size() == 1; })) << Phase("big");
  const auto pods = Pods("big");  // the documents the pointers below point into
  const json::Value* env = json::Find(pods.begin()->second, {"spec", "containers"});
  ASSERT_TRUE(env != nullptr && env->IsArray() && env->Size() == 1);
  env = json::Find((*env)[0], {"env"});
  ASSERT_TRUE(env != nullptr && env->IsArray() && env->Size() > 0);
  EXPECT_EQ(json::GetString((*env)[0], "name"), "PAYLOAD");
  EXPECT_EQ(json::GetString((*env)[0], "value"), payload);
}

// Two runs wait for the one block: the higher priority goes first; within a priority, the one
// submitted first.
TEST_F(EngineInProcess, HigherPriorityFirstAndFifoWithinAPriority) {
  Node("n0", "a100");
  Fleet("gpu", "a100");
  StartEngine();
  Run("blocker", std::string(R"("priority":50,)") + kQueueRetry);
  ASSERT_TRUE(WaitPhase("blocker", "Scheduled"));
  Run("early-low", std::string(R"("priority":30,)") + kQueueRetry);
  clock_.Advance(std::chrono::seconds(1));  // creationTimestamp has whole seconds
  Run("high-a", std::string(R"("priority":90,)") + kQueueRetry);
  clock_.Advance(std::chrono::seconds(1));
  Run("high-b", std::string(R"("priority":90,)") + kQueueRetry);

  // What `kubectl get runs` shows: the queue in order.
  EXPECT_TRUE(Eventually([&] {
    return StatusInt("high-a", "queuePosition") == 1 && StatusInt("high-b", "queuePosition") == 2 &&
           StatusInt("early-low", "queuePosition") == 3;
  })) << StatusInt("high-a", "queuePosition") << " " << StatusInt("high-b", "queuePosition") << " "
      << StatusInt("early-low", "queuePosition");
  EXPECT_EQ(StatusString("early-low", "reason"), "NoCapacity");

  std::string current = "blocker";
  for (const std::string next : {"high-a", "high-b", "early-low"}) {
    RunToSuccess(current);
    ASSERT_TRUE(WaitPhase(next, "Scheduled")) << next << " is " << Phase(next);
    for (const std::string other : {"high-a", "high-b", "early-low"}) {
      if (other != next && Phase(other) != "Succeeded") {
        EXPECT_EQ(Phase(other), "Pending") << other;
      }
    }
    current = next;
  }
  EXPECT_EQ(MostRunsOnNodeAtOnce("n0"), 1);
  EXPECT_TRUE(Eventually([&] { return InstanceInt("gpu", "n0", "runsStarted") == 4; }));
}

// A priority patch of a queued run (issue 16): the queue view (/queue) shows the run in its new
// place, and keeps showing it there (never back in its old place) while the passes re-place it
// in the queue and write its status; then it is admitted first.
TEST_F(EngineInProcess, APriorityPatchMovesAQueuedRunInTheQueueViewForGood) {
  Node("n0", "a100");
  Fleet("gpu", "a100");
  StartEngine();
  Run("blocker", std::string(R"("priority":50,)") + kQueueRetry);
  ASSERT_TRUE(WaitPhase("blocker", "Scheduled"));
  for (const std::string name : {"low", "mid", "high"}) {
    const int prio = name == "low" ? 10 : name == "mid" ? 20 : 30;
    Run(name, "\"priority\":" + std::to_string(prio) + "," + kQueueRetry);
    clock_.Advance(std::chrono::seconds(1));
  }
  auto order_of = [](const std::vector<reconcilers::QueueEntry>& view) {
    std::string out;
    int64_t expected = 0;
    for (const auto& e : view) {
      if (e.position != ++expected) return std::string("bad positions");
      out += (out.empty() ? "" : ",") + e.name + ":" + std::to_string(e.effective_priority);
    }
    return out;
  };
  auto order = [&] { return order_of(Queue()); };
  ASSERT_TRUE(Eventually([&] { return order() == "high:30,mid:20,low:10"; })) << order();

  auto r = user_->MergePatch(kRuns.Path(kNs, "low"), R"({"spec":{"priority":90}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  r = user_->MergePatch(kRuns.Path(kNs, "high"), R"({"spec":{"priority":0}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(Eventually([&] { return order() == "low:90,mid:20,high:0"; })) << order();
  // From now on the view never shows another order, whatever the passes do: a reader (/queue on
  // an HTTP thread) samples the view as made or moved so far, during the passes too.
  std::atomic<bool> sampling{true};
  std::atomic<int> other_orders{0};
  std::thread sampler([&] {
    while (sampling) {
      if (order_of(engine_->Queue()) != "low:90,mid:20,high:0") ++other_orders;
      std::this_thread::yield();
    }
  });
  EXPECT_TRUE(LetPassesGo(5));
  // The passes wrote what the view showed.
  EXPECT_TRUE(Eventually([&] {
    return StatusInt("low", "queuePosition") == 1 && StatusInt("mid", "queuePosition") == 2 &&
           StatusInt("high", "queuePosition") == 3 && StatusInt("low", "effectivePriority") == 90;
  })) << StatusInt("low", "queuePosition") << " " << StatusInt("high", "queuePosition");
  EXPECT_TRUE(LetPassesGo(2));
  sampling = false;
  sampler.join();
  EXPECT_EQ(other_orders.load(), 0);
  EXPECT_EQ(order(), "low:90,mid:20,high:0");
  RunToSuccess("blocker");
  ASSERT_TRUE(WaitPhase("low", "Scheduled")) << Phase("low");
  EXPECT_EQ(Phase("mid"), "Pending");
  EXPECT_EQ(Phase("high"), "Pending");
}

// A node that disappears under a running run is an interruption: with retry on interruption the
// run goes back to the queue (after its backoff) and is placed on the node that is left.
TEST_F(EngineInProcess, ARunInterruptedByANodeLossIsRetriedElsewhere) {
  Node("n0", "a100");
  Node("n1", "a100");
  Fleet("gpu", "a100");
  StartEngine();
  Run("job", R"("retry":{"onEvents":["interruption"],"duration":"1h"})");
  ASSERT_TRUE(WaitPhase("job", "Scheduled"));
  const std::vector<std::string> first = PlacementNodes("job");
  ASSERT_EQ(first.size(), 1u);
  const std::string lost = first[0], other = lost == "n0" ? "n1" : "n0";
  ASSERT_TRUE(PodsBound("job"));
  EXPECT_EQ(Pods("job").size(), 1u);
  SetPodsPhase("job", "Running");
  ASSERT_TRUE(WaitPhase("job", "Running"));

  ASSERT_TRUE(user_->Delete(kNodes.Path("", lost)).ok());
  ASSERT_TRUE(Eventually([&] { return Phase("job") == "Pending" && StatusInt("job", "resubmissions") == 1; }))
      << Phase("job") << " " << StatusString("job", "message");
  EXPECT_EQ(StatusString("job", "reason"), "Interrupted");
  EXPECT_EQ(StatusInt("job", "retryBackoffSeconds"), 10);
  EXPECT_FALSE(StatusString("job", "retryAfter").empty());
  EXPECT_TRUE(PlacementNodes("job").empty());
  // The interrupted attempt's Pod is stopped (the kubelet stand-in confirms it).
  EXPECT_TRUE(Eventually([&] { return Pods("job").empty(); }));
  EXPECT_EQ(Phase("job"), "Pending");  // still backing off: the fake clock has not moved

  Advance(std::chrono::seconds(11));
  ASSERT_TRUE(WaitPhase("job", "Scheduled")) << StatusString("job", "message");
  EXPECT_EQ(PlacementNodes("job"), std::vector<std::string>{other});
  ASSERT_TRUE(Eventually([&] {
    auto pods = Pods("job");
    return pods.size() == 1 && pods.count("job-0-r1") &&
           json::GetString(json::Find(pods.begin()->second, {"spec", "nodeName"})) == other;
  }));
  EXPECT_TRUE(Eventually([&] { return EventReasons("job").count("Retrying") > 0; }));
  RunToSuccess("job");
  EXPECT_EQ(StatusInt("job", "resubmissions"), 1);
}

// maxDuration counts from startedAt on the engine's clock: moving the fake clock past it ends the
// run with MaxDurationExceeded and stops its Pods.
// A Running run that needs nothing is left alone by later passes (issue 16: Quiet), yet still
// notices what changes under it: a node leaving the fleet by its labels, and a Fleet whose
// nodeSelector no longer selects the run's node. Each ends the attempt as an interruption.
TEST_F(EngineInProcess, ALeftAloneRunStillSeesItsNodeAndFleetChange) {
  Node("n0", "a100");
  Node("n1", "a100");
  Fleet("gpu", "a100");
  StartEngine();
  Run("first", R"("retry":{"onEvents":["interruption"],"duration":"1h"})");
  Run("second", R"("retry":{"onEvents":["interruption"],"duration":"1h"})");
  ASSERT_TRUE(WaitPhase("first", "Scheduled"));
  ASSERT_TRUE(WaitPhase("second", "Scheduled"));
  ASSERT_TRUE(PodsBound("first"));
  ASSERT_TRUE(PodsBound("second"));
  SetPodsPhase("first", "Running");
  SetPodsPhase("second", "Running");
  ASSERT_TRUE(WaitPhase("first", "Running"));
  ASSERT_TRUE(WaitPhase("second", "Running"));
  ASSERT_TRUE(LetPassesGo(3));  // visited once more with nothing to do: left alone from now on
  EXPECT_EQ(Phase("first"), "Running");
  EXPECT_EQ(Phase("second"), "Running");

  // The node of `first` loses the fleet's label.
  const std::string node = PlacementNodes("first").at(0);
  auto r = user_->MergePatch(kNodes.Path("", node), R"({"metadata":{"labels":{"pool":"other"}}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(Eventually([&] { return StatusInt("first", "resubmissions") == 1; })) << StatusString("first", "message");
  EXPECT_EQ(StatusString("first", "reason"), "Interrupted");
  EXPECT_NE(StatusString("first", "message").find("no longer in a fleet"), std::string::npos)
      << StatusString("first", "message");
  EXPECT_EQ(Phase("second"), "Running");

  // The Fleet's selector changes: `second`'s node is no longer in it.
  ASSERT_TRUE(LetPassesGo(3));
  r = user_->MergePatch(kFleets.Path("", "gpu"), R"({"spec":{"nodeSelector":{"pool":"h100"}}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(Eventually([&] { return StatusInt("second", "resubmissions") == 1; })) << StatusString("second", "message");
  EXPECT_EQ(StatusString("second", "reason"), "Interrupted");
}

// A pending run the passes found queueable is not decided again while nothing of it changed
// ("Incremental passes"): what it does not own changing still reaches it, here its namespace's
// priority cap and a Pod of it that should not exist.
TEST_F(EngineInProcess, AQueuedRunLeftAloneStillSeesItsNamespaceCapAndItsPods) {
  Node("n0", "a100");
  Fleet("gpu", "a100");
  ASSERT_TRUE(user_->Create(k8s::resources::kNamespaces.Path(), R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" +
                                                                    std::string(kNs) + R"("}})")
                  .ok());
  StartEngine();
  Run("blocker", kQueueRetry);
  ASSERT_TRUE(WaitPhase("blocker", "Scheduled"));
  Run("waiter", std::string(R"("priority":90,)") + kQueueRetry);
  ASSERT_TRUE(Eventually([&] { return StatusString("waiter", "reason") == "NoCapacity"; }));
  auto queued_priority = [&] {
    for (const auto& e : Queue()) {
      if (e.name == "waiter") return e.priority;
    }
    return -1;
  };
  ASSERT_TRUE(LetPassesGo(3));  // decided, then left alone
  EXPECT_EQ(queued_priority(), 90);

  auto r = user_->MergePatch(k8s::resources::kNamespaces.Path("", kNs),
                             R"({"metadata":{"labels":{"berth.dev/max-priority":"20"}}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(Eventually([&] { return queued_priority() == 20; })) << queued_priority();

  // A Pod of the waiting run (left by an older controller, say) is deleted: a queued run has none.
  ASSERT_TRUE(LetPassesGo(3));
  const std::string uid = json::GetString(json::Find(RunDoc("waiter"), {"metadata", "uid"}));
  r = user_->Create(kPods.Path(kNs),
                    R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"waiter-0","labels":{"berth.dev/run":"waiter","berth.dev/attempt":"0"},)"
                    R"("ownerReferences":[{"apiVersion":"berth.dev/v1alpha1","kind":"Run","name":"waiter","uid":")" +
                        uid + R"(","controller":true}]},"spec":{"containers":[{"name":"main","image":"busybox:1.35"}]}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(Eventually([&] { return Pods("waiter").empty(); })) << Dump();
  EXPECT_EQ(Phase("waiter"), "Pending");
}

// A placed run's record for the cluster view is kept from pass to pass (Memo::placed), but not
// past a change of its namespace's priority cap: capped below a waiting run of another namespace,
// it is preempted by it.
TEST_F(EngineInProcess, APlacedRunLeftAloneStillSeesItsNamespaceCap) {
  Node("n0", "a100");
  auto f = user_->Create(kFleets.Path(), R"({"apiVersion":"berth.dev/v1alpha1","kind":"Fleet","metadata":{"name":"gpu"},)"
                                         R"("spec":{"nodeSelector":{"pool":"a100"},"blocks":1,"preemption":{"policy":"LowerPriority","minRuntime":"1m"}}})");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  for (const std::string& ns : {std::string(kNs), std::string("other")}) {
    ASSERT_TRUE(user_->Create(k8s::resources::kNamespaces.Path(),
                              R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + ns + R"("}})")
                    .ok());
  }
  StartEngine();
  Run("low", R"("priority":80,"retry":{"onEvents":["interruption"],"duration":"off"})");
  ASSERT_TRUE(PodsBound("low"));
  SetPodsPhase("low", "Running");
  ASSERT_TRUE(WaitPhase("low", "Running"));
  Advance(std::chrono::minutes(2));  // past minRuntime
  auto r = user_->Create(kRuns.Path("other"),
                         std::string(R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":"high"},)") +
                             R"("spec":{"fleets":["gpu"],"priority":50,)" + kQueueRetry +
                             R"(,"template":{"spec":{"containers":[{"name":"main","image":"busybox:1.35"}]}}}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto high_reason = [&] { return json::GetString(json::Find(Get(kRuns.Path("other", "high")), {"status", "reason"})); };
  ASSERT_TRUE(Eventually([&] { return high_reason() == "NoCapacity"; })) << Dump();
  ASSERT_TRUE(LetPassesGo(3));  // low is left alone: 80 > 50
  EXPECT_EQ(Phase("low"), "Running");

  r = user_->MergePatch(k8s::resources::kNamespaces.Path("", kNs), R"({"metadata":{"labels":{"berth.dev/max-priority":"30"}}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(Eventually([&] { return StatusString("low", "reason") == "Preempted"; })) << Dump();
}

// Runs submitted at once are each shown their waiting status, without the engine queueing one
// write per run at once: at most waiting_writes_queued wait for a writer, the rest follow as the
// API server takes them (here, for a few passes, no write is carried out: an API server that
// answers nothing).
TEST_F(EngineInProcess, ManyRunsSubmittedAtOnceGetTheirWaitingStatusWithBoundedWrites) {
  Node("n0", "a100");
  Fleet("gpu", "a100");
  reconcilers::EngineOptions options;
  options.waiting_writes_queued = 3;
  options.position_limit = 1;  // the others' status is ApplyWaiting's (the positions writer's for place 1)
  StartEngine(options);
  Run("blocker", kQueueRetry);
  ASSERT_TRUE(WaitPhase("blocker", "Scheduled"));
  ASSERT_TRUE(Quiet());
  constexpr int kRuns = 40;
  for (int i = 0; i < kRuns; ++i) Run("wait-" + std::to_string(i), kQueueRetry);
  for (int i = 0; i < 5; ++i) Step(/*writes=*/false);
  EXPECT_EQ(Queue().size(), static_cast<size_t>(kRuns));
  passes_.most_writes_queued = 0;
  for (int i = 0; i < 3; ++i) Step(/*writes=*/false);
  // Queued: 3 waiting statuses, the queue-position writer, perhaps the Fleet's.
  EXPECT_GE(passes_.most_writes_queued.load(), 1u);
  EXPECT_LE(passes_.most_writes_queued.load(), 8u);
  // The API server answers again.
  EXPECT_TRUE(Eventually([&] {
    for (int i = 0; i < kRuns; ++i) {
      if (StatusString("wait-" + std::to_string(i), "reason") != "NoCapacity") return false;
    }
    return true;
  }));
}

// The queue view (Queue(), what /queue serves) is made when asked for, from the last pass: asked
// between passes, with nothing changing, one call answers with every queued run in queue order
// and why it waits (the loop makes it while idle; it is not made by passes nobody asked after).
TEST_F(EngineInProcess, TheQueueViewAskedForBetweenPassesShowsTheLastPass) {
  Node("n0", "a100");
  Fleet("gpu", "a100");
  StartEngine();
  Run("blocker", kQueueRetry);
  ASSERT_TRUE(WaitPhase("blocker", "Scheduled"));
  for (const auto& [name, priority] : std::vector<std::pair<std::string, int>>{{"a", 10}, {"b", 30}, {"c", 20}}) {
    Run(name, "\"priority\":" + std::to_string(priority) + "," + kQueueRetry);
    clock_.Advance(std::chrono::seconds(1));
  }
  ASSERT_TRUE(Eventually([&] {
    for (const std::string name : {"a", "b", "c"}) {
      if (StatusString(name, "reason") != "NoCapacity") return false;
    }
    return true;
  }));
  // Until the passes stop (their own writes' echoes end): the loop would be idle, the view stale.
  ASSERT_TRUE(Quiet());
  const std::vector<reconcilers::QueueEntry> queue = Queue();
  ASSERT_EQ(queue.size(), 3u);
  const std::vector<std::string> order{"b", "c", "a"};
  for (size_t i = 0; i < queue.size(); ++i) {
    EXPECT_EQ(queue[i].name, order[i]);
    EXPECT_EQ(queue[i].position, static_cast<int64_t>(i) + 1);
    EXPECT_EQ(queue[i].reason, "NoCapacity");
    EXPECT_NE(queue[i].message.find("largest free is 0"), std::string::npos) << queue[i].message;
  }
}

// The scheduling core decides again only when its input or the time may give another result
// (CoreResultStands): a change to a waiting run that leaves its queue entry as it was (a label)
// makes passes in which the last result stands; a priority patch, the clock passing
// status_refresh and a new node each make it decide again, and what it then decides follows the
// change.
TEST_F(EngineInProcess, TheCoreDecidesAgainOnlyWhenTheQueueTheClusterOrTheTimeMoved) {
  Node("n0", "a100");
  Fleet("gpu", "a100");
  StartEngine();
  Run("blocker", kQueueRetry);
  ASSERT_TRUE(WaitPhase("blocker", "Scheduled"));
  Run("a", std::string(R"("priority":10,)") + kQueueRetry);
  clock_.Advance(std::chrono::seconds(1));
  Run("b", std::string(R"("priority":10,)") + kQueueRetry);
  ASSERT_TRUE(Eventually([&] { return StatusString("a", "reason") == "NoCapacity" && StatusString("b", "reason") == "NoCapacity"; }));
  // Until the passes stop (their own writes' echoes end).
  ASSERT_TRUE(Quiet());
  EXPECT_EQ(StatusInt("a", "queuePosition"), 1);
  EXPECT_EQ(StatusInt("b", "queuePosition"), 2);

  // A label on a waiting run: its object changes (the pass reconciles it), its queue entry not.
  int decided = passes_.decided.load();
  const int stood = passes_.stood.load();
  auto r = user_->MergePatch(kRuns.Path(kNs, "b"), R"({"metadata":{"labels":{"team":"vision"}}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(LetPassesGo(3));
  EXPECT_EQ(passes_.decided.load(), decided) << "nothing the core reads changed";
  EXPECT_GE(passes_.stood.load(), stood + 3);
  EXPECT_EQ(StatusString("b", "reason"), "NoCapacity");

  // A priority patch: the queue changed, the core decides again, b goes first.
  r = user_->MergePatch(kRuns.Path(kNs, "b"), R"({"spec":{"priority":20}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(Eventually([&] { return StatusInt("b", "queuePosition") == 1 && StatusInt("a", "queuePosition") == 2; }))
      << Dump();
  EXPECT_GT(passes_.decided.load(), decided);

  // The clock passes status_refresh (5 s by default) with nothing else changed: decided again.
  ASSERT_TRUE(Quiet());
  decided = passes_.decided.load();
  Advance(std::chrono::seconds(6));
  Step();
  EXPECT_EQ(passes_.decided.load(), decided + 1);

  // Room on a new node: the core decides again and places the first in the queue.
  Node("n1", "a100");
  ASSERT_TRUE(WaitPhase("b", "Scheduled")) << Dump();
  ASSERT_TRUE(LetPassesGo(2));
  EXPECT_EQ(Phase("a"), "Pending");
  EXPECT_EQ(StatusString("a", "reason"), "NoCapacity");
}

// The instances' states in the Fleet status are kept from pass to pass while the cluster view is
// (described_), but not past an instance's end of life: with nothing else changing, the clock
// passing a node's berth.dev/expires-at shows it Expired, and a run that would fit it waits.
TEST_F(EngineInProcess, AnInstanceShowsExpiredWhenTheClockPassesItsEndOfLife) {
  const std::string res = R"({"cpu":"8","memory":"32Gi","pods":"110"})";
  const std::string end = k8s::FormatRfc3339(clock_.Now() + std::chrono::hours(1));
  auto r = user_->Create(kNodes.Path(), R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"spot","labels":{"pool":"a100"},)"
                                        R"("annotations":{"berth.dev/expires-at":")" + end + R"("}},"status":{"capacity":)" + res +
                                            R"(,"allocatable":)" + res +
                                            R"(,"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Fleet("gpu", "a100");
  StartEngine();
  auto state = [&] {
    json::Document d = Get(kFleets.Path("", "gpu"));
    const json::Value* inst = d.IsObject() ? json::Find(d, {"status", "instances"}) : nullptr;
    return inst != nullptr && inst->IsArray() && inst->Size() == 1 ? json::GetString((*inst)[0], "state") : std::string();
  };
  ASSERT_TRUE(Eventually([&] { return state() == "Idle"; })) << state();
  ASSERT_TRUE(LetPassesGo(3));
  EXPECT_EQ(state(), "Idle");

  Advance(std::chrono::minutes(61));
  EXPECT_TRUE(Eventually([&] { return state() == "Expired"; })) << state() << "\n" << Dump();
  Run("late", kQueueRetry);
  EXPECT_TRUE(Eventually([&] { return StatusString("late", "reason") == "NoCapacity"; })) << StatusString("late", "message");
  EXPECT_EQ(Phase("late"), "Pending");
}

TEST_F(EngineInProcess, MaxDurationEndsARunWhenTheClockPassesIt) {
  Node("n0", "a100");
  Fleet("gpu", "a100");
  StartEngine();
  Run("bounded", R"("maxDuration":"1h")");
  ASSERT_TRUE(PodsBound("bounded"));
  SetPodsPhase("bounded", "Running");
  ASSERT_TRUE(WaitPhase("bounded", "Running"));

  Advance(std::chrono::hours(1) + std::chrono::seconds(1));
  ASSERT_TRUE(WaitPhase("bounded", "Failed")) << StatusString("bounded", "message");
  EXPECT_EQ(StatusString("bounded", "reason"), "MaxDurationExceeded");
  EXPECT_FALSE(StatusString("bounded", "finishedAt").empty());
  EXPECT_EQ(Condition("bounded", "Finished"), "True");
  EXPECT_TRUE(Eventually([&] { return Pods("bounded").empty(); }));
  EXPECT_TRUE(Eventually([&] { return InstanceInt("gpu", "n0", "busyBlocks") == 0; }));
  EXPECT_TRUE(Eventually([&] { return EventReasons("bounded").count("MaxDurationExceeded") > 0; }));
}

// Start-time estimates (issue 33): a waiting run shows when it is expected to start (behind a run
// with a maxDuration of 30m: 30 minutes after that one was placed); the run ahead finishes early:
// the first waiting run is placed (and shows no estimate), and the second one's estimate moves
// earlier. Forecasts are handed over at most every --estimate-interval (30s) on the fake clock.
TEST_F(EngineInProcess, AWaitingRunShowsItsEstimatedStartWhichMovesWhenTheRunAheadEndsEarly) {
  using std::chrono::minutes;
  using std::chrono::seconds;
  Node("n0", "a100");
  Fleet("gpu", "a100");
  StartEngine();
  Run("long", R"("maxDuration":"30m")");
  ASSERT_TRUE(PodsBound("long"));
  SetPodsPhase("long", "Running");
  ASSERT_TRUE(WaitPhase("long", "Running"));
  // Its maxDuration counts from when it started (the fake clock has not moved since its placement).
  const auto placed = k8s::ParseRfc3339(StatusString("long", "startedAt"));
  ASSERT_TRUE(placed.ok());
  Run("w1", std::string(R"("priority":60,"maxDuration":"1h",)") + kQueueRetry);
  Run("w2", std::string(R"("priority":40,"maxDuration":"1h",)") + kQueueRetry);
  const auto estimate = [&](const std::string& run) -> std::optional<k8s::TimePoint> {
    auto at = k8s::ParseRfc3339(StatusString(run, "estimatedStartAt"));
    return at.ok() ? std::optional<k8s::TimePoint>(*at) : std::nullopt;
  };
  ASSERT_TRUE(Eventually([&] { return StatusString("w2", "reason") == "NoCapacity"; }));
  Advance(seconds(31));  // the next forecast is due
  ASSERT_TRUE(Eventually([&] { return estimate("w1") && estimate("w2"); })) << Dump();
  EXPECT_EQ(*estimate("w1"), *placed + minutes(30)) << "when the run ahead reaches its maxDuration";
  EXPECT_EQ(*estimate("w2"), *placed + minutes(90)) << "after w1's hour";
  EXPECT_EQ(StatusString("w1", "message").find("estimated start unknown"), std::string::npos);

  // The run ahead finishes 31 seconds in: w1 is placed at once, w2's estimate moves 29 minutes earlier.
  SetPodsPhase("long", "Succeeded");
  ASSERT_TRUE(WaitPhase("long", "Succeeded"));
  ASSERT_TRUE(WaitPhase("w1", "Scheduled")) << Dump();
  EXPECT_EQ(StatusString("w1", "estimatedStartAt"), "") << "only a Pending run shows one";
  const auto w1_placed = k8s::ParseRfc3339(StatusString("w1", "scheduledAt"));
  ASSERT_TRUE(w1_placed.ok());
  Advance(seconds(31));
  ASSERT_TRUE(Eventually([&] { return estimate("w2") && *estimate("w2") < *placed + minutes(90); })) << Dump();
  EXPECT_EQ(*estimate("w2"), *w1_placed + minutes(60)) << "after w1's hour, from when w1 was placed (it has not started)";
  EXPECT_EQ(Phase("w2"), "Pending");
}

// The forecast's depth (docs/scheduling.md): with estimate_depth 1 only the first waiting run gets
// an estimate; the one behind it says why it has none. When the run ahead of the queue is placed,
// the other comes within the depth and gets its estimate.
TEST_F(EngineInProcess, ARunFurtherBackThanTheForecastLooksSaysSoInsteadOfAnEstimate) {
  using std::chrono::minutes;
  using std::chrono::seconds;
  Node("n0", "a100");
  Fleet("gpu", "a100");
  reconcilers::EngineOptions options;
  options.estimate_depth = 1;
  StartEngine(options);
  Run("long", R"("maxDuration":"30m")");
  ASSERT_TRUE(PodsBound("long"));
  SetPodsPhase("long", "Running");
  ASSERT_TRUE(WaitPhase("long", "Running"));
  Run("w1", std::string(R"("priority":60,"maxDuration":"1h",)") + kQueueRetry);
  Run("w2", std::string(R"("priority":40,"maxDuration":"1h",)") + kQueueRetry);
  ASSERT_TRUE(Eventually([&] { return StatusString("w2", "reason") == "NoCapacity"; }));
  Advance(seconds(31));  // the next forecast is due
  const std::string further_back = "estimated start unknown: more runs wait ahead of it than the forecast looks at";
  ASSERT_TRUE(Eventually([&] { return !StatusString("w1", "estimatedStartAt").empty(); })) << Dump();
  // w2's message changes with nothing else in its status: seen at its next look (status_refresh).
  Advance(seconds(6));
  ASSERT_TRUE(Eventually([&] { return StatusString("w2", "message").find(further_back) != std::string::npos; })) << Dump();
  EXPECT_EQ(StatusString("w2", "estimatedStartAt"), "");
  EXPECT_EQ(StatusString("w1", "message").find("estimated start unknown"), std::string::npos);

  SetPodsPhase("long", "Succeeded");
  ASSERT_TRUE(WaitPhase("w1", "Scheduled")) << Dump();
  Advance(seconds(31));
  ASSERT_TRUE(Eventually([&] { return !StatusString("w2", "estimatedStartAt").empty(); })) << Dump();
  EXPECT_EQ(StatusString("w2", "message").find(further_back), std::string::npos);
}

// With one periodic look a pass (refreshes_per_pass = 1: the others are put off to the next
// passes), deadlines and changes are still carried out: the runs at their maxDuration end, and
// the waiting runs take their places.
TEST_F(EngineInProcess, PeriodicLooksPutOffToLaterPassesDelayNoDeadline) {
  Node("n0", "a100");
  Node("n1", "a100");
  Fleet("gpu", "a100");
  reconcilers::EngineOptions options;
  options.refreshes_per_pass = 1;
  StartEngine(options);
  for (const std::string name : {"a", "b"}) {
    Run(name, R"("maxDuration":"1h")");
    ASSERT_TRUE(PodsBound(name));
    SetPodsPhase(name, "Running");
    ASSERT_TRUE(WaitPhase(name, "Running"));
  }
  for (int i = 0; i < 4; ++i) Run("w" + std::to_string(i), kQueueRetry);
  ASSERT_TRUE(Eventually([&] {
    for (int i = 0; i < 4; ++i) {
      if (StatusString("w" + std::to_string(i), "reason") != "NoCapacity") return false;
    }
    return true;
  }));
  // Every periodic look comes due (placed and waiting runs alike), then the runs' end.
  Advance(std::chrono::seconds(6));
  ASSERT_TRUE(LetPassesGo(4));
  EXPECT_EQ(Phase("a"), "Running");
  EXPECT_EQ(Phase("w0"), "Pending");
  Advance(std::chrono::hours(1));
  for (const std::string name : {"a", "b"}) {
    EXPECT_TRUE(WaitPhase(name, "Failed")) << name << ": " << StatusString(name, "message");
    EXPECT_EQ(StatusString(name, "reason"), "MaxDurationExceeded");
  }
  // Their blocks go to the first two in the queue once their Pods are gone.
  EXPECT_TRUE(WaitPhase("w0", "Scheduled")) << Dump();
  EXPECT_TRUE(WaitPhase("w1", "Scheduled")) << Dump();
  ASSERT_TRUE(LetPassesGo(2));
  EXPECT_EQ(Phase("w2"), "Pending");
  EXPECT_EQ(StatusString("w2", "reason"), "NoCapacity");
}

// The reply to the status write that admits a run is lost after the API applied it (the write's
// outcome is unknown, as when the client's retry meets its own result with 409), and the engine's watch lags behind, so its cache still
// shows the run Pending. The engine keeps the run's block until it knows (a GET says the write was
// applied; the cache catches up later): a higher-priority run that becomes eligible meanwhile is
// not given the same block. What it checks is the property over every moment of the API's history,
// not one mechanism: with the engine changed to treat the 409 as a refusal (blocks released at
// once) it still passed (2026-11-25), because the engine's admission of "urgent" was then guarded
// by a version of "urgent" the engine had itself overwritten meanwhile, and the API refused it.
TEST_F(EngineInProcess, AnAmbiguousAdmissionWriteNeverGivesABlockTwice) {
  Node("n0", "a100");
  Fleet("gpu", "a100");
  // "urgent" outranks "first" but is backing off after an earlier attempt (as a controller before
  // this one left it) until 5 s from now.
  Run("urgent", std::string(R"("priority":90,)") + kQueueRetry);
  auto seeded = user_->MergePatch(
      kRuns.Path(kNs, "urgent", "status"),
      R"({"status":{"phase":"Pending","reason":"Interrupted","resubmissions":1,"retryBackoffSeconds":5,"retryAfter":")" +
          k8s::FormatRfc3339(clock_.Now() + std::chrono::seconds(5)) + R"("}})");
  ASSERT_TRUE(seeded.ok()) << seeded.status().ToString();
  clock_.Advance(std::chrono::seconds(1));
  Run("first", kQueueRetry);
  api_->DropReplyAfterApply({"PATCH", kRuns.Path(kNs, "first", "status"),
                             [](const k8s::HttpRequest& r) { return r.body.find(R"("phase":"Scheduled")") != std::string::npos; }},
                            1);
  api_->HoldWatches();  // the engine lists everything, then sees no change until ReleaseWatches
  StartEngine();

  // "first" is admitted in the API; the reply was lost, and the engine asked with a GET.
  ASSERT_TRUE(WaitPhase("first", "Scheduled"));
  const std::string get_first = "GET " + kRuns.Path(kNs, "first");
  ASSERT_TRUE(Eventually([&] {
    auto requests = api_->Requests();
    return std::find(requests.begin(), requests.end(), get_first) != requests.end();
  }));
  EXPECT_EQ(api_->FaultsFired(), 1);

  // "urgent" may queue again: it waits, it is not placed on n0.
  Advance(std::chrono::seconds(6));
  ASSERT_TRUE(Eventually([&] { return StatusString("urgent", "reason") == "NoCapacity" || Phase("urgent") == "Scheduled"; }));
  ASSERT_TRUE(LetPassesGo(20));
  EXPECT_EQ(Phase("urgent"), "Pending") << StatusString("urgent", "message");
  EXPECT_EQ(Phase("first"), "Scheduled");
  EXPECT_TRUE(Pods("urgent").empty());
  EXPECT_EQ(MostRunsOnNodeAtOnce("n0"), 1);

  // The watch catches up: "first" runs, then "urgent" gets the block.
  api_->ReleaseWatches();
  RunToSuccess("first");
  ASSERT_TRUE(WaitPhase("urgent", "Scheduled"));
  RunToSuccess("urgent");
  EXPECT_EQ(MostRunsOnNodeAtOnce("n0"), 1);
  EXPECT_EQ(PodsCreated("first"), 1);
  EXPECT_EQ(PodsCreated("urgent"), 1);
  EXPECT_TRUE(Eventually([&] { return InstanceInt("gpu", "n0", "runsStarted") == 2; }));
}

// A stopped run's Pod is deleted even when the API server fails that request (no answer, then a
// 504, as while etcd stalls): the engine tries again, it does not take a failure for done.
TEST_F(EngineInProcess, AStoppedRunsPodIsDeletedEvenWhenItsDeletesFail) {
  Node("n0", "a100");
  Fleet("gpu", "a100");
  StartEngine();
  Run("job", R"("priority":50)");
  ASSERT_TRUE(WaitPhase("job", "Scheduled"));
  ASSERT_TRUE(Eventually([&] { return Pods("job").size() == 1; }));
  SetPodsPhase("job", "Running");
  ASSERT_TRUE(WaitPhase("job", "Running"));
  const std::string pod = Pods("job").begin()->first;
  // The delete times out twice (no answer), then the API server answers 504 once.
  api_->FailNext({"DELETE", kPods.Path(kNs, pod), {}}, 2, 0);
  api_->FailNext({"DELETE", kPods.Path(kNs, pod), {}}, 1, 504);
  auto r = user_->MergePatch(kRuns.Path(kNs, "job"), R"({"spec":{"stop":true}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(WaitPhase("job", "Failed"));
  EXPECT_EQ(StatusString("job", "reason"), "Stopped");
  // Backoffs follow the fake clock: each look moves it on by half a second.
  EXPECT_TRUE(Eventually([&] {
    Advance(std::chrono::milliseconds(500));
    auto pods = Pods("job");
    return pods.empty() || json::Find(pods.begin()->second, {"metadata", "deletionTimestamp"}) != nullptr;
  })) << "the stopped run's Pod was never deleted after its first deletes failed";
  EXPECT_EQ(api_->FaultsFired(), 3);
}

// A deleted run whose finalizer the API server refuses to drop (an admission policy's 422, as the
// chart's placed-runs policy once did to tickets) is tried again after a backoff, not on every
// visit: seen as 18,000 refused PATCHes a minute in an integration test.
TEST_F(EngineInProcess, ARefusedFinalizerRemovalIsTriedAgainAfterABackoffNotOnEveryVisit) {
  Node("n0", "a100");
  Fleet("gpu", "a100");
  StartEngine();
  Run("job", R"("priority":50)");
  ASSERT_TRUE(WaitPhase("job", "Scheduled"));
  const auto finalizer_patch = [](const k8s::HttpRequest& req) { return req.body.find("finalizers") != std::string::npos; };
  api_->FailNext({"PATCH", kRuns.Path(kNs, "job"), finalizer_patch}, 3, 422);
  ASSERT_TRUE(user_->Delete(kRuns.Path(kNs, "job")).ok());
  ASSERT_TRUE(Eventually([&] { return api_->FaultsFired() == 1; }));
  // The run changes on every pass (each change brings a visit); the monotonic clock stands.
  for (int i = 0; i < 20; ++i) {
    auto r = user_->MergePatch(kRuns.Path(kNs, "job"), R"({"metadata":{"annotations":{"touch":")" + std::to_string(i) + R"("}}})");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    FinishDeletedPods();
    Step();
  }
  EXPECT_EQ(api_->FaultsFired(), 1) << "the refused finalizer removal was sent again before its backoff";
  // As monotonic time moves on (Eventually), the 1 s and 2 s backoffs pass and the third try after
  // the refusals removes it.
  EXPECT_TRUE(Eventually([&] { return !user_->Get(kRuns.Path(kNs, "job")).ok(); })) << "the run was never removed";
  EXPECT_EQ(api_->FaultsFired(), 3);
}

// Preemption (issue 17) on the fake clock. A run of priority 10 has run 2 minutes of a fleet's
// minRuntime of 5: the priority-90 run waits. Once the clock passes minRuntime it preempts: its
// record (status.preemption) is in the API before the victim's status changes, the victim's Pod is
// deleted only after that, the victim goes back to the queue (retry on interruption) keeping its
// submission time, and the preemptor starts on the freed node once the Pod is gone.
TEST_F(EngineInProcess, PreemptionWaitsForMinRuntimeAndWritesItsRecordFirst) {
  Node("n0", "a100");
  auto f = user_->Create(kFleets.Path(), R"({"apiVersion":"berth.dev/v1alpha1","kind":"Fleet","metadata":{"name":"gpu"},)"
                                         R"("spec":{"nodeSelector":{"pool":"a100"},"blocks":1,)"
                                         R"("preemption":{"policy":"LowerPriority","minRuntime":"5m"}}})");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  StartEngine();
  Run("low", R"("priority":10,"retry":{"onEvents":["interruption"],"duration":"off"})");
  ASSERT_TRUE(PodsBound("low"));
  SetPodsPhase("low", "Running");
  ASSERT_TRUE(WaitPhase("low", "Running"));
  const std::string submitted = StatusString("low", "submittedAt");

  Advance(std::chrono::minutes(2));
  Run("high", std::string(R"("priority":90,)") + kQueueRetry);
  ASSERT_TRUE(Eventually([&] { return StatusString("high", "reason") == "NoCapacity"; })) << Dump();
  ASSERT_TRUE(LetPassesGo(3));
  EXPECT_EQ(Phase("low"), "Running") << "minRuntime protects it";

  Advance(std::chrono::minutes(3));
  ASSERT_TRUE(PodsBound("high")) << Dump();
  SetPodsPhase("high", "Running");
  ASSERT_TRUE(WaitPhase("high", "Running")) << Dump();
  EXPECT_EQ(PlacementNodes("high"), std::vector<std::string>{"n0"});
  EXPECT_EQ(Phase("low"), "Pending");
  EXPECT_EQ(StatusString("low", "reason"), "Preempted");
  EXPECT_EQ(StatusString("low", "submittedAt"), submitted);
  EXPECT_EQ(StatusInt("low", "resubmissions"), 1);
  // The recorder writes Events off the engine's thread: wait for them.
  EXPECT_TRUE(Eventually([&] { return EventReasons("high").count("Preempting") > 0; }));
  EXPECT_TRUE(Eventually([&] { return EventReasons("low").count("Retrying") > 0; }));
  EXPECT_EQ(json::Find(RunDoc("high"), {"status", "preemption"}), nullptr) << "placed: the record is cleared";

  // The order of the API's history: the record, then the victim's status, then its Pod's deletion.
  size_t record = 0, victim = 0, pod_deleted = 0;
  auto history = api_->History();
  for (size_t i = 0; i < history.size(); ++i) {
    const auto& c = history[i];
    if (!record && c.path == kRuns.Path(kNs, "high") && c.object.find("\"preemption\":{") != std::string::npos) record = i + 1;
    if (!victim && c.path == kRuns.Path(kNs, "low") && c.object.find("\"Preempted\"") != std::string::npos) victim = i + 1;
    if (!pod_deleted && c.path == kPods.Path(kNs, "low-0") && c.object.find("deletionTimestamp") != std::string::npos) {
      pod_deleted = i + 1;
    }
  }
  ASSERT_NE(record, 0u) << Dump();
  ASSERT_NE(victim, 0u) << Dump();
  ASSERT_NE(pod_deleted, 0u) << Dump();
  EXPECT_LT(record, victim);
  EXPECT_LT(victim, pod_deleted);
  // The victim waits: its resubmission never preempts the preemptor.
  ASSERT_TRUE(LetPassesGo(3));
  EXPECT_EQ(Phase("low"), "Pending");
  EXPECT_EQ(Phase("high"), "Running");
}

// Teams (issue 31): a reclaim is written like a preemption. Team "owners" has the whole machine
// as its nominal share and runs nothing; a priority-90 run of a namespace in no Team borrows it.
// The owners' priority-10 run reclaims it: its record (status.preemption with reclaim: true) is in
// the API before the victim's status says Reclaimed, and the victim's Pod is deleted only after
// that; the victim goes back to the queue and the owners' run is placed on the machine.
TEST_F(EngineInProcess, AReclaimWritesItsRecordFirstAndTheVictimIsReclaimed) {
  Node("n0", "a100");
  auto f = user_->Create(kFleets.Path(), R"({"apiVersion":"berth.dev/v1alpha1","kind":"Fleet","metadata":{"name":"gpu"},)"
                                         R"("spec":{"nodeSelector":{"pool":"a100"},"blocks":1,"preemption":{"minRuntime":"0s"}}})");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto t = user_->Create(kTeams.Path(), R"({"apiVersion":"berth.dev/v1alpha1","kind":"Team","metadata":{"name":"owners"},)"
                                        R"("spec":{"namespaces":["owners"],"shares":[{"fleet":"gpu","nominal":{"cpu":"8"}}]}})");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  StartEngine();
  Run("low", R"("priority":90,"retry":{"onEvents":["interruption"],"duration":"off"})");
  ASSERT_TRUE(PodsBound("low"));
  SetPodsPhase("low", "Running");
  ASSERT_TRUE(WaitPhase("low", "Running"));

  auto mine = user_->Create(kRuns.Path("owners"),
                            R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":"mine"},"spec":{"fleets":["gpu"],)"
                            R"("priority":10,)" + std::string(kQueueRetry) +
                                R"(,"template":{"spec":{"containers":[{"name":"main","image":"busybox:1.35"}]}}}})");
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  ASSERT_TRUE(Eventually([&] { return StatusString("low", "reason") == "Reclaimed"; })) << Dump();
  EXPECT_EQ(Phase("low"), "Pending");
  EXPECT_EQ(StatusInt("low", "resubmissions"), 1);
  ASSERT_TRUE(Eventually([&] {
    auto d = Get(kRuns.Path("owners", "mine"));
    return d.IsObject() && json::GetString(json::Find(d, {"status", "phase"})) == "Scheduled";
  })) << Dump();
  EXPECT_TRUE(Eventually([&] { return EventReasons("low").count("Retrying") > 0; }));

  size_t record = 0, victim = 0, pod_deleted = 0;
  auto history = api_->History();
  for (size_t i = 0; i < history.size(); ++i) {
    const auto& c = history[i];
    if (!record && c.path == kRuns.Path("owners", "mine") && c.object.find("\"reclaim\":true") != std::string::npos) record = i + 1;
    if (!victim && c.path == kRuns.Path(kNs, "low") && c.object.find("\"Reclaimed\"") != std::string::npos) victim = i + 1;
    if (!pod_deleted && c.path == kPods.Path(kNs, "low-0") && c.object.find("deletionTimestamp") != std::string::npos) {
      pod_deleted = i + 1;
    }
  }
  ASSERT_NE(record, 0u) << Dump();
  ASSERT_NE(victim, 0u) << Dump();
  ASSERT_NE(pod_deleted, 0u) << Dump();
  EXPECT_LT(record, victim);
  EXPECT_LT(victim, pod_deleted);
  // The borrower waits: it may not take the owners' share back.
  ASSERT_TRUE(LetPassesGo(3));
  EXPECT_EQ(Phase("low"), "Pending");
  EXPECT_EQ(StatusString("low", "reason"), "Reclaimed");
}

}  // namespace
}  // namespace berth::testing

namespace berth::testing {
namespace {

// Issue 29, item 2: a Pod labelled berth.dev/run that no Run controls (or whose owner is not the
// Run its label names) is an ordinary Pod: its requests (1m CPU) come off the node, it does not
// hold the whole instance. A run that needs a whole node is placed beside such Pods on both nodes.
// (Issue 44: such Pods claim the run, which did not make them, so they are also deleted.)
TEST_F(EngineInProcess, APodLabelledAsARunsButNotOwnedByItHoldsOnlyItsRequests) {
  Node("n0", "a100");
  Node("n1", "a100");
  Fleet("gpu", "a100");
  StartEngine();
  Run("victim", R"("priority":50)");  // a Run the squatter names in its labels and ownerReference
  ASSERT_TRUE(WaitPhase("victim", "Scheduled")) << Phase("victim");
  auto squat = [&](const std::string& name, const std::string& node, const std::string& owners) {
    auto r = user_->Create(kPods.Path(kNs),
                           R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
                               R"(","labels":{"berth.dev/run":"victim","berth.dev/attempt":"0"})" + owners +
                               R"(},"spec":{"nodeName":")" + node +
                               R"(","containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"1m"}}}]}})");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  };
  // No owner on one node; an ownerReference to the Run's name with another uid on the other.
  const std::string victim_node = PlacementNodes("victim").at(0);
  const std::string free_node = victim_node == "n0" ? "n1" : "n0";
  squat("squat-a", free_node, "");
  squat("squat-b", free_node,
        R"(,"ownerReferences":[{"apiVersion":"berth.dev/v1alpha1","kind":"Run","name":"victim","uid":"not-the-runs","controller":true}])");
  Run("train", R"("priority":50)");
  ASSERT_TRUE(WaitPhase("train", "Scheduled")) << Phase("train") << "\n" << Dump();
  EXPECT_EQ(PlacementNodes("train"), std::vector<std::string>{free_node});
  // The squatters are not the victim's Pods: it is not taken as started by them, and (issue 44)
  // they are deleted as strays, since they claim a run that did not make them.
  ASSERT_TRUE(Eventually([&] { return Pods("victim").count("victim-0") == 1; }));
  for (const char* squatter : {"squat-a", "squat-b"}) {
    EXPECT_TRUE(Eventually([&] {
      auto p = user_->Get(kPods.Path(kNs, squatter));
      return !p.ok() || json::Find(*p, {"metadata", "deletionTimestamp"}) != nullptr;
    })) << squatter << " was not deleted";
  }
  SetPodsPhase("victim", "Running");  // the kubelet: every Pod labelled victim runs
  ASSERT_TRUE(WaitPhase("victim", "Running"));
  EXPECT_EQ(Phase("train"), "Scheduled");
}

}  // namespace
}  // namespace berth::testing

namespace berth::testing {
namespace {

// Issue 29, item 3: berth never takes over, changes or deletes an object it did not create. A
// multi-node run named like a Service of someone else fails InvalidSpec (the Service is left as
// it was, also when the run is deleted); a run whose Pod name is taken by a Pod it does not own
// fails the same way, the Pod untouched. A Service the run made is deleted with it.
TEST_F(EngineInProcess, ARunNeverAdoptsOrDeletesAServiceOrPodItDidNotCreate) {
  using k8s::resources::kServices;
  Node("n0", "a100");
  Node("n1", "a100");
  auto f = user_->Create(kFleets.Path(), R"({"apiVersion":"berth.dev/v1alpha1","kind":"Fleet","metadata":{"name":"gpu"},)"
                                         R"("spec":{"nodeSelector":{"pool":"a100"},"blocks":1,"placement":"cluster"}})");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto svc = user_->Create(kServices.Path(kNs), R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},)"
                                                R"("spec":{"selector":{"app":"web"},"ports":[{"port":80}]}})");
  ASSERT_TRUE(svc.ok()) << svc.status().ToString();
  const std::string svc_uid = json::GetString(json::Find(*svc, {"metadata", "uid"}));
  auto pod = user_->Create(kPods.Path(kNs), R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"solo-0"},)"
                                            R"("spec":{"containers":[{"name":"c","image":"busybox"}]}})");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  const std::string pod_uid = json::GetString(json::Find(*pod, {"metadata", "uid"}));
  StartEngine();

  Run("web", R"("nodes":2)");
  ASSERT_TRUE(WaitPhase("web", "Failed")) << Phase("web") << "\n" << Dump();
  EXPECT_EQ(StatusString("web", "reason"), "InvalidSpec");
  EXPECT_NE(StatusString("web", "message").find("a Service named web already exists in namespace team and is not this "
                                                "run's"),
            std::string::npos)
      << StatusString("web", "message");
  Run("solo", R"("priority":50)");
  ASSERT_TRUE(WaitPhase("solo", "Failed")) << Phase("solo") << "\n" << Dump();
  EXPECT_NE(StatusString("solo", "message").find("a Pod named solo-0 already exists in namespace team and is not this "
                                                 "run's"),
            std::string::npos)
      << StatusString("solo", "message");
  // Deleting the runs leaves the Service and the Pod as they were.
  ASSERT_TRUE(user_->Delete(kRuns.Path(kNs, "web")).ok());
  ASSERT_TRUE(user_->Delete(kRuns.Path(kNs, "solo")).ok());
  ASSERT_TRUE(Eventually([&] { return !RunDoc("web").IsObject() && !RunDoc("solo").IsObject(); })) << Dump();
  json::Document s = Get(kServices.Path(kNs, "web"));
  EXPECT_EQ(json::GetString(json::Find(s, {"metadata", "uid"})), svc_uid);
  EXPECT_EQ(json::Find(s, {"metadata", "ownerReferences"}), nullptr);
  json::Document p = Get(kPods.Path(kNs, "solo-0"));
  EXPECT_EQ(json::GetString(json::Find(p, {"metadata", "uid"})), pod_uid);
  EXPECT_EQ(json::Find(p, {"metadata", "deletionTimestamp"}), nullptr);

  // A run that made its own Service deletes it with itself.
  Run("gang", R"("nodes":2)");
  ASSERT_TRUE(WaitPhase("gang", "Scheduled")) << Phase("gang") << "\n" << Dump();
  ASSERT_TRUE(Eventually([&] { return Get(kServices.Path(kNs, "gang")).IsObject(); }));
  ASSERT_TRUE(user_->Delete(kRuns.Path(kNs, "gang")).ok());
  EXPECT_TRUE(Eventually([&] {
    FinishDeletedPods();
    return !Get(kServices.Path(kNs, "gang")).IsObject() && !RunDoc("gang").IsObject();
  })) << Dump();
}

// The loop (not stepped) on a fake clock: each of its waits is on the clock, so with nothing
// changing its next pass comes when the clock passes status_refresh, no Wake needed, and Stop
// ends its wait at once. The test waits for passes on the observer's condition variable, and for
// the loop to be asleep on the clock (FakeClock::Waiters), never on time.
TEST(EngineLoop, TheLoopWaitsOnTheClockForItsNextPass) {
  base::FakeClock clock;
  auto api = std::make_shared<FakeApi>(clock);
  auto client = std::make_shared<k8s::Client>(k8s::ClientConfig{}, api);
  client->SetClock(clock);
  client->SetMaxRetries(0);
  struct Passes : PassCounter {
    std::mutex mu;
    std::condition_variable cv;
    void OnPass(const PassSummary& s) override {
      PassCounter::OnPass(s);
      std::lock_guard<std::mutex> lock(mu);
      cv.notify_all();
    }
    void WaitFor(int n) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return passes.load() >= n; });
    }
  } passes;
  reconcilers::EngineOptions options;
  options.writers = 2;
  reconcilers::RunController engine(client, clock, options);
  engine.SetObserver(&passes);
  engine.Start();  // an empty cluster: a pass writes nothing, so nothing but time makes the next
  passes.WaitFor(1);
  while (clock.Waiters() == 0) std::this_thread::yield();  // asleep in WaitForWork
  EXPECT_EQ(passes.passes.load(), 1);
  clock.Advance(options.status_refresh + std::chrono::seconds(1));
  passes.WaitFor(2);
  while (clock.Waiters() == 0) std::this_thread::yield();
  EXPECT_EQ(passes.passes.load(), 2);
  engine.Stop();
}

}  // namespace
}  // namespace berth::testing
