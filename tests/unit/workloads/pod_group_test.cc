// Issue 45: Pods and Pod groups as workloads (workloads/pod_group.h): which workload a Pod is
// part of, and a group's state from its Pods.
#include <gtest/gtest.h>

#include "workloads/pod_group.h"

namespace berth::workloads {
namespace {

k8s::GroupPod Pod(std::string name, std::map<std::string, std::string> labels, std::map<std::string, std::string> annotations = {},
                  int created = 0) {
  k8s::GroupPod g;
  g.pod.meta.name = std::move(name);
  g.pod.meta.ns = "ml";
  g.pod.meta.uid = "uid-" + g.pod.meta.name;
  g.pod.meta.created = k8s::TimePoint{} + std::chrono::seconds(created);
  g.pod.meta.labels = std::move(labels);
  g.pod.meta.annotations = std::move(annotations);
  g.pod.requests.cpu_milli = 500;
  g.pod.requests.extended["nvidia.com/gpu"] = 1;
  g.gated = true;
  return g;
}

std::map<std::string, std::string> Group(std::string name) { return {{kQueueLabel, "true"}, {kPodGroupLabel, std::move(name)}}; }

TEST(PodWorkloadOf, LabelledPodsAndGroupsOnlyAndNeverAJobsPod) {
  EXPECT_EQ(PodWorkloadOf(Pod("x", {{kQueueLabel, "true"}}), false), (PodWorkloadId{"Pod", "x"}));
  EXPECT_EQ(PodWorkloadOf(Pod("a", Group("g")), false), (PodWorkloadId{"PodGroup", "g"}));
  EXPECT_EQ(PodWorkloadOf(Pod("x", {}), false), std::nullopt) << "no label: not queued";
  EXPECT_EQ(PodWorkloadOf(Pod("a", {{kPodGroupLabel, "g"}}), false), std::nullopt)
      << "a group without the queue label outside a queue-all namespace is not queued";
  EXPECT_EQ(PodWorkloadOf(Pod("a", {{kPodGroupLabel, "g"}}), true), (PodWorkloadId{"PodGroup", "g"}))
      << "a queue-all namespace queues every Pod group";
  EXPECT_EQ(PodWorkloadOf(Pod("x", {}), true), std::nullopt)
      << "a queue-all namespace does not queue bare Pods without the label";
  k8s::GroupPod of_job = Pod("j-0", {{kQueueLabel, "true"}});
  of_job.pod.meta.owners.push_back(k8s::OwnerRef{"batch/v1", "Job", "j", "u", true});
  EXPECT_EQ(PodWorkloadOf(of_job, true), std::nullopt) << "a Job's Pod is queued through its Job";
  EXPECT_EQ(PodWorkloadOf(Pod("r", {{kQueueLabel, "true"}, {"berth.dev/run", "r"}}), false), std::nullopt);
  // A queue-all namespace takes only the group Pods berth held from creation (gated) or pinned:
  // one that ran before the namespace was labelled is left alone (Kueue's way).
  k8s::GroupPod before = Pod("a", {{kPodGroupLabel, "g"}});
  before.gated = false;
  EXPECT_EQ(PodWorkloadOf(before, true), std::nullopt) << "a group Pod never held by berth is not queued by its namespace";
  before.pod.meta.labels[kQueueLabel] = "true";
  EXPECT_EQ(PodWorkloadOf(before, true), (PodWorkloadId{"PodGroup", "g"})) << "its own label queues it, gated or not";
  k8s::GroupPod pinned = Pod("a", {{kPodGroupLabel, "g"}, {kTicketLabel, "podgroup-g"}});
  pinned.gated = false;
  EXPECT_EQ(PodWorkloadOf(pinned, true), (PodWorkloadId{"PodGroup", "g"})) << "a Pod berth pinned stays its group's";
  EXPECT_EQ(PodTicketName({"Pod", "x"}), "pod-x");
  EXPECT_EQ(PodTicketName({"PodGroup", "g"}), "podgroup-g");
}

TEST(PodGroupOf, WaitsUntilAllPodsExistThenTakesTheFirstPodsLabels) {
  std::map<std::string, std::string> size{{kPodGroupSizeAnnotation, "4"}};
  auto labels = Group("g");
  labels[kPriorityLabel] = "70";
  k8s::GroupPod a = Pod("a", labels, size, 1), b = Pod("b", Group("g"), size, 2);
  b.pod.requests.cpu_milli = 2000;
  PodGroupState s = PodGroupOf({"PodGroup", "g"}, {&b, &a});
  EXPECT_EQ(s.problem, "");
  EXPECT_EQ(s.size, 4);
  EXPECT_EQ(s.live, 2);
  EXPECT_EQ(s.waiting, "2 of 4 Pods of the group exist");
  EXPECT_EQ(s.workload.kind, "PodGroup");
  EXPECT_EQ(s.workload.meta.name, "g");
  EXPECT_EQ(s.workload.meta.uid, "uid-a") << "the first Pod's";
  EXPECT_EQ(s.workload.pods, 4);
  EXPECT_EQ(s.workload.requests.cpu_milli, 2000) << "the largest request of any Pod";
  EXPECT_EQ(s.workload.requests.Get("nvidia.com/gpu"), 1);
  EXPECT_TRUE(s.workload.suspended);
  EXPECT_FALSE(s.workload.finished.has_value());
  TicketSpec t = TicketSpecOf(PodGroups(), s.workload, "nvidia.com/gpu");
  EXPECT_EQ(t.spec.priority, 70) << "the first Pod's label";
  EXPECT_EQ(t.spec.nodes, 4);
  ASSERT_TRUE(t.spec.workload_ref.has_value());
  EXPECT_EQ(t.spec.workload_ref->kind, "PodGroup");
  EXPECT_EQ(t.spec.workload_ref->api_version, "v1");

  k8s::GroupPod c = Pod("c", Group("g"), size, 3), d = Pod("d", Group("g"), size, 4);
  s = PodGroupOf({"PodGroup", "g"}, {&a, &b, &c, &d});
  EXPECT_EQ(s.waiting, "");
  d.pod.meta.deleting = true;
  EXPECT_EQ(PodGroupOf({"PodGroup", "g"}, {&a, &b, &c, &d}).waiting, "3 of 4 Pods of the group exist");
  d.pod.meta.deleting = false;
  k8s::GroupPod e = Pod("e", Group("g"), size, 5);
  EXPECT_EQ(PodGroupOf({"PodGroup", "g"}, {&a, &b, &c, &d, &e}).waiting, "5 Pods carry group g but its size is 4: delete the extra Pods");
}

TEST(PodGroupOf, SucceedsWhenAllSucceededFailsWhenOneFailed) {
  std::map<std::string, std::string> size{{kPodGroupSizeAnnotation, "2"}};
  k8s::GroupPod a = Pod("a", Group("g"), size, 1), b = Pod("b", Group("g"), size, 2);
  a.gated = b.gated = false;
  a.pod.phase = "Succeeded";
  b.pod.phase = "Running";
  PodGroupState s = PodGroupOf({"PodGroup", "g"}, {&a, &b});
  EXPECT_FALSE(s.workload.finished.has_value()) << "one of two succeeded";
  EXPECT_FALSE(s.workload.suspended) << "no Pod is gated";
  b.pod.phase = "Succeeded";
  s = PodGroupOf({"PodGroup", "g"}, {&a, &b});
  ASSERT_TRUE(s.workload.finished.has_value());
  EXPECT_TRUE(*s.workload.finished);
  EXPECT_EQ(s.workload.finish_message, "all 2 Pods of the group succeeded");
  b.pod.phase = "Failed";
  b.pod.reason = "Error";
  b.pod.meta.deleting = true;
  EXPECT_FALSE(PodGroupOf({"PodGroup", "g"}, {&a, &b}).workload.finished.has_value())
      << "a Pod killed because it is being deleted did not fail the group";
  b.pod.meta.deleting = false;
  s = PodGroupOf({"PodGroup", "g"}, {&a, &b});
  ASSERT_TRUE(s.workload.finished.has_value());
  EXPECT_FALSE(*s.workload.finished);
  EXPECT_EQ(s.workload.finish_message, "Pod b failed: Error");
  k8s::GroupPod x = Pod("x", {{kQueueLabel, "true"}});
  x.pod.phase = "Succeeded";
  s = PodGroupOf({"Pod", "x"}, {&x});
  EXPECT_EQ(s.size, 1);
  ASSERT_TRUE(s.workload.finished.has_value());
  EXPECT_TRUE(*s.workload.finished);
}

TEST(PodGroupOf, ABadOrDifferingSizeIsNamed) {
  k8s::GroupPod a = Pod("a", Group("g"), {{kPodGroupSizeAnnotation, "two"}}, 1);
  EXPECT_EQ(PodGroupOf({"PodGroup", "g"}, {&a}).problem,
            "annotation berth.dev/pod-group-size must be a whole number from 1 to 10000, not \"two\"");
  k8s::GroupPod none = Pod("a", Group("g"), {}, 1);
  EXPECT_EQ(PodGroupOf({"PodGroup", "g"}, {&none}).problem,
            "annotation berth.dev/pod-group-size must be a whole number from 1 to 10000, not \"\"");
  k8s::GroupPod b = Pod("a", Group("g"), {{kPodGroupSizeAnnotation, "2"}}, 1), c = Pod("c", Group("g"), {{kPodGroupSizeAnnotation, "3"}}, 2);
  EXPECT_EQ(PodGroupOf({"PodGroup", "g"}, {&b, &c}).problem,
            "annotation berth.dev/pod-group-size differs between Pods a (\"2\") and c (\"3\") of group g");
}

// Issue 44/45: a group's grace is the longest of its Pods' terminationGracePeriodSeconds (a Pod
// being deleted is going: not counted).
TEST(PodGroupOf, GraceIsTheLongestOfItsPods) {
  std::map<std::string, std::string> size{{kPodGroupSizeAnnotation, "3"}};
  k8s::GroupPod a = Pod("a", Group("g"), size, 1), b = Pod("b", Group("g"), size, 2), c = Pod("c", Group("g"), size, 3);
  a.pod.grace_seconds = 30;
  b.pod.grace_seconds = 3600;
  c.pod.grace_seconds = 31536000;
  c.pod.meta.deleting = true;
  PodGroupState s = PodGroupOf({"PodGroup", "g"}, {&a, &b, &c});
  EXPECT_EQ(s.workload.grace_seconds, 3600);
  c.pod.meta.deleting = false;
  s = PodGroupOf({"PodGroup", "g"}, {&a, &b, &c});
  EXPECT_EQ(s.workload.grace_seconds, 31536000);
}

}  // namespace
}  // namespace berth::workloads
