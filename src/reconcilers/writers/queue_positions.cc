#include "reconcilers/writers/queue_positions.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace berth::reconcilers {

namespace {

class Planner {
 public:
  Planner(const PositionPlanInput& in, size_t budget) : in_(in), budget_(budget) {
    for (const auto& [key, pos] : in.shown) {
      cur_[key] = pos;
      at_[pos].insert(key);
    }
    for (size_t i = 0; i < in.top.size(); ++i) {
      const std::string& key = in.top[i];
      const int64_t want = static_cast<int64_t>(i) + 1;
      if (in.frozen.count(key)) continue;
      auto it = cur_.find(key);
      if (it != cur_.end() && it->second == want) continue;
      desired_[key] = want;
      waiting_on_[want] = key;
      moves_.push_back(key);
    }
  }

  std::vector<PositionMove> Run() {
    // Clears never take a place, so they are always safe, and they free places for the rest.
    for (const auto& key : in_.clear) {
      if (in_.frozen.count(key) || !cur_.count(key)) continue;
      if (!Clear(key)) return std::move(out_);
    }
    // Top of the queue first; each move pulls in the chain that was waiting for the place it left.
    for (const auto& key : moves_) {
      if (!TryMove(key)) return std::move(out_);
    }
    // What is left waits on a run that must not move now, or forms cycles.
    for (const auto& key : moves_) {
      if (done_.count(key)) continue;
      std::optional<std::string> top = CycleTop(key);
      if (!top) continue;
      // Clearing it frees its place for the run before it in the cycle, and so on round the
      // cycle until its own place is free (Pull moves it there).
      if (!Clear(*top)) return std::move(out_);
    }
    return std::move(out_);
  }

 private:
  bool Emit(const std::string& key, std::optional<int64_t> to) {
    if (out_.size() >= budget_) return false;
    out_.push_back(PositionMove{key, to});
    return true;
  }

  // Removes `key` from its place (shown -> none).
  bool Clear(const std::string& key) {
    if (!Emit(key, std::nullopt)) return false;
    const int64_t left = cur_.at(key);
    at_[left].erase(key);
    cur_.erase(key);
    return Pull(left);
  }

  // Moves `key` to its place when that is free, then whoever waited on the place it left.
  bool TryMove(const std::string& key) {
    if (done_.count(key)) return true;
    const int64_t want = desired_.at(key);
    if (!at_[want].empty()) return true;  // still taken
    if (!Emit(key, want)) return false;
    done_.insert(key);
    std::optional<int64_t> left;
    if (auto it = cur_.find(key); it != cur_.end()) {
      left = it->second;
      at_[it->second].erase(key);
    }
    cur_[key] = want;
    at_[want].insert(key);
    return left ? Pull(*left) : true;
  }

  // Place `freed` may have become free: move the run waiting for it (iteratively along the chain).
  bool Pull(int64_t freed) {
    std::optional<int64_t> next = freed;
    while (next) {
      int64_t p = *next;
      next.reset();
      if (!at_[p].empty()) return true;
      auto w = waiting_on_.find(p);
      if (w == waiting_on_.end() || done_.count(w->second)) return true;
      const std::string key = w->second;
      if (!Emit(key, p)) return false;
      done_.insert(key);
      if (auto it = cur_.find(key); it != cur_.end()) {
        next = it->second;
        at_[it->second].erase(key);
      }
      cur_[key] = p;
      at_[p].insert(key);
    }
    return true;
  }

  // When `start` waits in a cycle of moves (each waiting on the single holder of its place, which
  // is itself a waiting move), the member of the cycle highest in the queue.
  std::optional<std::string> CycleTop(const std::string& start) {
    std::map<std::string, size_t> seen;  // key -> index in path
    std::vector<std::string> path;
    std::string k = start;
    while (true) {
      if (auto s = seen.find(k); s != seen.end()) {
        std::string best;
        for (size_t i = s->second; i < path.size(); ++i) {
          if (best.empty() || desired_.at(path[i]) < desired_.at(best)) best = path[i];
        }
        return best;
      }
      seen[k] = path.size();
      path.push_back(k);
      const auto& holders = at_[desired_.at(k)];
      if (holders.size() != 1) return std::nullopt;
      const std::string& h = *holders.begin();
      if (!desired_.count(h) || done_.count(h)) return std::nullopt;
      k = h;
    }
  }

  const PositionPlanInput& in_;
  const size_t budget_;
  std::unordered_map<std::string, int64_t> cur_;  // as the plan so far leaves them
  std::map<int64_t, std::set<std::string>> at_;   // place -> runs showing it
  std::unordered_map<std::string, int64_t> desired_;
  std::unordered_map<int64_t, std::string> waiting_on_;  // place -> run to move there
  std::vector<std::string> moves_;                       // runs to move, top of the queue first
  std::unordered_set<std::string> done_;
  std::vector<PositionMove> out_;
};

}  // namespace

std::vector<PositionMove> PlanPositionMoves(const PositionPlanInput& in, size_t budget) {
  return Planner(in, budget).Run();
}

size_t PositionBudget::Available(k8s::TimePoint now) {
  if (last_ && now > *last_) {
    double seconds = std::chrono::duration<double>(now - *last_).count();
    tokens_ = std::min(burst_, tokens_ + seconds * rate_);
  }
  if (!last_ || now > *last_) last_ = now;
  return tokens_ < 1 ? 0 : static_cast<size_t>(std::floor(tokens_));
}

void PositionBudget::Spend(size_t n) { tokens_ = std::max(0.0, tokens_ - static_cast<double>(n)); }

void PositionBudget::Refund(size_t n) { tokens_ = std::min(burst_, tokens_ + static_cast<double>(n)); }

}  // namespace berth::reconcilers
