#include "cli/run_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/v1alpha1/codec.h"
#include "k8s/timefmt.h"

namespace berth::cli {
namespace {

namespace json = k8s::json;
using ::testing::HasSubstr;
using ::testing::Not;

k8s::TimePoint Now() { return *k8s::ParseRfc3339("2026-11-24T10:12:00Z"); }

json::Document Doc(const std::string& text) {
  auto d = json::Parse(text);
  EXPECT_TRUE(d.ok()) << text;
  return d.ok() ? std::move(d).value() : json::Document();
}

const char* kRunning = R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run",
 "metadata":{"name":"train","namespace":"ml","uid":"u1","creationTimestamp":"2026-11-24T09:55:00Z"},
 "spec":{"priority":70,"nodes":2,"resources":{"cpu":"8","memory":"64Gi","gpu":8},"fleets":["a100"],
   "maxDuration":"4h","retry":{"onEvents":["no-capacity","error"],"duration":"1h"},"template":{}},
 "status":{"phase":"Running","reason":"Running","message":"all 2 Pods are running","effectivePriority":72,
   "fleet":"a100","submittedAt":"2026-11-24T10:00:00Z","scheduledAt":"2026-11-24T10:01:30Z",
   "startedAt":"2026-11-24T10:02:00Z","resubmissions":1,
   "placement":[{"rank":1,"node":"gpu-1","blocks":8,"pod":"train-r1-1"},{"rank":0,"node":"gpu-0","blocks":8,"pod":"train-r1-0"}],
   "conditions":[{"type":"Scheduled","status":"True","reason":"Scheduled","message":"placed on a100",
                  "lastTransitionTime":"2026-11-24T10:01:30Z"},
                 {"type":"Ready","status":"True","reason":"Running","message":"all 2 Pods are running",
                  "lastTransitionTime":"2026-11-24T10:02:00Z"}]}})";

const char* kPod0 = R"({"metadata":{"name":"train-r1-0"},"status":{"phase":"Running"}})";
const char* kPod1 = R"({"metadata":{"name":"train-r1-1"},"status":{"phase":"Pending",
 "containerStatuses":[{"name":"main","state":{"waiting":{"reason":"ContainerCreating"}}}]}})";
const char* kOldPod = R"({"metadata":{"name":"train-0"},"status":{"phase":"Failed",
 "containerStatuses":[{"name":"main","state":{"terminated":{"exitCode":3}}}]}})";

const char* kEventLate = R"({"metadata":{"name":"e2"},"type":"Normal","reason":"Started","message":"all 2 Pods are running",
 "count":1,"lastTimestamp":"2026-11-24T10:02:00Z"})";
const char* kEventEarly = R"({"metadata":{"name":"e1"},"type":"Warning","reason":"Resubmitted","message":"rank 0 exited with 3",
 "count":2,"lastTimestamp":"2026-11-24T10:00:00Z"})";

TEST(RunViewTest, RunningRunShowsWhatAUserReadsInOrder) {
  auto run = Doc(kRunning);
  auto p0 = Doc(kPod0), p1 = Doc(kPod1), old = Doc(kOldPod);
  auto late = Doc(kEventLate), early = Doc(kEventEarly);
  const std::string out = FormatRunDescription(run, {&p1, &old, &p0}, {&late, &early}, Now());
  const std::vector<std::string> in_order = {
      "Name:         train\n",
      "Namespace:    ml\n",
      "Priority:     70 (effective 72, aged while waiting)\n",
      "Phase:        Running\n",
      "Reason:       Running\n",
      "Message:      all 2 Pods are running\n",
      "Asks:         2 nodes, each 8 CPU, 64Gi memory, 8 GPU; fleets a100\n",
      "Limits:       maxDuration 4h; retry on no-capacity, error for 1h\n",
      "Submitted:    2026-11-24T10:00:00Z (12m ago)\n",
      "Scheduled:    2026-11-24T10:01:30Z (10m ago)\n",
      "Started:      2026-11-24T10:02:00Z (10m ago)\n",
      "Attempts:     2 (1 resubmission)\n",
      "Fleet:        a100\n",
      "Placement:\n",
      "  RANK   NODE    BLOCKS   POD          POD STATE\n"
      "  0      gpu-0   8        train-r1-0   Running\n"
      "  1      gpu-1   8        train-r1-1   Pending (ContainerCreating)\n",
      "Conditions:\n",
      "  TYPE        STATUS   REASON      AGE   MESSAGE\n"
      "  Scheduled   True     Scheduled   10m   placed on a100\n"
      "  Ready       True     Running     10m   all 2 Pods are running\n",
      "Events:\n",
      "  AGE   TYPE      REASON        COUNT   MESSAGE\n"
      "  12m   Warning   Resubmitted   2       rank 0 exited with 3\n"
      "  10m   Normal    Started       1       all 2 Pods are running\n",
  };
  size_t at = 0;
  for (const auto& part : in_order) {
    size_t found = out.find(part, at);
    ASSERT_NE(found, std::string::npos) << "missing or out of order: \"" << part << "\" in\n" << out;
    at = found + part.size();
  }
  EXPECT_THAT(out, Not(HasSubstr("Position:"))) << "a running run has no queue position";
  EXPECT_THAT(out, Not(HasSubstr("train-0 "))) << "an old attempt's Pod is not a rank of this attempt";
}

