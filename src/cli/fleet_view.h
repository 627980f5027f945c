#pragma once
// `kubectl berth fleets`: every Fleet and, under it, each of its instances.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/v1alpha1/fleet.h"
#include "k8s/clock.h"
#include "k8s/json.h"

namespace berth::cli {

struct FleetInstance {
  std::string node;
  int64_t total_blocks = 0, busy_blocks = 0, runs_started = 0;
  std::string expires_at;  // RFC 3339 or empty
  std::string state;       // Idle, Busy, Full, Retired, Expired, NotReady, Invalid
  std::string message;
  std::string held_by_others;  // status heldByOtherPods, e.g. "1 CPU"
  std::string devices;         // status devices (a DRA fleet's, issue 49), e.g. "4 devices of gpu.example.com; ..."
  std::string domain;          // status domain (issue 48): "s1/a", the levels' values outermost first
};

struct FleetSummary {
  std::string name;
  std::string placement;                  // any | cluster
  std::string blocks;                     // spec.blocks as written ("auto", "4")
  std::optional<int64_t> max_runs;        // spec.maxRunsPerInstance
  std::string instance_lifetime;          // spec.instanceLifetime
  int64_t total_instances = 0, ready_instances = 0, total_blocks = 0, busy_blocks = 0;
  bool has_status = false;                // the controller has written status at least once
  std::vector<FleetInstance> instances;
  std::vector<api::v1alpha1::Condition> conditions;  // as the status has them (typed, unknown spellings kept)
  std::vector<std::string> topology;      // spec.topology's keys, outermost first (a topologyKey fleet: that key)
};

// What kubectl berth fleets shows of a Fleet decoded with FleetDecodeOptions::keep_spelling.
FleetSummary SummarizeFleet(const api::v1alpha1::Fleet& fleet);
// Decodes a Fleet object as the API returns it (api::v1alpha1::DecodeFleet). Missing fields read
// as zero/empty.
FleetSummary DecodeFleetSummary(const k8s::json::Value& fleet);

// Fleets in the given order, each as a title line and a table of instances:
//   a100   4 instances (3 ready), 12/32 blocks busy, placement cluster, max 10 runs per instance, lifetime 5h
//     INSTANCE   BLOCKS           RUNS    EXPIRES    STATE
//     gpu-0      [####....] 4/8   3/10    in 3h12m   Busy
// `wide` adds each instance's MESSAGE. A DRA fleet's table has a DEVICES column (before them):
// each instance's devices and which runs' claims hold them. Conditions that are not fine (Ready not True, Conflict
// True) are shown under the title.
// A fleet with topology levels (issue 48) names them in its title, has a DOMAIN column, and above
// its instances a tree of its domains, each with its idle instances of all (what a gang needs):
//   racks   3 instances (3 ready), 8/24 blocks busy, placement cluster, topology example.com/spine > example.com/rack
//     DOMAIN   IDLE
//     s1       1/3
//       a      0/2
//       b      1/1
std::string FormatFleets(const std::vector<FleetSummary>& fleets, k8s::TimePoint now, bool wide);

}  // namespace berth::cli
