#pragma once
// berth's safety invariants, checked from what the API says (what a user can see), for the fault
// tests: sampled continuously on a thread while faults are injected, and checked once more when
// everything has settled.
//
// Each sample reads the Runs, then the Pods, then the Fleet (in that order, so the Fleet is never
// older than what the Runs showed) and checks:
//  - no instance holds more blocks than it has: by the placements of Scheduled/Running runs, and
//    by the BERTH_BLOCKS of the live (bound, not terminal, not being deleted) Pods on it;
//  - every placed run has exactly spec.nodes placement entries on distinct instances, and a
//    multi-node run takes whole instances; a Pending run holds no placement;
//  - no two live Pods of one run attempt have the same rank (no duplicate Pod);
//  - the Fleet's runsStarted per instance never goes down and is never lower than the number of
//    runs seen Running or Succeeded on it (Pods are only made after the durable count).

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "k8s/client.h"

namespace berth::testing {

class InvariantSampler {
 public:
  // `total_blocks`: node name -> blocks of that instance, for every instance of `fleet`.
  InvariantSampler(k8s::ClientPtr client, std::string ns, std::string fleet, std::map<std::string, int> total_blocks);
  ~InvariantSampler();

  void Start(std::chrono::milliseconds period = std::chrono::milliseconds(100));
  // Only Runs and Pods with these labels (e.g. one round of a test) are checked from now on.
  void SetSelector(std::string label_selector);
  void Stop();
  // One sample now (also what the thread does).
  void SampleOnce();

  // When everything has settled: every run is in `expected_phase` (empty: any final phase) with
  // spec.nodes Pods of its last attempt, each bound where its placement says; no Pod without a
  // run or outside a placement; every instance idle; runsStarted equal to the runs ever started.
  void CheckSettled(const std::string& expected_phase);

  int64_t samples() const { return samples_; }
  // Samples that saw at least one Scheduled or Running run with its placement (so the block
  // checks had something to check).
  int64_t placed_samples() const { return placed_samples_; }
  int64_t checks() const { return checks_; }
  std::vector<std::string> violations() const;
  // Runs started per instance as the sampler saw them (all rounds so far).
  std::map<std::string, std::set<std::string>> started() const;

 private:
  void Violation(std::string what);

  k8s::ClientPtr client_;
  std::string ns_, fleet_;
  std::string selector_;  // guarded by mu_
  std::map<std::string, int> total_blocks_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  std::atomic<int64_t> samples_{0}, checks_{0}, placed_samples_{0};
  std::vector<std::string> violations_;
  std::map<std::string, std::set<std::string>> started_;  // node -> run uids
  std::map<std::string, int64_t> last_runs_started_;      // node uid -> runsStarted
};

}  // namespace berth::testing
