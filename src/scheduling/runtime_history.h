#pragma once
// How long will a run take? Learned from comparable finished runs (issue 33), for the start-time
// forecast (scheduling/estimate.h) where a run has no maxDuration, and where its maxDuration is
// only a bound (most runs end well before it).
//
// The rule (docs/scheduling.md, "Start-time estimates"), first match wins:
//  1. Runs of the same namespace and name pattern: the name with its trailing counter or random
//     suffix replaced ("train-42" and "train-43" are "train-#"; "eval-x7k2p" from generateName is
//     "eval-*"): the median of their last kKept runtimes, once at least kMinSamples finished.
//  2. Runs of the same team (or namespace, without teams) and shape (nodes and per-node
//     resources): the median of their last kKept runtimes, at least kMinSamples.
//  3. Nothing: unknown.
// For a run that is running, given how long it has run (`elapsed`): the median of the kept
// runtimes longer than that (those it is still like); longer than every one of them, another
// quarter of the median from now. A prediction never exceeds the run's maxDuration (the run is
// stopped there). Runs that failed
// count like the others (they held their room as long); runs that never started do not.
//
// Bounded: at most kKept runtimes per key and kMaxKeys keys of each kind (the key used least
// recently is dropped first). Each namespace holds at most kMaxKeysPerNamespace keys of each kind
// (issue 44): a namespace at its quota drops its own least recently used key for a new one, so a
// tenant that finishes runs of ever new names or shapes cannot push out the other namespaces'
// history. A key belongs to the namespace whose run added it first (a team's shape key too).
// Pure and deterministic; not thread-safe (one owner).

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "scheduling/types.h"

namespace berth::scheduling {

struct RunShape {
  int32_t nodes = 1;
  Resources per_node;
  friend bool operator==(const RunShape&, const RunShape&) = default;
};

struct FinishedRun {
  std::string ns, name, team;  // team "": the namespace stands for it
  RunShape shape;
  Duration runtime{0};  // from placement to the end (Succeeded, Failed or stopped)
};

struct RuntimePrediction {
  Duration runtime{0};
  // The runtimes `runtime` is the median of, sorted and capped at maxDuration (for a running run
  // those longer than it has run, or the one guess past them): the spread the sampled forecast
  // draws from (scheduling/estimate.h, EstimateInput::runtime_spread).
  std::vector<Duration> spread;
  enum class Basis : uint8_t { kNamePattern, kTeamShape } basis = Basis::kNamePattern;
  int samples = 0;
};

class RuntimeHistory {
 public:
  static constexpr size_t kKept = 20;
  static constexpr size_t kMinSamples = 3;
  static constexpr size_t kMaxKeys = 10000;
  static constexpr size_t kMaxKeysPerNamespace = kMaxKeys / 10;

  void Add(const FinishedRun& run);
  std::optional<RuntimePrediction> Predict(std::string_view ns, std::string_view name, std::string_view team,
                                           const RunShape& shape, std::optional<Duration> max_duration,
                                           Duration elapsed = Duration::zero()) const;

  // "train-42" -> "train-#", "eval-x7k2p" -> "eval-*", "nightly" -> "nightly".
  static std::string NamePattern(std::string_view name);

  size_t keys() const { return by_name_.size() + by_shape_.size(); }
  // The keys (of both kinds) that belong to namespace `ns`.
  size_t keys_of(std::string_view ns) const { return by_name_.size_of(ns) + by_shape_.size_of(ns); }

 private:
  struct Samples {
    std::vector<Duration> last;  // ring of at most kKept
    size_t next = 0;
    std::list<std::string>::iterator lru;     // in Table::order_
    std::string owner;                        // the namespace the key belongs to
    std::list<std::string>::iterator ns_lru;  // in Table::by_owner_[owner]
  };
  class Table {
   public:
    // `ns`: the namespace of the run that adds it (the key's owner if it is new).
    void Add(const std::string& key, std::string_view ns, Duration runtime);
    const Samples* Find(const std::string& key) const;
    size_t size() const { return map_.size(); }
    size_t size_of(std::string_view ns) const;

   private:
    void Erase(const std::string& key);

    std::unordered_map<std::string, Samples> map_;
    std::list<std::string> order_;  // most recently added first
    std::unordered_map<std::string, std::list<std::string>> by_owner_;  // each namespace's keys, the same order
  };
  static std::string NameKey(std::string_view ns, std::string_view name);
  static std::string ShapeKey(std::string_view ns, std::string_view team, const RunShape& shape);

  Table by_name_, by_shape_;
};

}  // namespace berth::scheduling
