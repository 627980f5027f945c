#include "reconcilers/state/admissions.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "k8s/timefmt.h"
#include "reconcilers/objects/usage_spans.h"
#include "reconcilers/writers/pod_builder.h"
#include "reconcilers/writers/run_status.h"
#include "reconcilers/writers/run_event.h"

namespace berth::reconcilers {

namespace sched = scheduling;
using k8s::resources::kRuns;

namespace {

std::string PlacementSummary(const std::string& fleet, const std::vector<PlacementEntry>& placement) {
  std::string s = "placed on fleet " + fleet + ":";
  for (size_t i = 0; i < placement.size(); ++i) {
    s += (i ? ", " : " ") + placement[i].node + " (" + std::to_string(placement[i].blocks) +
         (placement[i].blocks == 1 ? " block)" : " blocks)");
  }
  return s;
}

}  // namespace

bool WriteRefused(const k8s::Status& s) { return s.IsNotFound() || s.code() == 422; }

RunStatus AdmittedStatus(const Run& run, const sched::Placement& placement, const PlacedRun& pr, int32_t effective,
                         k8s::TimePoint now) {
  RunStatus next = run.status;
  next.phase = Phase::kScheduled;
  next.reason = Reason::kScheduled;
  next.message = PlacementSummary(placement.fleet, pr.placement);
  if (placement.takes_unasked_gpus && !placement.ranks.empty()) {
    const int64_t gpus = placement.ranks.front().resources.gpus;
    next.message += "; it asked for no GPU but takes a block with " + std::to_string(gpus) +
                    (gpus == 1 ? " GPU" : " GPUs") + ": none of its fleets had room without GPUs";
  }
  next.fleet = placement.fleet;
  next.placement = pr.placement;
  next.queue_position.reset();
  next.estimated_start_at.reset();  // only a Pending run in the queue shows one
  next.estimated_start_range.reset();
  next.effective_priority = effective;
  if (!next.submitted_at) next.submitted_at = Time(run.meta.created);
  next.scheduled_at = Time(now);
  BeginSpan(next, placement, now);  // issue 47: its usage counts from now
  next.started_at.reset();
  next.preemption.reset();  // placed: the nodes kept for it are its own now
  next.template_hash = api::TemplateHashText(run.template_hash);  // its Pods are made from this template only
  next.observed_generation = run.meta.generation;
  SetCondition(next.conditions, ConditionType::kScheduled, ConditionStatus::kTrue, Reason::kScheduled, next.message,
               run.meta.generation, now);
  return next;
}

bool Admissions::Admit(const Run& run, const sched::Placement& placement, int32_t effective, RunMemo& memo,
                       k8s::TimePoint now) {
  PlacedRun pr;
  pr.key = RunKey(run);
  pr.uid = run.meta.uid;
  pr.fleet = placement.fleet;
  for (const auto& rank : placement.ranks) {
    pr.placement.push_back(PlacementEntry{rank.rank, rank.instance, rank.blocks,
                                          PodName(run.meta.name, run.status.resubmissions, rank.rank)});
  }
  if (run.spec.max_duration) pr.expected_end = now + *run.spec.max_duration;
  pr.placed_at = now;  // its span's start (heldSince): the usage fold stops short of it until seen
  const RunStatus next = AdmittedStatus(run, placement, pr, effective, now);
  const uint64_t ticket = next_ticket_;
  PassWrite w{.key = pr.key, .kind = WriteKind::kAdmission, .target = pr.key,
              .body = [next, rv = run.meta.resource_version] { return api::RunStatusPatch(next, rv); },
              .write = [this, r = run, next, ticket] { return WriteAdmission(r, next, ticket); },
              .background = false,
              // Refused when carried out: not applied, the blocks free again (the next pass' news).
              .refused = [this, key = pr.key, ticket] { Answered(key, ticket, WriteAnswer::kRefused, 0); }};
  if (!dispatch_(std::move(w))) return false;
  ++next_ticket_;
  spdlog::debug("run {}: admitting ({})", pr.key, next.message);
  pr.assumed = true;
  memo.admission.Assume(std::move(pr), ticket, RvNumber(run.meta.resource_version));
  return true;
}

size_t Admissions::News::Count(const std::string& key, WriteAnswer answer) const {
  return static_cast<size_t>(std::count_if(admissions.begin(), admissions.end(),
                                           [&](const Answer& a) { return a.key == key && a.answer == answer; }));
}

Admissions::News Admissions::TakeNews() {
  News news;
  std::lock_guard<std::mutex> lock(mu_);
  std::swap(news, news_);
  return news;
}

void Admissions::ApplyNews(const News& news, WorkingSet& working) {
  // Refused: rolled back (Forget); Unknown: noted with the version it was guarded by; Written
  // (the write's answer, or a GET that showed it applied): the assumption stays until the cache
  // shows the run admitted. An answer for a superseded or ended admission changes nothing.
  for (const auto& a : news.admissions) {
    if (RunMemo* m = working.Find(a.key)) m->admission.Finish(a.ticket, a.answer, a.rv);
  }
  for (const auto& [key, rv] : news.written) {
    working.MemoOf(key).status_write.Wrote(rv);
    working.Activate(key);
  }
}

void Admissions::ActivateNamed(const News& news, WorkingSet& working) {
  for (const auto& a : news.admissions) working.Activate(a.key);
}

void Admissions::Answered(const std::string& key, uint64_t ticket, WriteAnswer answer, uint64_t rv) {
  std::lock_guard<std::mutex> lock(mu_);
  news_.admissions.push_back(Answer{key, ticket, answer, rv});
}

bool Admissions::WrittenSinceTaken(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return news_.written.count(key) != 0;
}

bool Admissions::StillHeld(RunMemo& memo, const Run& run) {
  if (!memo.assumed()) return false;
  // An Unknown admission is proven not applied by a later version of the run that is still
  // pending (only berth writes the status, and only one write per run is in flight).
  const uint64_t rv = RvNumber(run.meta.resource_version);
  const uint64_t unconfirmed = memo.unconfirmed_rv();
  const bool superseded = unconfirmed != 0 && rv > unconfirmed;
  // A run being deleted keeps them too while its admission may have been applied (Unknown, or
  // Written and the cache not there yet).
  const uint64_t awaiting = memo.awaiting_rv();
  const bool behind = awaiting != 0 && rv < awaiting;
  if (IsPendingPhase(run.status.phase) && !superseded && (!run.meta.deleting || unconfirmed != 0 || behind)) {
    return true;
  }
  if (superseded) {
    spdlog::info("run {}: the cache shows version {} still pending after the unconfirmed admission (guarded by "
                 "{}): it was not applied; its blocks are free again",
                 RunKey(run), run.meta.resource_version, unconfirmed);
    memo.admission.Forget();
    return false;
  }
  // No longer pending (the cache shows what became of it), or being deleted with nothing of
  // ours that may have been applied: no longer an assumption.
  memo.admission.Confirm();
  memo.admission.Erase();
  return false;
}

bool Admissions::WriteAdmission(const Run& r, const RunStatus& next, uint64_t ticket) {
  const std::string key = RunKey(r);
  std::string rv = r.meta.resource_version;
  bool ok = true;
  if (!r.meta.HasFinalizer(kFinalizer)) {
    bool json_patch = false;
    const std::string patch = FinalizerPatch(r.meta, /*with_ours=*/true, json_patch);  // at r's resourceVersion
    auto res = json_patch ? client_->JsonPatch(kRuns.Path(r.meta.ns, r.meta.name), patch)
                          : client_->MergePatch(kRuns.Path(r.meta.ns, r.meta.name), patch);
    if (res.ok()) {
      rv = k8s::ResourceVersionOf(*res);
    } else {
      spdlog::info("run {}: not admitted, finalizer write failed: {}", key, res.status().ToString());
      ok = false;
    }
  }
  if (ok) {
    auto res = client_->MergePatch(kRuns.Path(r.meta.ns, r.meta.name, "status"), RunStatusPatch(next, rv));
    if (!res.ok() && !WriteRefused(res.status())) {
      // No answer, a 5xx, or a 409 that may answer our own retry of an applied write: the run
      // may be admitted. Its blocks stay held until the cache or a GET tells (StillHeld, Verify).
      spdlog::info("run {}: admission write unconfirmed ({}); its blocks stay held until the run's next "
                   "version or a GET shows whether it was applied", key, res.status().ToString());
      Answered(key, ticket, WriteAnswer::kUnknown, RvNumber(rv));
      return true;
    }
    if (res.ok()) {
      const uint64_t written = RvNumber(k8s::ResourceVersionOf(*res));
      Answered(key, ticket, WriteAnswer::kWritten, written);
      NoteWritten(key, written);
      NoteAdmitted(r);
      RecordEvent(events_, Ref(r), RunEvent{api::EventType::kNormal, Reason::kScheduled, next.message});
      return true;
    }
    spdlog::info("run {}: not admitted, status write failed: {}", key, res.status().ToString());
  }
  Answered(key, ticket, WriteAnswer::kRefused, 0);
  // The Run changed under us (a priority patch, say): decide again once the cache has it.
  return NoteStale(r);
}

void Admissions::NoteAdmitted(const Run& r) {
  if (!observer_) return;
  // Waited since submission, or since it went back to the queue after a retry (not counting its
  // earlier attempts' run time).
  k8s::TimePoint since = r.meta.created;
  if (r.status.resubmissions > 0) {
    if (auto back = PointOf(r.status.retry_after)) since = std::max(since, *back);
  }
  observer_->OnAdmitted(std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Now() - since));
}

