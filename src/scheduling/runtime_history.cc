#include "scheduling/runtime_history.h"

#include <algorithm>
#include <cctype>

namespace berth::scheduling {
namespace {

// The characters of the random suffix Kubernetes' generateName appends (no vowels, no 0, 1, 3).
constexpr std::string_view kGenerateNameAlphabet = "bcdfghjklmnpqrstvwxz2456789";

Duration Median(std::vector<Duration> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::string RuntimeHistory::NamePattern(std::string_view name) {
  size_t digits = name.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(name[digits - 1]))) --digits;
  if (digits < name.size() && digits > 0) return std::string(name.substr(0, digits)) + "#";
  const size_t dash = name.rfind('-');
  if (dash != std::string_view::npos && dash > 0 && name.size() - dash - 1 == 5) {
    const std::string_view suffix = name.substr(dash + 1);
    if (suffix.find_first_not_of(kGenerateNameAlphabet) == std::string_view::npos) {
      return std::string(name.substr(0, dash + 1)) + "*";
    }
  }
  return std::string(name);
}

std::string RuntimeHistory::NameKey(std::string_view ns, std::string_view name) {
  return std::string(ns) + "/" + NamePattern(name);
}

std::string RuntimeHistory::ShapeKey(std::string_view ns, std::string_view team, const RunShape& s) {
  return (team.empty() ? "ns:" + std::string(ns) : "team:" + std::string(team)) + "/" + std::to_string(s.nodes) + "x" +
         std::to_string(s.per_node.cpu_millis) + "m," + std::to_string(s.per_node.memory_bytes) + "b," +
         std::to_string(s.per_node.gpus) + "g";
}

void RuntimeHistory::Table::Erase(const std::string& key) {
  auto it = map_.find(key);
  if (it == map_.end()) return;
  auto owner = by_owner_.find(it->second.owner);
  owner->second.erase(it->second.ns_lru);
  if (owner->second.empty()) by_owner_.erase(owner);
  order_.erase(it->second.lru);
  map_.erase(it);
}

size_t RuntimeHistory::Table::size_of(std::string_view ns) const {
  auto it = by_owner_.find(std::string(ns));
  return it == by_owner_.end() ? 0 : it->second.size();
}

void RuntimeHistory::Table::Add(const std::string& key, std::string_view ns, Duration runtime) {
  auto it = map_.find(key);
  if (it == map_.end()) {
    std::list<std::string>& own = by_owner_[std::string(ns)];
    if (own.size() >= kMaxKeysPerNamespace) {
      const std::string oldest = own.back();  // its own least recently used key, not another's
      Erase(oldest);
    } else if (map_.size() >= kMaxKeys) {
      const std::string oldest = order_.back();
      Erase(oldest);
    }
    std::list<std::string>& owned = by_owner_[std::string(ns)];  // Erase may have dropped an emptied list
    order_.push_front(key);
    owned.push_front(key);
    it = map_.emplace(key, Samples{}).first;
    it->second.lru = order_.begin();
    it->second.owner = std::string(ns);
    it->second.ns_lru = owned.begin();
  } else {
    order_.splice(order_.begin(), order_, it->second.lru);
    std::list<std::string>& owned = by_owner_[it->second.owner];
    owned.splice(owned.begin(), owned, it->second.ns_lru);
  }
  Samples& s = it->second;
  if (s.last.size() < kKept) {
    s.last.push_back(runtime);
  } else {
    s.last[s.next] = runtime;
    s.next = (s.next + 1) % kKept;
  }
}

const RuntimeHistory::Samples* RuntimeHistory::Table::Find(const std::string& key) const {
  auto it = map_.find(key);
  return it == map_.end() ? nullptr : &it->second;
}

void RuntimeHistory::Add(const FinishedRun& run) {
  const Duration runtime = std::max(run.runtime, Duration::zero());
  by_name_.Add(NameKey(run.ns, run.name), run.ns, runtime);
  by_shape_.Add(ShapeKey(run.ns, run.team, run.shape), run.ns, runtime);
}

std::optional<RuntimePrediction> RuntimeHistory::Predict(std::string_view ns, std::string_view name,
                                                         std::string_view team, const RunShape& shape,
                                                         std::optional<Duration> max_duration,
                                                         Duration elapsed) const {
  auto from = [&](const Samples* s, RuntimePrediction::Basis basis) -> std::optional<RuntimePrediction> {
    if (s == nullptr || s->last.size() < kMinSamples) return std::nullopt;
    std::vector<Duration> longer;
    for (Duration x : s->last) {
      if (x > elapsed) longer.push_back(x);
    }
    if (longer.empty()) longer.push_back(elapsed + Median(s->last) / 4);
    for (Duration& x : longer) x = max_duration ? std::min(x, *max_duration) : x;
    std::sort(longer.begin(), longer.end());
    const Duration d = Median(longer);
    return RuntimePrediction{d, std::move(longer), basis, static_cast<int>(s->last.size())};
  };
  if (auto p = from(by_name_.Find(NameKey(ns, name)), RuntimePrediction::Basis::kNamePattern)) return p;
  return from(by_shape_.Find(ShapeKey(ns, team, shape)), RuntimePrediction::Basis::kTeamShape);
}

}  // namespace berth::scheduling
