#pragma once
// `kubectl berth queue`: the controller's queue, read through the API server as berth's aggregated
// API (issue 44, 4): GET /apis/queue.berth.dev/v1alpha1/namespaces/NS/queue (one namespace) or
// /apis/queue.berth.dev/v1alpha1/queue (every namespace the user may list runs in), made with the
// user's own kubeconfig. The user's credentials go only to the API server, which authenticates the
// user and passes berth the user's name; berth shows the runs that user may list.
//
// The controller answers [?limit=N&continue=T] with
//   {"generatedAt": RFC 3339, "total": N, "items": [{"position", "namespace", "name", "priority",
//    "effectivePriority", "nodes", "fleets": [..], "submittedAt", "waitSeconds", "reason",
//    "message", "team", "estimatedStartAt", "startsInSeconds"}], "continue": T} ("team" only when a
//    Team holds the run's namespace; the estimate's two only when it is known)
// with global 1-based positions (a namespace filter leaves gaps), one page at a time (500 items
// unless `limit` says otherwise, at most 1000); "continue" is there when more follow. A standby replica (leader
// election) does not compute the queue; when it says so with "leader": false, another try through
// the Service may reach the leader.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/v1alpha1/http_api.h"
#include "api/v1alpha1/team.h"
#include "k8s/client.h"
#include "k8s/clock.h"
#include "k8s/result.h"

namespace berth::cli {

// The /queue page and its items: berth-controller's HTTP API (api/v1alpha1/http_api.h).
using QueueItem = api::v1alpha1::QueueItem;
using QueueView = api::v1alpha1::QueuePage;

// Namespace -> the Team that names it in spec.namespaces. A namespace two Teams name (a clash the
// controller refuses) maps, as in the controller, to the older (creation time, then name).
using TeamOfNamespace = std::map<std::string, std::string>;
TeamOfNamespace TeamsOfNamespaces(const std::vector<api::v1alpha1::Team>& teams);

// The queue as the runs' status shows it, for when the controller cannot be reached through the
// API server (it runs outside the cluster, as in hack/local-up.sh, or its Service is gone): the
// pending runs (phase Pending, not being deleted, not suspended) of `run_list` (a RunList) that show a
// status.queuePosition, in that order. berth writes positions for the first 100 places, so `total`
// counts every pending run and the items are at most those 100. `limit` 0: no limit. Wait times
// are counted from status.submittedAt (else the creation time) to `now`. Each item's team is its
// namespace's in `team_of` (none: "").
k8s::Result<QueueView> QueueFromRuns(std::string_view run_list, int64_t limit, k8s::TimePoint now,
                                     const TeamOfNamespace& team_of = {});

// Decodes the endpoint's answer. Errors: not JSON, or no "items" array.
k8s::Result<QueueView> DecodeQueue(std::string_view body);

// "/apis/queue.berth.dev/v1alpha1/namespaces/{ns}/queue?limit=..&continue=.." (`ns` empty:
// ".../v1alpha1/queue", every namespace; `limit` 0: the controller's page size; `continue_token`
// empty: the first page).
std::string QueueApiPath(const std::string& ns, int64_t limit, const std::string& continue_token = "");

struct QueueFormat {
  bool show_namespace = false;  // -A
  bool wide = false;            // -o wide: FLEETS and SUBMITTED
};

// The ETA column: "~40m" (from startsInSeconds), "now", or "unknown" (no estimate).
std::string EtaText(const QueueItem& it);

// The KIND column (issue 45): "Run", or for a ticket the workload it stands for, "Job/train".
std::string KindText(const QueueItem& it);

// POSITION [NAMESPACE] NAME KIND TEAM PRIORITY EFFECTIVE WAITING ETA NODES [FLEETS SUBMITTED] REASON MESSAGE
std::string FormatQueueTable(const QueueView& q, const QueueFormat& f);

// The items as a JSON array (what -o json prints).
std::string QueueItemsJson(const QueueView& q);

// Reads the queue. Errors are sentences for the user: Forbidden and Unauthorized carry the API
// server's (or the controller's) message, with their codes; a queue API the API server does not
// serve (404: no APIService) or cannot reach (503) says so, with that code. No retries (`server`
// only names the API server in the message when it does not answer at all), except that an answer
// from a standby replica is asked again, up to `standby_tries` requests in all, before it is reported.
// `limit` 0: every run, page after page (the controller answers at most 1000 per request); else
// at most `limit` runs, in as many pages as that takes. Pages are read one after the other, each
// from the queue of its moment: a run that moved between two reads may show twice or not at all.
// `transport` carries the user's own credentials (its kubeconfig); nothing else is sent.
k8s::Result<QueueView> FetchQueue(k8s::Transport& transport, const std::string& server, const std::string& ns,
                                  int64_t limit, int standby_tries = 5);

}  // namespace berth::cli
