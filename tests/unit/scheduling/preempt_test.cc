// Stage "preempt" (scheduling/preempt.h) on its own: nominations, reclaim and preemption plans on
// a hand-made cluster state and capacity, without a cycle.

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fixtures.h"
#include "scheduling/preempt.h"

namespace berth::scheduling::internal {
namespace {

namespace t = berth::scheduling::testing;

const TimePoint kNow = t::kT0 + t::hours(2);
using Names = std::vector<std::string>;

// Fleet "p" (LowerPriority, 4 blocks) of 8-GPU instances; runs placed an hour ago hold blocks.
// The stages are built as the cycle builds them once the snapshot is complete (Start).
struct Cluster {
  ClusterSnapshot snapshot;
  std::unique_ptr<ClusterState> state;
  std::unique_ptr<FleetFilter> filter;
  std::unique_ptr<Capacity> capacity;
  std::unique_ptr<TeamBook> teams;
  std::unique_ptr<Preempter> preempt;
  CycleResult out;

  explicit Cluster(const std::vector<std::string>& instances) {
    snapshot.fleets = {t::Preempting("p", 4)};
    for (const std::string& n : instances) snapshot.instances.push_back(t::Instance(n, "p", t::Cpus(8, 64, 8)));
  }
  void Place(const std::string& id, int32_t priority, const Names& instances, int32_t blocks) {
    std::vector<InstanceBlocks> placement;
    for (const std::string& i : instances) placement.push_back(InstanceBlocks{i, blocks});
    snapshot.running.push_back(t::Running(id, std::move(placement)));
    snapshot.placed_runs.push_back(PlacedRunInfo{id, priority, kNow - t::hours(1)});
  }
  void Start() {
    state = std::make_unique<ClusterState>(snapshot, Ms(kNow));
    for (const RunningRun& r : snapshot.running) {
      for (const InstanceBlocks& b : r.placement) {
        Instance& in = state->instances[state->FindInstance(b.instance)];
        in.busy += b.blocks;
        in.free -= b.blocks;
      }
    }
    filter = std::make_unique<FleetFilter>(*state);
    capacity = std::make_unique<Capacity>(*state, *filter);
    capacity->Build();
    teams = std::make_unique<TeamBook>(snapshot);
    preempt = std::make_unique<Preempter>(snapshot, Ms(kNow), *state, *capacity, *filter, *teams, out);
  }
  // What the run does about waiting (the filter stage resolved first, as in the cycle). The run
  // is kept, as the queue keeps it in a cycle (holders name it).
  std::optional<WaitReason> Try(PendingRun pending, const RoomFilter* quota = nullptr) {
    const PendingRun& run = runs.emplace_back(std::move(pending));
    filter->Resolve(run);
    WaitReason reason;
    EXPECT_TRUE(filter->Fits(run, reason));
    const int32_t team = teams->active() ? teams->TeamOf(run.id) : -1;
    if (!preempt->Try(run, preempt->NomineeOf(run.id), team, quota, reason)) return std::nullopt;
    return reason;
  }
  int32_t Index(std::string_view instance) const { return state->FindInstance(instance); }
  std::deque<PendingRun> runs;
};

PendingRun Gpus(std::string id, int32_t priority, int64_t gpus) {
  return t::Pending(std::move(id), priority, kNow - t::minutes(1), 1, t::Cpus(0, 0, gpus));
}

TEST(PreemptStage, APlanKeepsItsInstancesForTheRunAndItsVictimsAreVictimsOfNoLaterPlan) {
  Cluster c({"n0", "n1"});
  c.Place("ns/low0", 10, {"n0"}, 4);
  c.Place("ns/low1", 10, {"n1"}, 4);
  c.Start();
  EXPECT_TRUE(c.preempt->enabled());
  const uint64_t version = c.capacity->version();
  const std::optional<WaitReason> first = c.Try(Gpus("ns/high", 90, 8));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->code, WaitCode::kPreempting);
  EXPECT_FALSE(first->reclaim);
  ASSERT_EQ(first->victims.size(), 1u);
  ASSERT_EQ(first->instances.size(), 1u);
  const int32_t kept = c.Index(first->instances[0]);
  EXPECT_GE(c.state->instances[kept].held_for, 0);
  EXPECT_EQ(c.preempt->HolderOf(kept), "ns/high");
  EXPECT_GT(c.capacity->version(), version);
  ASSERT_EQ(c.out.preemptions.size(), 1u);
  EXPECT_EQ(c.out.preemptions[0].run_id, "ns/high");

  const std::optional<WaitReason> second = c.Try(Gpus("ns/next", 90, 8));
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(second->victims, first->victims);
  EXPECT_NE(second->instances, first->instances);
  EXPECT_FALSE(c.Try(Gpus("ns/third", 90, 8)).has_value()) << "no victim left";
}

TEST(PreemptStage, AVictimChosenAlreadyIsNoVictimOfTheNextPlanWhereverItRuns) {
  Cluster c({"n0", "n1"});
  c.Place("ns/wide", 10, {"n0", "n1"}, 4);  // one run on both instances
  c.Start();
  const std::optional<WaitReason> first = c.Try(Gpus("ns/high", 90, 8));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->victims, Names{"ns/wide"});
  EXPECT_EQ(first->instances.size(), 1u);
  EXPECT_FALSE(c.Try(Gpus("ns/next", 90, 8)).has_value()) << "never more victims than needed: ns/wide is taken";
}

