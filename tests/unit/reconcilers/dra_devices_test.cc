// Issue 49: a DRA fleet's GPUs counted from ResourceSlices, a DeviceClass and ResourceClaims
// (reconcilers/state/dra_devices.h), the objects as the API server serves them.
#include "reconcilers/state/dra_devices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "k8s/json.h"
#include "reconcilers/objects/fleet_types.h"
#include "reconcilers/objects/lifecycle.h"
#include "reconcilers/state/cluster_view.h"
#include "reconcilers/writers/device_claims.h"
#include "reconcilers/writers/pod_builder.h"

namespace berth::reconcilers {
namespace {

using ::testing::HasSubstr;
using SlicePtr = std::shared_ptr<const k8s::ResourceSlice>;
using ClaimPtr = std::shared_ptr<const k8s::ResourceClaim>;

k8s::json::Document Parse(const std::string& text) {
  auto d = k8s::json::Parse(text);
  EXPECT_TRUE(d.ok()) << text;
  return std::move(d.value());
}

// A slice of `node`'s pool (named after the node) with devices "name" or "name@counterSet".
SlicePtr Slice(const std::string& name, const std::string& driver, const std::string& node, int64_t generation,
               int64_t count, const std::vector<std::string>& devices) {
  std::string devs;
  for (const std::string& d : devices) {
    const size_t at = d.find('@');
    devs += std::string(devs.empty() ? "" : ",") + R"({"name":")" + d.substr(0, at) + "\"";
    if (at != std::string::npos) {
      devs += R"(,"consumesCounters":[{"counterSet":")" + d.substr(at + 1) + R"(","counters":{"memory":{"value":"1Gi"}}}])";
    }
    devs += R"(,"attributes":{"index":{"int":0}}})";
  }
  auto doc = Parse(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":")" + name +
                   R"("},"spec":{"driver":")" + driver + R"(","nodeName":")" + node + R"(","pool":{"name":")" + node +
                   R"(","generation":)" + std::to_string(generation) + R"(,"resourceSliceCount":)" +
                   std::to_string(count) + R"(},"devices":[)" + devs + "]}}");
  return k8s::DecodeResourceSlice(doc);
}

std::shared_ptr<const k8s::DeviceClass> Class(const std::string& name, const std::vector<std::string>& exprs) {
  std::string sel;
  for (const std::string& e : exprs) {
    sel += std::string(sel.empty() ? "" : ",") + R"({"cel":{"expression":)" + k8s::json::Quote(e) + "}}";
  }
  return k8s::DecodeDeviceClass(Parse(R"({"metadata":{"name":")" + name + R"("},"spec":{"selectors":[)" + sel + "]}}"));
}

// A claim allocated the devices "pool/device" of `driver`; `labels`: its metadata.labels JSON.
ClaimPtr Claim(const std::string& name, const std::string& driver, const std::vector<std::string>& devices,
               const std::string& labels = "{}", bool admin = false) {
  std::string results;
  for (const std::string& d : devices) {
    const size_t slash = d.find('/');
    results += std::string(results.empty() ? "" : ",") + R"({"request":"gpu","driver":")" + driver + R"(","pool":")" +
               d.substr(0, slash) + R"(","device":")" + d.substr(slash + 1) + "\"" +
               (admin ? R"(,"adminAccess":true)" : "") + "}";
  }
  return k8s::DecodeResourceClaim(Parse(R"({"metadata":{"name":")" + name + R"(","namespace":"ns","labels":)" + labels +
                                        R"(},"status":{"allocation":{"devices":{"results":[)" + results + "]}}}}"));
}

const std::string kDriver = "gpu.example.com";
const std::string kSelector = "device.driver == 'gpu.example.com'";

