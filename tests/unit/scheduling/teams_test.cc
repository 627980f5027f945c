// Teams sharing a cluster (issue 31): one test per rule of scheduling/teams.h, through Schedule.

#include <gtest/gtest.h>

#include "fixtures.h"
#include "scheduling/scheduler.h"
#include "scheduling/teams.h"

namespace berth::scheduling {
namespace {

using namespace berth::scheduling::testing;  // NOLINT(build/namespaces)

// Fleet a100: 4 instances of 4 GPUs, 1 GPU per block (reclaim Borrowed by default).
ClusterSnapshot A100(int instances = 4, PlacementPolicy placement = PlacementPolicy::kAny) {
  ClusterSnapshot c;
  c.fleets.push_back(Fleet("a100", BlocksSetting::Count(4), placement));
  for (int i = 0; i < instances; ++i) {
    c.instances.push_back(Instance("n" + std::to_string(i), "a100", Cpus(16, 64, 4)));
  }
  return c;
}

TeamSpec Team(std::string name, std::string ns, std::optional<int64_t> nominal_gpus,
              std::optional<int64_t> borrowing = std::nullopt, std::optional<int64_t> lending = std::nullopt) {
  TeamSpec t;
  t.name = std::move(name);
  t.namespaces = {std::move(ns)};
  if (nominal_gpus) {
    TeamShare s;
    s.fleet = "a100";
    s.nominal.gpus = nominal_gpus;
    s.borrowing_limit.gpus = borrowing;
    s.lending_limit.gpus = lending;
    t.shares.push_back(s);
  }
  return t;
}

PendingRun Gpus(std::string id, int64_t gpus, int32_t priority = 50, TimePoint submitted = kT0, int32_t nodes = 1) {
  return Pending(std::move(id), priority, submitted, nodes, Resources{0, 0, gpus});
}

CycleResult Cycle(const ClusterSnapshot& c, const std::vector<PendingRun>& runs, TimePoint now = kT0) {
  RunQueue queue(Duration(0));
  for (const PendingRun& r : runs) queue.Upsert(r);
  return Schedule(c, queue, now);
}

TEST(TeamsTest, ARunBorrowsOtherTeamsIdleNominalShare) {
  ClusterSnapshot c = A100();
  c.teams = {Team("vision", "vision", 8), Team("audio", "audio", 8)};
  const CycleResult r = Cycle(c, {Gpus("audio/big", 4), Gpus("audio/b2", 4), Gpus("audio/b3", 4)});
  EXPECT_EQ(r.placements.size(), 3u);  // 12 GPUs: 8 of its own, 4 of vision's idle share
}

TEST(TeamsTest, BorrowingLimitHoldsARunWithTheNumbers) {
  ClusterSnapshot c = A100();
  c.teams = {Team("vision", "vision", 4, /*borrowing=*/0)};
  c.running.push_back(Running("vision/a", {{"n0", 4}}));
  const CycleResult r = Cycle(c, {Gpus("vision/b", 1)});
  const WaitingRun* w = FindWaiting(r, "vision/b");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason.code, WaitCode::kTeamShare);
  EXPECT_EQ(ApiReason(w->reason.code), "TeamShare");
  EXPECT_EQ(r.Explain(*w), "team vision uses 4 of its 4 GPUs on a100 and may borrow 0 more; it needs 1 GPU");
  EXPECT_FALSE(r.reservation.has_value()) << "a run held by its share reserves nothing";
}

TEST(TeamsTest, LendingLimitKeepsPartOfAnIdleShare) {
  ClusterSnapshot c = A100();
  // vision lends at most 4 of its 8: 4 stay kept for it even while idle.
  c.teams = {Team("vision", "vision", 8, std::nullopt, /*lending=*/4), Team("audio", "audio", 8)};
  c.running.push_back(Running("audio/a", {{"n0", 4}}));
  c.running.push_back(Running("audio/b", {{"n1", 4}}));
  const CycleResult r = Cycle(c, {Gpus("audio/c", 4), Gpus("audio/d", 4)});
  EXPECT_NE(FindPlacement(r, "audio/c"), nullptr);
  const WaitingRun* w = FindWaiting(r, "audio/d");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason.code, WaitCode::kTeamShare);
  EXPECT_EQ(r.Explain(*w),
            "needs 4 GPUs on a100 beyond team audio's nominal share (uses 12 of 8 GPUs); 0 GPUs can be "
            "borrowed (the rest is other teams' nominal share they do not lend)");
}

