#include "reconcilers/engine/forecaster.h"

#include <algorithm>
#include <vector>
#include <utility>

namespace berth::reconcilers {

namespace sched = scheduling;

namespace {

sched::RunShape ShapeOf(const Run& run) {
  return sched::RunShape{static_cast<int32_t>(run.spec.nodes),
                         sched::Resources{run.spec.cpu_milli, run.spec.memory_bytes, run.spec.gpus}};
}

// When the run was placed: scheduledAt, else startedAt (runtime_history.h: from placement).
std::optional<k8s::TimePoint> PlacedAt(const Run& run) {
  if (auto at = PointOf(run.status.scheduled_at)) return at;
  return PointOf(run.status.started_at);
}

}  // namespace

sched::EstimateInput ForecastInput(const sched::ClusterSnapshot& snapshot, const sched::RunQueue& queue,
                                   const sched::RuntimeHistory& history,
                                   const std::function<std::shared_ptr<const Run>(const std::string& key)>& run_of,
                                   const std::function<std::string(const std::string& ns)>& team_of,
                                   k8s::TimePoint now, size_t max_runs) {
  sched::EstimateInput in;
  in.snapshot = snapshot;
  in.now = now;
  in.queued.reserve(std::min(queue.size(), max_runs));
  for (const auto& item : queue) {
    if (in.queued.size() >= max_runs) {
      in.left_out = queue.size() - in.queued.size();
      break;
    }
    sched::PendingRun p = item.run;
    p.owner = nullptr;  // the forecast's copy: the engine's memos are not the worker's
    std::shared_ptr<const Run> run = run_of(p.id);
    std::optional<sched::RuntimePrediction> learned;
    if (run) learned = history.Predict(run->meta.ns, run->meta.name, team_of(run->meta.ns), ShapeOf(*run), p.max_duration);
    if (learned) {
      in.runtime[p.id] = learned->runtime;
      if (learned->spread.size() > 1) in.runtime_spread[p.id] = std::move(learned->spread);
    } else if (p.max_duration) {
      in.runtime[p.id] = *p.max_duration;
    }
    in.queued.push_back(std::move(p));
  }
  for (const sched::RunningRun& r : snapshot.running) {
    std::shared_ptr<const Run> run = run_of(r.id);
    if (!run) continue;
    const std::optional<k8s::TimePoint> placed = PlacedAt(*run);
    if (!placed) continue;
    const sched::Duration elapsed = std::max(sched::Duration::zero(), now - *placed);
    if (auto learned = history.Predict(run->meta.ns, run->meta.name, team_of(run->meta.ns), ShapeOf(*run),
                                       run->spec.max_duration, elapsed)) {
      in.running_end[r.id] = *placed + learned->runtime;
      if (learned->spread.size() > 1) {
        std::vector<k8s::TimePoint>& ends = in.running_end_spread[r.id];
        for (sched::Duration d : learned->spread) ends.push_back(*placed + d);
      }
    }
  }
  return in;
}

std::optional<sched::FinishedRun> FinishedRecord(const Run& run, const std::string& team) {
  if (!IsTerminalPhase(run.status.phase)) return std::nullopt;
  const std::optional<k8s::TimePoint> finished = PointOf(run.status.finished_at);
  const std::optional<k8s::TimePoint> placed = PlacedAt(run);
  if (!finished || !placed || *finished < *placed) return std::nullopt;  // never placed: it held no room
  return sched::FinishedRun{run.meta.ns, run.meta.name, team, ShapeOf(run), *finished - *placed};
}

bool MovedMaterially(std::optional<k8s::TimePoint> shown, std::optional<k8s::TimePoint> fresh, k8s::TimePoint now) {
  if (shown.has_value() != fresh.has_value()) return true;
  if (!shown) return false;
  const auto moved = *fresh > *shown ? *fresh - *shown : *shown - *fresh;
  const auto ahead = std::max(sched::Duration::zero(), *fresh - now);
  return moved > std::max<sched::Duration>(std::chrono::minutes(1), ahead / 10);
}

std::string EstimateNote(const sched::StartEstimate& e) {
  if (e.unknown != sched::EstimateUnknown::kNone) {
    return "estimated start unknown: " + sched::ExplainEstimate(e);
  }
  if (e.start_now_bound) return "would start now with maxDuration ≤ " + sched::FormatDuration(*e.start_now_bound);
  return "";
}

Forecaster::Forecaster(std::chrono::milliseconds interval, Done wake, sched::EstimateOptions options)
    : interval_(interval), wake_(std::move(wake)), options_(options) {}

Forecaster::~Forecaster() { Stop(); }

void Forecaster::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

bool Forecaster::Due(k8s::TimePoint now) const {
  return enabled() && !under_way_ && (!last_handed_ || now >= *last_handed_ + interval_);
}

std::optional<k8s::TimePoint> Forecaster::DueAt(uint64_t stamp) const {
  if (!enabled() || under_way_ || !last_handed_ || stamp == last_stamp_) return std::nullopt;
  return *last_handed_ + interval_;
}

void Forecaster::Hand(sched::EstimateInput input, uint64_t stamp) {
  last_handed_ = input.now;
  last_stamp_ = stamp;
  under_way_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    handed_ = Handed{std::move(input), calibration_};
    done_ = false;
    if (!stepped_ && !worker_.joinable() && !stopping_) worker_ = std::thread([this] { Work(); });
  }
  cv_.notify_one();
}

