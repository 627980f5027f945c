#pragma once
// Runs of a chosen size and the memory of a process, for the benchmark of a run's memory
// (bench/e2e, scenario run-size) and the test that the chart's memory limit holds the documented
// number of runs (memory_test).

#include <sys/types.h>

#include <fstream>
#include <string>

namespace berth::testing {

// A realistic spec.template of a training run (about 1.5 KiB as JSON: a container with a command,
// environment, resources, mounts and a security context; an emptyDir and a ConfigMap volume),
// padded with an env value PAYLOAD to `bytes` bytes of JSON when that is larger. `seed` makes
// each run's padding its own.
inline std::string SizedTemplate(size_t bytes, int seed) {
  const std::string head =
      R"({"metadata":{"labels":{"app":"train","team":"vision"}},"spec":{"containers":[{"name":"main","image":"busybox:1.35",)"
      R"("command":["sh","-c","python train.py --config /etc/train/config.yaml --epochs 90 --batch-size 256"],)"
      R"("resources":{"requests":{"cpu":"1","memory":"1Gi"}},)"
      R"("volumeMounts":[{"name":"scratch","mountPath":"/scratch"},{"name":"config","mountPath":"/etc/train"}],)"
      R"("securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}},"env":[)"
      R"({"name":"DATASET","value":"s3://datasets/imagenet-1k/train"},{"name":"CHECKPOINT_DIR","value":"/scratch/ckpt"},)"
      R"({"name":"NCCL_DEBUG","value":"WARN"},{"name":"NCCL_SOCKET_IFNAME","value":"eth0"},)"
      R"({"name":"OMP_NUM_THREADS","value":"8"},{"name":"PYTHONUNBUFFERED","value":"1"},)"
      R"({"name":"WANDB_PROJECT","value":"vision-pretrain"},{"name":"WANDB_MODE","value":"offline"},)"
      R"({"name":"LEARNING_RATE","value":"0.0003"},{"name":"WARMUP_STEPS","value":"2000"},)"
      R"({"name":"SEED","value":")" + std::to_string(seed) + R"("},{"name":"LOG_LEVEL","value":"info"})";
  const std::string tail =
      R"(]}],"volumes":[{"name":"scratch","emptyDir":{"sizeLimit":"20Gi"}},{"name":"config","configMap":{"name":"train-config"}}],)"
      R"("terminationGracePeriodSeconds":60}})";
  const std::string pad_head = R"(,{"name":"PAYLOAD","value":")", pad_tail = R"("})";
  const size_t fixed = head.size() + tail.size();
  if (bytes <= fixed + pad_head.size() + pad_tail.size()) return head + tail;
  std::string pad(bytes - fixed - pad_head.size() - pad_tail.size(), 'x');
  uint32_t x = 2166136261u ^ static_cast<uint32_t>(seed);
  for (char& c : pad) {  // letters and digits, different for every seed
    x = x * 1664525u + 1013904223u;
    c = "abcdefghijklmnopqrstuvwxyz0123456789"[(x >> 16) % 36];
  }
  return head + pad_head + pad + pad_tail + tail;
}

// A line of /proc/PID/status in KiB ("VmRSS": now, "VmHWM": the most it has been); -1 if gone.
inline long ProcStatusKiB(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

}  // namespace berth::testing