TEST(RunViewTest, PendingRunShowsItsPositionAndWhy) {
  auto run = Doc(R"({"metadata":{"name":"wait","namespace":"default","creationTimestamp":"2026-11-24T10:00:00Z"},
   "spec":{"template":{}},
   "status":{"phase":"Pending","reason":"NoCapacity","message":"needs 1 block of 1 GPU; fleets a100: 0 free",
     "queuePosition":3,"effectivePriority":50,"submittedAt":"2026-11-24T10:00:00Z"}})");
  const std::string out = FormatRunDescription(run, {}, {}, Now());
  EXPECT_THAT(out, HasSubstr("Priority:     50\n")) << "no effective part when it equals the priority";
  EXPECT_THAT(out, HasSubstr("Phase:        Pending\nReason:       NoCapacity\n"));
  EXPECT_THAT(out, HasSubstr("Position:     3 in the queue\n"));
  EXPECT_THAT(out, HasSubstr("Asks:         1 node, no resources named; any fleet\n"));
  EXPECT_THAT(out, HasSubstr("Attempts:     1\n"));
  EXPECT_THAT(out, HasSubstr("Events:       <none>\n"));
  EXPECT_THAT(out, Not(HasSubstr("Placement:")));
  EXPECT_THAT(out, Not(HasSubstr("Limits:")));
  EXPECT_THAT(out, HasSubstr("Position:     3 in the queue\nEstimate:     unknown (not forecast yet, or estimates are off"))
      << "no estimate and no reason in the message";
}

// A preempting run (issue 17): whom it stops and the nodes kept for it; the record names only
// the victims of its own namespace and counts the others (issue 44), and so does describe.
TEST(RunViewTest, PreemptingRunShowsItsVictimsOfItsNamespaceAndCountsTheOthers) {
  auto run = Doc(R"({"metadata":{"name":"hot","namespace":"ml"},"spec":{"template":{}},
   "status":{"phase":"Pending","reason":"Preempting","message":"preempting 3 runs","submittedAt":"2026-11-24T10:00:00Z",
     "preemption":{"fleet":"a100","nodes":["gpu-0","gpu-1"],"victims":["ml/low"],"otherVictims":2,
                   "victimUIDs":["u1","u2","u3"],"reclaim":false}}})");
  const std::string out = FormatRunDescription(run, {}, {}, Now());
  EXPECT_THAT(out, HasSubstr("Preempting:   ml/low, 2 runs of other namespaces; kept for it: gpu-0, gpu-1 (fleet a100)\n"));
  EXPECT_THAT(out, Not(HasSubstr("u2")));
  auto reclaim = Doc(R"({"metadata":{"name":"own","namespace":"ml"},"spec":{"template":{}},
   "status":{"phase":"Pending","reason":"Preempting","preemption":{"fleet":"a100","nodes":["gpu-0"],"victims":[],
     "otherVictims":1,"victimUIDs":["u9"],"reclaim":true}}})");
  EXPECT_THAT(FormatRunDescription(reclaim, {}, {}, Now()),
              HasSubstr("Preempting:   reclaiming its team's share from 1 run of another namespace; kept for it: gpu-0 (fleet a100)\n"));
}

// A pending run's estimate and what it rests on; an unknown one with the reason its message gives.
TEST(RunViewTest, PendingRunShowsItsEstimatedStartOrWhyItHasNone) {
  auto known = Doc(R"({"metadata":{"name":"wait","namespace":"default"},"spec":{},
   "status":{"phase":"Pending","reason":"NoCapacity","message":"needs 1 block; would start now with maxDuration ≤ 25m",
     "queuePosition":2,"estimatedStartAt":"2026-11-24T10:52:00Z"}})");
  EXPECT_THAT(FormatRunDescription(known, {}, {}, Now()),
              HasSubstr("Estimate:     2026-11-24T10:52:00Z (in 40m), if nothing new arrives: the queue's rules run forward"
                        " over the running runs' expected ends (maxDuration, or the runtime of finished runs like them)\n"));
  auto unknown = Doc(R"({"metadata":{"name":"wait","namespace":"default"},"spec":{},
   "status":{"phase":"Pending","reason":"NoCapacity",
     "message":"needs 1 block; estimated start unknown: the room it waits for is held by runs without a known end; more"}})");
  EXPECT_THAT(FormatRunDescription(unknown, {}, {}, Now()),
              HasSubstr("Estimate:     unknown: the room it waits for is held by runs without a known end\n"));
  auto placed = Doc(R"({"metadata":{"name":"p","namespace":"default"},"spec":{},
   "status":{"phase":"Scheduled","reason":"Scheduled","message":"placed"}})");
  EXPECT_THAT(FormatRunDescription(placed, {}, {}, Now()), Not(HasSubstr("Estimate:"))) << "only a pending run has one";
}

