#include "reconcilers/writers/keyed_writer.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace berth::reconcilers {

KeyedWriter::KeyedWriter(const k8s::Clock& clock, Options options, OnDone on_done)
    : options_(options),
      on_done_(std::move(on_done)),
      decisions_(clock, options.backoff),
      background_(clock, options.backoff) {}

KeyedWriter::~KeyedWriter() { Stop(); }

void KeyedWriter::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_ || !workers_.empty()) return;
  for (int i = 0; i < std::max(1, options_.decision_workers); ++i) {
    workers_.emplace_back([this] { Worker(decisions_); });
  }
  for (int i = 0; i < std::max(1, options_.background_workers); ++i) {
    workers_.emplace_back([this] { Worker(background_); });
  }
}

bool KeyedWriter::Dispatch(const std::string& key, Write write, bool background) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return false;
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      Entry& e = it->second;
      // A decision replaces a background write still waiting for a worker: it carries the newer
      // status and must not wait behind a queue of refreshes.
      if (background || e.state != State::kQueued || !e.background) return false;
      e.write = std::move(write);
      e.background = false;
      --background_queued_;
    } else {
      entries_.emplace(key, Entry{State::kQueued, std::move(write), background, nullptr});
      ++busy_;
      if (background) ++background_queued_;
    }
  }
  (background ? background_ : decisions_).Add(key);
  return true;
}

PassWrites::Gate KeyedWriter::TakeGate() const {
  std::lock_guard<std::mutex> lock(mu_);
  PassWrites::Gate gate;
  gate.stopping = stopped_;
  gate.busy.reserve(busy_);
  for (const auto& [key, e] : entries_) {
    if (e.state == State::kBackingOff) {
      gate.backing_off.insert(key);
      continue;
    }
    gate.busy.insert(key);
    if (e.state == State::kQueued && e.background) gate.replaceable.insert(key);
  }
  gate.background_queued = background_queued_.load(std::memory_order_relaxed);
  return gate;
}

bool KeyedWriter::Busy(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  return it != entries_.end() && it->second.state != State::kBackingOff;
}

std::unordered_set<std::string> KeyedWriter::BusyKeys() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::unordered_set<std::string> out;
  out.reserve(busy_);
  for (const auto& [key, e] : entries_) {
    if (e.state != State::kBackingOff) out.insert(key);
  }
  return out;
}

size_t KeyedWriter::BusyCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_;
}

bool KeyedWriter::BackingOff(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  return it != entries_.end() && it->second.state == State::kBackingOff;
}

void KeyedWriter::Worker(WorkQueue& queue) {
  while (std::optional<std::string> key = queue.Get()) Process(queue, *key);
}

size_t KeyedWriter::RunQueued() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!workers_.empty()) return 0;  // the workers carry the writes out
  }
  size_t ran = 0;
  // Decisions first, as the workers would take them; a write may queue another (a sequence).
  for (bool any = true; any;) {
    any = false;
    for (WorkQueue* queue : {&decisions_, &background_}) {
      while (std::optional<std::string> key = queue->TryGet()) {
        ran += Process(*queue, *key) ? 1 : 0;
        any = true;
      }
    }
  }
  return ran;
}

bool KeyedWriter::Process(WorkQueue& queue, const std::string& key) {
  Write write;
  bool backoff_over = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.state == State::kQueued) {
      write = std::move(it->second.write);
      it->second.state = State::kRunning;
      if (it->second.background) --background_queued_;
    } else if (it != entries_.end() && it->second.state == State::kBackingOff && it->second.backoff_in == &queue) {
      // The key's delayed re-add came due: its backoff is over.
      entries_.erase(it);
      backoff_over = true;
    }
    // Otherwise the key was also added to the other queue (a decision replaced a background
    // write) and that queue's worker has it: nothing to do here.
  }
  if (!write) {
    queue.Done(key);
    if (backoff_over && on_done_) on_done_(key, Outcome::kBackoffOver);
    return false;
  }
  const bool ok = write();
  if (ok) {
    queue.Forget(key);
    std::lock_guard<std::mutex> lock(mu_);
    entries_.erase(key);
    --busy_;
  } else {
    {
      std::lock_guard<std::mutex> lock(mu_);
      Entry& e = entries_[key];
      e.state = State::kBackingOff;
      e.backoff_in = &queue;
      --busy_;
    }
    // The delayed re-add is queued behind this worker's hold of the key (WorkQueue: a key added
    // while processed is handed out again only after Done).
    queue.AddRateLimited(key);
  }
  queue.Done(key);
  if (on_done_) on_done_(key, ok ? Outcome::kWritten : Outcome::kFailed);
  return true;
}

void KeyedWriter::ProcessDue() {
  decisions_.ProcessDue();
  background_.ProcessDue();
}

void KeyedWriter::Stop() {
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    workers.swap(workers_);
  }
  decisions_.ShutDown();
  background_.ShutDown();
  for (auto& t : workers) t.join();
}

}  // namespace berth::reconcilers
