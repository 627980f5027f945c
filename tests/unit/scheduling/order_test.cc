// Stage "order" (scheduling/order.h) on its own: which run is offered to the next stage when, with
// a scripted next stage instead of the cycle.

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fixtures.h"
#include "scheduling/order.h"

namespace berth::scheduling::internal {
namespace {

using namespace berth::scheduling::testing;  // NOLINT(build/namespaces)

// The next stage, scripted: runs in `borrowers` would borrow (deferred while borrowing is not
// allowed), runs in `fits` are placed, every other run waits. Records each offer.
class ScriptedNext final : public Considerer {
 public:
  std::set<std::string> borrowers, fits;
  std::vector<std::pair<std::string, bool>> offers;  // (run, allow_borrow)
  CycleResult* result = nullptr;

  bool Consider(const PendingRun& run, bool allow_borrow) override {
    offers.emplace_back(run.id, allow_borrow);
    if (!allow_borrow && borrowers.count(run.id) > 0) return true;
    if (fits.count(run.id) > 0) {
      result->placements.push_back(Placement{run.id, "a100", {}, false});
    } else {
      result->waiting.push_back(WaitingRun{run.id, WaitReason{}, 0, nullptr});
    }
    return false;
  }
};

TeamSpec Team(std::string name, double gpu_hours) {
  TeamSpec t;
  t.name = name;
  t.namespaces = {std::move(name)};
  t.gpu_hours = gpu_hours;
  return t;
}

std::vector<std::string> Waiting(const CycleResult& r) {
  std::vector<std::string> ids;
  for (const WaitingRun& w : r.waiting) ids.push_back(w.run_id);
  return ids;
}

struct Fixture {
  RunQueue queue{Duration(0)};
  ClusterSnapshot snapshot;
  CycleResult result;
  ScriptedNext next;
  Fixture() { next.result = &result; }
  void Run() {
    const TeamBook teams(snapshot);
    ConsiderInOrder(queue, teams, next, result);
  }
};

TEST(OrderStage, WithoutTeamsEveryRunOnceInQueueOrderBorrowingAllowed) {
  Fixture f;
  f.queue.Upsert(Pending("ns/low", 10, kT0));
  f.queue.Upsert(Pending("ns/high", 90, kT0 + Duration(5)));
  f.queue.Upsert(Pending("ns/mid-old", 50, kT0));
  f.queue.Upsert(Pending("ns/mid-new", 50, kT0 + Duration(1)));
  f.next.borrowers = {"ns/high"};  // no teams: nobody is ever deferred
  f.next.fits = {"ns/mid-old"};
  f.Run();
  const std::vector<std::pair<std::string, bool>> want = {
      {"ns/high", true}, {"ns/mid-old", true}, {"ns/mid-new", true}, {"ns/low", true}};
  EXPECT_EQ(f.next.offers, want);
  EXPECT_EQ(Waiting(f.result), (std::vector<std::string>{"ns/high", "ns/mid-new", "ns/low"}));
  ASSERT_EQ(f.result.waiting.size(), 3u);
  EXPECT_EQ(f.result.waiting[0].effective_priority, 90);
  EXPECT_EQ(f.result.waiting[2].effective_priority, 10);
}

TEST(OrderStage, WithTeamsABandsBorrowersComeAfterItsOthersInFairShareOrder) {
  Fixture f;
  // heavy has used more than light: light's borrowers go first, whatever their queue order.
  f.snapshot.teams = {Team("heavy", 100), Team("light", 1)};
  f.queue.Upsert(Pending("heavy/b", 50, kT0));
  f.queue.Upsert(Pending("light/b", 50, kT0 + Duration(1)));
  f.queue.Upsert(Pending("heavy/own", 50, kT0 + Duration(2)));
  f.queue.Upsert(Pending("light/next-band", 40, kT0));
  f.next.borrowers = {"heavy/b", "light/b"};
  f.Run();
  const std::vector<std::pair<std::string, bool>> want = {
      {"heavy/b", false}, {"light/b", false}, {"heavy/own", false},  // the band, no borrowing
      {"light/b", true},  {"heavy/b", true},                          // its borrowers, fair order
      {"light/next-band", false}};
  EXPECT_EQ(f.next.offers, want);
  // Reported in queue order, whatever order they were considered in.
  EXPECT_EQ(Waiting(f.result), (std::vector<std::string>{"heavy/b", "light/b", "heavy/own", "light/next-band"}));
}

TEST(OrderStage, ABorrowerWaitingBehindAnotherTeamsPlacedBorrowerSaysWhichTeam) {
  Fixture f;
  f.snapshot.teams = {Team("heavy", 100), Team("light", 1)};
  f.queue.Upsert(Pending("heavy/b", 50, kT0));
  f.queue.Upsert(Pending("light/b", 50, kT0 + Duration(1)));
  f.next.borrowers = {"heavy/b", "light/b"};
  f.next.fits = {"light/b"};
  f.Run();
  ASSERT_EQ(Waiting(f.result), (std::vector<std::string>{"heavy/b"}));
  const WaitReason& reason = f.result.waiting[0].reason;
  ASSERT_TRUE(reason.behind);
  EXPECT_EQ(reason.behind->team, "light");
  EXPECT_EQ(reason.behind->gpu_hours, 1);
  EXPECT_EQ(reason.behind->own_gpu_hours, 100);
}

TEST(OrderStage, ABorrowerBehindItsOwnTeamsPlacementNamesNoTeam) {
  Fixture f;
  f.snapshot.teams = {Team("light", 1)};
  f.queue.Upsert(Pending("light/a", 50, kT0));
  f.queue.Upsert(Pending("light/b", 50, kT0 + Duration(1)));
  f.next.borrowers = {"light/a", "light/b"};
  f.next.fits = {"light/a"};
  f.Run();
  ASSERT_EQ(Waiting(f.result), (std::vector<std::string>{"light/b"}));
  const WaitReason& reason = f.result.waiting[0].reason;
  EXPECT_EQ(reason.behind ? reason.behind->team : std::string(), "");
}

}  // namespace
}  // namespace berth::scheduling::internal