TEST(TeamsTest, ARunWithinItsNominalShareReclaimsBorrowedCapacityWhateverThePriority) {
  ClusterSnapshot c = A100();
  c.teams = {Team("vision", "vision", 8), Team("audio", "audio", 8)};
  // audio borrowed vision's whole share: 16 GPUs of 8.
  for (int i = 0; i < 4; ++i) {
    const std::string id = "audio/r" + std::to_string(i);
    c.running.push_back(Running(id, {{"n" + std::to_string(i), 4}}));
    c.placed_runs.push_back(PlacedRunInfo{id, 100, kT0 - minutes(60 - i)});  // r3 started last
  }
  const CycleResult r = Cycle(c, {Gpus("vision/small", 4, /*priority=*/0)});
  const WaitingRun* w = FindWaiting(r, "vision/small");
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->reason.code, WaitCode::kPreempting);
  EXPECT_TRUE(w->reason.reclaim);
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_TRUE(r.preemptions[0].reclaim);
  EXPECT_EQ(r.preemptions[0].plan.victims, std::vector<std::string>{"audio/r3"}) << "the most recently started";
  EXPECT_NE(r.Explain(*w).find("reclaims its team's nominal share"), std::string::npos) << r.Explain(*w);
}

TEST(TeamsTest, AfterTheReclaimedRunsStopTheRunStartsOnTheirInstance) {
  ClusterSnapshot c = A100(2);
  c.teams = {Team("vision", "vision", 4), Team("audio", "audio", 4)};
  c.running = {Running("audio/a", {{"n0", 4}}), Running("audio/b", {{"n1", 4}})};
  c.placed_runs = {PlacedRunInfo{"audio/a", 90, kT0 - minutes(30)}, PlacedRunInfo{"audio/b", 90, kT0 - minutes(20)}};
  const std::vector<PendingRun> queue = {Gpus("vision/a", 4, 10), Gpus("audio/c", 4, 100)};
  const CycleResult first = Cycle(c, queue);
  ASSERT_EQ(first.preemptions.size(), 1u);
  const PreemptionDecision& d = first.preemptions[0];
  EXPECT_EQ(d.plan.victims, std::vector<std::string>{"audio/b"});
  // The engine stops the victim and reports the nomination; the next cycle starts vision/a there,
  // and audio's higher priority does not take the room.
  // While the victim stops, vision/a waits and still says it reclaims (not that it preempts).
  c.nominations.push_back(Nomination{"vision/a", d.plan.fleet, d.plan.instances, d.plan.victims, true, d.reclaim});
  const CycleResult stopping = Cycle(c, queue, kT0 + minutes(1));
  const WaitingRun* w = FindWaiting(stopping, "vision/a");
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->reason.victims_stopping);
  EXPECT_NE(stopping.Explain(*w).find("reclaims its team's nominal share"), std::string::npos) << stopping.Explain(*w);
  std::erase_if(c.running, [&](const RunningRun& r) { return r.id == "audio/b"; });
  c.nominations[0].victims_stopping = false;
  const CycleResult second = Cycle(c, queue, kT0 + minutes(1));
  EXPECT_EQ(PlacedOn(second, "vision/a"), d.plan.instances);
  EXPECT_EQ(FindPlacement(second, "audio/c"), nullptr);
}

TEST(TeamsTest, ReclaimHonoursMinRuntimeAndTheFleetsPolicy) {
  ClusterSnapshot c = A100(1);
  c.teams = {Team("vision", "vision", 4), Team("audio", "audio", 0)};
  c.running.push_back(Running("audio/r", {{"n0", 4}}));
  c.placed_runs.push_back(PlacedRunInfo{"audio/r", 0, kT0 - minutes(2)});  // minRuntime 5m not reached
  CycleResult r = Cycle(c, {Gpus("vision/a", 4)});
  EXPECT_TRUE(r.preemptions.empty());
  c.placed_runs[0].placed_at = kT0 - minutes(10);
  r = Cycle(c, {Gpus("vision/a", 4)});
  EXPECT_EQ(r.preemptions.size(), 1u);
  c.fleets[0].reclaim = ReclaimPolicy::kNever;
  r = Cycle(c, {Gpus("vision/a", 4)});
  EXPECT_TRUE(r.preemptions.empty());
}

