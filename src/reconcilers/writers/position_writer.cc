#include "reconcilers/writers/position_writer.h"

#include <algorithm>
#include <memory>

#include <spdlog/spdlog.h>

#include "reconcilers/writers/run_status.h"

namespace berth::reconcilers {

namespace sched = scheduling;
using k8s::resources::kRuns;

namespace {

// The run with `key` in a key-sorted list, or nullptr.
std::shared_ptr<const Run> FindKeyed(const Keyed& runs, const std::string& key) {
  auto it = std::lower_bound(runs.begin(), runs.end(), key, [](const auto& e, const std::string& k) { return e.key < k; });
  return it != runs.end() && it->key == key ? it->run : nullptr;
}

}  // namespace

bool EndsWaiting(const RunMemo& memo, const sched::WaitingRun& w, k8s::TimePoint now) {
  // A run waiting for its namespace's quota (or its team's share, issue 31, or budget, issue 47)
  // waits whatever its retry says; a preempting run's room is being freed.
  if (w.reason.code == sched::WaitCode::kQuotaExceeded || w.reason.code == sched::WaitCode::kTeamShare ||
      w.reason.code == sched::WaitCode::kBudgetExhausted || w.reason.code == sched::WaitCode::kPreempting) {
    return false;
  }
  return memo.ends_waiting_at && now >= *memo.ends_waiting_at;
}

PositionWriter::PositionWriter(k8s::ClientPtr client, const EngineOptions& options, Admissions& admissions,
                               RunWrites& writes, Dispatch dispatch, Busy busy)
    : client_(std::move(client)),
      options_(options),
      admissions_(admissions),
      writes_(writes),
      dispatch_(std::move(dispatch)),
      busy_(std::move(busy)),
      budget_(options.position_writes_per_second, std::max(1.0, options.position_writes_per_second)) {}

const std::vector<std::string>& PositionWriter::Places(const sched::RunQueue& queue, const WorkingSet& working,
                                                       k8s::TimePoint now) {
  // The first places go to the waiting runs that stay in the queue (one about to fail does not
  // take a place on its way out).
  top_.clear();
  places_.clear();
  for (auto item : queue) {
    if (top_.size() >= options_.position_limit) break;
    const RunMemo* m = WorkingSet::OwnerOf(item.run.owner);
    if (m == nullptr || !m->run) continue;
    const sched::WaitingRun* w = working.WaitingOf(*m);
    if (w == nullptr || EndsWaiting(*m, *w, now)) continue;
    top_.push_back(item.run.id);
    places_.emplace(item.run.id, static_cast<int64_t>(top_.size()));
  }
  return top_;
}

std::optional<int64_t> PositionWriter::PlaceOf(const std::string& key) const {
  auto it = places_.find(key);
  return it != places_.end() ? std::optional<int64_t>(it->second) : std::nullopt;
}

bool PositionWriter::LastVisible(const WorkingSet& working) {
  if (busy_()) return false;
  if (batch_.empty()) return true;
  // The sequence's writer is done (then what it wrote is in the admissions' news already) ...
  for (const auto& key : batch_) {
    // What it wrote is either still news for the next pass (the writer finished after this pass
    // took its news) or noted and not yet in the cache (awaiting_rv()).
    if (admissions_.WrittenSinceTaken(key)) return false;
    const RunMemo* m = working.Find(key);
    if (m != nullptr && m->awaiting_rv() != 0) return false;
  }
  batch_.clear();
  return true;
}

PositionPlanInput PositionWriter::Input(const Keyed& runs, std::unordered_set<std::string> frozen,
                                        const WorkingSet& working) const {
  PositionPlanInput in;
  in.frozen = std::move(frozen);
  in.top = top_;
  size_t at = 0;
  for (const auto& [key, run, memo] : runs) {
    PrefetchAhead(runs, at++);
    // A run being deleted is leaving: its place is not held for it.
    if (!memo->shown_position) continue;  // (RunMemo::Read: without reading the run)
    in.shown[key] = *memo->shown_position;
    // A waiting run (so in the queue) that shows a place beyond the top ones has it cleared.
    if (!places_.count(key) && working.WaitingOf(*memo) != nullptr) in.clear.push_back(key);
  }
  std::sort(in.clear.begin(), in.clear.end());
  return in;
}

std::unordered_set<std::string> PositionWriter::Write(const Keyed& runs, std::unordered_set<std::string> frozen,
                                                      WorkingSet& working, const FullStatus& full_status,
                                                      k8s::TimePoint now, std::optional<k8s::TimePoint>& deadline) {
  if (!LastVisible(working)) return {};
  const PositionPlanInput in = Input(runs, std::move(frozen), working);
  const size_t budget = budget_.Available(now);
  if (budget == 0) {
    deadline = now + std::chrono::milliseconds(
                         static_cast<int64_t>(1000.0 / std::max(0.001, options_.position_writes_per_second)));
    return {};
  }
  std::vector<PositionWrite> writes;
  std::unordered_set<std::string> touched;
  std::vector<std::function<void()>> undo;  // the memos' last_wait_write as they were
  for (auto& m : PlanPositionMoves(in, budget)) {
    std::shared_ptr<const Run> run = FindKeyed(runs, m.key);
    if (!run) break;
    PositionWrite w{run, m.to, std::nullopt};
    const std::optional<int64_t> place = PlaceOf(m.key);
    RunMemo& memo = working.MemoOf(m.key);
    const sched::WaitingRun* wait = working.WaitingOf(memo);
    if (m.to == place && wait != nullptr) {  // its last move: its whole waiting status
      w.full = full_status(*run, *wait, m.to);
      undo.push_back(working.NoteWaitWrite(m.key, memo, now));
    }
    writes.push_back(std::move(w));
    touched.insert(m.key);
  }
  if (writes.empty()) return {};
  const size_t count = writes.size();
  auto sequence = std::make_shared<const std::vector<PositionWrite>>(std::move(writes));
  auto forget = [undo = std::move(undo)] {
    for (const auto& u : undo) u();
  };
  PassWrite w{.key = std::string(kKey), .kind = WriteKind::kPositions, .target = {}, .body = BodyOf(sequence),
              .write = [this, sequence] { return WriteSequence(*sequence); }, .background = true,
              // Refused as it is carried out: as if never planned (the budget, the batch, the
              // waiting statuses' refresh), so the next pass plans it again.
              .refused = [this, count, forget] {
                budget_.Refund(count);
                batch_.clear();
                forget();
              }};
  if (!dispatch_(std::move(w))) {
    forget();  // not taken: nothing was written
    return {};
  }
  budget_.Spend(count);
  batch_ = touched;
  return touched;
}

std::function<std::string()> PositionWriter::BodyOf(std::shared_ptr<const std::vector<PositionWrite>> sequence) {
  return [sequence = std::move(sequence)] {
    std::string body = "[";
    for (const auto& m : *sequence) {
      if (body.size() > 1) body += ",";
      body += "{\"run\":\"" + RunKey(*m.run) + "\",\"to\":" + (m.to ? std::to_string(*m.to) : "null");
      if (m.full) body += ",\"patch\":" + RunStatusPatch(*m.full, m.run->meta.resource_version);
      body += "}";
    }
    return body + "]";
  };
}

bool PositionWriter::WriteSequence(const std::vector<PositionWrite>& writes) {
  // One after the other: a write starts only once the one before it is in the API, so nobody
  // moves into a place before its previous holder has left it. A failure ends the sequence (what
  // follows may depend on it); the next pass plans again from the cache.
  std::unordered_map<std::string, std::string> rv;  // a run written twice (a cycle) goes on from its new version
  for (const auto& w : writes) {
    const Run& r = *w.run;
    const std::string key = RunKey(r);
    auto known = rv.find(key);
    const std::string& version = known != rv.end() ? known->second : r.meta.resource_version;
    std::string body = w.full ? RunStatusPatch(*w.full, version) : QueuePositionPatch(w.to, version);
    auto res = client_->MergePatch(kRuns.Path(r.meta.ns, r.meta.name, "status"), body);
    if (!res.ok()) {
      if (res.status().IsConflict()) return admissions_.NoteStale(r);
      if (res.status().IsNotFound()) return true;
      spdlog::info("run {}: queue position not written ({}); will plan again", key, res.status().ToString());
      return false;
    }
    writes_.NoteWritten(r, *res);
    rv[key] = k8s::ResourceVersionOf(*res);
  }
  return true;
}

}  // namespace berth::reconcilers
