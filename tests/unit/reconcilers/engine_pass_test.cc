// EnginePass on snapshots made by hand (issue 46): no informer, no API server, and the writes'
// closures never run. A pass is Begin -> the snapshot filled (PassSnapshot::Fill) -> Decide, and
// what is compared is the list of writes it returns: kind, target and body, in order.
#include "reconcilers/engine/engine_pass.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "k8s/json.h"
#include "k8s/timefmt.h"
#include "reconcilers/objects/fleet_types.h"
#include "reconcilers/objects/namespace_policy.h"
#include "reconcilers/objects/run_types.h"
#include "reconcilers/objects/team_types.h"
#include "unit/reconcilers/api_fixture.h"

namespace berth::reconcilers {
namespace {

namespace json = k8s::json;

template <typename T, typename Decode>
std::shared_ptr<const T> Made(Decode decode, const std::string& text) {
  auto d = json::Parse(text);
  EXPECT_TRUE(d.ok()) << text;
  return d.ok() ? decode(*d) : nullptr;
}

std::shared_ptr<const k8s::Node> NodeOf(const std::string& name, const std::string& pool) {
  const std::string res = R"({"cpu":"8","memory":"32Gi","pods":"110"})";
  return Made<k8s::Node>(k8s::DecodeNode, R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name +
                                              R"(","uid":"node-)" + name + R"(","resourceVersion":"1","labels":{"pool":")" +
                                              pool + R"("}},"status":{"capacity":)" + res + R"(,"allocatable":)" + res +
                                              R"(,"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}})");
}

// A fleet of whole machines: one block per node of its pool.
std::shared_ptr<const Fleet> FleetOf(const std::string& name, const std::string& pool, const std::string& status = "") {
  return Made<Fleet>(DecodeFleet, R"({"apiVersion":"berth.dev/v1alpha1","kind":"Fleet","metadata":{"name":")" + name +
                                      R"(","uid":"fleet-)" + name + R"(","resourceVersion":"1"},"spec":{"nodeSelector":{"pool":")" +
                                      pool + R"("},"blocks":1})" + (status.empty() ? "" : R"(,"status":)" + status) + "}");
}

// Team "t" holding namespace "ns", with a nominal share of `cpu` CPUs of fleet "gpu".
std::shared_ptr<const Team> TeamOf(const std::string& cpu) {
  return Made<Team>(DecodeTeam, R"({"apiVersion":"berth.dev/v1alpha1","kind":"Team","metadata":{"name":"t","uid":"team-t",)"
                                R"("resourceVersion":"1"},"spec":{"namespaces":["ns"],"shares":[{"fleet":"gpu","nominal":{"cpu":")" +
                                    cpu + R"("}}]}})");
}

std::shared_ptr<const NamespaceInfo> NamespaceOf(const std::string& name) {
  return Made<NamespaceInfo>(DecodeNamespace, R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + name + R"("}})");
}

// Run `name` of namespace "ns" on `fleet`; `status`: its status as JSON ("" for none).
std::shared_ptr<const Run> RunOf(const std::string& name, const std::string& fleet, int priority, int nodes,
                                 const std::string& status = "", const std::string& version = "1",
                                 const std::string& extra = "") {
  return Made<Run>(DecodeRun, R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":")" + name +
                                  R"(","namespace":"ns","uid":"uid-)" + name + R"(","resourceVersion":")" + version +
                                  R"(","generation":1,"creationTimestamp":"2023-11-14T00:00:00Z"},"spec":{"fleets":[")" +
                                  fleet + R"("],"priority":)" + std::to_string(priority) + R"(,"nodes":)" +
                                  std::to_string(nodes) +
                                  (extra.empty() ? "" : "," + extra) +
                                  R"(,"template":{"spec":{"containers":[{"name":"main","image":"busybox:1.35"}]}}})" +
                                  (status.empty() ? "" : R"(,"status":)" + status) + "}");
}

// One write as compared: kind, target, body.
struct Seen {
  std::string kind, target, body;
  bool operator==(const Seen&) const = default;
};

std::vector<Seen> SeenOf(const PassWrites& writes) {
  std::vector<Seen> out;
  for (const PassWrite* w : writes.List()) out.push_back({WriteKindName(w->kind), w->target, w->body ? w->body() : ""});
  return out;
}

