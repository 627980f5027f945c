#include "reconcilers/writers/run_writes.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "k8s/dra_objects.h"
#include "k8s/duration.h"
#include "k8s/timefmt.h"
#include "reconcilers/objects/usage_spans.h"
#include "reconcilers/writers/device_claims.h"
#include "reconcilers/writers/run_status.h"
#include "scheduling/block_layout.h"
#include "workloads/pod_group.h"

namespace berth::reconcilers {

namespace json = k8s::json;
namespace sched = scheduling;
using k8s::resources::kPods;
using k8s::resources::kRuns;
using k8s::resources::kServices;

bool IsTerminalPod(const k8s::Pod& p) {
  return IsPodPhase(p.phase, PodPhase::kSucceeded) || IsPodPhase(p.phase, PodPhase::kFailed);
}

k8s::ObjectReference RunWrites::Ref(const Run& run) const {
  return k8s::ObjectReference{kGroupVersion, "Run", run.meta.ns, run.meta.name, run.meta.uid};
}

namespace {
// A Pod write's body as a test compares it: the Pods' names, in order.
std::function<std::string()> PodNames(const std::vector<PodRef>& pods) {
  std::vector<std::string> names;
  names.reserve(pods.size());
  for (const auto& p : pods) names.push_back(p.name);
  return [names = std::move(names)] {
    std::string out = "[";
    for (size_t i = 0; i < names.size(); ++i) out += (i ? ",\"" : "\"") + names[i] + "\"";
    return out + "]";
  };
}
// Pod creates: each rank's Pod and the node it is bound to, in rank order.
std::function<std::string()> RanksBody(const std::vector<RankAssignment>& ranks) {
  std::string out = "[";
  for (const auto& ra : ranks) {
    if (out.size() > 1) out += ",";
    out += "{\"rank\":" + std::to_string(ra.rank) + ",\"pod\":\"" + ra.pod + "\",\"node\":\"" + ra.node + "\"}";
  }
  return [out = out + "]"] { return out; };
}
}  // namespace

bool RunWrites::Dispatch(std::string key, WriteKind kind, const Run& run, std::function<std::string()> body,
                         std::function<bool()> fn, bool background, Undo refused) {
  return dispatch_(PassWrite{.key = std::move(key), .kind = kind, .target = RunKey(run), .body = std::move(body),
                             .write = std::move(fn), .background = background, .refused = std::move(refused)});
}

std::function<std::string()> RunWrites::StatusBody(const Run& run, const RunStatus& next) {
  return [next, rv = run.meta.resource_version] { return RunStatusPatch(next, rv); };
}

void RunWrites::DeletePodsOf(const Run& run, std::vector<PodRef> pods, bool retry) {
  Dispatch(RunKey(run), WriteKind::kPodDelete, run, PodNames(pods), [this, ns = run.meta.ns, pods = std::move(pods), retry] { return DeletePods(ns, pods) || !retry; });
}

bool RunWrites::DeletePods(const std::string& ns, const std::vector<PodRef>& pods) {
  bool ok = true;
  for (const auto& p : pods) {
    k8s::DeleteOptions o;
    o.precondition_uid = p.uid;
    if (!p.started) {
      o.grace_period_seconds = 1;  // 0 would be a force delete: the kubelet must still stop it
    } else {
      const int64_t cap = grace_cap_ ? grace_cap_(p.node) : kDefaultGraceCapSeconds;
      o.grace_period_seconds = std::max<int64_t>(1, std::min(p.grace_seconds, cap));
    }
    switch (OutcomeOf(client_->Delete(kPods.Path(ns, p.name), o))) {
      case WriteOutcome::kWritten:
      // Gone, or replaced by a Pod with another uid (409): either way not ours to delete.
      case WriteOutcome::kGone:
      case WriteOutcome::kConflict:
        break;
      case WriteOutcome::kExists:
      case WriteOutcome::kRefused:
      case WriteOutcome::kFailed:
        ok = false;
        break;
    }
  }
  return ok;
}

void RunWrites::NoteSpecChangeAfterEnd(const Run& run) {
  // An ended run does not run again when its spec changes (kubectl apply of an edited file): its
  // status and an Event say so, and how to run it again. Once per generation.
  static const std::string kNote =
      "the spec changed after the run ended, which does not run it again: kubectl berth apply -f FILE submits it again";
  // spec.suspend set on an ended run: nothing to suspend, and nothing else happens either.
  static const std::string kSuspendNote = "spec.suspend was set after the run ended: an ended run has nothing to suspend";
  if (run.spec.suspend) {
    RunStatus next = run.status;
    next.observed_generation = run.meta.generation;
    for (auto& c : next.conditions) c.observed_generation = run.meta.generation;
    if (next.message.find(kSuspendNote) == std::string::npos) {
      next.message += (next.message.empty() ? "" : "; ") + kSuspendNote;
    }
    WriteStatus(run, next, RunEvent{api::EventType::kWarning, Reason::kSpecChangeIgnored,
                "the run has ended (" + std::string(PhaseName(run.status.phase)) + "), so spec.suspend does nothing"});
    return;
  }
  RunStatus next = run.status;
  next.observed_generation = run.meta.generation;
  for (auto& c : next.conditions) c.observed_generation = run.meta.generation;
  if (next.message.find(kNote) == std::string::npos) next.message += (next.message.empty() ? "" : "; ") + kNote;
  WriteStatus(run, next, RunEvent{api::EventType::kWarning, Reason::kSpecChangeIgnored,
              "the run has ended (" + std::string(PhaseName(run.status.phase)) +
                  "), so spec changes do not run it again; kubectl berth apply -f FILE deletes it and submits it again "
                  "(or delete and create it)"});
}

void RunWrites::EndAfterMaxDuration(const Run& run, const std::map<std::string, std::shared_ptr<const k8s::Pod>>& pods,
                                        const std::string& message, k8s::TimePoint now) {
  std::vector<PodRef> names;
  for (const auto& [name, p] : pods) {
    if (!IsTerminalPod(*p)) names.push_back(RefOf(*p));
  }
  RunStatus next = Finish(run.status, Outcome::kFailed, Reason::kMaxDurationExceeded, message, run.meta.generation,
                          run.meta.created, now);
  // The terminal status first, then the Pods: a crash in between leaves a Failed run (whose Pods
  // the Failed branch deletes), never a Running run without Pods (an "interruption").
  Dispatch(RunKey(run), WriteKind::kRunStatus, run, StatusBody(run, next), [this, r = run, names, next] {
    if (const WriteResult w = PatchStatus(r, next); w.outcome != WriteOutcome::kWritten) return AnswerUnwritten(r, w);
    RecordEvent(events_, Ref(r), RunEvent{api::EventType::kWarning, Reason::kMaxDurationExceeded, next.message});
    if (api::IsTicket(r)) tickets_.Hold(r);  // its controller makes no new Pods
    if (!HeldWorkloadStopsItsPods(r)) DeletePods(r.meta.ns, names);  // else its controller does
    return true;
  });
}

WriteResult RunWrites::PatchStatus(const Run& r, const RunStatus& next) {
  auto res = client_->MergePatch(kRuns.Path(r.meta.ns, r.meta.name, "status"), RunStatusPatch(next, r.meta.resource_version));
  if (!res.ok()) return ResultOf(res.status());
  NoteWritten(r, *res, &next);
  return WriteResult{};
}

bool RunWrites::AnswerUnwritten(const Run& r, const WriteResult& w) {
  switch (w.outcome) {
    case WriteOutcome::kWritten:
      return true;
    case WriteOutcome::kConflict:  // the run changed meanwhile: decided again from the cache
      return admissions_.NoteStale(r);
    case WriteOutcome::kGone:  // deleted: the informer drops it (nothing to log)
      return false;
    case WriteOutcome::kExists:
    case WriteOutcome::kRefused:
    case WriteOutcome::kFailed:
      spdlog::info("run {}/{}: status not written ({}); will retry", r.meta.ns, r.meta.name, w.status.ToString());
      return false;
  }
  return false;
}

void RunWrites::NoteWritten(const Run& run, const json::Document& answer, const RunStatus* next) {
  if (observer_ && next != nullptr && IsTerminalPhase(next->phase) && next->phase != run.status.phase) {
    observer_->OnFinished(std::string(PhaseName(next->phase)), next->reason.str());
  }
  admissions_.NoteWritten(RunKey(run), RvNumber(k8s::ResourceVersionOf(answer)));
}

void RunWrites::EnsurePods(const Run& run, const std::string& gpu_resource, const ClusterView& view, Undo refused) {
  // Resources of each rank from its instance's block layout.
  std::vector<RankAssignment> ranks;
  for (const auto& entry : run.status.placement) {
    RankAssignment ra;
    ra.rank = entry.rank;
    ra.pod = entry.pod;  // the name admission wrote (a berth before issue 29 named retries otherwise)
    ra.node = entry.node;
    ra.blocks = entry.blocks;
    for (const auto& inst : view.snapshot.instances) {
      if (inst.name != entry.node) continue;
      for (const auto& f : view.snapshot.fleets) {
        if (f.name == inst.fleet) ra.resources = sched::BlockLayout::Make(inst.allocatable, f.blocks).ResourcesFor(entry.blocks);
      }
    }
    ranks.push_back(ra);
  }
  std::sort(ranks.begin(), ranks.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  std::map<std::string, std::string> bound;  // pod -> node it is bound to (from the cache)
  for (const auto& p : pods_of_(run)) bound[p->meta.name] = p->node_name;
  int64_t grace = kDefaultGraceCapSeconds;
  std::string device_class;  // issue 49: a DRA fleet's
  if (auto f = view.fleets.find(run.status.fleet); f != view.fleets.end() && f->second != nullptr) {
    grace = GraceCapSeconds(f->second->spec.max_grace_period);
    device_class = f->second->spec.device_class;
  }
  Dispatch(RunKey(run), WriteKind::kPodCreate, run, RanksBody(ranks),
           [this, r = run, ranks, gpu_resource, bound, grace, device_class] {
             return CreatePods(r, ranks, gpu_resource, bound, grace, device_class);
  }, false, std::move(refused));
}

bool RunWrites::FailInvalidSpec(const Run& r, const std::string& why) {
  spdlog::warn("run {}/{}: {}", r.meta.ns, r.meta.name, why);
  const k8s::TimePoint now = clock_.Now();
  RunStatus next = Finish(r.status, Outcome::kFailed, Reason::kInvalidSpec, why, r.meta.generation, r.meta.created, now);
  const WriteResult w = PatchStatus(r, next);
  switch (w.outcome) {
    case WriteOutcome::kWritten:
      RecordEvent(events_, Ref(r), RunEvent{api::EventType::kWarning, Reason::kInvalidSpec, why});
      return true;
    case WriteOutcome::kConflict:  // the run changed meanwhile: decided again from the cache
      return admissions_.NoteStale(r);
    case WriteOutcome::kGone:
    case WriteOutcome::kExists:
    case WriteOutcome::kRefused:
    case WriteOutcome::kFailed:
      return false;
  }
  return false;
}

std::optional<bool> RunWrites::CreateService(const Run& r) {
  // The ranks find each other through it: no Pods before it exists (retried like any write).
  const WriteResult s = ResultOf(client_->Create(kServices.Path(r.meta.ns), BuildService(r)).status());
  switch (s.outcome) {
    case WriteOutcome::kWritten:
      return std::nullopt;
    case WriteOutcome::kExists: {
      // Ours from an earlier try, or someone else's: berth never adopts what it did not create.
      auto existing = client_->Get(kServices.Path(r.meta.ns, r.meta.name));
      if (!existing.ok()) return false;  // gone meanwhile, or no answer: the next pass tries again
      if (IsOwnedByRun(k8s::DecodeMeta(*existing), &r)) return std::nullopt;
      return FailInvalidSpec(r, "a Service named " + r.meta.name + " already exists in namespace " + r.meta.ns +
                                    " and is not this run's (berth does not take over or change it): a multi-node "
                                    "run's Pods find each other through a headless Service named after the run; "
                                    "rename the run or delete that Service");
    }
    case WriteOutcome::kConflict:
    case WriteOutcome::kGone:
    case WriteOutcome::kRefused:
    case WriteOutcome::kFailed:
      break;
  }
  spdlog::warn("run {}/{}: service not created: {}", r.meta.ns, r.meta.name, s.status.ToString());
  return false;
}

std::optional<bool> RunWrites::ReadTemplate(const Run& r, std::string& out) {
  if (!r.spec.template_json.empty() || r.template_bytes == 0) {
    out = r.spec.template_json;
    return std::nullopt;
  }
  // Not kept in the cache (larger than kKeptTemplateBytes): read it with the run now.
  auto got = client_->Get(kRuns.Path(r.meta.ns, r.meta.name));
  if (!got.ok()) return false;  // gone, or no answer: the next pass decides again
  auto whole = api::DecodeRun(*got, api::RunDecodeOptions{.keep_meta_prefix = kKeptMetaPrefix});
  if (!whole.ok() || whole->meta.uid != r.meta.uid) return false;  // replaced meanwhile
  if (const std::string now_hash = api::TemplateHashText(whole->template_hash);
      !r.status.template_hash.empty() && r.status.template_hash != now_hash) {
    return FailInvalidSpec(r, api::TemplateChangedAfterPlacement(r.status.template_hash, now_hash));  // issue 44
  }
  out = std::move(whole->spec.template_json);
  if (out.size() > kMaxTemplateBytes) return FailInvalidSpec(r, TemplateTooLarge(out.size()));
  return std::nullopt;
}

bool RunWrites::CreatePods(const Run& r, const std::vector<RankAssignment>& ranks, const std::string& gpu_resource,
                               const std::map<std::string, std::string>& bound, int64_t max_grace_seconds,
                               const std::string& device_class) {
  // A Pod the API server refuses (400/422: a template the CRD schema could not check) will be
  // refused every time: fail the run with InvalidSpec instead of retrying forever. Its pods, if
  // any were made, are deleted by the Failed branch of Reconcile.
  if (ranks.size() > 1) {
    if (std::optional<bool> answer = CreateService(r)) return *answer;
  }
  std::optional<Run> full;  // the run with its whole template, read once when a Pod is made
  std::vector<std::string> made;  // uids to record in status.podUIDs
  for (size_t i = 0; i < ranks.size(); ++i) {
    std::string name = ranks[i].pod.empty() ? PodName(r.meta.name, r.status.resubmissions, ranks[i].rank) : ranks[i].pod;
    auto b = bound.find(name);
    if (b == bound.end()) {
      if (!full) {
        full = r;
        if (std::optional<bool> answer = ReadTemplate(r, full->spec.template_json)) {
          return made.empty() ? *answer : RecordPods(r, made) && *answer;
        }
      }
      if (std::optional<bool> answer = CreatePod(r, *full, ranks, i, name, gpu_resource, max_grace_seconds, made, device_class)) {
        // What was made so far is recorded first: a Pod whose uid berth did not record is not the run's.
        return made.empty() ? *answer : RecordPods(r, made) && *answer;
      }
      continue;
    }
    if (!b->second.empty() || !device_class.empty()) continue;  // already bound, or kube-scheduler binds it
    // Only a Pod made without a node (by a berth that bound in a second write) gets here.
    const WriteResult s = ResultOf(client_->Bind(r.meta.ns, name, ranks[i].node));
    switch (s.outcome) {
      case WriteOutcome::kWritten:
      case WriteOutcome::kConflict:  // 409: bound already
      case WriteOutcome::kExists:
        continue;
      case WriteOutcome::kGone:
      case WriteOutcome::kRefused:
      case WriteOutcome::kFailed:
        break;
    }
    spdlog::warn("run {}/{}: pod {} not bound to {}: {}", r.meta.ns, r.meta.name, name, ranks[i].node, s.status.ToString());
    return made.empty() ? false : RecordPods(r, made) && false;
  }
  return made.empty() || RecordPods(r, made);
}

bool RunWrites::RecordPods(const Run& r, const std::vector<std::string>& made) {
  RunStatus next = r.status;
  // The listed Pods that still exist (older attempts' Pods stopping included), then the new ones.
  next.pod_uids.clear();
  for (const auto& p : (live_pods_of_ ? live_pods_of_ : pods_of_)(r)) {
    if (std::find(r.status.pod_uids.begin(), r.status.pod_uids.end(), p->meta.uid) != r.status.pod_uids.end()) {
      next.pod_uids.push_back(p->meta.uid);
    }
  }
  for (const auto& uid : made) {
    if (std::find(next.pod_uids.begin(), next.pod_uids.end(), uid) == next.pod_uids.end()) next.pod_uids.push_back(uid);
  }
  if (const WriteResult w = PatchStatus(r, next); w.outcome != WriteOutcome::kWritten) return AnswerUnwritten(r, w);
  return true;
}

void RunWrites::DeleteStrays(const Run& run, std::vector<PodRef> pods, Undo refused) {
  Dispatch(RunKey(run), WriteKind::kPodDelete, run, PodNames(pods), [this, r = run, pods = std::move(pods)] {
    bool ok = true;
    for (const auto& p : pods) {
      if (!DeletePods(r.meta.ns, {p})) {
        ok = false;
        continue;
      }
      spdlog::info("run {}/{}: deleted Pod {}, which claims the run but was not made by berth", r.meta.ns, r.meta.name, p.name);
      RecordEvent(events_, Ref(r), RunEvent{api::EventType::kWarning, Reason::kStrayPod,
                     "Pod " + p.name + " claims this run (label berth.dev/run or a Run ownerReference) but berth did "
                     "not make it: deleted; it never counts as the run's"});
    }
    return ok;
  }, false, std::move(refused));
}

namespace {

// What the kubelet counts for a Pod is within what a rank's blocks give.
bool FitsRank(const k8s::PodRequests& asks, const RankAssignment& rank, const std::string& gpu_resource) {
  return asks.cpu_milli <= rank.resources.cpu_millis && asks.memory_bytes <= rank.resources.memory_bytes &&
         asks.Get(gpu_resource) <= rank.resources.gpus;
}

}  // namespace

std::optional<bool> RunWrites::CreatePod(const Run& r, const Run& full, const std::vector<RankAssignment>& ranks,
                                         size_t i, const std::string& name, const std::string& gpu_resource,
                                         int64_t max_grace_seconds, std::vector<std::string>& made,
                                         const std::string& device_class) {
  auto body = BuildPod(full, r.status.fleet, gpu_resource, ranks, i, max_grace_seconds, device_class);
  if (!body.ok()) return FailInvalidSpec(r, "cannot make a Pod from spec.template: " + body.status().message());
  if (std::optional<bool> answer = CreateDeviceClaim(r, ranks[i], name, device_class)) return answer;
  auto created = client_->Create(kPods.Path(r.meta.ns), body.value());
  const WriteResult c = ResultOf(created.status());
  switch (c.outcome) {
    // Created with spec.nodeName set: bound in the same write, no pods/binding. A Pod an older
    // berth left unbound shows in the cache without a node and is bound by CreatePods then.
    case WriteOutcome::kWritten: {
      const std::string uid = k8s::DecodeMeta(*created).uid;
      if (!uid.empty()) made.push_back(uid);
      return std::nullopt;
    }
    case WriteOutcome::kRefused:  // a template the CRD schema could not check: refused every time
      return FailInvalidSpec(r, "the API server refused the Pod for rank " + std::to_string(ranks[i].rank) + ": " +
                                    c.status.message());
    case WriteOutcome::kExists: {
      // Our own earlier create whose uid is not recorded (a crash, a lost answer), or a Pod of
      // someone else under the name: never taken as the run's unless berth may have made it and
      // it asks no more than the rank's blocks.
      auto existing = client_->Get(kPods.Path(r.meta.ns, name));
      if (!existing.ok()) return false;  // gone meanwhile, or no answer: the next pass tries again
      auto pod = k8s::DecodePod(*existing);
      if (pod == nullptr) return false;
      if (IsRunsPod(*pod, &r)) return std::nullopt;
      if (MayBeRunsUnrecordedPod(*pod, r) && FitsRank(pod->requests, ranks[i], gpu_resource)) {
        made.push_back(pod->meta.uid);
        return std::nullopt;
      }
      if (IsStrayPodOf(*pod, r)) {
        if (!pod->meta.deleting) {
          DeletePods(r.meta.ns, {RefOf(*pod)});
          RecordEvent(events_, Ref(r), RunEvent{api::EventType::kWarning, Reason::kStrayPod,
                         "Pod " + name + " claims this run (label berth.dev/run or a Run ownerReference) but berth "
                         "did not make it: deleted; it never counts as the run's"});
        }
        return false;  // made once it is gone
      }
      return FailInvalidSpec(r, "a Pod named " + name + " already exists in namespace " + r.meta.ns +
                                    " and is not this run's (berth does not take over or change it): rank " +
                                    std::to_string(ranks[i].rank) + "'s Pod needs that name; rename the run or "
                                    "delete that Pod");
    }
    case WriteOutcome::kConflict:
    case WriteOutcome::kGone:
    case WriteOutcome::kFailed:
      break;
  }
  spdlog::warn("run {}/{}: pod {} not created: {}", r.meta.ns, r.meta.name, name, c.status.ToString());
  return false;
}

std::optional<bool> RunWrites::CreateDeviceClaim(const Run& r, const RankAssignment& rank, const std::string& name,
                                                 const std::string& device_class) {
  if (device_class.empty() || rank.resources.gpus <= 0) return std::nullopt;
  const std::string body = BuildDeviceClaim(r, name, device_class, rank.resources.gpus);
  const WriteResult c = ResultOf(client_->Create(k8s::resources::kResourceClaims.Path(r.meta.ns), body).status());
  switch (c.outcome) {
    case WriteOutcome::kWritten:
      return std::nullopt;
    case WriteOutcome::kExists:  // made by an earlier try (its name is the Pod's, unique per attempt), or not
      return ExistingDeviceClaim(r, rank, name);
    case WriteOutcome::kRefused:  // e.g. an API server without resource.k8s.io/v1: refused every time
      return FailInvalidSpec(r, "the API server refused the ResourceClaim " + DeviceClaimName(name) + " for rank " +
                                    std::to_string(rank.rank) + ": " + c.status.message());
    case WriteOutcome::kFailed:
      // A namespace's ResourceQuota on devices (<class>.deviceclass.resource.k8s.io/devices), which
      // berth does not read: a sentence on the run, never a silent retry.
      if (c.status.code() == 403 && c.status.message().find("exceeded quota") != std::string::npos) {
        return FailInvalidSpec(r, "the API server refused the ResourceClaim " + DeviceClaimName(name) + " for rank " +
                                      std::to_string(rank.rank) + ": " + c.status.message() +
                                      " (berth does not queue a DRA fleet's runs for a ResourceQuota on devices)");
      }
      break;
    case WriteOutcome::kConflict:
    case WriteOutcome::kGone:
      break;
  }
  spdlog::warn("run {}/{}: ResourceClaim {} not created: {}", r.meta.ns, r.meta.name, DeviceClaimName(name),
               c.status.ToString());
  return false;
}

std::optional<bool> RunWrites::ExistingDeviceClaim(const Run& r, const RankAssignment& rank, const std::string& name) {
  if (!live_claim_) return std::nullopt;
  const std::string claim_name = DeviceClaimName(name);
  std::shared_ptr<const k8s::ResourceClaim> claim = live_claim_(r.meta.ns, claim_name);
  if (claim == nullptr || claim->meta.deleting) return false;  // not cached yet, or going: the next pass looks again
  const k8s::OwnerRef* owner = claim->meta.ControllerRef();
  if (owner != nullptr && owner->kind == "Run" && owner->name == r.meta.name) {
    if (owner->uid == r.meta.uid) return std::nullopt;  // this run's, from an earlier try
    return false;  // a deleted Run's of the same name: the garbage collector removes it
  }
  return FailInvalidSpec(r, "a ResourceClaim named " + claim_name + " already exists in namespace " + r.meta.ns +
                                " and is not this run's (berth does not take over or change it): rank " +
                                std::to_string(rank.rank) + "'s Pod needs that name for its GPUs; rename the run "
                                "or delete that ResourceClaim");
}

RunStatus RunWrites::RetryStatus(const Run& run, const ReasonCode& reason, const std::string& why,
                                     k8s::TimePoint now, bool preempted) const {
  RunStatus next = run.status;
  next.observed_generation = run.meta.generation;
  next.phase = Phase::kPending;
  next.reason = reason;
  next.resubmissions += 1;
  // Backoff: a persistent cause must not become a hot loop of Pod creations.
  // A preempted run waits for no backoff: nothing failed (it keeps its place in the queue).
  std::chrono::milliseconds backoff = preempted ? std::chrono::milliseconds(0) : options_.retry_backoff;
  auto started = PointOf(run.status.started_at);
  bool ran_long = started && now - *started >= kBackoffResetAfter;
  if (!ran_long && run.status.retry_backoff_seconds > 0 && backoff.count() > 0) {
    backoff = std::min(options_.max_retry_backoff, std::chrono::milliseconds(run.status.retry_backoff_seconds * 2000));
  }
  next.retry_backoff_seconds = backoff.count() > 0 ? std::max<int64_t>(1, backoff.count() / 1000) : 0;
  // retryAfter is when it went back to the queue (now, without backoff): its wait counts from
  // there (berth_oldest_pending_run_wait_seconds, the admission wait).
  next.retry_after.reset();
  if (backoff.count() > 0 || preempted) next.retry_after = Time(now + backoff);
  next.message = why + "; back in the queue" +
                 (backoff.count() > 0 ? " at " + k8s::FormatRfc3339(next.retry_after->point()) + " (after " +
                                            k8s::FormatDuration(backoff) + ")"
                                      : "") +
                 ", resubmission " + std::to_string(next.resubmissions);
  next.fleet.clear();
  next.placement.clear();
  next.scheduled_at.reset();
  next.started_at.reset();
  SetCondition(next.conditions, ConditionType::kScheduled, ConditionStatus::kFalse, reason, next.message, run.meta.generation, now);
  SetCondition(next.conditions, ConditionType::kReady, ConditionStatus::kFalse, reason, next.message, run.meta.generation, now);
  return next;
}

void RunWrites::FailOrRetry(const Run& run, bool interruption, const std::string& why, k8s::TimePoint now,
                                const ReasonCode& reason_override, bool stopped, bool preempted, const std::string& team) {
  bool retry_event = !stopped && run.spec.retry && (interruption ? run.spec.retry->on_interruption : run.spec.retry->on_error);
  // A ticket always queues (docs/api.md): preempted or reclaimed, it goes back to the queue and its
  // workload waits held until it is admitted on a fresh placement (issue 45).
  // A Pod group's (or a single Pod's) Pods are deleted and nothing makes them again: its ticket
  // ends Preempted (issue 45 part 3).
  if (preempted && api::IsTicket(run) && !workloads::IsPodKind(run.spec.workload_ref->kind)) retry_event = true;
  bool within = run.spec.retry && (!run.spec.retry->duration || now - run.meta.created < *run.spec.retry->duration);
  // The ended attempt's Pods stop (their logs stay readable until the next attempt ends); Pods of
  // older attempts go.
  std::vector<PodRef> to_delete;
  const std::string attempt = std::to_string(run.status.resubmissions);
  for (const auto& p : pods_of_(run)) {
    if (p->meta.deleting) continue;
    if (!IsTerminalPod(*p) || p->meta.Label(kAttemptLabel) != attempt) to_delete.push_back(RefOf(*p));
  }
  RunStatus next;
  const ReasonCode reason =
      !reason_override.empty() ? reason_override : ReasonCode(interruption ? Reason::kInterrupted : Reason::kPodFailed);
  RunEvent event{api::EventType::kWarning, Reason::kRetrying, {}};
  if (retry_event && within) {
    next = RetryStatus(run, reason, why, now, preempted);
    event.message = next.message;
  } else {
    std::string message = why;
    if (retry_event && !within) message += " (retry duration " + k8s::FormatDuration(*run.spec.retry->duration) + " has passed)";
    next = Finish(run.status, Outcome::kFailed, reason, message, run.meta.generation, run.meta.created, now);
    event.reason = reason;
    event.message = next.message;
    if (stopped) event.type = api::EventType::kNormal;
  }
  // The status first, then the Pods: a crash in between leaves a Failed run (whose Pods the Failed
  // branch of Reconcile deletes) or a Pending one whose old attempt's Pods the next pass deletes,
  // never a Running run without Pods (an "interruption"). Pods that still run hold their blocks
  // until the kubelet has stopped them (see Holds), so nothing is offered twice meanwhile.
  Dispatch(RunKey(run), WriteKind::kRunStatus, run, StatusBody(run, next), [this, r = run, to_delete, next, event, preempted, team] {
    if (const WriteResult w = PatchStatus(r, next); w.outcome != WriteOutcome::kWritten) return AnswerUnwritten(r, w);
    RecordEvent(events_, Ref(r), event);
    if (preempted && observer_) {
      if (next.reason == Reason::kReclaimed) {
        observer_->OnReclaimed(r.status.fleet, team);
      } else {
        observer_->OnPreempted(r.status.fleet);
      }
    }
    // A ticket's workload is held first: its controller makes no new Pods (issue 45), and a Job's
    // deletes the Pods it has itself (HeldWorkloadStopsItsPods: deleted by berth, one would count
    // as a failure toward the Job's backoffLimit).
    if (api::IsTicket(r) && !tickets_.Hold(r)) return false;
    if (!HeldWorkloadStopsItsPods(r)) DeletePods(r.meta.ns, to_delete);
    return true;
  });
}

void RunWrites::Suspend(const Run& run, const std::string& message, k8s::TimePoint now) {
  RunStatus next = run.status;
  const bool already = (run.status.phase == Phase::kPending) && (run.status.reason == Reason::kSuspended);
  next.phase = Phase::kPending;
  next.reason = Reason::kSuspended;
  if (!already) next.message = message;  // keeps the sentence written when it was suspended
  next.queue_position.reset();
  next.estimated_start_at.reset();  // only a Pending run in the queue shows one
  next.estimated_start_range.reset();
  next.preemption.reset();  // out of the queue: the nodes kept for it go back
  next.fleet.clear();
  next.placement.clear();
  next.scheduled_at.reset();
  next.started_at.reset();
  if (!next.submitted_at) next.submitted_at = Time(run.meta.created);
  next.observed_generation = run.meta.generation;
  SetCondition(next.conditions, ConditionType::kScheduled, ConditionStatus::kFalse, Reason::kSuspended, next.message, run.meta.generation, now);
  bool had_ready = false;
  for (const auto& c : next.conditions) had_ready |= c.type == ConditionType::kReady;
  if (had_ready) SetCondition(next.conditions, ConditionType::kReady, ConditionStatus::kFalse, Reason::kSuspended, next.message, run.meta.generation, now);
  // Every Pod still running stops, and the current attempt's Pods go even when they are done:
  // the attempt does not change, so the Pods made on resume take their names.
  std::vector<PodRef> to_delete;
  const std::string attempt = std::to_string(run.status.resubmissions);
  for (const auto& p : pods_of_(run)) {
    if (p->meta.deleting) continue;
    if (!IsTerminalPod(*p) || p->meta.Label(kAttemptLabel) == attempt) to_delete.push_back(RefOf(*p));
  }
  const bool write = !SameStatus(run.status, next);
  if (!write && to_delete.empty()) return;
  // The status first, then the Pods (as when a run ends): a crash in between leaves a suspended
  // run whose Pods the next pass stops, never a Running run without Pods (an interruption).
  // Pods that still run hold their blocks until the kubelet has stopped them (see Holds).
  Dispatch(RunKey(run), WriteKind::kRunStatus, run, write ? StatusBody(run, next) : PodNames(to_delete), [this, r = run, to_delete, next, write, event = !already] {
    if (write) {
      if (const WriteResult w = PatchStatus(r, next); w.outcome != WriteOutcome::kWritten) return AnswerUnwritten(r, w);
      if (event) RecordEvent(events_, Ref(r), RunEvent{api::EventType::kNormal, Reason::kSuspended, next.message});
    }
    if (api::IsTicket(r) && !tickets_.Hold(r)) return false;
    return HeldWorkloadStopsItsPods(r) || DeletePods(r.meta.ns, to_delete);
  });
}

void RunWrites::HoldTicket(const Run& ticket) {
  Dispatch("workload:" + RunKey(ticket), WriteKind::kTicket, ticket, [] { return std::string("hold"); }, [this, r = ticket] { return tickets_.Hold(r); });
}

void RunWrites::ReleaseTicket(const Run& ticket, bool unsuspend, bool pin, Undo refused) {
  Dispatch("workload:" + RunKey(ticket), WriteKind::kTicket, ticket, [] { return std::string("release"); }, [this, r = ticket, unsuspend, pin] { return tickets_.Release(r, unsuspend, pin); }, false, std::move(refused));
}

void RunWrites::WriteStatus(const Run& run, const RunStatus& next, std::optional<RunEvent> event, bool background,
                            Undo refused) {
  if (SameStatus(run.status, next)) return;
  spdlog::debug("run {}/{}: status phase {} reason {}{}", run.meta.ns, run.meta.name, PhaseName(next.phase), next.reason.api(),
                background ? " (refresh)" : "");
  Dispatch(RunKey(run), WriteKind::kRunStatus, run, StatusBody(run, next), [this, r = run, next, event = std::move(event)] {
    if (const WriteResult w = PatchStatus(r, next); w.outcome != WriteOutcome::kWritten) return AnswerUnwritten(r, w);
    if (event && !event->reason.empty()) RecordEvent(events_, Ref(r), *event);
    return true;
  }, background, std::move(refused));
}

bool RunWrites::WaitsForUsage(const Run& run) {
  if (SpanAccounted(run.status)) return false;
  const auto pods = pods_of_(run);
  const bool holding = std::any_of(pods.begin(), pods.end(), [](const auto& p) { return !p->node_name.empty() && !IsTerminalPod(*p); });
  if (!holding && usage_wanted_) usage_wanted_();
  return true;
}

void RunWrites::DeleteAfterTtl(const Run& run) {
  if (WaitsForUsage(run)) return;  // issue 47: once its usage is folded (usage_spans.h)
  Dispatch(RunKey(run), WriteKind::kRunDelete, run, {}, [this, r = run] {
    k8s::DeleteOptions o;
    o.precondition_uid = r.meta.uid;
    o.precondition_resource_version = r.meta.resource_version;
    k8s::Status s = client_->Delete(kRuns.Path(r.meta.ns, r.meta.name), o);
    if (s.ok() || s.IsNotFound()) {
      spdlog::info("run {}/{}: deleted, its time to live after it finished ({}) has passed", r.meta.ns, r.meta.name,
                   FormatTime(r.status.finished_at));
      return true;
    }
    if (s.IsConflict()) return true;  // changed meanwhile: the next pass decides again
    spdlog::info("run {}/{}: not deleted after its time to live ({}); will retry", r.meta.ns, r.meta.name, s.ToString());
    return false;
  });
}

void RunWrites::NoteFinalizerOutcome(const Run& r, const k8s::Status& s) {
  std::lock_guard<std::mutex> lock(finalizer_mu_);
  if (s.ok()) {
    finalizer_retry_.erase(RunKey(r));
    return;
  }
  FinalizerRetry& retry = finalizer_retry_[RunKey(r)];
  retry.delay = std::clamp<base::Duration>(retry.delay * 2, std::chrono::seconds(1), std::chrono::minutes(5));
  retry.next = clock_.Monotonic() + retry.delay;
  spdlog::warn("run {}/{}: finalizer not removed ({}); trying again in {} s", r.meta.ns, r.meta.name, s.ToString(),
               std::chrono::duration_cast<std::chrono::seconds>(retry.delay).count());
}

void RunWrites::HandleDeletion(const Run& run) {
  if (!run.meta.HasFinalizer(kFinalizer)) return;
  (void)WaitsForUsage(run);  // the closure below keeps the finalizer until then
  {
    std::lock_guard<std::mutex> lock(finalizer_mu_);
    if (auto it = finalizer_retry_.find(RunKey(run)); it != finalizer_retry_.end() && clock_.Monotonic() < it->second.next) return;
  }
  std::vector<PodRef> pods;
  for (const auto& p : pods_of_(run)) {
    if (!p->meta.deleting) pods.push_back(RefOf(*p));
  }
  Dispatch(RunKey(run), WriteKind::kPodDelete, run, PodNames(pods), [this, r = run, pods] {
    if (!DeletePods(r.meta.ns, pods)) return false;  // try again on the next pass
    if (r.spec.nodes > 1) {
      // Only the Service the run owns, and only that object (the uid precondition): a Service of
      // the same name made by someone else is never deleted (issue 29).
      auto svc = client_->Get(kServices.Path(r.meta.ns, r.meta.name));
      if (!svc.ok() && !svc.status().IsNotFound()) return false;
      if (svc.ok()) {
        const k8s::ObjectMeta meta = k8s::DecodeMeta(*svc);
        if (IsOwnedByRun(meta, &r)) {
          k8s::DeleteOptions o;
          o.precondition_uid = meta.uid;
          k8s::Status s = client_->Delete(kServices.Path(r.meta.ns, r.meta.name), o);
          // 409: the uid precondition failed, the name holds another object now: not ours.
          if (!s.ok() && !s.IsNotFound() && !s.IsConflict()) return false;
        }
      }
    }
    // Issue 47: the finalizer stays until the span's last seconds are folded (usage_spans.h); the
    // fold's write of accountedUntil brings the run back here.
    if (!SpanAccounted(r.status)) return true;
    bool json_patch = false;
    const std::string patch = FinalizerPatch(r.meta, /*with_ours=*/false, json_patch);
    auto res = json_patch ? client_->JsonPatch(kRuns.Path(r.meta.ns, r.meta.name), patch)
                          : client_->MergePatch(kRuns.Path(r.meta.ns, r.meta.name), patch);
    NoteFinalizerOutcome(r, res.ok() || res.status().IsNotFound() ? k8s::Status() : res.status());
    return true;
  });
}

}  // namespace berth::reconcilers