TEST(DraDevices, CountsTheClassDevicesOfEachNode) {
  const auto cls = Class("gpu.example.com", {kSelector});
  const std::vector<SlicePtr> slices = {
      Slice("a", kDriver, "n1", 1, 1, {"gpu-0", "gpu-1", "gpu-2"}),
      Slice("b", kDriver, "n2", 1, 1, {"gpu-0"}),
      Slice("c", "other.example.com", "n1", 1, 1, {"x-0", "x-1"}),  // another driver's devices
  };
  const ClassDevices got = CountClassDevices("gpu.example.com", cls.get(), slices, {});
  EXPECT_EQ(got.problem, "");
  EXPECT_EQ(got.nodes.at("n1"), (NodeDevices{3, 0, {}}));
  EXPECT_EQ(got.nodes.at("n2"), (NodeDevices{1, 0, {}}));
  EXPECT_EQ(got.nodes.size(), 2u);
}

TEST(DraDevices, OnlyCompletePoolsAtTheirLatestGeneration) {
  const auto cls = Class("gpu.example.com", {kSelector});
  const std::vector<SlicePtr> slices = {
      // n1: generation 2 replaced generation 1, and is complete (2 of 2 slices).
      Slice("n1-old", kDriver, "n1", 1, 1, {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}),
      Slice("n1-a", kDriver, "n1", 2, 2, {"gpu-0"}),
      Slice("n1-b", kDriver, "n1", 2, 2, {"gpu-1"}),
      // n2: generation 3 has 1 of its 2 slices yet: the pool is being updated, nothing counts.
      Slice("n2-old", kDriver, "n2", 2, 1, {"gpu-0", "gpu-1"}),
      Slice("n2-a", kDriver, "n2", 3, 2, {"gpu-0"}),
  };
  const ClassDevices got = CountClassDevices("gpu.example.com", cls.get(), slices, {});
  EXPECT_EQ(got.nodes.at("n1").total, 2);
  EXPECT_EQ(got.nodes.count("n2"), 0u);
}

TEST(DraDevices, PartitionsOfOneDeviceCountOnceAndAreHeldWhole) {
  const auto cls = Class("gpu.example.com", {kSelector});
  // The example driver with --gpu-partitions 2: per GPU two partitions and the full device, all
  // consuming the GPU's counter set.
  const std::vector<SlicePtr> slices = {Slice(
      "a", kDriver, "n1", 1, 1,
      {"gpu-0-partition-0@gpu-0-counters", "gpu-0-partition-1@gpu-0-counters", "gpu-0-full@gpu-0-counters",
       "gpu-1-partition-0@gpu-1-counters", "gpu-1-partition-1@gpu-1-counters", "gpu-1-full@gpu-1-counters",
       "gpu-2"})};
  EXPECT_EQ(CountClassDevices("gpu.example.com", cls.get(), slices, {}).nodes.at("n1"), (NodeDevices{3, 0, {}}));
  // Someone's claim on one partition of gpu-0 (and one on the other) holds gpu-0 once.
  const std::vector<ClaimPtr> claims = {Claim("c1", kDriver, {"n1/gpu-0-partition-1"}),
                                        Claim("c2", kDriver, {"n1/gpu-0-partition-0"})};
  EXPECT_EQ(CountClassDevices("gpu.example.com", cls.get(), slices, claims).nodes.at("n1"), (NodeDevices{3, 1, {}}));
}

