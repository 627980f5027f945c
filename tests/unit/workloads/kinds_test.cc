// Issue 45: the registry of workload kinds (workloads::ObjectKinds, KindOf) and what each kind
// says of a Pod (WorkloadOfPod, PodSelector) and of its objects (a JobSet's Job is part of it).
#include <gtest/gtest.h>

#include "k8s/json.h"
#include "workloads/job.h"

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

}  // namespace
}  // namespace berth::workloads