TEST(PreemptStage, NoPlanForARunNoHigherThanItsVictimsOrOneItsQuotaWouldStop) {
  Cluster c({"n0"});
  c.Place("ns/low", 40, {"n0"}, 4);
  c.Start();
  EXPECT_FALSE(c.Try(Gpus("ns/same", 40, 8)).has_value());
  PendingRun whole = Gpus("ns/whole", 90, 8);
  whole.whole_instances = true;  // a whole single instance never preempts
  EXPECT_FALSE(c.Try(whole).has_value());

  const NamespaceQuota quota{"ns", {{"requests.nvidia.com/gpu", QuotaLimit{4, 8, "gpus"}}}};
  const QuotaAndShare within_quota(*c.state, &quota, *c.teams, -1, true);
  EXPECT_FALSE(c.Try(Gpus("ns/high", 90, 8), &within_quota).has_value()) << "8 GPUs; the quota has 4 left";
  EXPECT_TRUE(c.capacity->held().empty());
  EXPECT_TRUE(c.out.preemptions.empty());
  EXPECT_TRUE(c.Try(Gpus("ns/high", 90, 8)).has_value()) << "no quota: the victim was not taken";
}

TEST(PreemptStage, ANomineeWaitsForItsVictimsAndItsKeptInstancesAreOpenOnlyWhileItIsConsidered) {
  Cluster c({"n0", "n1"});
  c.Place("ns/low", 10, {"n0", "n1"}, 4);
  Nomination n;
  n.run_id = "ns/nominee";
  n.fleet = "p";
  n.instances = {"n1"};
  n.victims = {"ns/low"};
  n.victims_stopping = true;
  c.snapshot.nominations = {n};
  c.Start();
  RunQueue queue(Duration(0));
  queue.Upsert(Gpus("ns/nominee", 90, 8));
  c.preempt->ApplyNominations(queue);
  const int32_t h = c.preempt->NomineeOf("ns/nominee");
  ASSERT_GE(h, 0);
  EXPECT_LT(c.preempt->NomineeOf("ns/other"), 0);
  const int32_t n1 = c.Index("n1");
  EXPECT_EQ(c.state->instances[n1].held_for, h);
  c.preempt->Open(h);
  EXPECT_EQ(c.state->instances[n1].held_for, -1);
  c.preempt->Keep(h);
  EXPECT_EQ(c.state->instances[n1].held_for, h);

  const std::optional<WaitReason> reason = c.Try(Gpus("ns/nominee", 90, 8));
  ASSERT_TRUE(reason.has_value());
  EXPECT_TRUE(reason->victims_stopping);
  EXPECT_EQ(reason->victims, Names{"ns/low"});
  EXPECT_TRUE(c.out.preemptions.empty()) << "no new plan while its victims stop";
  EXPECT_FALSE(c.Try(Gpus("ns/high", 90, 8)).has_value()) << "ns/low (also on n0) is the nominee's victim already";
}

TEST(PreemptStage, ARunWithinItsTeamsNominalShareReclaimsItFromABorrowerWhateverThePriorities) {
  Cluster c({"n0"});
  c.snapshot.fleets[0].preemption = PreemptionPolicy::kNever;
  c.Place("audio/borrower", 90, {"n0"}, 4);
  c.snapshot.teams.resize(2);
  c.snapshot.teams[0].name = "audio";
  c.snapshot.teams[0].namespaces = {"audio"};
  c.snapshot.teams[1].name = "vision";
  c.snapshot.teams[1].namespaces = {"vision"};
  c.snapshot.teams[1].shares.resize(1);
  c.snapshot.teams[1].shares[0].fleet = "p";
  c.snapshot.teams[1].shares[0].nominal.gpus = 8;
  c.Start();
  EXPECT_FALSE(c.preempt->enabled());
  EXPECT_FALSE(c.Try(Gpus("audio/more", 95, 8)).has_value()) << "audio has no share to reclaim";
  const std::optional<WaitReason> reason = c.Try(Gpus("vision/r", 10, 8));
  ASSERT_TRUE(reason.has_value());
  EXPECT_TRUE(reason->reclaim);
  EXPECT_EQ(reason->victims, Names{"audio/borrower"});
  ASSERT_EQ(c.out.preemptions.size(), 1u);
  EXPECT_TRUE(c.out.preemptions[0].reclaim);
}

TEST(PreemptStage, NoReclaimFromATeamWithinItsOwnShare) {
  Cluster c({"n0"});
  c.snapshot.fleets[0].preemption = PreemptionPolicy::kNever;
  c.Place("audio/own", 90, {"n0"}, 4);
  c.snapshot.teams.resize(2);
  for (const char* team : {"audio", "vision"}) {
    TeamSpec& spec = c.snapshot.teams[team[0] == 'a' ? 0 : 1];
    spec.name = team;
    spec.namespaces = {team};
    spec.shares.resize(1);
    spec.shares[0].fleet = "p";
    spec.shares[0].nominal.gpus = 8;
  }
  c.Start();
  EXPECT_FALSE(c.Try(Gpus("vision/r", 10, 8)).has_value()) << "audio/own is within audio's share";
}

}  // namespace
}  // namespace berth::scheduling::internal