TEST(DraDevices, OthersClaimsHoldDevicesThoseOfBerthsPlacedRunsAndAdminAccessDoNot) {
  const auto cls = Class("gpu.example.com", {kSelector});
  const std::vector<SlicePtr> slices = {Slice("a", kDriver, "n1", 1, 1, {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}),
                                        Slice("b", kDriver, "n2", 1, 1, {"gpu-0", "gpu-1"})};
  const std::vector<ClaimPtr> claims = {
      Claim("foreign", kDriver, {"n1/gpu-0", "n1/gpu-1"}),
      Claim("berths", kDriver, {"n1/gpu-2"}, R"({"berth.dev/run":"r1"})"),  // its run holds blocks
      Claim("ended", kDriver, {"n1/gpu-3"}, R"({"berth.dev/run":"r0"})"),   // its run ended: not freed yet
      Claim("admin", kDriver, {"n2/gpu-0"}, "{}", true),                   // an admin's access shares it
      Claim("gone", kDriver, {"n3/gpu-0"}),                                // no such device now
  };
  const ClassDevices got = CountClassDevices("gpu.example.com", cls.get(), slices, claims, {"ns/r1"});
  EXPECT_EQ(got.nodes.at("n1"), (NodeDevices{4, 3, {{"ns/r0", 1}, {"ns/r1", 1}}}));
  EXPECT_EQ(got.nodes.at("n2"), (NodeDevices{2, 0, {}}));
}

// Issue 49 (Seen): the runs whose claims hold devices on each node, placed or not, and the line
// the Fleet's status shows of a DRA instance.
TEST(DraDevices, TheRunsHoldingDevicesAreNamedPerNode) {
  const auto cls = Class("gpu.example.com", {kSelector});
  const std::vector<SlicePtr> slices = {Slice("a", kDriver, "n1", 1, 1, {"gpu-0", "gpu-1", "gpu-2", "gpu-3"})};
  const std::vector<ClaimPtr> claims = {
      Claim("foreign", kDriver, {"n1/gpu-0"}),
      Claim("r1-0", kDriver, {"n1/gpu-1", "n1/gpu-2"}, R"({"berth.dev/run":"r1"})"),
      Claim("r0-0", kDriver, {"n1/gpu-3"}, R"({"berth.dev/run":"r0"})"),
  };
  DraDevices devices;
  devices["gpu.example.com"] = CountClassDevices("gpu.example.com", cls.get(), slices, claims, {"ns/r1"});
  EXPECT_EQ(devices["gpu.example.com"].nodes.at("n1").runs,
            (std::map<std::string, int64_t>{{"ns/r0", 1}, {"ns/r1", 2}}));
  auto fleet = DecodeFleet(Parse(R"({"metadata":{"name":"dra","uid":"u"},"spec":{"nodeSelector":{"pool":"p"},)"
                                 R"("devices":{"deviceClassName":"gpu.example.com"}}})"));
  auto node = k8s::DecodeNode(Parse(R"({"metadata":{"name":"n1","uid":"n1-uid","labels":{"pool":"p"}},)"
                                    R"("status":{"allocatable":{"cpu":"8"},"conditions":[{"type":"Ready","status":"True"}]}})"));
  const ClusterView view = BuildClusterView({fleet}, {node}, {}, k8s::TimePoint{}, {}, &devices);
  EXPECT_EQ(view.instances.at("n1").devices, "4 devices of gpu.example.com; run ns/r0 holds 1; run ns/r1 holds 2");
}

TEST(DraDevices, WhatBerthReadsOfAClass) {
  EXPECT_EQ(ReadClassDriver(*Class("c", {kSelector})).driver, kDriver);
  EXPECT_EQ(ReadClassDriver(*Class("c", {R"(  device.driver=="gpu.example.com" )"})).driver, kDriver);
  const ClassDriver all = ReadClassDriver(*Class("c", {}));
  EXPECT_TRUE(all.all);
  EXPECT_EQ(all.problem, "");
  EXPECT_THAT(ReadClassDriver(*Class("c", {"device.attributes['gpu.example.com'].model == 'A100'"})).problem,
              HasSubstr("DeviceClass c: berth evaluates no CEL and reads only selectors of the form "
                        "device.driver == '<driver>', not `device.attributes['gpu.example.com'].model == 'A100'`"));
  EXPECT_THAT(ReadClassDriver(*Class("c", {"device.driver == 'a' || true"})).problem, HasSubstr("evaluates no CEL"));
  EXPECT_THAT(ReadClassDriver(*Class("c", {"device.driver == 'a'", "device.driver == 'b'"})).problem,
              HasSubstr("its selectors name two drivers (a, b): it selects no device"));
}

