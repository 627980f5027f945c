// Issue 45: the registry of workload kinds (workloads::ObjectKinds, KindOf) and what each kind
// says of a Pod (WorkloadOfPod, PodSelector) and of its objects (a JobSet's Job is part of it).
#include <gtest/gtest.h>

#include "k8s/json.h"
#include "workloads/job.h"
#include "workloads/jobset.h"

namespace berth::workloads {
namespace {

k8s::Pod PodOwnedBy(const std::string& kind, const std::string& name, const std::string& uid) {
  k8s::Pod p;
  p.meta.name = "p";
  p.meta.ns = "ml";
  p.meta.owners.push_back(k8s::OwnerRef{"batch/v1", kind, name, uid, true});
  return p;
}

TEST(ObjectKinds, JobFirstAndFoundByKind) {
  ASSERT_FALSE(ObjectKinds().empty());
  EXPECT_EQ(ObjectKinds().size(), kObjectKindCount);
  EXPECT_EQ(ObjectKinds().front(), &Jobs());
  EXPECT_EQ(KindOf("Job"), &Jobs());
  EXPECT_EQ(KindOf("JobSet"), &JobSets());
  EXPECT_EQ(ObjectKinds().size(), 2u);
  EXPECT_EQ(KindOf("Deployment"), nullptr);
  EXPECT_EQ(KindOf(""), nullptr);
}

TEST(JobKind, APodIsItsControllerJobsUnlessAJobSetOwnsIt) {
  const k8s::Pod p = PodOwnedBy("Job", "train", "u1");
  EXPECT_EQ(Jobs().WorkloadOfPod(p).name, "train");
  EXPECT_EQ(Jobs().WorkloadOfPod(p).uid, "u1");
  k8s::Pod other = PodOwnedBy("ReplicaSet", "web", "u2");
  EXPECT_EQ(Jobs().WorkloadOfPod(other).name, "");
  k8s::Pod of_jobset = PodOwnedBy("Job", "ls-workers-0", "u3");
  of_jobset.meta.labels["jobset.sigs.k8s.io/jobset-name"] = "ls";
  EXPECT_EQ(Jobs().WorkloadOfPod(of_jobset).name, "") << "a JobSet's Pod is the JobSet's, not its Job's";
  EXPECT_EQ(Jobs().PodSelector("train", "u1"), "batch.kubernetes.io/controller-uid=u1");
}

TEST(JobKind, AJobSetsJobIsPartOfIt) {
  auto own = k8s::json::Parse(R"({"metadata":{"name":"train","namespace":"ml","uid":"u1"},"spec":{}})");
  ASSERT_TRUE(own.ok());
  auto w = Jobs().Decode(*own);
  ASSERT_NE(w, nullptr);
  EXPECT_FALSE(w->part_of_other);
  auto child = k8s::json::Parse(R"({"metadata":{"name":"ls-workers-0","namespace":"ml","uid":"u2",
      "ownerReferences":[{"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","name":"ls","uid":"u9","controller":true}]},
      "spec":{}})");
  ASSERT_TRUE(child.ok());
  w = Jobs().Decode(*child);
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->part_of_other);
}

TEST(JobSetKind, APodIsItsJobSetsByTheControllersLabels) {
  k8s::Pod p = PodOwnedBy("Job", "ls-workers-0", "u3");
  p.meta.labels["jobset.sigs.k8s.io/jobset-name"] = "ls";
  p.meta.labels["jobset.sigs.k8s.io/jobset-uid"] = "u9";
  EXPECT_EQ(JobSets().WorkloadOfPod(p).name, "ls");
  EXPECT_EQ(JobSets().WorkloadOfPod(p).uid, "u9");
  EXPECT_EQ(JobSets().WorkloadOfPod(PodOwnedBy("Job", "train", "u1")).name, "");
  EXPECT_EQ(JobSets().PodSelector("ls", "u9"), "jobset.sigs.k8s.io/jobset-uid=u9");
  EXPECT_EQ(TicketName(JobSets().TicketPrefix(), "ls"), "jobset-ls");
}

