#include "controller/metrics.h"

#include <algorithm>
#include <prometheus/text_serializer.h>

#include "api/v1alpha1/enums.h"

namespace berth::controller {

namespace {

prometheus::Histogram::BucketBoundaries WaitBuckets() {
  return {0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600.0, 24 * 3600.0};
}
// (estimated start - actual) / the wait: -1 is an estimate of "now" for a run that waited; 1 one
// twice as far out as the wait was.
prometheus::Histogram::BucketBoundaries ErrorBuckets() {
  return {-4, -2, -1, -0.5, -0.25, -0.1, 0.1, 0.25, 0.5, 1, 2, 4};
}
prometheus::Histogram::BucketBoundaries CycleBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1};
}

// The metrics' help texts (# HELP).
constexpr const char* kPendingHelp = "Runs waiting in the queue, by the fleet their wait is about (or none) and reason";
constexpr const char* kOldestPendingWaitHelp =
    "How long the run that has waited longest in the queue has waited (since its submission, or since a "
    "resubmission put it back in the queue); 0 when none waits";
constexpr const char* kAdmittedHelp = "Runs admitted (placed)";
constexpr const char* kPreemptionsHelp = "Running runs evicted for a higher-priority run, by fleet";
constexpr const char* kReclaimsHelp =
    "Running runs of a team beyond its nominal share stopped for a team within its own (reclaim), by "
    "fleet and by the stopped run's team (team=\"\" when no Team holds its namespace)";
constexpr const char* kTeamResourcesHelp =
    "Per team, fleet and resource (gpu: GPUs, cpu: cores, memory: bytes) its Team status shows: state "
    "nominal, used, borrowed (beyond nominal) or lent (its idle nominal share others use)";
constexpr const char* kFinishedHelp = "Runs that reached Succeeded or Failed, by phase and reason";
constexpr const char* kFailedHelp = "Runs that failed, by reason";
constexpr const char* kAdmissionWaitHelp = "Time from a run's submission to its admission";
constexpr const char* kEstimateErrorHelp =
    "The error of the first start-time estimate of each admitted run: (estimated start - placement) / its wait "
    "since that estimate (negative: it started later than estimated); runs shown no estimate, or shown one "
    "less than a minute before their placement, are not counted";
constexpr const char* kCycleDurationHelp = "Duration of one scheduling pass (snapshot, cycle, decisions)";
constexpr const char* kPassesHelp =
    "Scheduling passes, by whether the scheduling core decided again (core=decided) or its last result "
    "stood because its input was unchanged (core=stood)";
constexpr const char* kFleetBlocksHelp =
    "Blocks of each fleet by state: busy, idle (free and usable), unavailable (free on instances that "
    "take no new run)";
constexpr const char* kInstancesHelp = "Instances of each fleet by state";
constexpr const char* kReconcileErrorsHelp = "Writes to the API that failed and will be retried, by object kind";
constexpr const char* kApiRequestsHelp = "Requests to the Kubernetes API by verb and HTTP code (0 = no answer)";
constexpr const char* kWorkqueueDepthHelp = "API writes waiting or in flight";
constexpr const char* kUnreadableObjectsHelp =
    "Objects berth cannot read (nested deeper than it parses), set aside out of the queue with a Warning "
    "Event, by kind";
constexpr const char* kWorkqueueRetriesHelp = "Writes retried after a failure";
constexpr const char* kLeaderHelp = "1 when this process is the leader (schedules and writes), else 0";
constexpr const char* kEventsHelp = "Kubernetes Events berth recorded (posted) or dropped under load, since start";
constexpr const char* kUsageHelp =
    "Resource-seconds the runs held (their blocks' resources, from admission until the blocks are free), as "
    "this process folded them into the Teams' usage history, by team (\"\" for runs in no Team), namespace (the "
    "first 20 of a team and fleet, the rest \"others\"), fleet and resource (gpu: GPU-seconds, cpu: "
    "core-seconds, memory: byte-seconds)";