TEST(DraDevices, AClassWithoutSelectorsCountsEveryDriver) {
  const auto cls = Class("any", {});
  const std::vector<SlicePtr> slices = {Slice("a", kDriver, "n1", 1, 1, {"gpu-0"}),
                                        Slice("b", "other.example.com", "n1", 1, 1, {"x-0"})};
  EXPECT_EQ(CountClassDevices("any", cls.get(), slices, {}).nodes.at("n1").total, 2);
}

TEST(DraDevices, AMissingOrUnreadableClassIsAProblem) {
  const std::vector<SlicePtr> slices = {Slice("a", kDriver, "n1", 1, 1, {"gpu-0"})};
  const ClassDevices missing = CountClassDevices("gpu.example.com", nullptr, slices, {});
  EXPECT_EQ(missing.problem, "DeviceClass gpu.example.com does not exist");
  EXPECT_TRUE(missing.nodes.empty());
  const auto odd = Class("odd", {"device.capacity['x'].memory.compareTo(quantity('1Gi')) >= 0"});
  EXPECT_THAT(CountClassDevices("odd", odd.get(), slices, {}).problem, HasSubstr("berth evaluates no CEL"));
}

// The cluster view: a DRA fleet's instance has its devices less others' claims as GPUs; a fleet
// whose class berth cannot read is refused with the class's problem.
TEST(DraDevices, TheClusterViewCountsDevicesAsGpus) {
  auto fleet = [](const std::string& name, const std::string& cls) {
    auto doc = Parse(R"({"metadata":{"name":")" + name + R"(","uid":")" + name + R"(-uid"},"spec":{"nodeSelector":{"pool":")" +
                     name + R"("},"blocks":2,"gpuResource":"nvidia.com/gpu","devices":{"deviceClassName":")" + cls + R"("}}})");
    return DecodeFleet(doc);
  };
  // n1 also advertises nvidia.com/gpu: a node that publishes devices of the class is a DRA node.
  auto node = [](const std::string& name, const std::string& pool) {
    const std::string gpus = name == "n1" ? R"(,"nvidia.com/gpu":"8")" : "";
    auto doc = Parse(R"({"metadata":{"name":")" + name + R"(","uid":")" + name + R"(-uid","labels":{"pool":")" + pool +
                     R"("}},"status":{"allocatable":{"cpu":"8","memory":"16Gi")" + gpus + R"(},)"
                     R"("conditions":[{"type":"Ready","status":"True"}]}})");
    return k8s::DecodeNode(doc);
  };
  const auto good = fleet("dra", "gpu.example.com");
  ASSERT_EQ(good->invalid_message, "");
  EXPECT_EQ(good->spec.device_class, "gpu.example.com");
  EXPECT_EQ(good->spec.gpu_resource, "");  // no extended resource: the node's nvidia.com/gpu is not counted
  const auto bad = fleet("odd", "odd");
  DraDevices devices;
  devices["gpu.example.com"] = CountClassDevices(
      "gpu.example.com", Class("gpu.example.com", {kSelector}).get(),
      {Slice("a", kDriver, "n1", 1, 1, {"gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5"})},
      {Claim("foreign", kDriver, {"n1/gpu-5", "n1/gpu-4"})});
  devices["odd"] = CountClassDevices("odd", Class("odd", {"true"}).get(), {}, {});
  const ClusterView view = BuildClusterView({good, bad}, {node("n1", "dra"), node("n2", "dra"), node("n3", "odd")}, {},
                                            k8s::TimePoint{}, {}, &devices);
  ASSERT_EQ(view.snapshot.instances.size(), 2u);
  EXPECT_EQ(view.snapshot.instances[0].name, "n1");
  EXPECT_EQ(view.snapshot.instances[0].allocatable.gpus, 4);  // 6 devices, 2 held by someone's claim
  EXPECT_EQ(view.instances.at("n1").held_by_others.gpus, 2);
  EXPECT_EQ(view.snapshot.instances[1].name, "n2");
  EXPECT_EQ(view.snapshot.instances[1].allocatable.gpus, 0);  // no slices: no devices
  EXPECT_THAT(view.invalid_fleets.at("odd"), HasSubstr("DeviceClass odd: berth evaluates no CEL"));
  EXPECT_EQ(view.invalid_fleets.count("dra"), 0u);
}