TEST(TeamsTest, NoReclaimOfATeamWithinItsOwnShare) {
  ClusterSnapshot c = A100(2);
  c.teams = {Team("vision", "vision", 4), Team("audio", "audio", 4)};
  c.running.push_back(Running("audio/r", {{"n0", 4}}));
  c.running.push_back(Running("vision/r", {{"n1", 4}}));
  c.placed_runs.push_back(PlacedRunInfo{"audio/r", 0, kT0 - minutes(60)});
  const CycleResult r = Cycle(c, {Gpus("vision/more", 4, 100)});
  EXPECT_TRUE(r.preemptions.empty()) << "vision would borrow, and audio does not";
}

// Four 4-GPU machines of a cluster fleet in zones z0 (n0, n1) and z1 (n2, n3); team vision's
// nominal share is 8 GPUs, audio's none; audio/r<i> (priority `priority`) holds `gpus` on n<i>.
ClusterSnapshot TwoZonesAudioBorrowsEach(int gpus, int32_t priority) {
  ClusterSnapshot c = A100(4, PlacementPolicy::kCluster);
  c.fleets[0].topology_key = "zone";
  for (int i = 0; i < 4; ++i) c.instances[i].topology_domain = i < 2 ? "z0" : "z1";
  c.teams = {Team("vision", "vision", 8), Team("audio", "audio", 0)};
  for (int i = 0; i < 4; ++i) {
    const std::string id = "audio/r" + std::to_string(i);
    c.running.push_back(Running(id, {{"n" + std::to_string(i), gpus}}));
    c.placed_runs.push_back(PlacedRunInfo{id, priority, kT0 - minutes(60)});
  }
  return c;
}

TEST(TeamsTest, AGangReclaimsWholeInstancesOfOneDomain) {
  // audio holds 2 GPUs on each machine: a gang of 2 needs two whole machines of one zone.
  const ClusterSnapshot c = TwoZonesAudioBorrowsEach(2, 50);
  const CycleResult r = Cycle(c, {Gpus("vision/gang", 4, 50, kT0, 2)});
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].plan.instances, (std::vector<std::string>{"n0", "n1"}));
  EXPECT_EQ(r.preemptions[0].plan.victims, (std::vector<std::string>{"audio/r0", "audio/r1"}));
}

// A gang of whole slices (a Job's ticket whose Pods each ask for a whole machine's GPUs) within
// its team's nominal share reclaims as the multi-node run of its shape: two whole machines of one
// zone, from the borrowing team, whatever their priority.
TEST(TeamsTest, AGangOfWholeSlicesReclaimsFromABorrowingTeamAsAMultiNodeRun) {
  const ClusterSnapshot c = TwoZonesAudioBorrowsEach(4, 90);
  PendingRun gang = Gpus("vision/job-gang", 4, 10, kT0, 2);  // 2 Pods of 4 GPUs: whole machines
  gang.whole_instances = false;
  const CycleResult r = Cycle(c, {gang});
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_TRUE(r.preemptions[0].reclaim);
  EXPECT_EQ(r.preemptions[0].plan.instances, (std::vector<std::string>{"n0", "n1"}));
  EXPECT_EQ(r.preemptions[0].plan.victims, (std::vector<std::string>{"audio/r0", "audio/r1"}));
  const WaitingRun* w = FindWaiting(r, "vision/job-gang");
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->reason.reclaim);
  const CycleResult multi = Cycle(c, {Gpus("vision/run", 4, 10, kT0, 2)});
  ASSERT_EQ(multi.preemptions.size(), 1u);
  EXPECT_EQ(multi.preemptions[0].plan.instances, r.preemptions[0].plan.instances);
  EXPECT_EQ(multi.preemptions[0].plan.victims, r.preemptions[0].plan.victims);
}

