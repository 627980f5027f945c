// Issue 45: a workload's ticket (workloads/workload.h): its name and its spec from the labels.
#include <gtest/gtest.h>

#include "workloads/job.h"

namespace berth::workloads {
namespace {

Workload Job(std::map<std::string, std::string> labels, std::map<std::string, std::string> annotations = {}) {
  Workload w;
  w.meta.name = "train";
  w.meta.ns = "ml";
  w.meta.uid = "u1";
  w.meta.labels = std::move(labels);
  w.meta.annotations = std::move(annotations);
  w.kind = "Job";
  w.pods = 4;
  w.requests.cpu_milli = 1500;
  w.requests.memory_bytes = 1 << 30;
  w.requests.extended["example.com/gpu"] = 2;
  return w;
}

TEST(TicketName, KindPrefixAndAHashWhenTooLong) {
  EXPECT_EQ(TicketName("job", "train"), "job-train");
  const std::string long_name(80, 'a');
  const std::string t = TicketName("job", long_name);
  EXPECT_LE(t.size(), 63u);
  EXPECT_EQ(t.rfind("job-aaaa", 0), 0u);
  EXPECT_NE(t, TicketName("job", long_name + "b")) << "two long names differ by their hash";
  EXPECT_EQ(t, TicketName("job", long_name)) << "the same in every call (found again after a restart)";
}

TEST(TicketSpecOf, FollowsTheLabels) {
  TicketSpec t = TicketSpecOf(Jobs(), Job({{kQueueLabel, "true"}, {kPriorityLabel, "80"}, {kFleetLabel, "a100"},
                                           {kWholeInstancesLabel, "true"}},
                                          {{kMaxDurationAnnotation, "6h"}}),
                              "example.com/gpu");
  EXPECT_EQ(t.problem, "");
  EXPECT_EQ(t.spec.priority, 80);
  EXPECT_EQ(t.spec.nodes, 4);
  EXPECT_EQ(t.spec.cpu_milli, 1500);
  EXPECT_EQ(t.spec.gpus, 2) << "in the resource the fleet names";
  EXPECT_EQ(t.spec.fleets, std::vector<std::string>{"a100"});
  EXPECT_EQ(t.spec.whole_instances, true);
  ASSERT_TRUE(t.spec.max_duration.has_value());
  EXPECT_EQ(*t.spec.max_duration, std::chrono::hours(6));
  ASSERT_TRUE(t.spec.retry.has_value());
  EXPECT_TRUE(t.spec.retry->on_no_capacity);
  EXPECT_FALSE(t.spec.retry->duration.has_value()) << "a workload always waits";
  ASSERT_TRUE(t.spec.workload_ref.has_value());
  EXPECT_EQ(t.spec.workload_ref->kind, "Job");
  EXPECT_EQ(t.spec.workload_ref->uid, "u1");
  EXPECT_TRUE(t.spec.template_json.empty());
}

TEST(TicketSpecOf, DefaultsWithoutLabels) {
  TicketSpec t = TicketSpecOf(Jobs(), Job({{kQueueLabel, "true"}}), "nvidia.com/gpu");
  EXPECT_EQ(t.problem, "");
  EXPECT_EQ(t.spec.priority, 50);
  EXPECT_TRUE(t.spec.fleets.empty());
  EXPECT_EQ(t.spec.gpus, 0);
  EXPECT_EQ(t.spec.whole_instances, false);
  EXPECT_FALSE(t.spec.max_duration.has_value());
}

TEST(TicketSpecOf, ABadLabelIsNamedNeverSilentlyDefaulted) {
  EXPECT_EQ(TicketSpecOf(Jobs(), Job({{kPriorityLabel, "high"}}), "").problem,
            "label berth.dev/priority must be a whole number from 0 to 100, not \"high\"");
  EXPECT_EQ(TicketSpecOf(Jobs(), Job({{kPriorityLabel, "101"}}), "").problem,
            "label berth.dev/priority must be a whole number from 0 to 100, not \"101\"");
  EXPECT_NE(TicketSpecOf(Jobs(), Job({{kWholeInstancesLabel, "yes"}}), "").problem.find("berth.dev/whole-instances"),
            std::string::npos);
  EXPECT_NE(TicketSpecOf(Jobs(), Job({}, {{kMaxDurationAnnotation, "soon"}}), "").problem.find("berth.dev/max-duration"),
            std::string::npos);
}

TEST(TicketSpecOf, TopologyFromTheLabelsOrTheAnnotationsOfTheSameName) {
  // A label value holds no "/": a level key without a prefix as a label, any key as an annotation.
  TicketSpec t = TicketSpecOf(Jobs(), Job({{kTopologyRequiredLabel, "rack"}}), "");
  EXPECT_EQ(t.problem, "");
  EXPECT_EQ(t.spec.topology_required, "rack");
  EXPECT_EQ(t.spec.topology_preferred, "");
  t = TicketSpecOf(Jobs(), Job({{kTopologyPreferredLabel, "rack"}}, {{kTopologyPreferredLabel, "example.com/rack"}}), "");
  EXPECT_EQ(t.problem, "");
  EXPECT_EQ(t.spec.topology_preferred, "example.com/rack") << "the annotation wins";
  EXPECT_EQ(t.spec.topology_required, "");
  t = TicketSpecOf(Jobs(), Job({}), "");
  EXPECT_EQ(t.spec.topology_required, "");
  EXPECT_EQ(t.spec.topology_preferred, "");
  t = TicketSpecOf(Jobs(), Job({{kTopologyRequiredLabel, "rack"}, {kTopologyPreferredLabel, "spine"}}), "");
  EXPECT_EQ(t.problem, "labels berth.dev/topology-required and berth.dev/topology-preferred are exclusive");
  EXPECT_EQ(t.spec.topology_required, "") << "a bad label keeps the default";
  t = TicketSpecOf(Jobs(), Job({}, {{kTopologyRequiredLabel, "my rack"}}), "");
  EXPECT_EQ(t.problem, "label berth.dev/topology-required must name a topology level's label key, not \"my rack\"");
  EXPECT_EQ(t.spec.topology_required, "");
  EXPECT_EQ(TicketSpecOf(Jobs(), Job({}, {{kTopologyPreferredLabel, "Example.com/rack"}}), "").problem,
            "label berth.dev/topology-preferred must name a topology level's label key, not \"Example.com/rack\"");
  EXPECT_EQ(TicketSpecOf(Jobs(), Job({}, {{kTopologyPreferredLabel, "example.com/rack-"}}), "").problem,
            "label berth.dev/topology-preferred must name a topology level's label key, not \"example.com/rack-\"");
}

TEST(PutTopology, FollowsTheLabelsUnlessTheyHaveAProblem) {
  api::v1alpha1::RunSpec next;
  next.topology_required = "example.com/spine";
  PutTopology(TicketSpecOf(Jobs(), Job({{kTopologyPreferredLabel, "rack"}}), ""), next);
  EXPECT_EQ(next.topology_required, "");
  EXPECT_EQ(next.topology_preferred, "rack");
  PutTopology(TicketSpecOf(Jobs(), Job({{kTopologyRequiredLabel, "my rack"}}), ""), next);
  EXPECT_EQ(next.topology_preferred, "rack") << "a bad label keeps the ticket's value";
  PutTopology(TicketSpecOf(Jobs(), Job({{kPriorityLabel, "high"}}), ""), next);
  EXPECT_EQ(next.topology_preferred, "") << "another label's problem does not keep it";
}

TEST(IsQueued, TheLabelOrTheNamespace) {
  k8s::ObjectMeta m;
  EXPECT_FALSE(IsQueued(m, false));
  EXPECT_TRUE(IsQueued(m, true));
  m.labels[kQueueLabel] = "true";
  EXPECT_TRUE(IsQueued(m, false));
  m.labels[kQueueLabel] = "false";
  EXPECT_FALSE(IsQueued(m, false));
}

}  // namespace
}  // namespace berth::workloads