class EnginePassTest : public ApiFixture {
 public:

  std::unique_ptr<EnginePass> NewPass() {
    EnginePass::Hooks hooks{
        .dispatch_now = [this](const std::string&, std::function<bool()>, bool) { return ++outside_, true; },
        .writer_busy = [](const std::string&) { return false; },
        .background_queued = [] { return size_t{0}; },
        .wake = [] {},
        .nudge = [] {},
        .view_priority = [](const std::string&) { return std::optional<int32_t>(); },
    };
    auto pass = std::make_unique<EnginePass>(client_, clock_, options_, events_, std::move(hooks));
    // The forecast is an input of the pass like the snapshot: made only when a test asks
    // (Forecaster::RunQueued), never by a thread between two passes (none of these tests does).
    pass->forecaster().SetStepped();
    return pass;
  }

  // One pass of `pass` on `objects` at the clock's now: every run and node reported changed (the
  // snapshot filled anew), or nothing (the snapshot as the last pass left it).
  PassWrites Step(EnginePass& pass, const PassSnapshot::Objects& objects, bool fill = true) {
    EngineLoop::Changes changes;
    if (fill) {
      for (const auto& r : objects.runs) changes.runs.insert(RunKey(*r));
      for (const auto& n : objects.nodes) changes.nodes.insert(n->meta.name);
      changes.fleets = changes.namespaces = true;
    }
    const k8s::TimePoint now = clock_.Now();
    pass.Begin(PassWrites::Gate{}, std::move(changes), now);
    if (fill) pass.snapshot().Fill(objects);
    PassPhases phases;
    PassWrites writes = pass.Decide(now, {}, phases);
    pass.Finish(now, now + options_.status_refresh);
    return writes;
  }

  static PassSnapshot::Objects Cluster(int nodes) {
    PassSnapshot::Objects o;
    o.fleets.push_back(FleetOf("gpu", "gpu"));
    o.namespaces.push_back(NamespaceOf("ns"));
    for (int i = 0; i < nodes; ++i) o.nodes.push_back(NodeOf("n" + std::to_string(i), "gpu"));
    return o;
  }

  EngineOptions options_;
  int outside_ = 0;  // writes dispatched outside a pass (none: the closures never run)
};

// A Pod of run `run` (namespace "ns") as berth makes it: its labels, the Run as its controller.
std::shared_ptr<const k8s::Pod> PodOf(const std::string& run, const std::string& pod, int rank, const std::string& node,
                                      const std::string& phase) {
  return Made<k8s::Pod>(k8s::DecodePod,
                        R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + pod + R"(","namespace":"ns","uid":"pod-)" +
                            pod + R"(","resourceVersion":")" + (phase == "Pending" ? "2" : "3") + R"(","labels":{"berth.dev/run":")" + run +
                            R"(","berth.dev/rank":")" + std::to_string(rank) +
                            R"(","berth.dev/attempt":"0"},"ownerReferences":[{"apiVersion":"berth.dev/v1alpha1","kind":"Run","name":")" +
                            run + R"(","uid":"uid-)" + run + R"(","controller":true}]},"spec":{"nodeName":")" + node +
                            R"(","containers":[{"name":"main","image":"busybox:1.35"}]},"status":{"phase":")" + phase + R"("}})");
}

// The status a write's body (a merge patch {"status":{...}}) sets ("" when it has none).
std::string StatusOf(const Seen& write) {
  auto d = json::Parse(write.body);
  if (!d.ok() || !d->IsObject() || !d->HasMember("status")) return "";
  return json::Serialize((*d)["status"]);
}

// The cluster as the API would show it, made by hand: runs on fleet "gpu" of `nodes` nodes (pool
// "gpu"). Apply plays the API for a pass' writes, from their bodies alone: a status patch sets the
// object's status (and moves its resourceVersion), a Pod create adds the Pod bound to its node.
struct World {
  struct RunRow {
    std::string name;
    int priority = 50, nodes = 1;
    std::string extra = "";   // more members of its spec
    std::string status = "";  // JSON; "" for none
    int version = 1;
  };
  int nodes = 1;
  std::vector<RunRow> runs;
  std::string fleet_status;
  std::string team_cpu;  // "": no Team; else Team "t" holds "ns" with this nominal share
  struct PodRow {
    std::string run, pod;
    int rank = 0;
    std::string node, phase = "Pending";
  };
  std::vector<PodRow> pods;