prometheus::Family<prometheus::Gauge>& GaugeFamily(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}
prometheus::Family<prometheus::Counter>& CounterFamily(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}
prometheus::Family<prometheus::Histogram>& HistogramFamily(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(r);
}

}  // namespace

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      pending_(GaugeFamily(*registry_, "berth_pending_runs", kPendingHelp)),
      oldest_pending_wait_(GaugeFamily(*registry_, "berth_oldest_pending_run_wait_seconds", kOldestPendingWaitHelp)),
      admitted_(CounterFamily(*registry_, "berth_runs_admitted_total", kAdmittedHelp)),
      preemptions_(CounterFamily(*registry_, "berth_preemptions_total", kPreemptionsHelp)),
      reclaims_(CounterFamily(*registry_, "berth_reclaims_total", kReclaimsHelp)),
      team_resources_(GaugeFamily(*registry_, "berth_team_resources", kTeamResourcesHelp)),
      finished_(CounterFamily(*registry_, "berth_runs_finished_total", kFinishedHelp)),
      failed_(CounterFamily(*registry_, "berth_runs_failed_total", kFailedHelp)),
      admission_wait_(HistogramFamily(*registry_, "berth_admission_wait_seconds", kAdmissionWaitHelp)),
      cycle_duration_(HistogramFamily(*registry_, "berth_scheduling_cycle_duration_seconds", kCycleDurationHelp)),
      estimate_error_(HistogramFamily(*registry_, "berth_estimate_error_ratio", kEstimateErrorHelp)),
      passes_(CounterFamily(*registry_, "berth_scheduling_passes_total", kPassesHelp)),
      fleet_blocks_(GaugeFamily(*registry_, "berth_fleet_blocks", kFleetBlocksHelp)),
      instances_(GaugeFamily(*registry_, "berth_instances", kInstancesHelp)),
      reconcile_errors_(CounterFamily(*registry_, "berth_reconcile_errors_total", kReconcileErrorsHelp)),
      api_requests_(CounterFamily(*registry_, "berth_api_requests_total", kApiRequestsHelp)),
      workqueue_depth_(GaugeFamily(*registry_, "berth_workqueue_depth", kWorkqueueDepthHelp)),
      unreadable_objects_(GaugeFamily(*registry_, "berth_unreadable_objects", kUnreadableObjectsHelp)),
      workqueue_retries_(CounterFamily(*registry_, "berth_workqueue_retries_total", kWorkqueueRetriesHelp)),
      leader_(GaugeFamily(*registry_, "berth_leader", kLeaderHelp)),
      events_(CounterFamily(*registry_, "berth_events_total", kEventsHelp)),
      usage_(CounterFamily(*registry_, "berth_usage_resource_seconds_total", kUsageHelp)) {
  AddFixedSeries();
}

void Metrics::AddFixedSeries() {
  oldest_pending_wait_.Add({});
  admitted_.Add({});
  workqueue_depth_.Add({});
  unreadable_objects_.Add({{"kind", "Run"}});
  workqueue_retries_.Add({});
  leader_.Add({});
  admission_wait_.Add({}, WaitBuckets());
  cycle_duration_.Add({}, CycleBuckets());
  estimate_error_.Add({}, ErrorBuckets());
  passes_.Add({{"core", "decided"}});
  passes_.Add({{"core", "stood"}});
}

std::string Metrics::Render() const {
  prometheus::TextSerializer serializer;
  return serializer.Serialize(registry_->Collect());
}

