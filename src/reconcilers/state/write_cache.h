#pragma once
// WriteCache: what the engine believes between passes about its own writes, per key, in one
// state machine (the model: kube-scheduler's cache, pkg/scheduler/backend/cache: AssumePod,
// FinishBinding, ForgetPod, AddPod, expiry). LastWritten, below, is its use by the status
// writers that only need "the last status written or queued" (Fleets, Teams).
//
// States and transitions of one key (a key not in the cache is "none"):
//
//             Assume(value, base_rv)      Finish(kWritten, rv)          Add(observed_rv >= rv)
//   none ------------------------> Assumed ---------------------> Written --------------------> Confirmed
//    ^  ^                           |   |                            |                 Confirm    |
//    |  |       Finish(kRefused) or |   | Finish(kUnknown), or       | Expire (no watch            |
//    |  +------ Forget  <-----------+   | Expire (no answer          |  by its deadline)           |
//    |  (previous value restored:       |  by its deadline)          |                             |
//    |   none when there was none)      v                            v                             |
//    |                               Unknown (verify) <---------------+                            |
//    |     Finish(kRefused), Forget      |  Finish(kWritten, rv) -> Written; Confirm -> Confirmed  |
//    +-----------------------------------+                                                         |
//    +--------------------------------------- Erase (the caller is done with it) -----------------+
//
//   - Assume: a pass decided the write and handed it to a writer; `base_rv` is the version of
//     the object it was decided on, `deadline` when its outcome or its watch is overdue. Returns
//     the write's ticket: the writer's Finish names it, and an answer for an older ticket of the
//     key (a write since superseded by another Assume) is ignored. Assuming a key again keeps
//     the value last known applied (Written or Confirmed) as the one Forget restores.
//   - Finish (writer threads, under the cache's lock): the API's answer. kWritten: applied at
//     `rv`, the watch is awaited (Written). kRefused: provably not applied (404, 422): the
//     assumption is rolled back (Forget). kUnknown: no answer, a 5xx, a 409 that may answer the
//     client's own retry: it may have been applied (Unknown), never taken for refused. Answers
//     are applied by the loop thread's next Settle, in the order they came. An answer for a key
//     already Confirmed changes nothing (a Finish after Add: the watch is the truth).
//   - Add: the watch shows the object at `observed_rv`; at or after the written version the
//     write is confirmed (Confirmed: no longer an assumption; its value kept as the last known
//     applied until Erase). Confirm: the caller saw by the object's content (a GET, a cache that
//     shows the change) that the write was applied, whatever its state.
//   - Expire(now): an Assumed write with no answer by its deadline, a Written one whose watch
//     did not come by it, and any Unknown one, become Unknown and marked for verification
//     (`verify`): they are never dropped while they may have been applied (while they may hold
//     blocks). Expire returns the keys it marked, once each; the caller verifies them by a read
//     whose answer is a Finish with the entry's ticket (kWritten, or kRefused: forgotten).
//
// Threads. Everything but Finish: the loop thread, which reads entries without a lock. Finish:
// any writer thread; it only appends to an inbox under the cache's own lock, which Settle takes.
// Cost: one hash lookup per call; Settle is linear in the answers since the last one.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/time.h"

namespace berth::reconcilers {

enum class WriteState { kAssumed, kWritten, kUnknown, kConfirmed };
enum class WriteAnswer { kWritten, kRefused, kUnknown };

template <typename V>
class WriteCache {
 public:
  struct Entry {
    V value;
    WriteState state = WriteState::kAssumed;
    uint64_t ticket = 0;
    uint64_t base_rv = 0;     // the version the write was decided on
    uint64_t written_rv = 0;  // the version the API answered (Written)
    base::TimePoint deadline = base::TimePoint::max();
    bool verify = false;             // Expire marked it: its outcome is to be read back
    std::optional<V> previous;       // the value last known applied, restored by Forget
  };
  struct Settled {
    std::string key;
    WriteAnswer answer;
  };