  PassSnapshot::Objects Make() const {
    PassSnapshot::Objects o;
    o.fleets.push_back(FleetOf("gpu", "gpu", fleet_status));
    o.namespaces.push_back(NamespaceOf("ns"));
    if (!team_cpu.empty()) o.teams.push_back(TeamOf(team_cpu));
    for (int i = 0; i < nodes; ++i) o.nodes.push_back(NodeOf("n" + std::to_string(i), "gpu"));
    for (const RunRow& r : runs) {
      o.runs.push_back(RunOf(r.name, "gpu", r.priority, r.nodes, r.status, std::to_string(r.version), r.extra));
    }
    for (const PodRow& p : pods) o.pods.push_back(PodOf(p.run, p.pod, p.rank, p.node, p.phase));
    return o;
  }
  void Apply(const std::vector<Seen>& writes) {
    for (const Seen& w : writes) {
      if (w.kind == "FleetStatus") fleet_status = StatusOf(w);
      if (w.kind == "PodCreate") AddPods(w);
      if (w.kind == "Positions") ApplyPositions(w);
      if (w.kind != "Admission" && w.kind != "RunStatus") continue;
      for (RunRow& r : runs) {
        if ("ns/" + r.name != w.target) continue;
        r.status = StatusOf(w);
        ++r.version;
      }
    }
  }
  // A Positions body: [{"run":"ns/a","to":1,"patch":{"metadata":...,"status":{...}}}, ...]; a
  // move that carries the run's whole status sets it (a bare move is left out: its place only).
  void ApplyPositions(const Seen& positions) {
    auto d = json::Parse(positions.body);
    ASSERT_TRUE(d.ok() && d->IsArray()) << positions.body;
    for (const json::Value& e : d->GetArray()) {
      const json::Value* patch = json::Find(e, {"patch", "status"});
      if (patch == nullptr) continue;
      for (RunRow& r : runs) {
        if ("ns/" + r.name != json::GetString(e, "run")) continue;
        r.status = json::Serialize(*patch);
        ++r.version;
      }
    }
  }
  // A Pod create's body: the ranks created, [{"rank":0,"pod":"a-0","node":"n0"}, ...].
  void AddPods(const Seen& create) {
    auto d = json::Parse(create.body);
    ASSERT_TRUE(d.ok() && d->IsArray()) << create.body;
    std::string uids;
    for (const json::Value& e : d->GetArray()) {
      pods.push_back({.run = create.target.substr(3), .pod = json::GetString(e, "pod"),
                      .rank = static_cast<int>(json::GetInt(e, "rank", 0)), .node = json::GetString(e, "node")});
      uids += (uids.empty() ? "" : ",") + json::Quote("pod-" + pods.back().pod);
    }
    // The writer that created them records their uids (RunWrites: status.podUIDs).
    for (RunRow& r : runs) {
      if ("ns/" + r.name != create.target) continue;
      const size_t at = r.status.find(R"("podUIDs":null)");
      ASSERT_NE(at, std::string::npos) << r.status;
      r.status.replace(at, std::string(R"("podUIDs":null)").size(), R"("podUIDs":[)" + uids + "]");
      ++r.version;
    }
  }
};

// The writes of `target`, in order.
[[maybe_unused]] std::vector<Seen> Of(const std::vector<Seen>& all, const std::string& target) {
  std::vector<Seen> out;
  for (const Seen& s : all) {
    if (s.target == target) out.push_back(s);
  }
  return out;
}
[[maybe_unused]] std::vector<std::string> Kinds(const std::vector<Seen>& seen) {
  std::vector<std::string> out;
  for (const Seen& s : seen) out.push_back(s.kind);
  return out;
}
std::string Dump(const std::vector<Seen>& seen) {
  std::string out;
  for (const Seen& s : seen) out += s.kind + " " + s.target + " " + s.body + "\n";
  return out;
}

[[maybe_unused]] bool Has(const std::string& body, const std::string& part) { return body.find(part) != std::string::npos; }

constexpr const char* kQueueRetry = R"("retry":{"onEvents":["no-capacity"],"duration":"off"})";

