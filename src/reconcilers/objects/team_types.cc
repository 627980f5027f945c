#include "reconcilers/objects/team_types.h"

#include <algorithm>
#include <limits>

namespace berth::reconcilers {

namespace sched = scheduling;

namespace {

sched::ResourceAmounts AmountsOf(const api::ResourceAmounts& a) {
  return sched::ResourceAmounts{a.cpu_milli, a.memory_bytes, a.gpus};
}

}  // namespace

std::shared_ptr<const Team> DecodeTeam(const k8s::json::Value& obj) {
  auto t = api::DecodeTeam(obj);
  if (!t.ok()) return nullptr;
  return std::make_shared<const Team>(std::move(t.value()));
}

sched::TeamSpec TeamSpecOf(const Team& team, double gpu_hours, double cpu_hours) {
  sched::TeamSpec spec;
  spec.name = team.meta.name;
  spec.created = team.meta.created;
  spec.namespaces = team.spec.namespaces;
  spec.parent = team.spec.parent;
  spec.weight = static_cast<int32_t>(std::clamp<int64_t>(team.spec.weight, 1, std::numeric_limits<int32_t>::max()));
  for (const auto& s : team.spec.shares) {
    sched::TeamShare share;
    share.fleet = s.fleet;
    share.nominal = AmountsOf(s.nominal);
    if (s.borrowing_limit) share.borrowing_limit = AmountsOf(*s.borrowing_limit);
    if (s.lending_limit) share.lending_limit = AmountsOf(*s.lending_limit);
    spec.shares.push_back(std::move(share));
  }
  spec.gpu_hours = gpu_hours;
  spec.cpu_hours = cpu_hours;
  return spec;
}

bool OlderTeam(const Team& a, const Team& b) {
  return a.meta.created != b.meta.created ? a.meta.created < b.meta.created : a.meta.name < b.meta.name;
}

std::map<std::string, std::string> TeamsByNamespace(const k8s::Source<Team>& teams) {
  std::vector<std::shared_ptr<const Team>> list = teams.List();
  std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return OlderTeam(*a, *b); });
  std::map<std::string, std::string> out;
  for (const auto& t : list) {
    for (const auto& ns : t->spec.namespaces) out.emplace(ns, t->meta.name);
  }
  return out;
}

std::string TeamNameOf(const k8s::Source<Team>& teams, const std::string& ns) {
  const Team* found = nullptr;
  for (const auto& t : teams.List()) {
    if ((found == nullptr || OlderTeam(*t, *found)) &&
        std::find(t->spec.namespaces.begin(), t->spec.namespaces.end(), ns) != t->spec.namespaces.end()) {
      found = t.get();
    }
  }
  return found != nullptr ? found->meta.name : std::string();
}

}  // namespace berth::reconcilers
