#include "controller/manager.h"

#include <set>

#include <spdlog/spdlog.h>

#include "api/v1alpha1/http_api.h"
#include "controller/admission.h"
#include "controller/dashboard_request.h"
#include "k8s/json.h"
#include "k8s/timefmt.h"
#include "reconcilers/engine/run_controller.h"

namespace berth::controller {

namespace json = k8s::json;

namespace {

reconcilers::EngineOptions EngineOptionsFrom(const Options& options) {
  reconcilers::EngineOptions eo;
  eo.aging_interval = options.aging_interval;
  eo.retry_backoff = options.retry_backoff;
  eo.max_retry_backoff = std::max(options.max_retry_backoff, options.retry_backoff);
  eo.start_timeout = options.start_timeout;
  if (options.finished_run_ttl > std::chrono::milliseconds(0)) eo.finished_run_ttl = options.finished_run_ttl;
  eo.writers = std::max(4, options.workers * 4);
  eo.fair_share_half_life = options.fair_share_half_life;
  eo.team_status_interval = options.team_status_interval;
  eo.estimate_interval = options.estimate_interval;
  eo.default_max_priority = options.default_max_priority;
  return eo;
}

}  // namespace

Manager::Manager(Options options, k8s::ClientPtr client, const k8s::Clock& clock, std::string identity)
    : options_(std::move(options)), client_(std::move(client)), clock_(clock), identity_(std::move(identity)) {
  queue_series_ = std::make_unique<QueueSeries>(clock_);
  metrics_ = std::make_unique<Metrics>();
  metrics_->SetQueueSeries(queue_series_.get());
  client_->SetRequestObserver([m = metrics_.get()](const std::string& verb, int code) { m->OnApiRequest(verb, code); });
  engine_ = std::make_unique<reconcilers::RunController>(client_, clock_, EngineOptionsFrom(options_));
  engine_->SetObserver(metrics_.get());
  engine_->SetUsersNamespace(options_.leader_election_namespace);  // berth's own (the chart's release namespace)
  engine_->OnSynced([this] { Wake(); });  // Run waits for the caches (WaitForCaches)
  if (options_.leader_elect) SetUpLeaderElection();
  HttpLimits limits;
  limits.read_timeout = options_.http_read_timeout;
  SetUpMetricsServer(limits);
  SetUpWebhookServer(limits);
  SetUpProbeServer(limits);
  SetUpQueueApiServer(limits);
}

void Manager::SetUpLeaderElection() {
  LeaderElectionConfig lc;
  lc.ns = options_.leader_election_namespace;
  lc.name = options_.leader_election_id;
  lc.lease_duration = options_.lease_duration;
  lc.renew_deadline = options_.renew_deadline;
  lc.retry_period = options_.retry_period;
  lc.identity = identity_;
  // Its own Client on the same transport: the engine's write guard must not hold up the Lease,
  // and the renew loop retries by itself (leader_election.h).
  auto lease_client = std::make_shared<k8s::Client>(client_->config(), client_->transport());
  lease_client->SetMaxRetries(0);
  lease_client->SetRequestObserver([m = metrics_.get()](const std::string& verb, int code) { m->OnApiRequest(verb, code); });
  elector_ = std::make_unique<LeaderElector>(lease_client, clock_, lc);
  if (!options_.leader_pod_name.empty()) {
    leader_pod_ = std::make_unique<LeaderPodLabel>(lease_client, clock_, options_.leader_pod_namespace,
                                                   options_.leader_pod_name);
  }
  // Asked before every write the client sends (each retry too), not once per task; installed
  // before any thread uses the client. A standby writes nothing with its own credentials.
  client_->SetWriteGuard([e = elector_.get()] {
    if (e->StillLeading()) return true;
    if (!e->IsLeader()) return false;
    // Paused or cut off for longer than the renew deadline: another process may lead now.
    spdlog::error("leadership expired (no renewal for the renew deadline): exiting without writing");
    spdlog::default_logger()->flush();
    std::_Exit(1);
  });
}

// /metrics and /queue on the metrics port; with --queue-auth=false the queue, fleets and teams as
// the dashboard's JSON too (local tests).
void Manager::SetUpMetricsServer(const HttpLimits& limits) {
  metrics_server_ = std::make_unique<HttpServer>(options_.metrics_bind_address, 4, limits);
  metrics_server_->Handle("/metrics", [this](const HttpRequestView&) {
    return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", metrics_->Render(), {}};
  });
  metrics_server_->Handle("/queue", [this](const HttpRequestView& req) { return QueueReply(req, false); },
                          RouteOptions{{"GET", "HEAD"}, 0, /*heavy=*/true});
  dashboard_ = std::make_unique<EngineSummaries>(*engine_);
  // berth takes no user credential (issue 44, 4): no page, no route that acts for a user. The
  // dashboard is kubectl berth dashboard's (the user's machine and kubeconfig).
  metrics_server_->Handle("/", [](const HttpRequestView&) {
    return HttpReply{404, "text/plain; charset=utf-8",
                     "berth's dashboard is served on your own machine with your kubeconfig: kubectl berth dashboard "
                     "(this port serves /metrics)\n",
                     {}};
  });
  // The queue, fleets and teams are read through the API server (the aggregated queue API): here
  // 401 with a sentence, unless --queue-auth=false opens them to anyone who reaches the port.
  metrics_server_->Handle("/api/queue", [this](const HttpRequestView& req) { return QueueReply(req, true); },
                          RouteOptions{{"GET", "HEAD"}, 0, /*heavy=*/true});
  auto summary = [this](HttpReply (EngineSummaries::*read)() const) {
    return [this, read](const HttpRequestView&) {
      return options_.queue_auth
                 ? HttpReply{401, "application/json", std::string(R"({"error":)") + json::Quote(kQueueMovedSentence) + "}", {}}
                 : (dashboard_.get()->*read)();
    };
  };
  metrics_server_->Handle("/api/fleets", summary(&EngineSummaries::Fleets), RouteOptions{{"GET", "HEAD"}, 0, /*heavy=*/true});
  metrics_server_->Handle("/api/teams", summary(&EngineSummaries::Teams), RouteOptions{{"GET", "HEAD"}, 0, /*heavy=*/true});
}

// The aggregated queue API (queue_api.h): HTTPS, client certificates checked against the
// request-header CA, who may see what asked with SubjectAccessReviews in berth's own name.
void Manager::SetUpQueueApiServer(const HttpLimits& limits) {
  // Its own Client on the same transport, without the leader's write guard: creating a review
  // writes nothing, and a standby answers the API server's proxy too.
  auto reviewer = std::make_shared<k8s::Client>(client_->config(), client_->transport());
  reviewer->SetMaxRetries(1);
  reviewer->SetRequestObserver([m = metrics_.get()](const std::string& verb, int code) { m->OnApiRequest(verb, code); });
  access_ = std::make_unique<AccessReview>(reviewer, clock_);
  queue_api_ = std::make_unique<QueueApi>(
      reviewer, *access_, [this] { return engine_->Queue(); },
      [this](const QueueQuery& q, const std::vector<reconcilers::QueueEntry>& entries, const QueueScope& scope) {
        return QueueJson(q, entries, &scope);
      },
      [this] { return dashboard_->Fleets(); }, [this] { return dashboard_->Teams(); });
  queue_api_->SetUsage([this, reviewer](const UsageQuery& q, const std::string& only) { return UsageReply(*reviewer, q, only); },
                       options_.leader_election_namespace);
  queue_api_->SetQueueHistory([this] {
    return HttpReply{200, "application/json", queue_series_->Json(!elector_ || elector_->IsLeader()), {}};
  });
  queue_api_server_ = std::make_unique<HttpServer>(options_.queue_api_bind_address, 4, limits);
  queue_api_server_->UseTls(options_.queue_api_cert_dir + "/tls.crt", options_.queue_api_cert_dir + "/tls.key");
  queue_api_->Register(*queue_api_server_);
}

// Issue 47: the usage answer from the cached Teams and Fleets and the per-user stores (read with
// berth's own client: ConfigMaps labelled berth.dev/usage=users in its namespace; their hours for
// by=user, their run starts for every by). Stores that cannot be read: by=user fails, the other
// answers come without runs.
HttpReply Manager::UsageReply(k8s::Client& reader, const UsageQuery& q, const std::string& only_user) const {
  UsageInputs in;
  in.teams = engine_->Teams();
  for (const auto& f : engine_->Fleets()) in.cost_weights[f->meta.name] = f->spec.cost_weight;
  in.only_user = only_user;
  k8s::ListOptions opts;
  opts.label_selector = std::string(api::v1alpha1::kUserUsageLabel) + "=users";
  auto list = reader.List("/api/v1/namespaces/" + options_.leader_election_namespace + "/configmaps", opts);
  if (!list.ok() && q.by == "user") {
    return StatusReply(502, "InternalError", "the per-user usage could not be read: " + list.status().message());
  }
  if (!list.ok()) {
    spdlog::warn("usage: runs not shown, the per-user usage could not be read: {}", list.status().message());
    in.runs_known = false;
  } else {
    for (const auto& item : list->items) {
      auto store = api::v1alpha1::DecodeUserUsage(item);
      if (store.ok()) in.users.push_back(std::move(store).value());
      else spdlog::warn("usage: {}", store.status().message());
    }
  }
  return HttpReply{200, "application/json", UsageJson(q, in, clock_.Now()), {}};
}

void Manager::SetUpWebhookServer(const HttpLimits& limits) {
  webhook_server_ = std::make_unique<HttpServer>(options_.webhook_bind_address, 2, limits);
  webhook_server_->UseTls(options_.webhook_cert_dir + "/tls.crt", options_.webhook_cert_dir + "/tls.key");
  webhook_server_->Handle("/mutate-runs", [this](const HttpRequestView& req) {
    if (req.method != "POST") return HttpReply{405, "text/plain; charset=utf-8", "POST an AdmissionReview\n", {}};
    auto review = ReviewRun(req.body, [this](const std::string& ns) { return NamespaceCap(ns); });
    if (!review.ok()) return HttpReply{400, "text/plain; charset=utf-8", review.status().message() + "\n", {}};
    return HttpReply{200, "application/json", review.value(), {}};
  }, RouteOptions{{"POST"}, kMaxAdmissionReviewBytes});
  // Issue 45 (2): holds queued Jobs at creation on 1.35 (the chart's webhook for Jobs).
  webhook_server_->Handle("/mutate-jobs", [](const HttpRequestView& req) {
    if (req.method != "POST") return HttpReply{405, "text/plain; charset=utf-8", "POST an AdmissionReview\n", {}};
    auto review = ReviewJob(req.body);
    if (!review.ok()) return HttpReply{400, "text/plain; charset=utf-8", review.status().message() + "\n", {}};
    return HttpReply{200, "application/json", review.value(), {}};
  }, RouteOptions{{"POST"}, kMaxAdmissionReviewBytes});
  // Issue 45 (2, 3): JobSets, and queued Pods and Pod groups' Pods, the same way on 1.35.
  webhook_server_->Handle("/mutate-jobsets", [](const HttpRequestView& req) {
    if (req.method != "POST") return HttpReply{405, "text/plain; charset=utf-8", "POST an AdmissionReview\n", {}};
    auto review = ReviewJobSet(req.body);
    if (!review.ok()) return HttpReply{400, "text/plain; charset=utf-8", review.status().message() + "\n", {}};
    return HttpReply{200, "application/json", review.value(), {}};
  }, RouteOptions{{"POST"}, kMaxAdmissionReviewBytes});
  webhook_server_->Handle("/mutate-pods", [](const HttpRequestView& req) {
    if (req.method != "POST") return HttpReply{405, "text/plain; charset=utf-8", "POST an AdmissionReview\n", {}};
    auto review = ReviewPod(req.body);
    if (!review.ok()) return HttpReply{400, "text/plain; charset=utf-8", review.status().message() + "\n", {}};
    return HttpReply{200, "application/json", review.value(), {}};
  }, RouteOptions{{"POST"}, kMaxAdmissionReviewBytes});
}

void Manager::SetUpProbeServer(const HttpLimits& limits) {
  probe_server_ = std::make_unique<HttpServer>(options_.health_probe_bind_address, 2, limits);
  probe_server_->Handle("/healthz", [](const HttpRequestView&) { return HttpReply{200, "text/plain; charset=utf-8", "ok\n", {}}; });
  probe_server_->Handle("/readyz", [this](const HttpRequestView&) {
    if (!CachesSynced()) return HttpReply{503, "text/plain; charset=utf-8", "caches not synced\n", {}};
    std::string role = !elector_ ? "leader (no election)" : elector_->IsLeader() ? "leader" : "standby";
    return HttpReply{200, "text/plain; charset=utf-8", "ok: " + role + "\n", {}};
  });
}

Manager::~Manager() { Shutdown(); }

bool Manager::CachesSynced() const { return engine_->HasSynced(); }

std::optional<reconcilers::PriorityCap> Manager::NamespaceCap(const std::string& ns) const {
  // From the engine's Namespace cache, like Kubernetes' own admission plugins: a GET per create
  // made every create wait for a round trip (the webhook's calls took 147 ms each in a burst of
  // 2,000 creates, bench/throughput.sh). A label change applies once the watch has brought it
  // (normally milliseconds). A namespace the cache does not hold yet (created a moment ago, e.g.
  // in the same manifest as its runs), or a cache not synced yet, is read from the API server;
  // without either answer the run is allowed: the engine caps it anyway.
  if (ns.empty() || !IsDnsLabel(ns)) return std::nullopt;  // never into a path (ReviewRun refuses it first)
  if (std::optional<reconcilers::PriorityCap> cap; engine_->CachedCapOf(ns, cap)) return cap;
  auto n = client_->Get(k8s::resources::kNamespaces.Path("", ns));
  if (n.ok()) {
    if (auto info = reconcilers::DecodeNamespace(*n)) {
      return reconcilers::ParsePriorityCap(info->labels, options_.default_max_priority);
    }
  }
  return reconcilers::DefaultPriorityCap(options_.default_max_priority);
}

HttpReply Manager::QueueReply(const HttpRequestView& req, bool json_errors) const {
  auto error = [json_errors](int code, const std::string& message) {
    HttpReply r = json_errors ? HttpReply{code, "application/json", R"({"error":)" + json::Quote(message) + "}", {}}
                              : HttpReply{code, "text/plain; charset=utf-8", message + "\n", {}};
    return r;
  };
  if (options_.queue_auth) return error(401, kQueueMovedSentence);
  QueueQuery q;
  std::string message;
  if (ParseQueueQuery(req, q, message) != 0) return error(400, message);
  return HttpReply{200, "application/json", QueueJson(q, engine_->Queue(), nullptr), {}};
}

std::string Manager::QueueJson(const QueueQuery& query, const std::vector<reconcilers::QueueEntry>& entries,
                               const QueueScope* scope) const {
  k8s::TimePoint now = clock_.Now();
  api::v1alpha1::QueuePage page;
  page.generated_at = k8s::FormatRfc3339(now);
  // A standby computes no queue: say so, so that clients behind a Service ask again.
  page.leader = !elector_ || elector_->IsLeader();
  page.total = static_cast<int64_t>(entries.size());
  int64_t last = 0;  // the position of the last item written
  for (const auto& e : entries) {
    if ((!query.ns.empty() && e.ns != query.ns) || e.position <= query.after) continue;
    if (scope != nullptr && !scope->Shows(e.ns)) continue;
    if (page.items.size() >= query.limit) {
      page.continue_token = std::to_string(last);
      break;
    }
    last = e.position;
    const int64_t wait = std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::seconds>(now - e.submitted_at).count());
    auto in = [&](k8s::TimePoint t) { return std::max<int64_t>(0, std::chrono::ceil<std::chrono::seconds>(t - now).count()); };
    api::v1alpha1::QueueItem it;
    it.position = e.position;
    it.ns = e.ns;
    it.name = e.name;
    it.priority = e.priority;
    it.effective_priority = e.effective_priority;
    it.nodes = e.nodes;
    it.fleets = e.fleets;
    it.submitted_at = k8s::FormatRfc3339(e.submitted_at);
    it.wait_seconds = wait;
    it.reason = e.reason;
    it.message = e.message;
    it.team = e.team;
    if (e.estimated_start) {
      it.estimated_start_at = k8s::FormatRfc3339(*e.estimated_start);
      it.starts_in_seconds = in(*e.estimated_start);
      if (e.estimated_range) {
        it.earliest_start_at = k8s::FormatRfc3339(e.estimated_range->first);
        it.latest_start_at = k8s::FormatRfc3339(e.estimated_range->second);
        it.starts_in_range_seconds = std::make_pair(in(e.estimated_range->first), in(e.estimated_range->second));
      }
    }
    it.kind = e.kind;
    it.workload = e.workload;
    page.items.push_back(std::move(it));
  }
  return api::v1alpha1::EncodeQueuePage(page);
}