// Issue 49 (docs/concepts.md, "When a node's devices change"): while a node's pool is being
// updated (its latest generation has fewer slices than its resourceSliceCount) the node's instance
// has no GPU, the fleet stays valid, and the new generation counts once it is complete. The node
// is still a DRA node meanwhile: one that also advertises nvidia.com/gpu does not refuse the fleet
// as a mix of extended-resource and DRA nodes.
TEST(DraDevices, ANodeWhosePoolIsBeingUpdatedHasNoGpusUntilItIsComplete) {
  const auto fleet = DecodeFleet(Parse(R"({"metadata":{"name":"dra","uid":"dra-uid"},"spec":{"nodeSelector":{"pool":"dra"},)"
                                       R"("devices":{"deviceClassName":"gpu.example.com"}}})"));
  auto node_with = [](const std::string& gpus) {
    return k8s::DecodeNode(Parse(R"({"metadata":{"name":"n1","uid":"n1-uid","labels":{"pool":"dra"}},)"
                                 R"("status":{"allocatable":{"cpu":"8","memory":"16Gi")" + gpus + R"(},)"
                                 R"("conditions":[{"type":"Ready","status":"True"}]}})"));
  };
  const auto cls = Class("gpu.example.com", {kSelector});
  std::vector<SlicePtr> slices = {
      Slice("old", kDriver, "n1", 1, 1, {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}),
      Slice("new-a", kDriver, "n1", 2, 2, {"gpu-0", "gpu-1"}),  // 1 of the 2 slices of generation 2
  };
  auto gpus = [&](const std::string& extended) {
    DraDevices devices;
    devices["gpu.example.com"] = CountClassDevices("gpu.example.com", cls.get(), slices, {});
    const ClusterView view = BuildClusterView({fleet}, {node_with(extended)}, {}, k8s::TimePoint{}, {}, &devices);
    EXPECT_EQ(view.invalid_fleets.count("dra"), 0u) << extended << ": " << (view.invalid_fleets.count("dra") != 0 ? view.invalid_fleets.at("dra") : "");
    return view.snapshot.instances.size() == 1 ? view.snapshot.instances[0].allocatable.gpus : -1;
  };
  for (const std::string extended : {"", R"(,"nvidia.com/gpu":"4")"}) {
    EXPECT_EQ(gpus(extended), 0) << extended;  // neither the old generation nor the incomplete new one
  }
  slices.push_back(Slice("new-b", kDriver, "n1", 2, 2, {"gpu-2", "gpu-3", "gpu-4"}));
  EXPECT_EQ(gpus(""), 5);
}

