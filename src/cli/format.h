#pragma once
// Text formatting for kubectl-berth's tables: human durations, block bars, aligned columns.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "k8s/clock.h"

namespace berth::cli {

// A duration as kubectl shows ages (apimachinery's duration.HumanDuration): "45s", "3m12s",
// "42m", "3h12m", "20h", "2d5h", "45d", "1y30d", "5y". Negative durations are "0s".
std::string HumanDuration(std::chrono::seconds d);

// Block usage as a bar: "[####....] 4/8". The bar has one cell per block up to `max_cells`
// blocks; beyond that each cell stands for several blocks, and the bar never looks empty while a
// block is busy nor full while one is free. No blocks at all: "[] 0/0".
std::string BlockBar(int64_t busy, int64_t total, int max_cells = 16);

// An instance's expiry relative to `now`: "-" (none or unreadable), "expired", "in 3h12m".
std::string RelativeExpiry(const std::string& expires_at_rfc3339, k8s::TimePoint now);

// Columns separated by three spaces, each as wide as its widest cell; no trailing spaces. Every
// line starts with `indent`.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  size_t rows() const { return rows_.size() - 1; }
  std::string Render(const std::string& indent = {}) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace berth::cli
