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
// One key's entry is a WriteEntry (its state and transitions); WriteCache keeps them by key with
// the writers' inbox. A caller that keeps each key's entry itself (RunMemo::admission) uses
// WriteEntry alone, with its own tickets and inbox (Admissions).
//
// Threads. Everything but Finish: the loop thread, which reads entries without a lock. Finish:
// any writer thread; it only appends to an inbox under the cache's own lock, which Settle takes.
// Cost: one hash lookup per call; Settle is linear in the answers since the last one.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/time.h"

namespace berth::reconcilers {

enum class WriteState { kNone, kAssumed, kWritten, kUnknown, kConfirmed };
enum class WriteAnswer { kWritten, kRefused, kUnknown };

// One key's state and its transitions (drawn above). A caller that keeps its entries itself (a
// run's memo: RunMemo::admission, so a pass never looks a run up by key) uses it directly and
// hands out its own tickets; WriteCache keeps them in a map, with the writers' inbox. Loop thread only.
template <typename V>
struct WriteEntry {
  // `state` first: a pass asks every run's memo for it (RunMemo::assumed, awaiting_rv), and it
  // then lies in the memo's lines the pass reads anyway (RunMemo's "Layout"), not after `value`.
  WriteState state = WriteState::kNone;
  bool verify = false;      // Expire marked it: its outcome is to be read back
  uint64_t ticket = 0;
  uint64_t base_rv = 0;     // the version the write was decided on (guarded by, once Unknown)
  uint64_t written_rv = 0;  // the version the API answered (Written)
  base::TimePoint deadline = base::TimePoint::max();
  std::shared_ptr<const V> previous;  // the value last known applied, restored by Forget
  V value{};

  // An assumption: Assumed, Written (not yet watched) or Unknown.
  bool Held() const {
    return state == WriteState::kAssumed || state == WriteState::kWritten || state == WriteState::kUnknown;
  }
  void Assume(V v, uint64_t t, uint64_t base = 0, base::TimePoint due = base::TimePoint::max()) {
    std::shared_ptr<const V> prev = previous;
    if (state == WriteState::kWritten || state == WriteState::kConfirmed) prev = std::make_shared<const V>(std::move(value));
    *this = WriteEntry{.state = WriteState::kAssumed, .verify = false, .ticket = t, .base_rv = base, .written_rv = 0,
                       .deadline = due, .previous = std::move(prev), .value = std::move(v)};
  }
  // A write of ours that was not assumed, only awaited (a value-less entry: RunMemo::status_write):
  // Written at `rv`, or at the later version it already awaits.
  void Wrote(uint64_t rv) {
    written_rv = state == WriteState::kWritten ? std::max(written_rv, rv) : rv;
    state = WriteState::kWritten;
    verify = false;
  }
  // The writer's answer for `t`: false (ignored) for another ticket, or when none or Confirmed.
  // A kUnknown answer with `rv` names the version the write was guarded by (base_rv).
  bool Finish(uint64_t t, WriteAnswer answer, uint64_t rv = 0) {
    if (ticket != t || state == WriteState::kNone || state == WriteState::kConfirmed) return false;
    switch (answer) {
      case WriteAnswer::kWritten:
        state = WriteState::kWritten;
        written_rv = std::max(written_rv, rv);
        verify = false;
        break;
      case WriteAnswer::kRefused:
        Forget();
        break;
      case WriteAnswer::kUnknown:  // (a verifying read that got no answer: Expire marks it again)
        state = WriteState::kUnknown;
        if (rv != 0) base_rv = rv;
        verify = false;
        break;
    }
    return true;
  }
  // Rolls the assumption back: the previous value restored (Confirmed), or none.
  void Forget() {
    if (!previous) {
      Erase();
      return;
    }
    V restored = *previous;
    *this = WriteEntry{.state = WriteState::kConfirmed, .verify = false, .ticket = ticket, .base_rv = base_rv,
                       .written_rv = written_rv, .deadline = base::TimePoint::max(), .previous = nullptr,
                       .value = std::move(restored)};
  }
  // The watch shows the object at `observed_rv`: true when that confirms a Written write.
  bool Add(uint64_t observed_rv) {
    if (state != WriteState::kWritten || observed_rv < written_rv) return false;
    Confirm();
    return true;
  }
  // Applied, as the object's content shows.
  void Confirm() {
    if (state == WriteState::kNone) return;
    state = WriteState::kConfirmed;
    verify = false;
    previous.reset();
    deadline = base::TimePoint::max();
  }
  // Overdue at `now` (see Expire above): true when this call marked it for verification.
  bool Expire(base::TimePoint now) {
    if (!Held() || verify) return false;
    if (state != WriteState::kUnknown && now < deadline) return false;
    state = WriteState::kUnknown;
    verify = true;
    return true;
  }
  void Erase() { *this = WriteEntry{}; }
};

template <typename V>
class WriteCache {
 public:
  using Entry = WriteEntry<V>;
  struct Settled {
    std::string key;
    WriteAnswer answer;
  };

  // ---- loop thread ----
  uint64_t Assume(const std::string& key, V value, uint64_t base_rv = 0,
                  base::TimePoint deadline = base::TimePoint::max()) {
    const uint64_t ticket = next_ticket_++;
    entries_[key].Assume(std::move(value), ticket, base_rv, deadline);
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
    it->second.Forget();
    if (it->second.state == WriteState::kNone) entries_.erase(it);
  }
  // The watch shows `key` at `observed_rv`: true when that confirms a Written write.
  bool Add(const std::string& key, uint64_t observed_rv) {
    auto it = entries_.find(key);
    return it != entries_.end() && it->second.Add(observed_rv);
  }
  // Applied, as the object's content shows.
  void Confirm(const std::string& key) {
    if (auto it = entries_.find(key); it != entries_.end()) it->second.Confirm();
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
      if (e.Expire(now)) marked.push_back(key);
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
  bool Apply(const Answer& a) {
    auto it = entries_.find(a.key);
    // superseded, forgotten, erased, or already seen by the watch
    if (it == entries_.end() || !it->second.Finish(a.ticket, a.answer, a.rv)) return false;
    if (it->second.state == WriteState::kNone) entries_.erase(it);
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
