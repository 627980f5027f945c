#include "real_nodes.h"

#include <fstream>
#include <future>
#include <sstream>

namespace berth::testing {
namespace {

const std::string kScript = std::string(BERTH_SOURCE_DIR) + "/hack/real-nodes.sh";
bool started_cm = false;

class RealNodesEnvironment : public ::testing::Environment {
 public:
  // Runs before the control plane's environment tears down (environments stop in reverse order).
  void TearDown() override { RealNodes::StopAll(); }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new RealNodesEnvironment);

}  // namespace

void RealNodes::Start(const std::vector<RealNodeSpec>& nodes, bool workload_controllers) {
  const std::string dir = ControlPlane::Get().dir();
  if (!started_cm) {
    std::vector<std::string> argv{kScript, "controller-manager", dir};
    if (workload_controllers) argv.push_back("--workloads");
    CommandResult r = RunCommand(argv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    started_cm = true;
  }
  std::vector<std::future<CommandResult>> starts;
  for (const auto& n : nodes) {
    std::vector<std::string> argv{kScript, "start", dir, n.name, "--memory", n.memory};
    if (n.gpus > 0) argv.insert(argv.end(), {"--gpus", std::to_string(n.gpus)});
    std::string labels;
    for (const auto& [k, v] : n.labels) labels += (labels.empty() ? "" : ",") + k + "=" + v;
    if (!labels.empty()) argv.insert(argv.end(), {"--labels", labels});
    if (n.dra_devices > 0) argv.insert(argv.end(), {"--dra-devices", std::to_string(n.dra_devices)});
    starts.push_back(std::async(std::launch::async, [argv] { return RunCommand(argv); }));
  }
  for (size_t i = 0; i < starts.size(); ++i) {
    CommandResult r = starts[i].get();
    EXPECT_EQ(r.exit_code, 0) << "node " << nodes[i].name << ": " << r.err;
  }
}

void RealNodes::StopKubelet(const std::string& name) {
  CommandResult r = RunCommand({kScript, "stop-kubelet", ControlPlane::Get().dir(), name});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

void RealNodes::StopNode(const std::string& name) {
  CommandResult r = RunCommand({kScript, "stop", ControlPlane::Get().dir(), name});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

void RealNodes::StartKubelet(const std::string& name) {
  CommandResult r = RunCommand({kScript, "start-kubelet", ControlPlane::Get().dir(), name});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

void RealNodes::SetDraDevices(const std::string& name, int devices) {
  CommandResult r = RunCommand({kScript, "dra", ControlPlane::Get().dir(), name, std::to_string(devices)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

std::string RealNodes::KubeletLog(const std::string& name) {
  std::ifstream in(ControlPlane::Get().dir() + "/nodes/" + name + "/kubelet.log");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > 8000 ? s.substr(s.size() - 8000) : s;
}

void RealNodes::StopAll() { RunCommand({kScript, "stop-all", ControlPlane::Get().dir()}); }

}  // namespace berth::testing