// A random cluster: 1-5 nodes (half the time a Team holding the runs' namespace with a share of
// 1-3 nodes' CPUs), 1-10 runs of random priorities and sizes (some that never fit),
// waiting for capacity or not, some finished or suspended; then 0-3 passes of an engine with the
// API playing its writes (World::Apply), so that some are admitted, counted, with Pods.
World RandomWorld(std::mt19937& rng, EnginePassTest& t) {
  World w;
  w.nodes = 1 + static_cast<int>(rng() % 5);
  if (rng() % 2 == 0) w.team_cpu = std::to_string(8 * (1 + rng() % 3));
  const int runs = 1 + static_cast<int>(rng() % 10);
  for (int i = 0; i < runs; ++i) {
    World::RunRow r{.name = "r" + std::to_string(i), .priority = static_cast<int>(rng() % 101),
                    .nodes = 1 + static_cast<int>(rng() % 4 == 0)};
    r.extra = rng() % 3 != 0 ? kQueueRetry : "";
    switch (rng() % 6) {
      case 0: r.status = R"({"phase":"Succeeded","reason":"Succeeded","finishedAt":"2023-11-14T20:00:00Z"})"; break;
      case 1: r.extra += std::string(r.extra.empty() ? "" : ",") + R"("suspend":true)"; break;
      default: break;
    }
    w.runs.push_back(std::move(r));
  }
  auto history = t.NewPass();
  for (int i = static_cast<int>(rng() % 4); i > 0; --i) w.Apply(SeenOf(t.Step(*history, w.Make())));
  return w;
}

// Property: the pass is a function of what it is given. Random snapshots through two fresh
// engines give the same writes (kinds, targets, bodies, order). And one engine whose writes were
// all refused when carried out (the KeyedWriter refusing each: PassWrite::refused) decides all
// of them again, the same write with the same body, on the next pass over the same snapshot, as
// if it had never decided them: an admission refused frees its blocks, a Fleet status is not
// written (nor a Team's), a Pod create does not wait out RunReconciler's 10 s guard, a position sequence gives
// its budget back, a waiting status its refresh time (the clock does not move between the two).
TEST_F(EnginePassTest, RandomSnapshotsGiveTheSameWritesInFreshEnginesAndAgainAfterARefusal) {
  std::set<std::string> kinds;  // of the writes refused
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    std::mt19937 rng(seed);
    const World w = RandomWorld(rng, *this);
    const PassSnapshot::Objects objects = w.Make();
    auto a = NewPass();
    auto b = NewPass();
    PassWrites from_a = Step(*a, objects);
    const std::vector<Seen> seen = SeenOf(from_a);
    ASSERT_EQ(Dump(seen), Dump(SeenOf(Step(*b, objects)))) << "seed " << seed;
    for (PassWrite& write : from_a.Take()) {
      if (write.refused) write.refused();  // as RunController::CarryOutWrites does
    }
    for (const Seen& x : seen) kinds.insert(x.kind);
    const std::vector<Seen> again = SeenOf(Step(*a, objects, true));
    for (const Seen& x : seen) {
      EXPECT_NE(std::find(again.begin(), again.end(), x), again.end())
          << "seed " << seed << ": not decided again: " << Dump({x}) << "second pass:\n" << Dump(again);
    }
    EXPECT_EQ(Dump(seen), Dump(again)) << "seed " << seed;  // and nothing else, in the same order
  }
  // The random snapshots do decide (and so refuse) each kind whose undo the property checks.
  for (const char* kind : {"Admission", "PodCreate", "Positions", "RunStatus", "FleetStatus", "TeamStatus"}) {
    EXPECT_TRUE(kinds.count(kind)) << kind;
  }
}

// The Team status writes of a pass, by writer key ("team:t": TeamKeeper's status, "usage:t":
// UsageKeeper's usage fold), in order.
std::vector<std::string> TeamWrites(const PassWrites& writes) {
  std::vector<std::string> out;
  for (const PassWrite* w : writes.List()) {
    if (w->kind == WriteKind::kTeamStatus) out.push_back(w->key);
  }
  return out;
}