TEST(TeamsTest, BorrowersOfOnePriorityGoByDecayedUsagePerWeight) {
  ClusterSnapshot c = A100(1);
  TeamSpec vision = Team("vision", "vision", std::nullopt);
  vision.gpu_hours = 340;
  TeamSpec audio = Team("audio", "audio", std::nullopt);
  audio.gpu_hours = 120;
  c.teams = {vision, audio};
  c.teams.push_back(Team("other", "other", 0));  // names a100 in a share: a100 is accounted
  // vision submitted first, but audio used less: the one machine goes to audio.
  const CycleResult r = Cycle(c, {Gpus("vision/a", 4, 50, kT0 - minutes(10)), Gpus("audio/a", 4, 50, kT0)});
  EXPECT_NE(FindPlacement(r, "audio/a"), nullptr);
  const WaitingRun* w = FindWaiting(r, "vision/a");
  ASSERT_NE(w, nullptr);
  EXPECT_NE(r.Explain(*w).find("; behind team audio: usage 120 GPU-h / weight 1 against vision 340 / 1"),
            std::string::npos)
      << r.Explain(*w);
  // A higher priority still goes first.
  const CycleResult r2 = Cycle(c, {Gpus("vision/a", 4, 60), Gpus("audio/a", 4, 50)});
  EXPECT_NE(FindPlacement(r2, "vision/a"), nullptr);
  // Weight: vision's 340 / 4 is below audio's 120 / 1.
  c.teams[0].weight = 4;
  const CycleResult r3 = Cycle(c, {Gpus("vision/a", 4, 50, kT0 - minutes(10)), Gpus("audio/a", 4, 50, kT0)});
  EXPECT_NE(FindPlacement(r3, "vision/a"), nullptr);
}

TEST(TeamsTest, SiblingsAreOrderedAfterTheirParents) {
  ClusterSnapshot c = A100(1);
  TeamSpec research = Team("research", "research", std::nullopt);
  TeamSpec vision = Team("vision", "vision", std::nullopt);
  vision.parent = "research";
  vision.gpu_hours = 10;
  TeamSpec speech = Team("speech", "speech", std::nullopt);
  speech.parent = "research";
  speech.gpu_hours = 5;
  TeamSpec prod = Team("prod", "prod", 0);
  prod.gpu_hours = 1;  // research's 15 (its children summed) is above prod's 1
  c.teams = {research, vision, speech, prod};
  const CycleResult r = Cycle(c, {Gpus("vision/a", 4, 50, kT0 - minutes(2)), Gpus("speech/a", 4, 50, kT0 - minutes(1)),
                                  Gpus("prod/a", 4, 50, kT0)});
  EXPECT_NE(FindPlacement(r, "prod/a"), nullptr);
  c.teams[3].gpu_hours = 100;
  const CycleResult r2 = Cycle(c, {Gpus("vision/a", 4, 50, kT0 - minutes(2)), Gpus("speech/a", 4, 50, kT0 - minutes(1)),
                                   Gpus("prod/a", 4, 50, kT0)});
  EXPECT_NE(FindPlacement(r2, "speech/a"), nullptr) << "speech used less than its sibling vision";
}

TEST(TeamsTest, ARunWithinItsShareGoesBeforeBorrowersOfItsPriority) {
  ClusterSnapshot c = A100(1);
  c.teams = {Team("vision", "vision", 4), Team("audio", "audio", 0)};
  const CycleResult r = Cycle(c, {Gpus("audio/a", 4, 50, kT0 - minutes(10)), Gpus("vision/a", 4, 50, kT0)});
  EXPECT_NE(FindPlacement(r, "vision/a"), nullptr);
  ASSERT_EQ(r.waiting.size(), 1u);
  EXPECT_EQ(r.waiting[0].run_id, "audio/a");
}

TEST(TeamsTest, NeverAdmitsAgainstAShareWhatCannotFit) {
  // vision's share is 16 GPUs but the fleet has 8: a 4-GPU gang of 3 nodes waits for machines
  // (a capacity reason), it is not admitted against its share.
  ClusterSnapshot c = A100(2, PlacementPolicy::kCluster);
  c.teams = {Team("vision", "vision", 16)};
  const CycleResult r = Cycle(c, {Gpus("vision/gang", 4, 50, kT0, 3)});
  EXPECT_TRUE(r.placements.empty());
  const WaitingRun* w = FindWaiting(r, "vision/gang");
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->unschedulable());
}

TEST(TeamsTest, TheImplicitTeamBorrowsTheCommonPoolAndIsReclaimed) {
  ClusterSnapshot c = A100(2);
  c.teams = {Team("vision", "vision", 4)};
  c.running.push_back(Running("misc/a", {{"n0", 4}}));
  c.running.push_back(Running("misc/b", {{"n1", 4}}));
  c.placed_runs.push_back(PlacedRunInfo{"misc/a", 90, kT0 - minutes(30)});
  c.placed_runs.push_back(PlacedRunInfo{"misc/b", 10, kT0 - minutes(30)});
  const CycleResult r = Cycle(c, {Gpus("vision/a", 4, 0)});
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].plan.victims, std::vector<std::string>{"misc/b"}) << "lowest priority first";
}

