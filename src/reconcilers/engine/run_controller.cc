#include "reconcilers/engine/run_controller.h"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

namespace berth::reconcilers {

RunController::RunController(k8s::ClientPtr client, const k8s::Clock& clock, EngineOptions options)
    : client_(std::move(client)),
      clock_(clock),
      options_(options),
      events_(std::make_unique<k8s::EventRecorder>(client_, clock_, "berth-controller")),
      caches_(client_),
      // Most writers carry decisions; two refresh waiting runs' status, so refreshes never hold
      // up an admission, a start or a failure.
      writer_(clock,
              KeyedWriter::Options{std::max(1, options.writers - 2), 2,
                                   BackoffPolicy{std::chrono::milliseconds(100), std::chrono::milliseconds(30000)}},
              [this](const std::string& key, KeyedWriter::Outcome outcome) {
                if (outcome == KeyedWriter::Outcome::kFailed && observer_ != nullptr) {
                  observer_->OnWriteFailed(key.rfind("fleet:", 0) == 0 ? "fleet" : key.rfind("team:", 0) == 0 ? "team" : "run");
                }
                Wake();  // decide again: with what the write changed, or now that the key may write
              }) {
  caches_.SetDefaultMaxPriority(options.default_max_priority);
  // The Pods a writer reads after creating a run's Pods (status.podUIDs): the cache as it is then.
  pass_.writes().SetLivePods([this](const Run& run) { return caches_.live().PodsOf(run); });
  // A stopped Pod gets at most its fleet's maxGracePeriod (issue 44).
  pass_.writes().SetGraceCap([this](const std::string& node) { return caches_.live().GraceCapOf(node); });
  pass_.writes().SetWorkloadPods([this](const Run& ticket) { return caches_.live().WorkloadPodsOf(ticket); });
  // A DRA Pod's ResourceClaim whose name is taken: berth's own only if the Run controls it (issue 49).
  pass_.writes().SetLiveClaim([this](const std::string& ns, const std::string& name) {
    return caches_.live().resource_claims().Get(k8s::ObjectKey(ns, name));
  });
  // Every change the engine watches wakes the loop; a run's priority patch shows in the queue view at once.
  loop_.Watch(
      caches_, [this](const std::string& key) { pass_.queue_view().NotePriorityChange(key); },
      [this] {
        if (on_synced_) on_synced_();
      });
}

RunController::~RunController() { Stop(); }

void RunController::StartInformers() { caches_.Start(); }

void RunController::StartLoop() {
  writer_.Start();
  loop_.Start();
}

EngineLoop::Hooks RunController::LoopHooks() {
  return EngineLoop::Hooks{
      .synced = [this] { return caches_.HasSynced(); },
      .started =
          [this] {
            spdlog::info("caches synced: {} runs, {} fleets, {} nodes, {} pods", caches_.runs().Size(),
                         caches_.fleets().Size(), caches_.nodes().Size(), caches_.pods().Size());
            pass_.queue_view().SetServing();
          },
      .pass = [this](k8s::TimePoint now) { Pass(now); },
      .news = [this] { return pass_.queue_view().HasNews(); },
      .show_news = [this] { pass_.ShowPriorityNews(); },
      .view_wanted = [this] { return pass_.queue_view().Wanted(); },
      .make_view = [this] { pass_.MakeView(); },
  };
}

EnginePass::Hooks RunController::PassHooks() {
  return EnginePass::Hooks{
      .dispatch_now = [this](const std::string& key, std::function<bool()> write,
                             bool background) { return DispatchNow(key, std::move(write), background); },
      .writer_busy = [this](const std::string& key) { return writer_.Busy(key); },
      .background_queued = [this] { return writer_.BackgroundQueued(); },
      .wake = [this] { Wake(); },
      .nudge = [this] { loop_.Nudge(); },
      .view_priority =
          [this](const std::string& key) -> std::optional<int32_t> {
        auto run = caches_.live().runs().Get(key);  // live: a priority patch shows before the next pass
        if (!run || run->meta.deleting) return std::nullopt;
        return std::clamp<int32_t>(caches_.live().QueuePriority(*run), base::kMinPriority, base::kMaxPriority);
      },
  };
}

void RunController::Stop() {
  if (stopped_.exchange(true)) return;
  loop_.RequestStop();  // from now on no write is dispatched (DispatchNow)
  pass_.queue_view().Stop();
  loop_.Stop();
  pass_.forecaster().Stop();
  // Writes already queued are carried out; then the writers stop.
  writer_.Stop();
  caches_.Stop();
  events_->Flush();
}

bool RunController::HasSynced() const { return caches_.HasSynced(); }

std::vector<QueueEntry> RunController::Queue() const {
  // Stepped, no loop makes a view on request: the last one made (MakeView) at once.
  return pass_.queue_view().Get(stepped_ ? std::chrono::milliseconds::zero() : kViewWait);
}

bool RunController::DispatchNow(const std::string& key, std::function<bool()> fn, bool background) {
  if (loop_.Stopping()) return false;
  return writer_.Dispatch(key, std::move(fn), background);
}

void RunController::CarryOutWrites(PassWrites writes) {
  // In the order decided: a run's status before its Pods, decisions replacing waiting refreshes.
  for (PassWrite& w : writes.Take()) {
    if (DispatchNow(w.key, std::move(w.write), w.background)) continue;
    if (w.refused) w.refused();  // what the component does when Dispatch refuses
    Wake();                      // decided again by the next pass
  }
}

void RunController::StartStepped() {
  stepped_ = true;
  pass_.forecaster().SetStepped();
  StartInformers();
}

size_t RunController::DrainWrites() {
  if (!stepped_) return 0;
  const size_t ran = writer_.RunQueued();
  events_->Flush();
  pass_.forecaster().RunQueued();
  return ran;
}

void RunController::MakeView() {
  if (pass_.queue_view().Stale()) pass_.MakeView();
}

void RunController::Pass(k8s::TimePoint now) {
  PassPhases phases;  // the pass' own duration (the metric) and where a slow one spent it (logged)
  tickets_.Pass();    // issue 45: each queued workload's ticket (reconcilers/objects/tickets.h)
  // What the writers have queued, in flight or backing off (the pass' writes answer as the
  // KeyedWriter would), and what changed since the last pass: this pass takes every change so far.
  PassWrites::Gate gate = writer_.TakeGate();
  gate.stopping = gate.stopping || loop_.Stopping();
  loop_.ResetDeadline();
  pass_.Begin(std::move(gate), loop_.TakeChanges(), now);
  // The pass' snapshot, after what changed was taken (Begin): a change noted then is in it.
  caches_.UpdateSnapshot(pass_.snapshot());
  PassWrites writes = pass_.Decide(now, caches_.runs().SetAside(), phases);
  CarryOutWrites(std::move(writes));  // the decision made, its writes go out in the order decided
  pass_.ShowPriorityNews();
  phases.Mark("settle");
  const auto took = phases.Total();
  if (took > std::chrono::milliseconds(200)) spdlog::info("{}", pass_.SlowLine(took, phases));
  Report(took, now);
  pass_.Finish(now, loop_.ResyncAt(now));
  if (pass_.deadline()) loop_.NoteDeadline(*pass_.deadline());
}

void RunController::Report(std::chrono::microseconds took, k8s::TimePoint now) {
  if (!observer_) return;
  EngineObserver::PassSummary summary = pass_.Summarize(took, now);
  summary.writes_queued = writer_.BusyCount();
  summary.events_posted = events_->posted();
  summary.events_dropped = events_->dropped();
  observer_->OnPass(summary);
}

}  // namespace berth::reconcilers