// Issue 46: a Team's status writes refused when carried out (PassWrite::refused) are written
// again by the next pass, a second later, though neither is due then (both come every
// team_status_interval, a minute): only because the refusal gave them back. The clock moves
// between the two passes, so a write made again at every pass of a standing clock (TeamKeeper
// publishes usage when the clock reaches its interval) cannot pass for the undo.
TEST_F(EnginePassTest, RefusedTeamStatusWritesAreMadeAgainAtTheNextPassThoughNotDue) {
  World world;
  world.nodes = 2;
  world.team_cpu = "8";  // no run: the Team's status stays the same from pass to pass
  const std::vector<std::string> both{"team:t", "usage:t"};
  // Carried out (nothing refused): a second later no Team status is due.
  auto kept = NewPass();
  ASSERT_EQ(TeamWrites(Step(*kept, world.Make())), both);
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_EQ(TeamWrites(Step(*kept, world.Make())), std::vector<std::string>{});
  // Refused: a second later, both again.
  auto refused = NewPass();
  PassWrites first = Step(*refused, world.Make());
  ASSERT_EQ(TeamWrites(first), both);
  for (PassWrite& write : first.Take()) {
    if (write.refused) write.refused();  // as RunController::CarryOutWrites does
  }
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_EQ(TeamWrites(Step(*refused, world.Make())), both);
  // And once: the pass after that (carried out) writes no Team status.
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_EQ(TeamWrites(Step(*refused, world.Make())), std::vector<std::string>{});
}

// The usage fold's watermark (usageFoldedUntil) in a pass' writes ("" when none folded).
std::string FoldedUntil(const std::vector<Seen>& writes) {
  for (const Seen& w : writes) {
    if (w.kind != "TeamStatus") continue;
    auto d = json::Parse(w.body);
    if (!d.ok()) continue;
    const std::string until = json::GetString(json::Find(*d, {"status", "usageFoldedUntil"}));
    if (!until.empty()) return until;
  }
  return "";
}

// Issue 47: an admission whose status write (its heldSince) is not in the cache yet holds the
// usage fold's watermark back, so the run's first seconds are folded once its span shows, not
// passed over (seen under load: a user's first second missing from the per-user figures).
TEST_F(EnginePassTest, TheUsageFoldStopsShortOfAnAdmissionTheCacheDoesNotShowYet) {
  World world;
  world.nodes = 1;
  world.team_cpu = "8";
  world.runs.push_back({.name = "a"});
  auto pass = NewPass();
  const k8s::TimePoint admitted = clock_.Now();
  const std::vector<Seen> first = SeenOf(Step(*pass, world.Make()));
  ASSERT_EQ(Kinds(Of(first, "ns/a")), std::vector<std::string>{"Admission"}) << Dump(first);
  // Two minutes on (two fold intervals), the cache still shows the run pending: the fold stops at
  // the admission.
  clock_.Advance(std::chrono::minutes(2));
  EXPECT_EQ(FoldedUntil(SeenOf(Step(*pass, world.Make()))), k8s::FormatRfc3339(admitted));
  // Once the cache shows it, the fold goes on to now.
  world.Apply(first);
  clock_.Advance(std::chrono::minutes(2));
  EXPECT_EQ(FoldedUntil(SeenOf(Step(*pass, world.Make()))), k8s::FormatRfc3339(clock_.Now()));
}

// The writes of `run` ("ns/NAME") over passes of one engine, the API playing each pass' writes.
std::vector<Seen> Passes(EnginePassTest& t, EnginePass& pass, World& world, int passes, const std::string& run) {
  std::vector<Seen> out;
  for (int i = 0; i < passes; ++i) {
    const std::vector<Seen> seen = SeenOf(t.Step(pass, world.Make()));
    for (const Seen& s : Of(seen, run)) out.push_back(s);
    world.Apply(seen);
  }
  return out;
}

// A pending run on a free fleet: its admission (a status patch with its placement) first; once
// the API shows it and the Fleet's status counts the run, its Pods, one per rank of the placement.
TEST_F(EnginePassTest, APendingRunOnAFreeFleetIsAdmittedThenItsPodsAreCreated) {
  auto pass = NewPass();
  World world;
  world.nodes = 2;
  world.runs.push_back({.name = "a"});
  const std::vector<Seen> writes = Passes(*this, *pass, world, 3, "ns/a");
  ASSERT_EQ(Kinds(writes), (std::vector<std::string>{"Admission", "PodCreate"})) << Dump(writes);
  EXPECT_TRUE(Has(writes[0].body, R"("phase":"Scheduled")")) << writes[0].body;
  EXPECT_TRUE(Has(writes[0].body, R"("placement":[{"rank":0,"node":"n0","blocks":1,"pod":"a-0"}])")) << writes[0].body;
  EXPECT_EQ(writes[1].body, R"([{"rank":0,"pod":"a-0","node":"n0"}])");
  EXPECT_EQ(outside_, 0);  // nothing went to the writer outside a pass
}