  // ---- loop thread ----
  uint64_t Assume(const std::string& key, V value, uint64_t base_rv = 0,
                  base::TimePoint deadline = base::TimePoint::max()) {
    std::optional<V> previous;
    if (auto it = entries_.find(key); it != entries_.end()) {
      const Entry& old = it->second;
      const bool applied = old.state == WriteState::kWritten || old.state == WriteState::kConfirmed;
      previous = applied ? std::optional<V>(old.value) : old.previous;
    }
    const uint64_t ticket = next_ticket_++;
    entries_.insert_or_assign(key, Entry{std::move(value), WriteState::kAssumed, ticket, base_rv, 0, deadline, false,
                                         std::move(previous)});
    return ticket;
  }
  // The ticket the next Assume returns (to hand to a writer before assuming).
  uint64_t NextTicket() const { return next_ticket_; }
  const Entry* Find(const std::string& key) const {
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
  }
  // Rolls the assumption back: the previous value restored (Confirmed), or the key dropped.
  void Forget(const std::string& key) {
    auto it = entries_.find(key);
    if (it == entries_.end()) return;
    if (!it->second.previous) {
      entries_.erase(it);
      return;
    }
    Entry& e = it->second;
    e.value = std::move(*e.previous);
    e.previous.reset();
    e.state = WriteState::kConfirmed;
    e.verify = false;
    e.deadline = base::TimePoint::max();
  }
  // The watch shows `key` at `observed_rv`: true when that confirms a Written write.
  bool Add(const std::string& key, uint64_t observed_rv) {
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.state != WriteState::kWritten || observed_rv < it->second.written_rv) {
      return false;
    }
    Confirm(it->second);
    return true;
  }
  // Applied, as the object's content shows.
  void Confirm(const std::string& key) {
    if (auto it = entries_.find(key); it != entries_.end()) Confirm(it->second);
  }
  void Erase(const std::string& key) { entries_.erase(key); }
  // Keeps only the keys for which `keep(key)` holds.
  void Retain(const std::function<bool(const std::string&)>& keep) {
    std::erase_if(entries_, [&](const auto& kv) { return !keep(kv.first); });
  }
  // The writes overdue at `now` (above), marked for verification; each key once.
  std::vector<std::string> Expire(base::TimePoint now) {
    std::vector<std::string> marked;
    for (auto& [key, e] : entries_) {
      if (e.state == WriteState::kConfirmed || e.verify) continue;
      if (e.state != WriteState::kUnknown && now < e.deadline) continue;
      e.state = WriteState::kUnknown;
      e.verify = true;
      marked.push_back(key);
    }
    return marked;
  }
  // Applies the writers' answers since the last call; returns those applied (not the ignored).
  std::vector<Settled> Settle() {
    std::vector<Answer> answers;
    {
      std::lock_guard<std::mutex> lock(mu_);
      answers.swap(inbox_);
    }
    std::vector<Settled> applied;
    for (auto& a : answers) {
      if (Apply(a)) applied.push_back(Settled{std::move(a.key), a.answer});
    }
    return applied;
  }
  size_t size() const { return entries_.size(); }

  // ---- writer threads ----
  void Finish(const std::string& key, uint64_t ticket, WriteAnswer answer, uint64_t rv = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    inbox_.push_back(Answer{key, ticket, answer, rv});
  }

 private:
  struct Answer {
    std::string key;
    uint64_t ticket;
    WriteAnswer answer;
    uint64_t rv;
  };
  static void Confirm(Entry& e) {
    e.state = WriteState::kConfirmed;
    e.verify = false;
    e.previous.reset();
    e.deadline = base::TimePoint::max();
  }
  bool Apply(const Answer& a) {
    auto it = entries_.find(a.key);
    if (it == entries_.end() || it->second.ticket != a.ticket || it->second.state == WriteState::kConfirmed) {
      return false;  // superseded, forgotten, erased, or already seen by the watch
    }
    Entry& e = it->second;
    switch (a.answer) {
      case WriteAnswer::kWritten:
        e.state = WriteState::kWritten;
        e.written_rv = std::max(e.written_rv, a.rv);
        e.verify = false;
        break;
      case WriteAnswer::kRefused:
        Forget(a.key);
        break;
      case WriteAnswer::kUnknown:  // (a verifying read that got no answer: Expire marks it again)
        e.state = WriteState::kUnknown;
        e.verify = false;
        break;
    }
    return true;
  }

  std::unordered_map<std::string, Entry> entries_;
  uint64_t next_ticket_ = 1;
  std::mutex mu_;  // guards inbox_ (writer threads)
  std::vector<Answer> inbox_;
};

// The last status written or queued per key, for a writer that writes a status whenever it
// differs from that one (FleetStatusWriter, TeamKeeper). A write that did not go (any failure:
// the writers do not tell a refusal from an unknown outcome) leaves its key Unknown, so the next
// Offer writes it again whatever it compares to.
template <typename V>
class LastWritten {
 public:
  // Loop thread: nothing when the last status written or queued for `key` is known and `same` as
  // `value`; else `queue(ticket, value)` hands the write to a writer (whose task ends with Finish)
  // and the value is assumed. False when the writer took nothing (the next Offer tries again).
  template <typename Same, typename Queue>
  bool Offer(const std::string& key, V value, Same same, Queue queue) {
    const auto* known = cache_.Find(key);
    if (known && known->state != WriteState::kUnknown && same(known->value, value)) return true;
    if (!queue(cache_.NextTicket(), std::as_const(value))) return false;
    cache_.Assume(key, std::move(value));
    return true;
  }
  // Loop thread: the writers' answers since the last call; true when one did not write.
  bool Settle() {
    bool failed = false;
    for (const auto& s : cache_.Settle()) failed |= s.answer != WriteAnswer::kWritten;
    return failed;
  }
  void Retain(const std::function<bool(const std::string&)>& keep) { cache_.Retain(keep); }
  // Writer threads: whether the write of `ticket` went.
  void Finish(const std::string& key, uint64_t ticket, bool written) {
    cache_.Finish(key, ticket, written ? WriteAnswer::kWritten : WriteAnswer::kUnknown);
  }

 private:
  WriteCache<V> cache_;
};

}  // namespace berth::reconcilers