bool Admissions::Verify(const Run& run, uint64_t ticket, uint64_t base_rv) {
  return dispatch_(PassWrite{.key = RunKey(run), .kind = WriteKind::kVerify, .target = RunKey(run), .body = {},
                             .write = [this, r = run, ticket, base_rv] { return VerifyNow(r, ticket, base_rv); },
                             .background = false,
                             // Not read: still Unknown, marked again by the next pass (Expire).
                             .refused = [this, key = RunKey(run), ticket, base_rv] {
                               Answered(key, ticket, WriteAnswer::kUnknown, base_rv);
                             }});
}

bool Admissions::VerifyNow(const Run& r, uint64_t ticket, uint64_t base_rv) {
  const std::string key = RunKey(r);
  auto got = client_->Get(kRuns.Path(r.meta.ns, r.meta.name));
  if (!got.ok() && !got.status().IsNotFound()) {
    spdlog::info("run {}: cannot read it to settle its unconfirmed admission ({}); will ask again", key,
                 got.status().ToString());
    Answered(key, ticket, WriteAnswer::kUnknown, base_rv);  // still Unknown: the next pass marks it again
    return false;
  }
  std::shared_ptr<const Run> now = got.ok() ? DecodeRun(*got) : nullptr;
  const bool same = now != nullptr && now->meta.uid == r.meta.uid;
  if (same && IsPlacedPhase(now->status.phase) && !now->status.placement.empty()) {
    spdlog::info("run {}: the unconfirmed admission was applied (version {})", key, now->meta.resource_version);
    RecordEvent(events_, Ref(r), RunEvent{api::EventType::kNormal, Reason::kScheduled, now->status.message});
    const uint64_t applied = RvNumber(now->meta.resource_version);
    std::lock_guard<std::mutex> lock(mu_);
    news_.admissions.push_back(Answer{key, ticket, WriteAnswer::kWritten, applied});
    uint64_t& slot = news_.written[key];
    slot = std::max(slot, RvNumber(now->meta.resource_version));
    return true;
  }
  // Gone, replaced, or still pending at (or after) the version the write was guarded by: the
  // write was not applied. The next pass decides again once the cache has this version.
  spdlog::info("run {}: the unconfirmed admission (guarded by version {}) was not applied; its blocks are free "
               "again", key, base_rv);
  std::lock_guard<std::mutex> lock(mu_);
  news_.admissions.push_back(Answer{key, ticket, WriteAnswer::kRefused, 0});
  if (same) {
    uint64_t& slot = news_.written[key];
    slot = std::max(slot, RvNumber(now->meta.resource_version));
  }
  return true;
}

void Admissions::NoteWritten(const std::string& key, uint64_t rv) {
  if (rv == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t& slot = news_.written[key];
  slot = std::max(slot, rv);
}

bool Admissions::NoteStale(const Run& run) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t& slot = news_.written[RunKey(run)];
  slot = std::max(slot, RvNumber(run.meta.resource_version) + 1);
  return true;  // not a failure to back off from: the cache is simply behind
}

k8s::ObjectReference Admissions::Ref(const Run& run) const {
  return k8s::ObjectReference{kGroupVersion, "Run", run.meta.ns, run.meta.name, run.meta.uid};
}

}  // namespace berth::reconcilers
