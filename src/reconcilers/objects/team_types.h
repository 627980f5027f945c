#pragma once
// The engine's names for the Team API (api/v1alpha1/team.h, issue 31) and its conversion to the
// scheduling core's pure scheduling::TeamSpec.

#include <map>
#include <memory>
#include <string>

#include "api/v1alpha1/codec.h"
#include "k8s/store.h"
#include "reconcilers/objects/run_types.h"
#include "scheduling/snapshot.h"

namespace berth::reconcilers {

using api::Team;
using api::TeamStatus;

// The informer's decoder: the typed Team, nullptr when there is none (no name).
std::shared_ptr<const Team> DecodeTeam(const k8s::json::Value& obj);

// The Team as the core sees it, with the decayed usage the engine keeps (TeamKeeper). A share of
// an unusable spec (Team::invalid_message) still counts as far as it could be read: a Team whose
// weight is unreadable keeps its shares (the CRD refuses most such specs anyway).
scheduling::TeamSpec TeamSpecOf(const Team& team, double gpu_hours, double cpu_hours);

// Of two Teams that list one namespace, whether `a` keeps it (issue 44: the older, then the first
// by name; scheduling::TeamPrecedes).
bool OlderTeam(const Team& a, const Team& b);

// The team of a namespace: the oldest Team that lists it; "" when none does.
std::string TeamNameOf(const k8s::Source<Team>& teams, const std::string& ns);
// The same for every namespace some Team lists.
std::map<std::string, std::string> TeamsByNamespace(const k8s::Source<Team>& teams);

}  // namespace berth::reconcilers
