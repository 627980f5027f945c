#include "reconcilers/set_aside.h"

#include <spdlog/spdlog.h>

#include "k8s/timefmt.h"
#include "reconcilers/run_types.h"

namespace berth::reconcilers {

using k8s::resources::kRuns;

void SetAsideReporter::Report(const std::map<std::string, k8s::SetAsideObject>& aside, k8s::TimePoint now) {
  unreadable_.store(static_cast<int64_t>(aside.size()));
  std::vector<const k8s::SetAsideObject*> fresh;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = reported_.begin(); it != reported_.end();) {
      it = aside.count(it->first) ? std::next(it) : reported_.erase(it);
    }
    for (const auto& [key, o] : aside) {
      const std::string stamp = o.uid + "/" + std::to_string(o.generation);
      auto [it, inserted] = reported_.emplace(key, stamp);
      if (!inserted && it->second == stamp) continue;  // a status write does not move the generation
      it->second = stamp;
      fresh.push_back(&o);
    }
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
    const bool dispatched = dispatch_(key, [this, key, body, ref, why, path = kRuns.Path(o->ns, o->name, "status")] {
      k8s::Status s = client_->MergePatchNoAnswer(path, body);
      if (!s.ok() && !s.IsNotFound()) {
        std::lock_guard<std::mutex> lock(mu_);
        reported_.erase(key);  // the next pass tries again
        return false;
      }
      if (s.ok()) events_.Record(ref, "Warning", ToApi(Reason::kInvalidSpec), why);
      return true;
    });
    if (!dispatched) {
      std::lock_guard<std::mutex> lock(mu_);
      reported_.erase(key);
    }
  }
}

}  // namespace berth::reconcilers
