#pragma once
// The topology domain (issue 48) of a placed run: kubectl berth describe's `Domain:` line and the
// dashboard's run page (berth-controller's DashboardApi) say it from this one place.

#include <string>
#include <vector>

#include "api/v1alpha1/fleet.h"
#include "api/v1alpha1/run.h"
#include "k8s/client.h"

namespace berth::runops {

// The domain holding every node of `placement`, as "s1/a (example.com/spine >
// example.com/rack)": the longest common path of the nodes' domains in the fleet's status, with the
// levels it spans; "" when the fleet has no levels, the run no placement, or a node no domain.
std::string RunDomain(const std::vector<api::v1alpha1::PlacementEntry>& placement, const api::v1alpha1::Fleet& fleet);

// RunDomain of a placed run, its Fleet read with `client` (the caller's credentials); "" when it
// has none. When the Fleet cannot be read, "" and a sentence in `notes`.
std::string PlacementDomain(k8s::Client& client, const api::v1alpha1::Run& run, std::vector<std::string>& notes);

}  // namespace berth::runops