// Issue 49: a DRA fleet over a node that publishes no device of its class but advertises a GPU
// extended resource (an extended-resource node) is refused with a sentence naming the node; the
// fleet is back once that node leaves it.
TEST(DraDevices, AFleetMixingExtendedResourceAndDraNodesIsRefused) {
  auto doc = Parse(R"({"metadata":{"name":"dra","uid":"dra-uid"},"spec":{"nodeSelector":{"pool":"mix"},)"
                   R"("devices":{"deviceClassName":"gpu.example.com"}}})");
  const auto fleet = DecodeFleet(doc);
  auto amd = Parse(R"({"metadata":{"name":"amd","uid":"amd-uid"},"spec":{"nodeSelector":{"pool":"amd"},)"
                   R"("gpuResource":"amd.com/gpu"}})");
  const auto amd_fleet = DecodeFleet(amd);
  auto node = [](const std::string& name, const std::string& extra) {
    return k8s::DecodeNode(Parse(R"({"metadata":{"name":")" + name + R"(","uid":")" + name +
                                 R"(-uid","labels":{"pool":"mix"}},"status":{"allocatable":{"cpu":"8")" + extra +
                                 R"(},"conditions":[{"type":"Ready","status":"True"}]}})"));
  };
  DraDevices devices;
  devices["gpu.example.com"] = CountClassDevices("gpu.example.com", Class("gpu.example.com", {kSelector}).get(),
                                                 {Slice("a", kDriver, "dra-node", 1, 1, {"gpu-0", "gpu-1"})}, {});
  const auto dra_node = node("dra-node", R"(,"nvidia.com/gpu":"2")");  // publishes devices: a DRA node
  ClusterView view = BuildClusterView({fleet, amd_fleet}, {dra_node, node("cpu", "")}, {}, k8s::TimePoint{}, {}, &devices);
  EXPECT_EQ(view.invalid_fleets.count("dra"), 0u);
  for (const char* gpus : {R"(,"nvidia.com/gpu":"8")", R"(,"amd.com/gpu":"8")"}) {
    view = BuildClusterView({fleet, amd_fleet}, {dra_node, node("ext", gpus)}, {}, k8s::TimePoint{}, {}, &devices);
    ASSERT_EQ(view.invalid_fleets.count("dra"), 1u) << gpus;
    EXPECT_THAT(view.invalid_fleets.at("dra"),
                HasSubstr("a DRA fleet does not mix extended-resource and DRA nodes: node ext publishes no device of "
                          "DeviceClass gpu.example.com but advertises the extended resource"));
    EXPECT_TRUE(view.snapshot.instances.empty());
  }
}

TEST(DraDevices, DevicesAndAnotherGpuResourceAreExclusive) {
  auto doc = Parse(R"({"metadata":{"name":"f"},"spec":{"nodeSelector":{"a":"b"},"gpuResource":"amd.com/gpu",)"
                   R"("devices":{"deviceClassName":"gpu.example.com"}}})");
  EXPECT_THAT(DecodeFleet(doc)->invalid_message, HasSubstr("spec.devices and spec.gpuResource are exclusive"));
}