TEST(TeamsTest, ReportSaysNominalUsedBorrowedAndLentPerTeamAndFleet) {
  // 16 GPUs, all covered by nominal shares (8 + 8): audio's 4 GPUs beyond its 8 come from
  // vision's idle share.
  ClusterSnapshot c = A100();
  c.teams = {Team("vision", "vision", 8), Team("audio", "audio", 8)};
  c.running.push_back(Running("audio/a", {{"n0", 4}}));
  c.running.push_back(Running("audio/b", {{"n1", 4}}));
  c.running.push_back(Running("audio/c", {{"n2", 4}}));
  c.running.push_back(Running("vision/a", {{"n3", 2}}));
  const std::vector<TeamFleetReport> report = TeamBook(c).Report();
  ASSERT_EQ(report.size(), 2u);
  const int gpu = static_cast<int>(ShareResource::kGpu);
  EXPECT_EQ(report[0].team, "audio");
  EXPECT_EQ(report[0].fleet, "a100");
  EXPECT_TRUE(report[0].accounted[gpu]);
  EXPECT_FALSE(report[0].accounted[static_cast<int>(ShareResource::kCpu)]) << "no share names cpu";
  EXPECT_EQ(report[0].nominal[gpu], 8);
  EXPECT_EQ(report[0].used[gpu], 12);
  EXPECT_EQ(report[0].borrowed[gpu], 4);
  EXPECT_EQ(report[0].lent[gpu], 0);
  EXPECT_EQ(report[1].team, "vision");
  EXPECT_EQ(report[1].used[gpu], 2);
  EXPECT_EQ(report[1].borrowed[gpu], 0);
  EXPECT_EQ(report[1].lent[gpu], 4);
}

TEST(TeamsTest, BorrowingFromTheCommonPoolLendsNothing) {
  ClusterSnapshot c = A100();  // 16 GPUs, 8 of them nobody's nominal share
  c.teams = {Team("vision", "vision", 8)};
  c.running.push_back(Running("misc/a", {{"n0", 4}}));
  const std::vector<TeamFleetReport> report = TeamBook(c).Report();
  ASSERT_EQ(report.size(), 1u);
  EXPECT_EQ(report[0].lent[static_cast<int>(ShareResource::kGpu)], 0);
}

TEST(TeamsTest, RunningUseByTeamCountsEveryFleetAndTheImplicitTeam) {
  ClusterSnapshot c = A100();
  c.teams = {Team("vision", "vision", 8)};
  c.running.push_back(Running("vision/a", {{"n0", 4}, {"n1", 2}}));
  c.running.push_back(Running("misc/a", {{"n2", 1}}));
  const auto use = RunningUseByTeam(c);
  ASSERT_EQ(use.size(), 2u);
  EXPECT_EQ(use.at("vision").gpus, 6);
  EXPECT_EQ(use.at("vision").cpu_millis, 6 * 4000);
  EXPECT_EQ(use.at("").gpus, 1);
  EXPECT_TRUE(RunningUseByTeam(A100()).empty()) << "no Team: nothing is accounted";
}

// Issue 44 (6): a namespace two Teams list belongs to the older one (creation time), then the
// first by name; not to the first by name whatever its age.
TEST(TeamsTest, TheOlderTeamKeepsANamespaceTwoTeamsList) {
  ClusterSnapshot c = A100();
  TeamSpec zeta = Team("zeta", "ml", 8), alpha = Team("alpha", "ml", 8);
  zeta.created = kT0;
  alpha.created = kT0 + std::chrono::seconds(1);
  c.teams = {alpha, zeta};
  c.running.push_back(Running("ml/a", {{"n0", 4}}));
  const TeamBook book(c);
  EXPECT_EQ(book.Name(book.TeamOf("ml/a")), "zeta");
  const auto use = RunningUseByTeam(c);
  EXPECT_EQ(use.at("zeta").gpus, 4);
  EXPECT_EQ(use.count("alpha"), 0u);
  // Of one age: the first by name.
  alpha.created = zeta.created;
  c.teams = {zeta, alpha};
  EXPECT_EQ(TeamBook(c).Name(TeamBook(c).TeamOf("ml/a")), "alpha");
  EXPECT_TRUE(TeamPrecedes(alpha, zeta));
  EXPECT_FALSE(TeamPrecedes(zeta, alpha));
}

