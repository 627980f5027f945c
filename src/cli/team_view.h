#pragma once
// `kubectl berth teams` (issue 31): per team and fleet its shares name, the nominal share, what
// it uses, borrows and lends (its Team status), and its decayed past usage.

#include <string>
#include <vector>

#include "api/v1alpha1/team.h"

namespace berth::cli {

// A share's amounts as the table shows them: "16 GPUs", "64 CPUs, 256Gi"; "-" when none is named.
std::string FormatAmounts(const api::v1alpha1::ResourceAmounts& a);

// One row per team and fleet of its status (teams sorted by name, then fleets); a team without a
// fleet in its status (no share, or no status yet) gets one row with "-".
//   TEAM     PARENT     WEIGHT   FLEET   NOMINAL   USED      BORROWED   LENT     USAGE
//   vision   research   1        a100    16 GPUs   24 GPUs   8 GPUs     0 GPUs   340.2 GPU-h, 1210.5 CPU-h
std::string FormatTeams(std::vector<api::v1alpha1::Team> teams);

}  // namespace berth::cli
