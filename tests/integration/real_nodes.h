#pragma once
// Real nodes for integration tests: real kubelets with their own containerd + runc
// (hack/real-nodes.sh), and kube-controller-manager's node lifecycle controller beside them, on
// the test binary's control plane. Everything started here is stopped at the end of the binary
// (a gtest Environment), by pid.

#include <map>
#include <string>
#include <vector>

#include "harness.h"

namespace berth::testing {

struct RealNodeSpec {
  std::string name;
  int gpus = 0;                                // advertised nvidia.com/gpu on the Node status
  std::string memory = "4Gi";                  // allocatable memory (the rest is reserved)
  std::map<std::string, std::string> labels;
  // > 0: the DRA example driver's kubelet plugin runs beside the kubelet with this many example
  // GPUs (driver and DeviceClass gpu.example.com; hack/real-nodes.sh --dra-devices; issue 49).
  int dra_devices = 0;
};

class RealNodes {
 public:
  // Starts kube-controller-manager (once) and the nodes (in parallel); fails the test on error.
  // `workload_controllers` (the first call decides): also the Job controller and the garbage
  // collector, and kube-scheduler (issue 45: hack/real-nodes.sh controller-manager --workloads).
  static void Start(const std::vector<RealNodeSpec>& nodes, bool workload_controllers = false);
  static void StopKubelet(const std::string& name);
  static void StartKubelet(const std::string& name);
  // Restarts the node's DRA example plugin with `devices` devices: its ResourceSlice changes.
  static void SetDraDevices(const std::string& name, int devices);
  // The whole node stops: kubelet, containers, containerd (the machine is gone). Start({spec})
  // brings it back with a fresh containerd (images other than busybox and pause to be imported
  // again, hack/real-nodes.sh import).
  static void StopNode(const std::string& name);
  // The kubelet log of a node (for failure messages).
  static std::string KubeletLog(const std::string& name);
  static void StopAll();
  // The locally built image every real node has (no pulls).
  static constexpr const char* kBusybox = "busybox:1.35";
};

}  // namespace berth::testing
