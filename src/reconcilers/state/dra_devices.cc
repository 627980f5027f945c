#include "reconcilers/state/dra_devices.h"

#include <optional>
#include <unordered_set>
#include <utility>

#include "reconcilers/writers/pod_builder.h"

namespace berth::reconcilers {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

bool Consume(std::string_view& s, std::string_view word) {
  s = Trim(s);
  if (s.substr(0, word.size()) != word) return false;
  s.remove_prefix(word.size());
  return true;
}

// The driver of `device.driver == '<driver>'` (or "<driver>"); nullopt for any other expression.
std::optional<std::string> DriverEquality(std::string_view e) {
  if (!Consume(e, "device.driver") || !Consume(e, "==")) return std::nullopt;
  e = Trim(e);
  if (e.empty() || (e.front() != '\'' && e.front() != '"')) return std::nullopt;
  const char quote = e.front();
  e.remove_prefix(1);
  const size_t end = e.find(quote);
  if (end == std::string_view::npos || end == 0) return std::nullopt;
  const std::string_view driver = e.substr(0, end);
  if (driver.find('\\') != std::string_view::npos || !Trim(e.substr(end + 1)).empty()) return std::nullopt;
  return std::string(driver);
}

std::string Shorten(const std::string& s) { return s.size() > 200 ? s.substr(0, 200) + "..." : s; }

// (driver, pool) and (driver, pool, device) as map keys.
std::string PoolKey(const std::string& driver, const std::string& pool) { return driver + '\n' + pool; }
std::string DeviceKey(const std::string& driver, const std::string& pool, const std::string& device) {
  return driver + '\n' + pool + '\n' + device;
}

// A pool's latest generation and how many of its slices are at it.
struct PoolState {
  int64_t generation = -1, slices = 0, slice_count = 0;
};

std::unordered_map<std::string, PoolState> LatestPools(const std::vector<std::shared_ptr<const k8s::ResourceSlice>>& slices) {
  std::unordered_map<std::string, PoolState> pools;
  for (const auto& s : slices) {
    PoolState& p = pools[PoolKey(s->driver, s->pool)];
    if (s->generation > p.generation) p = PoolState{s->generation, 0, 0};
    if (s->generation < p.generation) continue;
    ++p.slices;
    p.slice_count = std::max(p.slice_count, s->slice_count);
  }
  return pools;
}

// Where a device is: its node and its physical unit there (a partition's counter set, else itself).
struct Place {
  std::string node, unit;
};

}  // namespace

ClassDriver ReadClassDriver(const k8s::DeviceClass& cls) {
  ClassDriver out;
  const std::string what = "DeviceClass " + cls.name + ": ";
  if (cls.selectors_left_out) {
    out.problem = what + "more selectors, or a longer one, than berth reads";
    return out;
  }
  out.all = cls.expressions.empty();
  for (const std::string& e : cls.expressions) {
    std::optional<std::string> driver = DriverEquality(e);
    if (!driver) {
      out.problem = what + "berth evaluates no CEL and reads only selectors of the form device.driver == '<driver>', not " +
                    (e.empty() ? std::string("a selector without a CEL expression") : "`" + Shorten(e) + "`");
      return out;
    }
    if (!out.driver.empty() && out.driver != *driver) {
      out.problem = what + "its selectors name two drivers (" + out.driver + ", " + *driver + "): it selects no device";
      return out;
    }
    out.driver = *driver;
  }
  return out;
}

ClassDevices CountClassDevices(std::string_view name, const k8s::DeviceClass* cls,
                               const std::vector<std::shared_ptr<const k8s::ResourceSlice>>& slices,
                               const std::vector<std::shared_ptr<const k8s::ResourceClaim>>& claims,
                               const std::unordered_set<std::string>& placed_runs) {
  ClassDevices out;
  if (cls == nullptr) {
    out.problem = "DeviceClass " + std::string(name) + " does not exist";
    return out;
  }
  const ClassDriver match = ReadClassDriver(*cls);
  if (!match.problem.empty()) {
    out.problem = match.problem;
    return out;
  }
  const std::unordered_map<std::string, PoolState> pools = LatestPools(slices);
  std::unordered_map<std::string, Place> places;  // by DeviceKey
  std::unordered_map<std::string, std::unordered_set<std::string>> units, held;  // by node
  std::unordered_map<std::string, std::map<std::string, std::unordered_set<std::string>>> by_run;  // node, run
  for (const auto& s : slices) {
    if (s->node.empty() || (!match.all && s->driver != match.driver)) continue;
    const PoolState& p = pools.at(PoolKey(s->driver, s->pool));
    if (s->generation != p.generation) continue;
    if (p.slices < p.slice_count) {
      out.updating.insert(s->node);
      continue;
    }
    for (const k8s::SliceDevice& d : s->devices) {
      std::string unit = PoolKey(s->driver, s->pool) + (d.counter_set.empty() ? "\ndevice\n" + d.name : "\ncounters\n" + d.counter_set);
      units[s->node].insert(unit);
      places[DeviceKey(s->driver, s->pool, d.name)] = Place{s->node, std::move(unit)};
    }
  }
  for (const auto& c : claims) {
    if (auto run = c->meta.labels.find(kRunLabel); run != c->meta.labels.end()) {  // berth's own
      const std::string key = c->meta.ns + "/" + run->second;
      for (const k8s::AllocatedDevice& a : c->allocated) {
        auto p = places.find(DeviceKey(a.driver, a.pool, a.device));
        if (p != places.end() && !a.admin_access) by_run[p->second.node][key].insert(p->second.unit);
      }
      if (placed_runs.count(key) != 0) continue;  // a run whose blocks count them
    }
    for (const k8s::AllocatedDevice& a : c->allocated) {
      if (a.admin_access) continue;
      auto p = places.find(DeviceKey(a.driver, a.pool, a.device));
      if (p != places.end()) held[p->second.node].insert(p->second.unit);
    }
  }
  for (const auto& [node, set] : units) {
    NodeDevices& n = out.nodes[node];
    n.total = static_cast<int64_t>(set.size());
    auto h = held.find(node);
    n.held_by_others = h == held.end() ? 0 : static_cast<int64_t>(h->second.size());
    auto r = by_run.find(node);
    if (r == by_run.end()) continue;
    for (const auto& [run, run_units] : r->second) n.runs[run] = static_cast<int64_t>(run_units.size());
  }
  return out;
}

std::string DeviceClassProblem(const DraDevices* devices, const std::string& name) {
  if (devices == nullptr) return "the devices of DeviceClass " + name + " are not counted yet";
  auto c = devices->find(name);
  if (c == devices->end()) return "the devices of DeviceClass " + name + " are not counted yet";
  return c->second.problem;
}

NodeDevices DevicesOn(const DraDevices* devices, const std::string& name, const std::string& node) {
  if (devices == nullptr) return {};
  auto c = devices->find(name);
  if (c == devices->end()) return {};
  auto n = c->second.nodes.find(node);
  return n == c->second.nodes.end() ? NodeDevices{} : n->second;
}

bool PoolBeingUpdatedOn(const DraDevices* devices, const std::string& name, const std::string& node) {
  if (devices == nullptr) return false;
  auto c = devices->find(name);
  return c != devices->end() && c->second.updating.count(node) != 0;
}

}  // namespace berth::reconcilers