// Issue 49 step 3: a DRA run's Pod is pinned to its booked node for kube-scheduler to bind, with
// the ResourceClaim berth makes for its GPUs; berth never binds it.
TEST(DraDevices, ARunsPodOnADraFleetIsPinnedWithItsClaim) {
  reconcilers::Run run;
  run.meta.name = "train";
  run.meta.ns = "ml";
  run.meta.uid = "run-uid";
  run.spec.template_json =
      R"({"spec":{"nodeName":"elsewhere","containers":[{"name":"main","image":"busybox","resources":{"limits":{"nvidia.com/gpu":"9"}}}]}})";
  RankAssignment me;
  me.rank = 0;
  me.node = "n1";
  me.blocks = 1;
  me.resources.gpus = 2;
  auto body = BuildPod(run, "dra", "", {me}, 0, 30, "gpu.example.com");
  ASSERT_TRUE(body.ok()) << body.status().message();
  auto pod = Parse(body.value());
  EXPECT_EQ(k8s::json::Find(pod, {"spec", "nodeName"}), nullptr) << body.value();
  EXPECT_EQ(k8s::json::GetString(k8s::json::Find(pod, {"spec", "schedulerName"})), "default-scheduler");
  EXPECT_THAT(k8s::json::Serialize(*k8s::json::Find(pod, {"spec", "affinity"})),
              HasSubstr(R"("matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}])"));
  EXPECT_EQ(k8s::json::Serialize(*k8s::json::Find(pod, {"spec", "resourceClaims"})),
            R"([{"name":"berth-gpus","resourceClaimName":"train-0-gpus"}])");
  const k8s::json::Value* first = &k8s::json::Find(pod, {"spec", "containers"})->GetArray()[0];
  EXPECT_EQ(k8s::json::Serialize(*k8s::json::Find(*first, {"resources", "claims"})), R"([{"name":"berth-gpus"}])");
  // The fleet has no extended resource: the template's nvidia.com/gpu stays as written, none is added.
  EXPECT_EQ(k8s::json::Serialize(*k8s::json::Find(*first, {"resources", "limits"})), R"({"nvidia.com/gpu":"9"})");
  EXPECT_EQ(k8s::json::GetString(k8s::json::Find(pod, {"metadata", "annotations", "berth.dev/device-claim"})),
            "train-0-gpus");

  auto claim = Parse(BuildDeviceClaim(run, "train-0", "gpu.example.com", 2));
  EXPECT_EQ(k8s::json::GetString(k8s::json::Find(claim, {"metadata", "name"})), "train-0-gpus");
  EXPECT_EQ(k8s::json::GetString(k8s::json::Find(claim, {"metadata", "labels", "berth.dev/run"})), "train");
  EXPECT_EQ(k8s::json::Serialize(*k8s::json::Find(claim, {"spec"})),
            R"({"devices":{"requests":[{"name":"gpus","exactly":{"deviceClassName":"gpu.example.com",)"
            R"("allocationMode":"ExactCount","count":2}}]}})");
  EXPECT_EQ(k8s::json::GetString(k8s::json::Find(claim, {"metadata", "ownerReferences"})->GetArray()[0], "uid"),
            "run-uid");

  // Without a device class the Pod is created bound, as before.
  auto bound = Parse(BuildPod(run, "f", "nvidia.com/gpu", {me}, 0, 30).value());
  EXPECT_EQ(k8s::json::GetString(k8s::json::Find(bound, {"spec", "nodeName"})), "n1");
  EXPECT_EQ(k8s::json::Find(bound, {"spec", "resourceClaims"}), nullptr);
}

TEST(DraDevices, APodKubeSchedulerCannotPlaceOnItsNodeInterruptsTheRun) {
  reconcilers::Run run;
  run.meta.name = "train";
  run.meta.ns = "ml";
  run.status.phase = api::ParsePhase("Scheduled");
  run.status.placement.push_back(PlacementEntry{0, "n1", 1, "train-0"});
  auto decoded = k8s::DecodePod(Parse(
      R"({"metadata":{"name":"train-0","namespace":"ml","annotations":{"berth.dev/device-claim":"train-0-gpus"}},)"
      R"("spec":{"containers":[]},"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False",)"
      R"("reason":"Unschedulable","message":"0/2 nodes are available: 1 cannot allocate all claims."}]}})"));
  ASSERT_NE(decoded, nullptr);
  PlacedInput in;
  in.run = &run;
  in.pods["train-0"] = decoded.get();
  const PlacedDecision d = DecidePlaced(in);
  EXPECT_EQ(d.kind, PlacedDecision::Kind::kEnd);
  EXPECT_TRUE(d.interruption);
  EXPECT_EQ(d.why, "kube-scheduler cannot place pod train-0 on its booked node n1: 0/2 nodes are available: 1 cannot "
                   "allocate all claims.");
  EXPECT_EQ(d.refused_node, "n1");
  // Not yet tried by kube-scheduler: the run waits for it.
  auto waiting = k8s::DecodePod(Parse(
      R"({"metadata":{"name":"train-0","namespace":"ml","annotations":{"berth.dev/device-claim":"train-0-gpus"}},)"
      R"("spec":{"containers":[]},"status":{"phase":"Pending"}})"));
  in.pods["train-0"] = waiting.get();
  EXPECT_NE(DecidePlaced(in).kind, PlacedDecision::Kind::kEnd);
}

}  // namespace
}  // namespace berth::reconcilers
