#include "controller/options.h"

#include <functional>
#include <map>

#include "controller/leader_pod_label.h"
#include "k8s/duration.h"

namespace berth::controller {

std::string Usage() {
  return R"(berth-controller: berth's Kubernetes operator (queues Runs by priority and places them onto Fleets).

Usage: berth-controller [flags]

Flags:
  --kubeconfig PATH                   kubeconfig to use (default: in-cluster config, else $KUBECONFIG, else ~/.kube/config)
  --context NAME                      kubeconfig context (default: current-context)
  --leader-elect                      elect a leader with a coordination.k8s.io/v1 Lease (default false)
  --leader-election-namespace NS      namespace of the Lease (default berth-system)
  --leader-election-id NAME           name of the Lease (default berth-controller)
  --leader-pod NAMESPACE/NAME         the Pod this controller runs in: labelled berth.dev/leader=true
                                      while it leads (the queue API's Service selects it)
  --leader-election-lease-duration D  (default 15s)
  --leader-election-renew-deadline D  (default 8s)
  --leader-election-retry-period D    (default 2s)
  --request-timeout D                 timeout of each API request; with --leader-elect it must be shorter than the
                                      renew deadline, and renew deadline + request timeout must stay below the lease
                                      duration by a tenth of it (default: half the renew deadline with --leader-elect,
                                      else 30s)
  --metrics-bind-address ADDR         Prometheus /metrics, "0" to disable (default :8080)
  --health-probe-bind-address ADDR    /healthz and /readyz, "0" to disable (default :8081)
  --webhook-bind-address ADDR         HTTPS admission webhook (new Runs: finalizer; 1.35: holds queued Jobs), "0" to disable (default 0)
  --queue-api-bind-address ADDR       HTTPS aggregated API queue.berth.dev/v1alpha1 (the queue, fleets, teams) for the
                                      API server's proxy, "0" to disable (default 0)
  --queue-api-cert-dir DIR            tls.crt and tls.key for it (default /tmp/berth-queue-api/serving-certs)
  --queue-auth[=false]                true: /queue and /api/{queue,fleets,teams} on the metrics port answer 401 (read
                                      them through the API server); false shows them as JSON to anyone who reaches
                                      the port (tests and benchmarks on loopback; default true). No dashboard page
                                      or route that acts for a user is served either way (kubectl berth dashboard)
  --http-read-timeout D               time a client has to send a whole request on the three ports above (default 10s)
  --webhook-cert-dir DIR              tls.crt and tls.key for the webhook (default /tmp/k8s-webhook-server/serving-certs)
  --aging-interval D                  a pending run gains one effective priority per interval; 0 turns aging off (default 15m)
  --retry-backoff D                   a resubmitted run waits this long before it queues again, doubling per
                                      attempt that ran less than 10m (default 10s; 0 turns the backoff off)
  --max-retry-backoff D               the longest such wait (default 10m)
  --start-timeout D                   a run whose Pods have not all started this long after placement fails with
                                      StartTimeout, or is resubmitted under retry on error (default 10m; 0 = off)
  --finished-run-ttl D                delete a finished run (Succeeded or Failed) this long after it finished, unless
                                      its spec.ttlSecondsAfterFinished says otherwise (default 0: finished runs are kept)
  --fair-share-half-life D            Teams: past usage counts half after this long in the order of borrowers (default 7d)
  --team-status-interval D            Teams: each Team's status and usage are brought up to date at least this often (default 1m)
  --estimate-interval D               waiting runs' start-time estimates are forecast at most this often (default 30s; 0 = none)
  --default-max-priority N            the highest priority runs may have in a namespace without the label
                                      berth.dev/max-priority, 0 to 100 (default 100: no cap)
  --log-format text|json              (default text)
  --log-level debug|info|warn|error   (default info)
  --workers N                         reconcile workers (default 4)
  -h, --help                          show this help
)";
}

namespace {

// Teams (issue 31): usage needs a half-life, and is brought up to date at least every minute.
k8s::Status CheckTeamOptions(const Options& o) {
  if (o.fair_share_half_life <= std::chrono::milliseconds(0)) {
    return k8s::Status::Error("--fair-share-half-life must be longer than 0");
  }
  if (o.team_status_interval < std::chrono::seconds(1) || o.team_status_interval > std::chrono::minutes(1)) {
    return k8s::Status::Error("--team-status-interval must be from 1s to 1m");
  }
  return k8s::Status();
}

using FlagSetter = std::function<k8s::Status(const std::string&)>;
using Flags = std::map<std::string, FlagSetter>;

FlagSetter DurationFlag(std::chrono::milliseconds& out) {
  return [&out](const std::string& v) -> k8s::Status {
    if (v == "0") {
      out = std::chrono::milliseconds(0);
      return k8s::Status();
    }
    auto d = k8s::ParseDurationStrict(v);
    if (!d.ok()) return d.status();
    out = d.value();
    return k8s::Status();
  };
}

FlagSetter StringFlag(std::string& out) {
  return [&out](const std::string& v) -> k8s::Status {
    out = v;
    return k8s::Status();
  };
}

// Which API server, as whom, and how long each request may take.
void AddClusterFlags(Options& o, Flags& flags) {
  flags["kubeconfig"] = StringFlag(o.kubeconfig);
  flags["context"] = StringFlag(o.context);
  flags["request-timeout"] = [&o](const std::string& v) -> k8s::Status {
    auto d = k8s::ParseDurationStrict(v);
    if (!d.ok()) return d.status();
    if (d.value() <= std::chrono::milliseconds(0)) return k8s::Status::Error("must be longer than 0");
    o.request_timeout = d.value();
    return k8s::Status();
  };
}

void AddLeaderElectionFlags(Options& o, Flags& flags) {
  flags["leader-election-namespace"] = StringFlag(o.leader_election_namespace);
  flags["leader-election-id"] = StringFlag(o.leader_election_id);
  flags["leader-pod"] = [&o](const std::string& v) { return ParseLeaderPod(v, &o.leader_pod_namespace, &o.leader_pod_name); };
  flags["leader-election-lease-duration"] = DurationFlag(o.lease_duration);
  flags["leader-election-renew-deadline"] = DurationFlag(o.renew_deadline);
  flags["leader-election-retry-period"] = DurationFlag(o.retry_period);
}

// The three ports (metrics and dashboard, probes, webhook).
void AddServingFlags(Options& o, Flags& flags) {
  flags["metrics-bind-address"] = StringFlag(o.metrics_bind_address);
  flags["health-probe-bind-address"] = StringFlag(o.health_probe_bind_address);
  flags["webhook-bind-address"] = StringFlag(o.webhook_bind_address);
  flags["webhook-cert-dir"] = StringFlag(o.webhook_cert_dir);
  flags["queue-api-bind-address"] = StringFlag(o.queue_api_bind_address);
  flags["queue-api-cert-dir"] = StringFlag(o.queue_api_cert_dir);
  flags["http-read-timeout"] = DurationFlag(o.http_read_timeout);
}

// How the engine orders, retries, times out and forgets runs, and how Teams count usage.
void AddSchedulingFlags(Options& o, Flags& flags) {
  flags["aging-interval"] = DurationFlag(o.aging_interval);
  flags["retry-backoff"] = DurationFlag(o.retry_backoff);
  flags["max-retry-backoff"] = DurationFlag(o.max_retry_backoff);
  flags["start-timeout"] = DurationFlag(o.start_timeout);
  flags["finished-run-ttl"] = DurationFlag(o.finished_run_ttl);
  flags["fair-share-half-life"] = DurationFlag(o.fair_share_half_life);
  flags["team-status-interval"] = DurationFlag(o.team_status_interval);
  flags["estimate-interval"] = DurationFlag(o.estimate_interval);
}

k8s::Status ParseWorkers(const std::string& v, int& out) {
  try {
    size_t used = 0;
    int n = std::stoi(v, &used);
    if (used != v.size() || n < 1 || n > 64) throw std::out_of_range("");
    out = n;
    return k8s::Status();
  } catch (...) {
    return k8s::Status::Error("must be an integer from 1 to 64");
  }
}

// Issue 44 (7): --default-max-priority, a whole number from 0 to 100.
k8s::Status ParseDefaultMaxPriority(const std::string& v, int& out) {
  const bool digits = !v.empty() && v.size() <= 3 && v.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoi(v) > 100) {
    return k8s::Status::Error("must be a whole number from 0 to 100 (the highest priority runs may have in a namespace "
                              "without the label berth.dev/max-priority)");
  }
  out = std::stoi(v);
  return k8s::Status();
}

// Logging and the number of workers.
void AddProcessFlags(Options& o, Flags& flags) {
  flags["log-format"] = [&o](const std::string& v) -> k8s::Status {
    if (v != "text" && v != "json") return k8s::Status::Error("must be text or json");
    o.log_format = v;
    return k8s::Status();
  };
  flags["log-level"] = [&o](const std::string& v) -> k8s::Status {
    if (v != "debug" && v != "info" && v != "warn" && v != "error") {
      return k8s::Status::Error("must be debug, info, warn or error");
    }
    o.log_level = v;
    return k8s::Status();
  };
  flags["workers"] = [&o](const std::string& v) { return ParseWorkers(v, o.workers); };
}

// "--name" or "--name=value" (Go-style "-name" too) split into name and value.
struct FlagArg {
  std::string name, value;
  bool has_value = false;
};

k8s::Result<FlagArg> SplitFlag(std::string a) {
  if (a.rfind("--", 0) != 0 && a.rfind("-", 0) == 0) a = "-" + a;  // accept Go-style -flag
  if (a.rfind("--", 0) != 0) return k8s::Status::Error("unexpected argument \"" + a + "\" (see --help)");
  FlagArg f;
  f.name = a.substr(2);
  if (auto eq = f.name.find('='); eq != std::string::npos) {
    f.value = f.name.substr(eq + 1);
    f.name = f.name.substr(0, eq);
    f.has_value = true;
  }
  return f;
}

k8s::Status SetBoolean(const FlagArg& f, bool& out) {
  if (!f.has_value || f.value == "true") {
    out = true;
  } else if (f.value == "false") {
    out = false;
  } else {
    return k8s::Status::Error("flag --" + f.name + " takes true or false, not \"" + f.value + "\"");
  }
  return k8s::Status();
}

// Sets each flag of `args` in `o` through `valued` and `booleans`, in order.
k8s::Status ApplyArgs(const std::vector<std::string>& args, const Flags& valued,
                      const std::map<std::string, bool*>& booleans, Options& o) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-h" || args[i] == "--help" || args[i] == "-help") {
      o.help = true;
      continue;
    }
    auto split = SplitFlag(args[i]);
    if (!split.ok()) return split.status();
    FlagArg f = std::move(split.value());
    if (auto b = booleans.find(f.name); b != booleans.end()) {
      if (k8s::Status s = SetBoolean(f, *b->second); !s.ok()) return s;
      continue;
    }
    auto setter = valued.find(f.name);
    if (setter == valued.end()) return k8s::Status::Error("unknown flag --" + f.name + " (see --help)");
    if (!f.has_value) {
      if (i + 1 >= args.size()) return k8s::Status::Error("flag --" + f.name + " needs a value");
      f.value = args[++i];
    }
    k8s::Status s = setter->second(f.value);
    if (!s.ok()) return k8s::Status::Error("flag --" + f.name + "=" + f.value + ": " + s.message());
  }
  return k8s::Status();
}

