#include "scheduling/cycle.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::scheduling::internal {

Cycle::Cycle(const ClusterSnapshot& snapshot, TimePoint now, CycleResult& out)
    : snapshot_(snapshot), now_(Ms(now)), out_(out), teams_(snapshot), state_(snapshot, now_), filter_(state_), capacity_(state_, filter_),
      preempt_(snapshot, now_, state_, capacity_, filter_, teams_, out_) {
  out_.now = now;
  for (const Fleet& f : state_.fleets) out_.fleets.push_back(FleetRef{f.spec->name, f.spec->topology_key});
  BuildQuotas();
  ApplyRunning();
  capacity_.Build();
}

void Cycle::BuildQuotas() {
  for (const NamespaceQuota& q : snapshot_.quotas) quotas_.emplace(q.ns, q);  // first one wins
}

void Cycle::ApplyRunning() {
  const auto& running = snapshot_.running;
  std::vector<int32_t> order(running.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return running[a].id < running[b].id; });
  const std::string* previous = nullptr;
  for (int32_t r : order) {
    const RunningRun& run = running[r];
    if (previous != nullptr && *previous == run.id) continue;  // duplicate
    previous = &run.id;
    const int64_t end = run.expected_end ? Ms(*run.expected_end) : kUnknownTime;
    NamespaceQuota* quota = run.quota_pending ? QuotaOf(run.id) : nullptr;
    for (const InstanceBlocks& held : run.placement) {
      const int32_t i = state_.FindInstance(held.instance);
      if (i < 0 || state_.instances[i].pool < 0 || held.blocks <= 0) continue;
      state_.instances[i].busy += held.blocks;
      running_entries_.push_back(BusyEntry{i, end, held.blocks});
      if (quota != nullptr) {
        const int32_t blocks = std::min<int32_t>(held.blocks, state_.instances[i].total);
        ChargeQuota(*quota, UseOn(state_.instances[i], blocks), GpuResource(state_.instances[i].fleet));
      }
    }
  }
  for (Instance& in : state_.instances) {
    in.free = in.total - static_cast<int32_t>(std::min<int64_t>(in.busy, in.total));
  }
}

}  // namespace berth::scheduling::internal
