#pragma once
// berth-controller's command line.

#include <chrono>
#include <string>
#include <vector>

#include "k8s/result.h"
#include "scheduling/run_queue.h"

namespace berth::controller {

struct Options {
  std::string kubeconfig;
  std::string context;
  bool leader_elect = false;
  std::string leader_election_namespace = "berth-system";
  std::string leader_election_id = "berth-controller";
  // --leader-pod NAMESPACE/NAME: the Pod this process runs in, labelled berth.dev/leader=true
  // while it leads (leader_pod_label.h); empty: no Pod is labelled.
  std::string leader_pod_namespace, leader_pod_name;
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{8000};
  std::chrono::milliseconds retry_period{2000};
  // Timeout of each API request (not watches). Default: half the renew deadline with
  // --leader-elect (it must stay below it, and renew deadline + request timeout + a tenth of the
  // lease duration must not exceed the lease duration, see leader_election.h), else 30 s.
  std::chrono::milliseconds request_timeout{0};
  std::string metrics_bind_address = ":8080";
  std::string health_probe_bind_address = ":8081";
  std::string webhook_bind_address = "0";  // "0": no admission webhook
  // How long a client may take to send a whole request (or to read the reply) on any of the three
  // ports before the connection is closed (408).
  std::chrono::milliseconds http_read_timeout{10000};
  // The aggregated queue API (issue 44, 4): HTTPS for the API server's proxy only (client
  // certificates checked against the request-header CA); "0": not served.
  std::string queue_api_bind_address = "0";
  std::string queue_api_cert_dir = "/tmp/berth-queue-api/serving-certs";  // tls.crt, tls.key
  // true: the metrics port's /queue, /api/queue, /api/fleets and /api/teams answer 401 and it
  // serves no dashboard (berth takes no user credential; the queue is read through the API server
  // at /apis/queue.berth.dev/..., the dashboard is kubectl berth dashboard's); false: they answer
  // every run, fleet and team to anyone who reaches the port, with the old token-forwarding
  // dashboard (local tests only).
  bool queue_auth = true;
  std::string webhook_cert_dir = "/tmp/k8s-webhook-server/serving-certs";
  std::chrono::milliseconds aging_interval{scheduling::kDefaultAgingInterval};
  std::chrono::milliseconds retry_backoff{10 * 1000};
  std::chrono::milliseconds max_retry_backoff{10 * 60 * 1000};
  std::chrono::milliseconds start_timeout{10 * 60 * 1000};
  // Finished runs without spec.ttlSecondsAfterFinished are deleted this long after they finished;
  // 0 keeps them (the default).
  std::chrono::milliseconds finished_run_ttl{0};
  // Teams (issue 31): the half-life of past usage, and how often Team statuses are brought up to
  // date at least (at most 1m: usage is updated at least every minute).
  std::chrono::milliseconds fair_share_half_life{std::chrono::hours(7 * 24)};
  std::chrono::milliseconds team_status_interval{std::chrono::minutes(1)};
  // Start-time estimates (issue 33): forecast at most this often; 0: none.
  std::chrono::milliseconds estimate_interval{std::chrono::seconds(30)};
  // Issue 44 (7): the priority cap of namespaces without the label berth.dev/max-priority, 0..100.
  int default_max_priority = 100;
  std::string log_format = "text";  // text | json
  std::string log_level = "info";   // debug | info | warn | error
  int workers = 4;
  bool help = false;
};

// Parses argv (after the program name). Accepts "--flag=value", "--flag value" and bare boolean
// flags ("--leader-elect", "--leader-elect=false"). Unknown flags and bad values are errors with a
// sentence naming the flag.
k8s::Result<Options> ParseOptions(const std::vector<std::string>& args);

std::string Usage();

}  // namespace berth::controller