TEST(JobSetKind, AllReplicatedJobsAreOneGangOnBlocksForTheLargestPod) {
  auto obj = k8s::json::Parse(R"({"metadata":{"name":"ls","namespace":"ml","uid":"u9","labels":{"berth.dev/queue":"true","app":"x"}},
      "spec":{"suspend":true,"replicatedJobs":[
        {"name":"driver","replicas":1,"template":{"spec":{"parallelism":1,"completions":1,"template":{"spec":{
          "containers":[{"name":"c","resources":{"requests":{"cpu":"4","memory":"1Gi"}}}]}}}}},
        {"name":"workers","replicas":2,"template":{"spec":{"parallelism":3,"completions":2,"template":{"spec":{
          "containers":[{"name":"c","resources":{"requests":{"cpu":"1","memory":"8Gi","nvidia.com/gpu":"2"}}}]}}}}},
        {"name":"none","replicas":0,"template":{"spec":{"template":{"spec":{
          "containers":[{"name":"c","resources":{"requests":{"cpu":"64"}}}]}}}}}]},
      "status":{"conditions":[{"type":"Suspended","status":"True"}]}})");
  ASSERT_TRUE(obj.ok());
  auto w = JobSets().Decode(*obj);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->kind, "JobSet");
  EXPECT_EQ(w->pods, 1 + 2 * 2) << "replicas x parallelism bounded by completions, over every replicated Job";
  EXPECT_EQ(w->requests.cpu_milli, 4000) << "the driver's";
  EXPECT_EQ(w->requests.memory_bytes, int64_t{8} << 30) << "a worker's";
  EXPECT_EQ(w->requests.Get("nvidia.com/gpu"), 2);
  EXPECT_TRUE(w->suspended);
  EXPECT_FALSE(w->finished.has_value());
  EXPECT_EQ(w->meta.labels.count("app"), 0u) << "only berth's labels are kept";

  auto done = k8s::json::Parse(R"({"metadata":{"name":"ls","uid":"u9"},"spec":{"replicatedJobs":[]},
      "status":{"conditions":[{"type":"Completed","status":"True","reason":"AllJobsCompleted","message":"jobset completed successfully"}]}})");
  ASSERT_TRUE(done.ok());
  w = JobSets().Decode(*done);
  ASSERT_TRUE(w->finished.has_value());
  EXPECT_TRUE(*w->finished);
  EXPECT_EQ(w->finish_reason, "AllJobsCompleted");
  auto failed = k8s::json::Parse(R"({"metadata":{"name":"ls","uid":"u9"},"spec":{},
      "status":{"conditions":[{"type":"Failed","status":"True","reason":"FailurePolicyMaxRestartsReached","message":"m"}]}})");
  ASSERT_TRUE(failed.ok());
  w = JobSets().Decode(*failed);
  ASSERT_TRUE(w->finished.has_value());
  EXPECT_FALSE(*w->finished);
}

// Issue 44/45: the grace period a workload's Pods get when their controller deletes them, which
// berth cannot cap: a fleet's maxGracePeriod must cover it (scheduling/filter.h).
TEST(JobKind, GraceIsTheTemplatesTerminationGracePeriodElseKubernetes30) {
  auto year = k8s::json::Parse(R"({"metadata":{"name":"train","uid":"u1"},"spec":{"template":{"spec":{
      "terminationGracePeriodSeconds":31536000,"containers":[{"name":"c"}]}}}})");
  ASSERT_TRUE(year.ok());
  auto w = Jobs().Decode(*year);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->grace_seconds, 31536000);
  auto unset = k8s::json::Parse(R"({"metadata":{"name":"train","uid":"u1"},"spec":{"template":{"spec":{
      "containers":[{"name":"c"}]}}}})");
  ASSERT_TRUE(unset.ok());
  EXPECT_EQ(Jobs().Decode(*unset)->grace_seconds, 30);
}

TEST(JobSetKind, GraceIsTheLongestOfTheReplicatedJobsThatMakePods) {
  auto obj = k8s::json::Parse(R"({"metadata":{"name":"ls","uid":"u9"},"spec":{"replicatedJobs":[
        {"name":"driver","replicas":1,"template":{"spec":{"template":{"spec":{"terminationGracePeriodSeconds":5,
          "containers":[{"name":"c"}]}}}}},
        {"name":"workers","replicas":2,"template":{"spec":{"template":{"spec":{"terminationGracePeriodSeconds":900,
          "containers":[{"name":"c"}]}}}}},
        {"name":"none","replicas":0,"template":{"spec":{"template":{"spec":{"terminationGracePeriodSeconds":31536000,
          "containers":[{"name":"c"}]}}}}}]}})");
  ASSERT_TRUE(obj.ok());
  auto w = JobSets().Decode(*obj);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->grace_seconds, 900) << "the workers'; a replicated Job of 0 replicas makes no Pod";
  auto unset = k8s::json::Parse(R"({"metadata":{"name":"ls","uid":"u9"},"spec":{"replicatedJobs":[
        {"name":"driver","replicas":1,"template":{"spec":{"template":{"spec":{"terminationGracePeriodSeconds":5,
          "containers":[{"name":"c"}]}}}}},
        {"name":"workers","replicas":1,"template":{"spec":{"template":{"spec":{"containers":[{"name":"c"}]}}}}}]}})");
  ASSERT_TRUE(unset.ok());
  EXPECT_EQ(JobSets().Decode(*unset)->grace_seconds, 30) << "a template without one gets Kubernetes' 30";
}

}  // namespace
}  // namespace berth::workloads
