#include "reconcilers/views/queue_view.h"

#include <algorithm>

#include "scheduling/quota.h"

namespace berth::reconcilers {

namespace sched = scheduling;

std::vector<QueueEntry> QueueView::Get(std::chrono::milliseconds wait) const {
  std::unique_lock<std::mutex> lock(mu_);
  if (stale_ && serving_ && !stopping_) {
    // Waits for a view made after this request, not for the view to be fresh: the loop may make
    // one (clearing `wanted`) and a pass mark it stale again before this thread looks; waiting
    // for "fresh" then waited out `wait` with nobody asked to make another (a /queue answer 5 s
    // late, seen at 300 pending runs).
    const uint64_t ask = ++asks_;
    wanted_.store(true);
    lock.unlock();
    nudge_();
    lock.lock();
    if (wait > std::chrono::milliseconds::zero()) {
      clock_.WaitFor(lock, fresh_cv_, wait, [this, ask] { return answered_ >= ask || stopping_; });
    }
  }
  return view_;
}

void QueueView::NotePriorityChange(const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    news_.insert(key);
    has_news_.store(true);
  }
  nudge_();  // shown while the loop paces passes too
}

void QueueView::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  fresh_cv_.notify_all();
}

void QueueView::SetServing() {
  std::lock_guard<std::mutex> lock(mu_);
  serving_ = true;
}

void QueueView::MarkStale() {
  std::lock_guard<std::mutex> lock(mu_);
  stale_ = true;
}

void QueueView::ShowNews(const sched::RunQueue& queue, const PriorityOf& priority_of) {
  // Safe anywhere on the loop thread: nothing reads the view back.
  if (!has_news_.load()) return;
  std::unordered_set<std::string> news;
  {
    std::lock_guard<std::mutex> lock(mu_);
    news.swap(news_);
    has_news_.store(false);
  }
  struct Move {
    std::string key;
    int32_t priority, effective;
  };
  std::vector<Move> moves;
  for (const auto& key : news) {
    const sched::PendingRun* queued = queue.Find(key);  // queued by the last pass
    if (queued == nullptr) continue;
    const std::optional<int32_t> priority = priority_of(key);
    if (!priority) continue;
    shown_early_[key] = *priority;
    moves.push_back(Move{key, *priority, queue.EffectiveAt(*priority, queued->submitted_at)});
  }
  if (moves.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& m : moves) MoveInView(view_, m.key, m.priority, m.effective);
}

void QueueView::Publish(std::vector<QueueEntry> entries, const sched::RunQueue& queue, const PriorityOf& priority_of) {
  // Priority patches shown ahead of the queue stay shown until the queue has them: this pass may
  // have visited the run before its patch arrived (or not at all).
  for (auto it = shown_early_.begin(); it != shown_early_.end();) {
    const sched::PendingRun* queued = queue.Find(it->first);
    if (queued == nullptr || queued->priority == it->second || priority_of(it->first) != it->second) {
      it = shown_early_.erase(it);  // in the queue (or out of it), or no longer what was shown
      continue;
    }
    MoveInView(entries, it->first, it->second, queue.EffectiveAt(it->second, queued->submitted_at));
    ++it;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    view_.swap(entries);
    stale_ = false;
    answered_ = asks_;  // every request made so far is answered by this view
    wanted_.store(false);
  }
  fresh_cv_.notify_all();
  // The old view is freed here, outside the lock.
}

bool QueueView::MoveInView(std::vector<QueueEntry>& view, const std::string& key, int32_t priority, int32_t effective) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return false;
  const std::string_view ns(key.data(), slash), name(key.data() + slash + 1, key.size() - slash - 1);
  auto it = std::find_if(view.begin(), view.end(), [&](const QueueEntry& e) { return e.ns == ns && e.name == name; });
  if (it == view.end()) return false;
  QueueEntry moved = std::move(*it);
  view.erase(it);
  moved.priority = priority;
  moved.effective_priority = effective;
  // The queue's order (scheduling/run_queue.h): effective priority, submission, then id.
  auto before = [](const QueueEntry& a, const QueueEntry& b) {
    if (a.effective_priority != b.effective_priority) return a.effective_priority > b.effective_priority;
    if (a.submitted_at != b.submitted_at) return a.submitted_at < b.submitted_at;
    return a.ns + "/" + a.name < b.ns + "/" + b.name;
  };
  auto at = std::find_if(view.begin(), view.end(), [&](const QueueEntry& e) { return before(moved, e); });
  view.insert(at, std::move(moved));
  int64_t position = 0;
  for (auto& e : view) e.position = ++position;
  return true;
}

namespace {

QueueEntry EntryOf(const sched::RunQueue::Item& item, int64_t position) {
  QueueEntry e;
  e.position = position;
  auto slash = item.run.id.find('/');
  e.ns = item.run.id.substr(0, slash);
  e.name = item.run.id.substr(slash + 1);
  e.priority = item.run.priority;
  e.effective_priority = item.effective_priority;
  e.nodes = item.run.nodes;
  e.fleets = item.run.fleets;
  e.submitted_at = item.run.submitted_at;
  return e;
}

}  // namespace

std::vector<QueueEntry> MakeQueueEntries(
    const sched::RunQueue& queue, const sched::CycleResult& result,
    const std::function<const sched::WaitingRun*(const sched::PendingRun&)>& waiting_of,
    const std::function<std::string(const sched::WaitingRun&)>& explain,
    const std::function<bool(const std::string& ns)>& capped) {
  std::vector<QueueEntry> qv;
  qv.reserve(queue.size());
  // The sentence of the last run explained, reused by its equal neighbours.
  const sched::WaitingRun* last = nullptr;
  const std::vector<std::string>* last_fleets = nullptr;
  bool last_capped = true;
  std::string last_text;
  size_t next_waiting = 0;  // result.waiting is in queue order (Schedule): walked beside the queue
  for (auto item : queue) {
    QueueEntry e = EntryOf(item, static_cast<int64_t>(qv.size()) + 1);
    const sched::WaitingRun* w = nullptr;
    if (next_waiting < result.waiting.size() && result.waiting[next_waiting].run_id == item.run.id) {
      w = &result.waiting[next_waiting++];
    } else {
      w = waiting_of(item.run);
    }
    if (w != nullptr) {
      e.reason = std::string(sched::ApiReason(w->reason.code));
      if (last != nullptr && !last_capped && last->reason == w->reason && *last_fleets == item.run.fleets &&
          sched::NamespaceOf(last->run_id) == sched::NamespaceOf(w->run_id)) {
        e.message = last_text;
      } else {
        e.message = explain(*w);
        last = w;
        last_fleets = &item.run.fleets;
        last_capped = capped(e.ns);
        last_text = e.message;
      }
    }
    qv.push_back(std::move(e));
  }
  return qv;
}

}  // namespace berth::reconcilers