// A placed run whose Pods all succeeded: its phase patch (Succeeded).
TEST_F(EnginePassTest, ARunWhosePodsEndedGetsItsPhase) {
  auto pass = NewPass();
  World world;
  world.runs.push_back({.name = "a"});
  ASSERT_EQ(Kinds(Passes(*this, *pass, world, 3, "ns/a")), (std::vector<std::string>{"Admission", "PodCreate"}));
  ASSERT_EQ(world.pods.size(), 1u);
  world.pods[0].phase = "Succeeded";
  const std::vector<Seen> ended = Passes(*this, *pass, world, 1, "ns/a");
  ASSERT_EQ(Kinds(ended), std::vector<std::string>{"RunStatus"}) << Dump(ended);
  EXPECT_TRUE(Has(ended[0].body, R"("phase":"Succeeded")")) << ended[0].body;
}

// A full fleet: the run that does not fit waits (it waits for capacity: spec.retry), and its
// status says why.
TEST_F(EnginePassTest, ARunOnAFullFleetWaitsWithItsReasonAndMessage) {
  auto pass = NewPass();
  World world;
  world.runs.push_back({.name = "first", .priority = 90});
  world.runs.push_back({.name = "second", .priority = 10, .extra = kQueueRetry});
  const std::vector<Seen> all = SeenOf(Step(*pass, world.Make()));
  EXPECT_EQ(Kinds(Of(all, "ns/first")), std::vector<std::string>{"Admission"}) << Dump(all);
  // Its waiting status goes with its first queue position (PositionWriter): one sequence.
  const std::vector<Seen> positions = Of(all, "");
  ASSERT_EQ(Kinds(positions), std::vector<std::string>{"Positions"}) << Dump(all);
  EXPECT_TRUE(Has(positions[0].body, R"([{"run":"ns/second","to":1,"patch":{)")) << positions[0].body;
  EXPECT_TRUE(Has(positions[0].body, R"("phase":"Pending")")) << positions[0].body;
  EXPECT_TRUE(Has(positions[0].body, R"("reason":"NoCapacity")")) << positions[0].body;
  EXPECT_TRUE(Has(positions[0].body, R"("message":"needs 1 block on one instance)")) << positions[0].body;
  EXPECT_TRUE(Of(all, "ns/second").empty()) << Dump(all);
}

}  // namespace
}  // namespace berth::reconcilers

namespace berth::reconcilers {
namespace {

// The waiting runs of the summary (the metrics' berth_runs_pending) by (fleet, reason), all counted.
int64_t PendingOf(const EnginePass& pass, k8s::TimePoint now) {
  int64_t total = 0;
  for (const auto& [fleet_reason, count] : pass.Summarize(std::chrono::microseconds(0), now).pending) total += count;
  return total;
}

// The waiting runs are counted again when the core decides again (a run more waits), and the
// passes in which its result stands (nothing changed) report the same count.
TEST_F(EnginePassTest, ThePassSummaryCountsTheWaitingRunsOfTheResultThePassUsed) {
  auto pass = NewPass();
  World world;
  world.runs.push_back({.name = "first", .priority = 90});
  world.runs.push_back({.name = "second", .priority = 10, .extra = kQueueRetry});
  for (int i = 0; i < 3; ++i) world.Apply(SeenOf(Step(*pass, world.Make())));
  EXPECT_EQ(PendingOf(*pass, clock_.Now()), 1);
  const auto before = pass->Summarize(std::chrono::microseconds(0), clock_.Now()).pending;
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before.begin()->first.first, "gpu");
  world.runs.push_back({.name = "third", .priority = 5, .extra = kQueueRetry});
  world.Apply(SeenOf(Step(*pass, world.Make())));
  EXPECT_EQ(PendingOf(*pass, clock_.Now()), 2);
  Step(*pass, world.Make(), false);  // nothing changed: the core's result stands
  EXPECT_EQ(PendingOf(*pass, clock_.Now()), 2);
}

}  // namespace
}  // namespace berth::reconcilers
