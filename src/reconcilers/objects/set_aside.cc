#include "reconcilers/objects/set_aside.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "k8s/timefmt.h"
#include "reconcilers/writers/run_status.h"
#include "reconcilers/objects/run_types.h"
#include "reconcilers/writers/run_event.h"

namespace berth::reconcilers {

using k8s::resources::kRuns;

namespace {
PassWrite Write(const std::string& key, WriteKind kind, const std::string& body, std::function<bool()> write) {
  std::function<std::string()> b;
  if (!body.empty()) b = [body] { return body; };
  return PassWrite{.key = key, .kind = kind, .target = key, .body = std::move(b), .write = std::move(write)};
}
}  // namespace

PassWrite SetAsideReporter::Report(const std::string& key, WriteKind kind, const std::string& body,
                                   std::function<bool()> write) {
  PassWrite w = Write(key, kind, body, std::move(write));
  w.refused = [this, key] {  // as when Dispatch refused it: reported again by a later pass
    std::lock_guard<std::mutex> lock(mu_);
    reported_.erase(key);
  };
  return w;
}

bool SetAsideReporter::EndIfHolding(const k8s::SetAsideObject& o, k8s::TimePoint now) {
  Run run;  // what can be read of it: its name, uid and status
  run.meta.ns = o.ns;
  run.meta.name = o.name;
  run.meta.uid = o.uid;
  run.meta.generation = o.generation;
  run.status = api::DecodeRunStatusText(o.status_json);
  std::vector<PodRef> pods = pods_to_stop_(run);
  const std::string key = k8s::ObjectKey(o.ns, o.name);
  if (o.deleting) {
    // Deleted: its Pods go, then berth's finalizer (a placed run has one), as for any run.
    if (!pods.empty()) {
      dispatch_(Write(key, WriteKind::kPodDelete, {}, [this, ns = o.ns, pods = std::move(pods)] { return delete_pods_(ns, pods); }));
    } else if (std::find(o.finalizers.begin(), o.finalizers.end(), api::kRunFinalizer) != o.finalizers.end()) {
      const std::string body = api::FinalizersPatch(o.resource_version, o.finalizers, /*with_ours=*/false);
      dispatch_(Write(key, WriteKind::kSetAside, body, [this, body, path = kRuns.Path(o.ns, o.name)] {
        k8s::Status s = client_->MergePatchNoAnswer(path, body);
        return s.ok() || s.IsNotFound() || s.code() == 409;  // a conflict: decided again from the run as it is
      }));
    }
    return true;
  }
  if (IsTerminalPhase(run.status.phase)) {
    // An ended run keeps its status (no "set aside" report over it); Pods that still run (the
    // end's write, then a crash or a failed delete) go.
    if (!pods.empty()) dispatch_(Write(key, WriteKind::kPodDelete, {}, [this, ns = o.ns, pods = std::move(pods)] { return delete_pods_(ns, pods); }));
    return true;
  }
  if (!IsPlacedPhase(run.status.phase) && pods.empty()) return false;  // it holds nothing: only set aside
  End(o, run.status, std::move(pods), now);
  return true;
}

void SetAsideReporter::End(const k8s::SetAsideObject& o, const RunStatus& current, std::vector<PodRef> pods,
                           k8s::TimePoint now) {
  const std::string key = k8s::ObjectKey(o.ns, o.name);
  const std::string stamp = "ended/" + o.uid + "/" + o.resource_version;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = reported_.emplace(key, stamp);
    if (!inserted && it->second == stamp) return;  // written, or being written: the watch shows it next
    it->second = stamp;
  }
  const std::string why = "berth cannot read this Run any more: " + o.why +
                          " (spec.template changed after the run was placed); a run berth cannot read is out of "
                          "its control (maxDuration, preemption, reclaim, its team's usage), so it is ended and its "
                          "Pods are deleted";
  spdlog::warn("run {}: {}", key, why);
  const RunStatus next = Finish(current, Outcome::kFailed, Reason::kInvalidSpec, why, o.generation, now, now);
  // Guarded by the resourceVersion seen: a run changed meanwhile is decided again next pass.
  const std::string body = api::RunStatusPatch(next, o.resource_version);
  const k8s::ObjectReference ref{kGroupVersion, "Run", o.ns, o.name, o.uid};
  const bool dispatched =
      dispatch_(Report(key, WriteKind::kSetAside, body, [this, key, body, ref, why, ns = o.ns, pods = std::move(pods), path = kRuns.Path(o.ns, o.name, "status")] {
        k8s::Status s = client_->MergePatchNoAnswer(path, body);
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(mu_);
          reported_.erase(key);  // the next pass decides again (a conflict: from the run as it is now)
          return s.IsNotFound() || s.code() == 409;
        }
        RecordEvent(events_, ref, RunEvent{api::EventType::kWarning, Reason::kInvalidSpec, why});
        return delete_pods_(ns, pods);  // status before Pods
      }));
  if (!dispatched) {
    std::lock_guard<std::mutex> lock(mu_);
    reported_.erase(key);
  }
}

void SetAsideReporter::Report(const std::map<std::string, k8s::SetAsideObject>& aside, k8s::TimePoint now) {
  unreadable_.store(static_cast<int64_t>(aside.size()));
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = reported_.begin(); it != reported_.end();) {
      it = aside.count(it->first) ? std::next(it) : reported_.erase(it);
    }
  }
  std::vector<const k8s::SetAsideObject*> fresh;
  for (const auto& [key, o] : aside) {
    if (EndIfHolding(o, now)) continue;
    const std::string stamp = o.uid + "/" + std::to_string(o.generation);
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = reported_.emplace(key, stamp);
    if (!inserted && it->second == stamp) continue;  // a status write does not move the generation
    it->second = stamp;
    fresh.push_back(&o);
  }
  for (const k8s::SetAsideObject* o : fresh) {
    const std::string key = k8s::ObjectKey(o->ns, o->name);
    const std::string why = "berth cannot read this Run: " + o->why +
                            " (spec.template keeps fields berth does not know); it is set aside, out of the queue, "
                            "until it is changed to nest less deeply or deleted";
    spdlog::warn("run {}: {}", key, why);
    // Not guarded by resourceVersion, and the answer is not read (it is the Run, as deep as ever).
    const Condition ready{ConditionType::kReady, ConditionStatus::kFalse, Reason::kInvalidSpec, why, Time(now),
                          o->generation};
    const std::string body = api::ReasonPatch(Reason::kInvalidSpec, why, ready);
    const k8s::ObjectReference ref{kGroupVersion, "Run", o->ns, o->name, o->uid};
    const bool dispatched = dispatch_(Report(key, WriteKind::kSetAside, body, [this, key, body, ref, why, path = kRuns.Path(o->ns, o->name, "status")] {
      k8s::Status s = client_->MergePatchNoAnswer(path, body);
      if (!s.ok() && !s.IsNotFound()) {
        std::lock_guard<std::mutex> lock(mu_);
        reported_.erase(key);  // the next pass tries again
        return false;
      }
      if (s.ok()) RecordEvent(events_, ref, RunEvent{api::EventType::kWarning, Reason::kInvalidSpec, why});
      return true;
    }));
    if (!dispatched) {
      std::lock_guard<std::mutex> lock(mu_);
      reported_.erase(key);
    }
  }
}

}  // namespace berth::reconcilers