void Manager::Wake() {
  // Taking the lock orders the change before the waiter's check: no wake-up is lost between a
  // waiter's check and its wait.
  { std::lock_guard<std::mutex> lock(wait_mu_); }
  wait_cv_.notify_all();
}

void Manager::RequestStop() {
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    stop_ = true;
  }
  wait_cv_.notify_all();
}

bool Manager::WaitForCaches() {
  std::unique_lock<std::mutex> lock(wait_mu_);
  wait_cv_.wait(lock, [this] { return stop_ || CachesSynced(); });
  return !stop_;
}

void Manager::WaitForStop() {
  std::unique_lock<std::mutex> lock(wait_mu_);
  wait_cv_.wait(lock, [this] { return stop_.load(); });
}

k8s::Status Manager::Run() {
  if (k8s::Status s = metrics_server_->Start(); !s.ok()) return s;
  if (queue_api_server_->enabled()) {
    (void)queue_api_->Refresh();  // logged when it fails; requests try again
    if (k8s::Status s = queue_api_server_->Start(); !s.ok()) return s;
  }
  if (k8s::Status s = probe_server_->Start(); !s.ok()) return s;
  // Served by every replica (standbys too): the API server may call any of them.
  if (k8s::Status s = webhook_server_->Start(); !s.ok()) return s;
  engine_->StartInformers();
  if (!WaitForCaches()) return k8s::Status();
  if (elector_) {
    // A container restarted after it lost the Lease is still in its Pod, label and all.
    if (leader_pod_) leader_pod_->Clear();
    if (!elector_->Acquire(stop_)) return k8s::Status();
    if (leader_pod_) leader_pod_->SetInBackground(options_.retry_period);
    elector_->KeepRenewing([] {
      // Stop writing at once, before the Lease can be taken by another process; Kubernetes
      // restarts us as a standby.
      spdlog::error("lost leadership: exiting so that no two controllers write");
      spdlog::default_logger()->flush();
      std::_Exit(1);
    });
  }
  metrics_->SetLeader(true);
  engine_->StartLoop();
  WaitForStop();
  return k8s::Status();
}

void Manager::Shutdown() {
  engine_->Stop();
  if (leader_pod_) {
    leader_pod_->Stop();
    leader_pod_->Clear();
  }
  if (elector_) elector_->Release();
  metrics_->SetLeader(false);
  metrics_server_->Stop();
  probe_server_->Stop();
  webhook_server_->Stop();
  queue_api_server_->Stop();
}

}  // namespace berth::controller
