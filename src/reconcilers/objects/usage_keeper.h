#pragma once
// Issue 47: the usage fold (docs/concepts.md "Usage"). Every --team-status-interval, per Team, the
// spans of its runs and tickets (reconcilers/objects/usage_spans.h, from the pass' snapshot) are
// folded over [T, now), T its status.usageFoldedUntil, into its cached usageHistory
// (scheduling::FoldUsage), and history and watermark are written together with
// api::TeamUsagePatch, guarded by the resourceVersion the fold read. On a conflict the Team is read
// again: the same T (only berth's other status writes happened) writes the same fold at the new
// version; another T (another fold, e.g. the last leader's, landed) writes nothing, and the next
// interval folds again from the new T. So a restart or failover neither loses nor double counts.
// Once the Team's write is in, each run whose span is released gets releasedAt/accountedUntil
// (RunSpanPatch): its finalizer and TTL delete wait for that (RunWrites). A run in no Team is
// folded nowhere (no Team to hold it; the metric counts it under team=""): its span is recorded as
// released and accounted at once.
// Per-user figures (SetUsersNamespace): before the Team's write, the same spans, each under its
// run's submitter, are folded into the Team's per-user store (api::UserUsage, a ConfigMap in
// berth's own namespace) from that store's own watermark, read and written on the
// writer thread with the ConfigMap's resourceVersion as precondition (a conflict: read again and
// fold from its new watermark). So that store too counts each second once, on its own; and each
// run start (span.start, with its wait) in the one store fold whose interval holds it.
//
// Threads: Update on the loop thread; the writes on the writer threads (key "usage:<team>").
// Cost: one walk of the cached runs per interval (pointers, no copy of a run); per team one copy
// of its history (at most api's 192 KiB).

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "k8s/client.h"
#include "reconcilers/engine/pass_writes.h"
#include "reconcilers/objects/usage_spans.h"
#include "reconcilers/objects/user_usage.h"
#include "reconcilers/state/cluster_view.h"
#include "reconcilers/state/snapshot.h"

namespace berth::reconcilers {

// One increment of berth_usage_resource_seconds_total (the metric's labels; the namespace label
// is one of the first kNamedNamespaces seen per team and fleet by this process, else "others").
struct UsageIncrement {
  std::string team, ns, fleet;
  ResourceSeconds seconds;
};

class UsageKeeper {
 public:
  using Counted = std::function<void(const std::vector<UsageIncrement>&)>;  // any writer thread
  UsageKeeper(k8s::ClientPtr client, const PassSnapshot& caches, std::chrono::milliseconds interval,
              DispatchWrite dispatch)
      : client_(std::move(client)), caches_(caches), interval_(interval), dispatch_(std::move(dispatch)) {}

  // Per-user stores in `ns` (berth's own namespace); "" (the default): none. Before the engine starts.
  void SetUsersNamespace(std::string ns) { users_ns_ = std::move(ns); }

  void SetCounted(Counted counted) { counted_ = std::move(counted); }
  // A run waits for its span to be accounted (its finalizer, its TTL delete) and holds nothing:
  // the next Update folds at once instead of at its interval.
  void Want() { wanted_ = true; }
  // Loop thread, after the pass: folds when due; returns when the next fold is due.
  // `placed`: the pass' block holders. The fold stops short of the earliest one still assumed (an
  // admission whose status write, its heldSince, is not in the cache yet), so that run's first
  // seconds are folded once the cache shows its span, not passed over.
  scheduling::TimePoint Update(const ClusterView& view, scheduling::TimePoint now,
                               const std::vector<std::shared_ptr<const PlacedRun>>& placed = {});

 private:
  struct Item {
    scheduling::UsageSpan span;
    RunSpan::Close close = RunSpan::Close::kNone;
    std::string ns, name, resource_version;
    std::string user;  // SubmitterOf the run
    std::chrono::seconds wait{0};  // from its submission (or return to the queue) to span.start
  };
  struct Fold {
    std::string team;                         // "": runs in no Team
    std::optional<scheduling::TimePoint> from;  // T (nullopt: no Team)
    std::optional<scheduling::TimePoint> read_until;  // the Team's usageFoldedUntil as read
    scheduling::TimePoint to{};
    base::UsageHistory history;
    std::string resource_version;
    std::vector<Item> items;
  };
  bool Holding(const Run& run) const;
  std::map<std::string, std::vector<Item>> ItemsByTeam(const ClusterView& view) const;
  bool Dispatch(Fold fold);
  // Writer thread: the Team's patch (retried at a new version while its T is unchanged).
  bool WriteTeam(const Fold& fold, const std::string& patch);
  // Writer thread: the fold's spans into the Team's per-user store (a store not made yet and no
  // span to fold: nothing written).
  void WriteUsers(const Fold& fold);
  // Writer thread: releasedAt/accountedUntil of the runs whose span the write accounted.
  void WriteRuns(const Fold& fold);
  std::vector<UsageIncrement> Increments(const Fold& fold);

  k8s::ClientPtr client_;
  const PassSnapshot& caches_;
  const std::chrono::milliseconds interval_;
  DispatchWrite dispatch_;
  std::string users_ns_;  // "": no per-user store
  Counted counted_;
  std::optional<scheduling::TimePoint> next_;
  std::atomic<bool> wanted_{false};
  std::optional<scheduling::TimePoint> last_unteamed_;  // up to where runs in no Team were counted
  std::mutex labels_mu_;
  std::map<std::pair<std::string, std::string>, std::set<std::string>> labels_;  // (team, fleet) -> namespaces
};

}  // namespace berth::reconcilers