// The Lease's durations cannot be 0 (issue 44): each paces a loop against the API server, which
// would spin without a pause (a retry period of 0: a standby asks for the Lease without end) or
// give the Lease up at once. Negative durations are refused by the parser; --request-timeout
// refuses 0 itself (0 here: its default).
k8s::Status CheckNoZeroDurations(const Options& o) {
  const std::pair<const char*, std::chrono::milliseconds> durations[] = {
      {"--leader-election-lease-duration", o.lease_duration},
      {"--leader-election-renew-deadline", o.renew_deadline},
      {"--leader-election-retry-period", o.retry_period},
  };
  for (const auto& [flag, d] : durations) {
    if (d <= std::chrono::milliseconds(0)) {
      return k8s::Status::Error(std::string(flag) + " must be longer than 0 (it paces requests to the API server: " +
                                "0 would send them without pause)");
    }
  }
  return k8s::Status();
}

// The Lease's durations against each other and against the request timeout (which it defaults).
k8s::Status CheckLeaderElection(Options& o) {
  if (k8s::Status s = CheckNoZeroDurations(o); !s.ok()) return s;
  if (o.renew_deadline >= o.lease_duration) {
    return k8s::Status::Error("--leader-election-renew-deadline must be shorter than --leader-election-lease-duration");
  }
  if (o.retry_period >= o.renew_deadline) {
    return k8s::Status::Error("--leader-election-retry-period must be shorter than --leader-election-renew-deadline");
  }
  if (o.request_timeout == std::chrono::milliseconds(0)) {
    o.request_timeout = o.leader_elect ? o.renew_deadline / 2 : std::chrono::milliseconds(30000);
  } else if (o.leader_elect && o.request_timeout >= o.renew_deadline) {
    // A write sent just before the renew deadline must end (or fail) before another process may
    // take the Lease: see leader_election.h.
    return k8s::Status::Error("--request-timeout must be shorter than --leader-election-renew-deadline");
  }
  if (!o.leader_elect) return k8s::Status();
  // A write sent just before the renew deadline ends (or fails) within renew_deadline +
  // request_timeout of the last renewal; a standby takes the Lease lease_duration after it saw
  // that renewal. The margin (a tenth of the lease) covers clocks that run at different rates
  // and the time a request takes to reach the API server.
  const std::chrono::milliseconds margin = o.lease_duration / 10;
  if (o.renew_deadline + o.request_timeout + margin > o.lease_duration) {
    return k8s::Status::Error(
        "--leader-election-renew-deadline (" + k8s::FormatDuration(o.renew_deadline) + ") plus --request-timeout (" +
        k8s::FormatDuration(o.request_timeout) + ") must stay below --leader-election-lease-duration (" +
        k8s::FormatDuration(o.lease_duration) + ") by at least a tenth of it (" + k8s::FormatDuration(margin) +
        "): otherwise a write the old leader sent just before its renew deadline could land after a standby took "
        "the Lease, and two controllers would write at once");
  }
  return k8s::Status();
}

}  // namespace