void Metrics::OnPass(const PassSummary& s) {
  cycle_duration_.Add({}, CycleBuckets()).Observe(static_cast<double>(s.duration.count()) / 1e6);
  passes_.Add({{"core", s.decided ? "decided" : "stood"}}).Increment();
  if (series_ != nullptr) {
    int64_t waiting = 0;
    for (const auto& [key, n] : s.pending) waiting += n;
    series_->SamplePending(waiting);
  }
  std::lock_guard<std::mutex> lock(mu_);
  // Label sets that vanished since the last pass must read 0, not their old value.
  for (prometheus::Gauge* g : pass_gauges_) g->Set(0);
  pass_gauges_.clear();
  auto set = [this](prometheus::Family<prometheus::Gauge>& f, const prometheus::Labels& labels, double v) {
    prometheus::Gauge& g = f.Add(labels);
    g.Set(v);
    pass_gauges_.push_back(&g);
  };
  for (const auto& [key, n] : s.pending) set(pending_, {{"fleet", key.first}, {"reason", key.second}}, static_cast<double>(n));
  for (const auto& [fleet, c] : s.fleets) {
    set(fleet_blocks_, {{"fleet", fleet}, {"state", "busy"}}, static_cast<double>(c.busy_blocks));
    set(fleet_blocks_, {{"fleet", fleet}, {"state", "idle"}}, static_cast<double>(c.idle_blocks));
    set(fleet_blocks_, {{"fleet", fleet}, {"state", "unavailable"}}, static_cast<double>(c.unavailable_blocks));
    for (const auto& [state, n] : c.instances_by_state) set(instances_, {{"fleet", fleet}, {"state", state}}, static_cast<double>(n));
  }
  for (const auto& [key, a] : s.teams) {
    const auto& [team, fleet, resource] = key;
    const std::pair<const char*, double> states[] = {{"nominal", a.nominal}, {"used", a.used}, {"borrowed", a.borrowed}, {"lent", a.lent}};
    for (const auto& [state, v] : states) {
      set(team_resources_, {{"team", team}, {"fleet", fleet}, {"resource", resource}, {"state", state}}, v);
    }
  }
  workqueue_depth_.Add({}).Set(static_cast<double>(s.writes_queued));
  unreadable_objects_.Add({{"kind", "Run"}}).Set(static_cast<double>(s.unreadable_runs));
  oldest_pending_wait_.Add({}).Set(static_cast<double>(s.oldest_pending_wait.count()) / 1000.0);
  // The engine reports totals since start; the counters move by what is new.
  events_.Add({{"outcome", "posted"}}).Increment(static_cast<double>(s.events_posted - std::min(s.events_posted, events_posted_)));
  events_.Add({{"outcome", "dropped"}}).Increment(static_cast<double>(s.events_dropped - std::min(s.events_dropped, events_dropped_)));
  events_posted_ = std::max(events_posted_, s.events_posted);
  events_dropped_ = std::max(events_dropped_, s.events_dropped);
}

void Metrics::OnAdmitted(std::chrono::milliseconds wait) {
  admitted_.Add({}).Increment();
  admission_wait_.Add({}, WaitBuckets()).Observe(static_cast<double>(wait.count()) / 1000.0);
  if (series_ != nullptr) series_->NoteStart(wait);
}

void Metrics::OnEstimateError(double ratio) { estimate_error_.Add({}, ErrorBuckets()).Observe(ratio); }

void Metrics::OnFinished(const std::string& phase, const std::string& reason) {
  finished_.Add({{"phase", phase}, {"reason", reason}}).Increment();
  if (api::v1alpha1::IsPhase(phase, api::v1alpha1::Phase::kFailed)) failed_.Add({{"reason", reason}}).Increment();
}

void Metrics::OnPreempted(const std::string& fleet) { preemptions_.Add({{"fleet", fleet}}).Increment(); }

void Metrics::OnReclaimed(const std::string& fleet, const std::string& team) {
  reclaims_.Add({{"fleet", fleet}, {"team", team}}).Increment();
}

void Metrics::OnUsageCounted(const std::string& team, const std::string& ns, const std::string& fleet,
                             const reconcilers::ResourceSeconds& seconds) {
  auto add = [&](const char* resource, double v) {
    if (v > 0) usage_.Add({{"team", team}, {"namespace", ns}, {"fleet", fleet}, {"resource", resource}}).Increment(v);
  };
  add("gpu", seconds.gpu);
  add("cpu", seconds.cpu);
  add("memory", seconds.memory_gib * 1024.0 * 1024.0 * 1024.0);
}

void Metrics::OnWriteFailed(const std::string& what) {
  reconcile_errors_.Add({{"kind", what}}).Increment();
  workqueue_retries_.Add({}).Increment();
}

void Metrics::OnApiRequest(const std::string& verb, int code) {
  api_requests_.Add({{"verb", verb}, {"code", std::to_string(code)}}).Increment();
}

void Metrics::SetLeader(bool leader) { leader_.Add({}).Set(leader ? 1 : 0); }

}  // namespace berth::controller