bool Forecaster::RunQueued() {
  std::optional<Handed> handed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!handed_) return false;
    handed = std::move(handed_);
    handed_.reset();
  }
  Compute(std::move(*handed));
  return true;
}

void Forecaster::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopping_ || handed_.has_value(); });
    if (stopping_) return;
    Handed handed = std::move(*handed_);
    handed_.reset();
    lock.unlock();
    Compute(std::move(handed));
    lock.lock();
  }
}

void Forecaster::Compute(Handed handed) {
  auto estimates = std::make_shared<Estimates>();
  const sched::EstimateInput& input = handed.input;
  const std::optional<size_t> depth = input.left_out > 0 ? std::optional<size_t>(input.queued.size()) : std::nullopt;
  estimates->now = input.now;
  const auto started = std::chrono::steady_clock::now();
  std::vector<sched::StartEstimate> all = sched::EstimateStarts(std::move(handed.input), options_);
  const auto took =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
  const size_t runs = all.size();
  for (sched::StartEstimate& e : all) {
    std::string id = e.run_id;
    std::optional<sched::StartRange> sampled = e.range;
    if (e.start) e.range = handed.calibration.Range(estimates->now, *e.start, sampled);
    estimates->of.emplace(std::move(id), Estimate{std::move(e), sampled});
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    published_ = std::move(estimates);
    published_depth_ = depth;
    done_ = true;
  }
  if (wake_) wake_(runs, took);  // the loop's next pass takes it
}

bool Forecaster::Take() {
  if (!under_way_) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (!done_) return false;
  current_ = published_;
  current_depth_ = published_depth_;
  under_way_ = false;
  ++taken_;
  NoteShown();
  return true;
}

void Forecaster::NoteShown() {
  if (!current_) return;
  std::erase_if(first_shown_, [this](const auto& e) { return !current_->of.count(e.first); });  // left the queue
  for (const auto& [key, e] : current_->of) {
    if (e.shown.start) first_shown_.try_emplace(key, Shown{current_->now, *e.shown.start, e.sampled});
  }
}

std::optional<double> Forecaster::NoteStarted(const std::string& key, k8s::TimePoint at) {
  auto it = first_shown_.find(key);
  if (it == first_shown_.end()) return std::nullopt;
  const Shown shown = it->second;
  first_shown_.erase(it);
  calibration_.Observe(shown.at, shown.start, shown.sampled, at);
  const std::chrono::duration<double> waited = at - shown.at;
  if (waited < std::chrono::minutes(1)) return std::nullopt;
  return std::chrono::duration<double>(shown.start - at) / waited;
}

const sched::StartEstimate* Forecaster::Of(const std::string& key, std::optional<int64_t> place) const {
  if (!current_) return nullptr;
  auto it = current_->of.find(key);
  if (it != current_->of.end()) return &it->second.shown;
  static const sched::StartEstimate kBeyond{"", std::nullopt, sched::EstimateUnknown::kQueueDepth, std::nullopt};
  if (current_depth_ && place && *place > static_cast<int64_t>(*current_depth_)) return &kBeyond;
  return nullptr;
}

void Forecaster::Learn(const Run& run, const std::function<std::string(const std::string& ns)>& team_of) {
  if (!IsTerminalPhase(run.status.phase) || run.meta.uid.empty() || learned_.count(run.meta.uid)) return;
  const std::optional<sched::FinishedRun> finished = FinishedRecord(run, team_of(run.meta.ns));
  if (!finished) return;
  history_.Add(*finished);
  learned_.insert(run.meta.uid);
  learned_order_.push_back(run.meta.uid);
  if (learned_order_.size() > kLearnedUids) {
    learned_.erase(learned_order_.front());
    learned_order_.pop_front();
  }
}

}  // namespace berth::reconcilers
