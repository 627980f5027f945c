#include "scheduling/types.h"

#include <array>
#include <string_view>

namespace berth::scheduling {

namespace {

std::string FormatCpu(int64_t millis) {
  if (millis % 1000 == 0) {
    const int64_t cpus = millis / 1000;
    return std::to_string(cpus) + (cpus == 1 ? " CPU" : " CPUs");
  }
  return std::to_string(millis) + "m CPU";
}

std::string FormatMemory(int64_t bytes) {
  static constexpr std::array<std::string_view, 6> kUnits = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
  size_t unit = 0;
  while (unit + 1 < kUnits.size() && bytes % 1024 == 0 && bytes >= 1024) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + std::string(kUnits[unit]) + " memory";
}

}  // namespace

std::string FormatResources(const Resources& r) {
  std::string out;
  auto add = [&out](const std::string& part) {
    if (!out.empty()) out += ", ";
    out += part;
  };
  if (r.gpus > 0) add(std::to_string(r.gpus) + (r.gpus == 1 ? " GPU" : " GPUs"));
  if (r.cpu_millis > 0) add(FormatCpu(r.cpu_millis));
  if (r.memory_bytes > 0) add(FormatMemory(r.memory_bytes));
  return out.empty() ? "nothing" : out;
}

}  // namespace berth::scheduling
