#include "reconcilers/state/working_set.h"

#include <utility>

namespace berth::reconcilers {

void WorkingSet::Touch(const std::string& key) {
  auto [it, added] = active_.try_emplace(key, nullptr);
  keyed_stale_ |= added;
  if (it->second == nullptr) it->second = &memos_[key];
  it->second->run.reset();
  it->second->touched = true;
}

void WorkingSet::Activate(const std::string& key) {
  if (active_.try_emplace(key, nullptr).second) keyed_stale_ = true;
}

RunMemo* WorkingSet::Find(const std::string& key) {
  auto it = memos_.find(key);
  return it != memos_.end() ? &it->second : nullptr;
}

const RunMemo* WorkingSet::Find(const std::string& key) const {
  auto it = memos_.find(key);
  return it != memos_.end() ? &it->second : nullptr;
}

void WorkingSet::ReadIfChanged(const std::string& key, RunMemo& memo, const Get& get) {
  // The object as the last pass read it, unless the run changed since (its watch event touched
  // it: Touch dropped what was read). The informer updates its cache before it tells.
  if (memo.run) return;
  memo.run = get(key);
  if (memo.run) memo.Read();
}

const Keyed& WorkingSet::Make(k8s::TimePoint now, const Get& get, const std::function<void()>& news,
                              size_t news_every) {
  while (!expiries_.empty() && expiries_.begin()->first <= now) {
    Activate(expiries_.begin()->second);
    expiries_.erase(expiries_.begin());
  }
  size_t visited = 0;
  // The same runs as the last pass (nothing entered or left active_): its list, walked instead of
  // the map, each memo keeping its slot. A run deleted meanwhile makes the list anew below
  // (which takes it out), its changes given back to the memos first.
  if (!keyed_stale_) {
    bool deleted = false;
    facts_.resize(keyed_.size());
    for (size_t i = 0; i < keyed_.size(); ++i) {
      const KeyedRun& k = keyed_[i];
      PrefetchAhead(keyed_, i);
      if (++visited % news_every == 0) news();
      ReadIfChanged(k.key, *k.memo, get);
      deleted |= !k.memo->run;
      facts_[i] = PassFacts{.touched = std::exchange(k.memo->touched, false), .busy = false, .positioned = false,
                            .waiting = nullptr, .memo = k.memo};
    }
    if (!deleted) return keyed_;
    for (size_t i = 0; i < keyed_.size(); ++i) keyed_[i].memo->touched |= facts_[i].touched;
  }
  keyed_stale_ = false;
  keyed_.clear();
  keyed_.reserve(active_.size());
  facts_.clear();
  facts_.reserve(active_.size());
  visited = 0;
  for (auto it = active_.begin(); it != active_.end();) {
    if (++visited % news_every == 0) news();
    if (it->second == nullptr) it->second = &memos_[it->first];
    RunMemo& memo = *it->second;
    ReadIfChanged(it->first, memo, get);
    if (!memo.run) {  // deleted
      memos_.erase(it->first);
      it = active_.erase(it);
      continue;
    }
    memo.slot = static_cast<uint32_t>(keyed_.size());
    keyed_.push_back(KeyedRun{it->first, memo.run, &memo});
    facts_.push_back(PassFacts{.touched = std::exchange(memo.touched, false), .busy = false, .positioned = false,
                               .waiting = nullptr, .memo = &memo});
    ++it;
  }
  return keyed_;
}

void WorkingSet::MarkBusy(const std::unordered_set<std::string>& keys) {
  for (const auto& key : keys) {
    if (RunMemo* m = Find(key)) {
      if (PassFacts* f = MutableFacts(*m)) f->busy = true;
    }
  }
}

void WorkingSet::MarkWaiting(const scheduling::CycleResult& result) {
  for (size_t i = 0; i < result.waiting.size(); ++i) {
    const scheduling::WaitingRun& w = result.waiting[i];
    PrefetchWaiting(result.waiting, i);
    if (RunMemo* m = OwnerOf(w.owner)) {
      if (PassFacts* f = MutableFacts(*m)) f->waiting = &w;
    }
  }
}

void WorkingSet::PrefetchWaiting(const std::vector<scheduling::WaitingRun>& waiting, size_t i) const {
  // The memo kPrefetchAhead places ahead, and the facts of one half as far ahead (its memo's slot
  // asked for earlier): a waiting run's memo and facts lie wherever its place in the list is.
  if (i + kPrefetchAhead < waiting.size()) PrefetchMemo(OwnerOf(waiting[i + kPrefetchAhead].owner));
  if (i + kPrefetchAhead / 2 < waiting.size()) {
    if (const RunMemo* m = OwnerOf(waiting[i + kPrefetchAhead / 2].owner); m != nullptr && m->slot < facts_.size()) {
      __builtin_prefetch(&facts_[m->slot]);
    }
  }
}

void WorkingSet::MarkPositioned(const std::string& key) {
  if (RunMemo* m = Find(key)) {
    if (PassFacts* f = MutableFacts(*m)) f->positioned = true;
  }
}

void WorkingSet::DropUnvisited(const Keyed& keyed) {
  // Make made a memo for each run in the set: when there are no more memos than runs, none is
  // left over.
  if (memos_.size() <= keyed.size()) return;
  for (auto it = memos_.begin(); it != memos_.end();) {
    it = MutableFacts(it->second) != nullptr ? std::next(it) : memos_.erase(it);  // in this pass' list
  }
}

std::function<void()> WorkingSet::NoteWaitWrite(const std::string& key, RunMemo& memo, k8s::TimePoint now) {
  const k8s::TimePoint was = std::exchange(memo.last_wait_write, now);
  return [this, key, was] {
    if (RunMemo* m = Find(key)) m->last_wait_write = was;
  };
}

void WorkingSet::Leave(const std::string& key, std::optional<k8s::TimePoint> expiry) {
  if (expiry) expiries_.emplace(*expiry, key);
  memos_.erase(key);
  active_.erase(key);  // last: `key` may be the map's own string
  keyed_stale_ = true;
}

std::optional<k8s::TimePoint> WorkingSet::NextExpiry() const {
  if (expiries_.empty()) return std::nullopt;
  return expiries_.begin()->first;
}

}  // namespace berth::reconcilers
