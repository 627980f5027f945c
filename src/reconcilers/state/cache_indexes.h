#pragma once
// The indexes of the engine's caches (issue 46): which values each object of a cache is found by
// (pods by run, by node, by owner-run, ...). The informers (EngineCaches) and a snapshot filled by
// hand (PassSnapshot::Fill) index their objects with these same functions, so that a test's
// snapshot answers every read (cache_reads.h) as the informers' would. Pure: no informer.

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "k8s/objects.h"
#include "k8s/pod_group_objects.h"

namespace berth::reconcilers {

template <typename T>
using NamedIndexes = std::vector<std::pair<std::string, std::function<std::vector<std::string>(const T&)>>>;

// berth's Pods (label berth.dev/run): "run", "node", "owner-run", "held".
NamedIndexes<k8s::Pod> RunPodIndexes();
// Other Pods (no berth.dev/run label): "owner-run", "ticket", "ticket-node", "workload".
NamedIndexes<k8s::Pod> OtherPodIndexes();
// Pods pinned for tickets: "ticket".
NamedIndexes<k8s::Pod> TicketPodIndexes();
// Pods of a pod group: "group".
NamedIndexes<k8s::GroupPod> GroupPodIndexes();

}  // namespace berth::reconcilers