// Issue 47 (5): a fleet no share names is all common pool; where two or more teams compete for
// it, its borrowers go in fair-share order too.
TEST(TeamsTest, TeamsWithoutSharesCompetingForAFleetGoByDecayedUsage) {
  ClusterSnapshot c = A100(1);  // no Team's share names a100
  TeamSpec vision = Team("vision", "vision", std::nullopt);
  vision.gpu_hours = 340;
  TeamSpec audio = Team("audio", "audio", std::nullopt);
  audio.gpu_hours = 120;
  c.teams = {vision, audio};
  const CycleResult r = Cycle(c, {Gpus("vision/a", 4, 50, kT0 - minutes(10)), Gpus("audio/a", 4, 50, kT0)});
  EXPECT_NE(FindPlacement(r, "audio/a"), nullptr) << "audio used less, though vision submitted first";
  const WaitingRun* w = FindWaiting(r, "vision/a");
  ASSERT_NE(w, nullptr);
  EXPECT_NE(r.Explain(*w).find("; behind team audio: usage 120 GPU-h / weight 1 against vision 340 / 1"), std::string::npos)
      << r.Explain(*w);
  // The implicit team (a namespace in no Team) goes after every Team there.
  const CycleResult r2 = Cycle(c, {Gpus("ml/a", 4, 50, kT0 - minutes(10)), Gpus("vision/a", 4, 50, kT0)});
  EXPECT_NE(FindPlacement(r2, "vision/a"), nullptr);
  // A higher priority still goes first.
  const CycleResult r3 = Cycle(c, {Gpus("vision/a", 4, 60, kT0), Gpus("audio/a", 4, 50, kT0)});
  EXPECT_NE(FindPlacement(r3, "vision/a"), nullptr);
}

TEST(TeamsTest, AFleetNoShareNamesWithOneTeamCompetingKeepsQueueOrder) {
  // a100 (vision's share of 4) and t4 (no share), one instance each. ml/a (the implicit team)
  // may go on either, vision/b only on a100: only ml competes for t4, which keeps no team rules:
  // ml/a is placed there first, in queue order, as without Teams.
  ClusterSnapshot c = A100(1);
  c.fleets.push_back(Fleet("t4", BlocksSetting::Count(4)));
  c.instances.push_back(Instance("t0", "t4", Cpus(16, 64, 4)));
  c.teams = {Team("vision", "vision", 4)};
  PendingRun ml = Gpus("ml/a", 4, 50, kT0 - minutes(10)), vision = Gpus("vision/b", 4, 50, kT0);
  vision.fleets = {"a100"};
  const CycleResult r = Cycle(c, {ml, vision});
  ASSERT_EQ(r.placements.size(), 2u);
  EXPECT_EQ(r.placements[0].run_id, "ml/a");
  EXPECT_EQ(r.placements[0].fleet, "t4");
  EXPECT_EQ(r.placements[1].run_id, "vision/b");
  // vision/b may go anywhere: two teams compete for t4, ml/a borrows it after vision's run
  // within its share.
  vision.fleets.clear();
  const CycleResult r2 = Cycle(c, {ml, vision});
  ASSERT_EQ(r2.placements.size(), 2u);
  EXPECT_EQ(r2.placements[0].run_id, "vision/b");
  EXPECT_EQ(r2.placements[0].fleet, "a100");
  EXPECT_EQ(r2.placements[1].run_id, "ml/a");
}

// Issue 47 (7): fair-share usage accrues from the use weighted by each fleet's costWeight.
TEST(TeamsTest, WeightedUseByTeamWeighsEachFleetsUse) {
  ClusterSnapshot c = A100();
  c.fleets[0].cost_weight = 3;
  c.fleets.push_back(Fleet("t4", BlocksSetting::Count(4)));
  c.instances.push_back(Instance("t0", "t4", Cpus(16, 64, 4)));
  c.teams = {Team("vision", "vision", 8)};
  c.running.push_back(Running("vision/a", {{"n0", 2}}));  // 2 GPUs, 8 CPUs on a100 (x3)
  c.running.push_back(Running("vision/b", {{"t0", 1}}));  // 1 GPU, 4 CPUs on t4 (x1)
  const auto use = WeightedUseByTeam(c);
  ASSERT_EQ(use.size(), 1u);
  EXPECT_DOUBLE_EQ(use.at("vision").gpus, 3 * 2 + 1);
  EXPECT_DOUBLE_EQ(use.at("vision").cpus, 3 * 8 + 4);
  EXPECT_EQ(RunningUseByTeam(c).at("vision").gpus, 3) << "the raw use is unweighted";
}

}  // namespace
}  // namespace berth::scheduling