TEST(RunViewTest, NewRunNotYetSeenAndAFailedOneWithTerminatingPods) {
  auto fresh = Doc(R"({"metadata":{"name":"new","namespace":"default","creationTimestamp":"2026-11-24T10:11:00Z"},"spec":{}})");
  const std::string a = FormatRunDescription(fresh, {}, {}, Now());
  EXPECT_THAT(a, HasSubstr("Phase:        Pending (not yet seen by the berth controller)\n"));
  EXPECT_THAT(a, HasSubstr("Submitted:    2026-11-24T10:11:00Z (60s ago)\n"));

  auto failed = Doc(R"({"metadata":{"name":"f","namespace":"default","deletionTimestamp":"2026-11-24T10:11:59Z"},
   "spec":{"retry":{"duration":"off"},"ttlSecondsAfterFinished":600},
   "status":{"phase":"Failed","reason":"MaxDurationExceeded","message":"ran longer than its maxDuration 1m",
     "finishedAt":"2026-11-24T10:11:00Z","placement":[{"rank":0,"node":"n","blocks":1,"pod":"f-0"}]}})");
  auto pod = Doc(R"({"metadata":{"name":"f-0","deletionTimestamp":"2026-11-24T10:11:00Z"},"status":{"phase":"Running"}})");
  const std::string b = FormatRunDescription(failed, {&pod}, {}, Now());
  EXPECT_THAT(b, HasSubstr("Phase:        Failed (deleting)\n"));
  EXPECT_THAT(b, HasSubstr("Limits:       retry on no-capacity, interruption, error for ever; ttlSecondsAfterFinished 600\n"));
  EXPECT_THAT(b, HasSubstr("Finished:     2026-11-24T10:11:00Z (60s ago)\n"));
  EXPECT_THAT(b, HasSubstr("  0      n      1        f-0   Terminating\n"));
}

TEST(RunViewTest, FailedPodShowsItsExitCodeOrTheKubeletsReason) {
  auto run = Doc(R"({"metadata":{"name":"r"},"status":{"phase":"Failed","placement":[
     {"rank":0,"node":"a","blocks":1,"pod":"r-0"},{"rank":1,"node":"b","blocks":1,"pod":"r-1"},
     {"rank":2,"node":"c","blocks":1,"pod":"r-2"}]}})");
  auto exit3 = Doc(R"({"metadata":{"name":"r-0"},"status":{"phase":"Failed",
     "containerStatuses":[{"state":{"terminated":{"exitCode":3}}}]}})");
  auto refused = Doc(R"({"metadata":{"name":"r-1"},"status":{"phase":"Failed","reason":"OutOfcpu"}})");
  const std::string out = FormatRunDescription(run, {&exit3, &refused}, {}, Now());
  EXPECT_THAT(out, HasSubstr("r-0   Failed (exit 3)\n"));
  EXPECT_THAT(out, HasSubstr("r-1   Failed (OutOfcpu)\n"));
  EXPECT_THAT(out, HasSubstr("r-2   gone\n"));
}

// Issue 48: a placed run's domain is the path its nodes share in the fleet's status, with the
// levels it spans; none when the nodes share no outermost domain or one has no domain.
TEST(RunViewTest, APlacedRunsDomainIsThePathItsNodesShare) {
  auto fleet = api::v1alpha1::DecodeFleet(*json::Parse(R"({"metadata":{"name":"racks"},"spec":{"nodeSelector":{"pool":"r"},
    "placement":"cluster","topology":[{"key":"example.com/spine"},{"key":"example.com/rack"}]},
    "status":{"instances":[{"node":"a0","domain":"s1/a"},{"node":"a1","domain":"s1/a"},{"node":"b0","domain":"s1/b"},
     {"node":"c0","domain":"s2/c"},{"node":"loose"}]}})"));
  ASSERT_TRUE(fleet.ok()) << fleet.status().message();
  auto on = [&](std::vector<std::string> nodes) {
    std::vector<api::v1alpha1::PlacementEntry> placement;
    for (auto& n : nodes) placement.push_back({.rank = 0, .node = n, .blocks = 1, .pod = ""});
    return RunDomain(placement, *fleet);
  };
  EXPECT_EQ(on({"a0", "a1"}), "s1/a (example.com/spine > example.com/rack)");
  EXPECT_EQ(on({"a0"}), "s1/a (example.com/spine > example.com/rack)");
  EXPECT_EQ(on({"a0", "b0"}), "s1 (example.com/spine)");
  EXPECT_EQ(on({"a0", "c0"}), "");
  EXPECT_EQ(on({"a0", "loose"}), "");
  EXPECT_EQ(on({}), "");
  auto flat = api::v1alpha1::DecodeFleet(*json::Parse(R"({"metadata":{"name":"flat"},"spec":{"nodeSelector":{"pool":"r"}},
    "status":{"instances":[{"node":"a0","domain":"s1/a"}]}})"));
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(RunDomain({{.rank = 0, .node = "a0", .blocks = 1, .pod = ""}}, *flat), "") << "a fleet without levels";
}

}  // namespace
}  // namespace berth::cli
