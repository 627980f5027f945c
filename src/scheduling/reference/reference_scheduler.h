#pragma once
// A deliberately plain implementation of the rules of Schedule() (scheduler.h): it re-sorts the
// whole queue from scratch and scans every instance for every run, O(R log R + R * I). It exists
// as the oracle for property tests and as the baseline the benchmark compares against; the
// controller must not use it.
//
// It follows the same rules for namespace quotas (kQuotaExceeded), nominations and preemption
// (victims found by trying every subset of a single-node preemptor's evictable holders on every
// instance; for a gang, the instances cheapest to clear of each domain), and gangs of slices
// (PendingRun::whole_instances false: slice by slice, each by a scan of every instance).
//
// Placements, the reservation, preemption decisions and the codes kQuotaExceeded, kPreempting
// and the Unschedulable ones are exact (kPreempting with its victims and instances). For runs
// that merely wait, only the code's kind is meaningful (kNotEnoughFreeBlocks or
// kNotEnoughIdleInstances or kNotEnoughSlices); no numbers.

#include <vector>

#include "scheduling/cycle_result.h"
#include "scheduling/run_queue.h"
#include "scheduling/snapshot.h"
#include "scheduling/types.h"

namespace berth::scheduling {

CycleResult ReferenceSchedule(const ClusterSnapshot& snapshot,
                              const std::vector<PendingRun>& pending, Duration aging_interval,
                              TimePoint now);

}  // namespace berth::scheduling
