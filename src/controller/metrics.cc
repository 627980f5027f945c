#include "controller/metrics.h"

#include <algorithm>
#include <prometheus/text_serializer.h>

#include "api/v1alpha1/enums.h"

namespace berth::controller {

namespace {

prometheus::Histogram::BucketBoundaries WaitBuckets() {
  return {0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600.0, 24 * 3600.0};
}
prometheus::Histogram::BucketBoundaries CycleBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1};
}

}  // namespace

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      pending_(prometheus::BuildGauge()
                   .Name("berth_pending_runs")
                   .Help("Runs waiting in the queue, by the fleet their wait is about (or none) and reason")
                   .Register(*registry_)),
      oldest_pending_wait_(prometheus::BuildGauge()
                               .Name("berth_oldest_pending_run_wait_seconds")
                               .Help("How long the run that has waited longest in the queue has waited (since its submission, or "
                                     "since a resubmission put it back in the queue); 0 when none waits")
                               .Register(*registry_)),
      admitted_(prometheus::BuildCounter().Name("berth_runs_admitted_total").Help("Runs admitted (placed)").Register(*registry_)),
      preemptions_(prometheus::BuildCounter()
                       .Name("berth_preemptions_total")
                       .Help("Running runs evicted for a higher-priority run, by fleet")
                       .Register(*registry_)),
      reclaims_(prometheus::BuildCounter()
                    .Name("berth_reclaims_total")
                    .Help("Running runs of a team beyond its nominal share stopped for a team within its own (reclaim), by fleet")
                    .Register(*registry_)),
      team_resources_(prometheus::BuildGauge()
                          .Name("berth_team_resources")
                          .Help("Per team, fleet and resource (gpu: GPUs, cpu: cores, memory: bytes) its Team status shows: "
                                "state nominal, used, borrowed (beyond nominal) or lent (its idle nominal share others use)")
                          .Register(*registry_)),
      finished_(prometheus::BuildCounter()
                    .Name("berth_runs_finished_total")
                    .Help("Runs that reached Succeeded or Failed, by phase and reason")
                    .Register(*registry_)),
      failed_(prometheus::BuildCounter().Name("berth_runs_failed_total").Help("Runs that failed, by reason").Register(*registry_)),
      admission_wait_(prometheus::BuildHistogram()
                          .Name("berth_admission_wait_seconds")
                          .Help("Time from a run's submission to its admission")
                          .Register(*registry_)),
      cycle_duration_(prometheus::BuildHistogram()
                          .Name("berth_scheduling_cycle_duration_seconds")
                          .Help("Duration of one scheduling pass (snapshot, cycle, decisions)")
                          .Register(*registry_)),
      passes_(prometheus::BuildCounter()
                  .Name("berth_scheduling_passes_total")
                  .Help("Scheduling passes, by whether the scheduling core decided again (core=decided) or its last "
                        "result stood because its input was unchanged (core=stood)")
                  .Register(*registry_)),
      fleet_blocks_(prometheus::BuildGauge()
                        .Name("berth_fleet_blocks")
                        .Help("Blocks of each fleet by state: busy, idle (free and usable), unavailable (free on instances that take no new run)")
                        .Register(*registry_)),
      instances_(prometheus::BuildGauge().Name("berth_instances").Help("Instances of each fleet by state").Register(*registry_)),
      reconcile_errors_(prometheus::BuildCounter()
                            .Name("berth_reconcile_errors_total")
                            .Help("Writes to the API that failed and will be retried, by object kind")
                            .Register(*registry_)),
      api_requests_(prometheus::BuildCounter()
                        .Name("berth_api_requests_total")
                        .Help("Requests to the Kubernetes API by verb and HTTP code (0 = no answer)")
                        .Register(*registry_)),
      workqueue_depth_(prometheus::BuildGauge()
                           .Name("berth_workqueue_depth")
                           .Help("API writes waiting or in flight")
                           .Register(*registry_)),
      unreadable_objects_(prometheus::BuildGauge()
                              .Name("berth_unreadable_objects")
                              .Help("Objects berth cannot read (nested deeper than it parses), set aside out of the "
                                    "queue with a Warning Event, by kind")
                              .Register(*registry_)),
      workqueue_retries_(prometheus::BuildCounter()
                             .Name("berth_workqueue_retries_total")
                             .Help("Writes retried after a failure")
                             .Register(*registry_)),
      leader_(prometheus::BuildGauge()
                  .Name("berth_leader")
                  .Help("1 when this process is the leader (schedules and writes), else 0")
                  .Register(*registry_)),
      events_(prometheus::BuildCounter()
                  .Name("berth_events_total")
                  .Help("Kubernetes Events berth recorded (posted) or dropped under load, since start")
                  .Register(*registry_)) {
  oldest_pending_wait_.Add({});
  admitted_.Add({});
  workqueue_depth_.Add({});
  unreadable_objects_.Add({{"kind", "Run"}});
  workqueue_retries_.Add({});
  leader_.Add({});
  admission_wait_.Add({}, WaitBuckets());
  cycle_duration_.Add({}, CycleBuckets());
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
}

void Metrics::OnFinished(const std::string& phase, const std::string& reason) {
  finished_.Add({{"phase", phase}, {"reason", reason}}).Increment();
  if (api::v1alpha1::IsPhase(phase, api::v1alpha1::Phase::kFailed)) failed_.Add({{"reason", reason}}).Increment();
}

void Metrics::OnPreempted(const std::string& fleet) { preemptions_.Add({{"fleet", fleet}}).Increment(); }

void Metrics::OnReclaimed(const std::string& fleet) { reclaims_.Add({{"fleet", fleet}}).Increment(); }

void Metrics::OnWriteFailed(const std::string& what) {
  reconcile_errors_.Add({{"kind", what}}).Increment();
  workqueue_retries_.Add({}).Increment();
}

void Metrics::OnApiRequest(const std::string& verb, int code) {
  api_requests_.Add({{"verb", verb}, {"code", std::to_string(code)}}).Increment();
}

void Metrics::SetLeader(bool leader) { leader_.Add({}).Set(leader ? 1 : 0); }

}  // namespace berth::controller