k8s::Result<Options> ParseOptions(const std::vector<std::string>& args) {
  Options o;
  Flags valued;
  AddClusterFlags(o, valued);
  AddLeaderElectionFlags(o, valued);
  AddServingFlags(o, valued);
  AddSchedulingFlags(o, valued);
  AddProcessFlags(o, valued);
  valued["default-max-priority"] = [&o](const std::string& v) { return ParseDefaultMaxPriority(v, o.default_max_priority); };
  const std::map<std::string, bool*> booleans = {{"leader-elect", &o.leader_elect}, {"queue-auth", &o.queue_auth}};
  if (k8s::Status s = ApplyArgs(args, valued, booleans, o); !s.ok()) return s;
  if (k8s::Status s = CheckLeaderElection(o); !s.ok()) return s;
  if (o.http_read_timeout <= std::chrono::milliseconds(0)) {
    return k8s::Status::Error("--http-read-timeout must be longer than 0");
  }
  if (k8s::Status s = CheckTeamOptions(o); !s.ok()) return s;
  if (o.estimate_interval != std::chrono::milliseconds(0) &&
      (o.estimate_interval < std::chrono::seconds(1) || o.estimate_interval > std::chrono::hours(1))) {
    return k8s::Status::Error("--estimate-interval must be 0 (no estimates) or from 1s to 1h");
  }
  return o;
}

}  // namespace berth::controller
