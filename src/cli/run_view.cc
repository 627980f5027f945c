#include "cli/run_view.h"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <string_view>
#include <utility>

#include "api/v1alpha1/codec.h"
#include "cli/format.h"
#include "k8s/timefmt.h"

namespace berth::cli {
namespace {

namespace api = api::v1alpha1;

// "2026-11-24T10:00:00Z (12m ago)"; the text alone when it is not a time.
std::string WhenWithAge(const std::string& rfc3339, k8s::TimePoint now) {
  auto t = k8s::ParseRfc3339(rfc3339);
  if (!t.ok()) return rfc3339;
  auto age = std::chrono::duration_cast<std::chrono::seconds>(now - *t);
  if (age.count() < 0) return rfc3339 + " (in " + HumanDuration(-age) + ")";
  return rfc3339 + " (" + HumanDuration(age) + " ago)";
}

std::string Age(const std::string& rfc3339, k8s::TimePoint now) {
  auto t = k8s::ParseRfc3339(rfc3339);
  if (!t.ok()) return "-";
  return HumanDuration(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) {
    if (p.empty()) continue;
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

// "2 nodes, each 8 CPU, 64Gi memory, 8 GPU; fleets a100, h100" (what the run asks for).
std::string Asks(const api::Run& run, const api::RunSpelling& written) {
  const int64_t nodes = run.spec.nodes;
  std::vector<std::string> res;
  if (!written.cpu.empty()) res.push_back(written.cpu + " CPU");
  if (!written.memory.empty()) res.push_back(written.memory + " memory");
  if (!written.gpu.empty() && written.gpu != "0") res.push_back(written.gpu + " GPU");
  std::string out = std::to_string(nodes) + (nodes == 1 ? " node" : " nodes");
  out += res.empty() ? std::string(", no resources named") : ", each " + Join(res, ", ");
  const auto& fleets = run.spec.fleets;
  out += fleets.empty() ? std::string("; any fleet") : "; fleets " + Join(fleets, ", ");
  return out;
}

// "maxDuration 4h; retry on no-capacity, error for 1h; startTimeout 10m; ttlSecondsAfterFinished 600".
std::string Limits(const api::RunSpelling& w) {
  std::vector<std::string> parts;
  if (!w.max_duration.empty()) parts.push_back("maxDuration " + w.max_duration);
  if (w.has_retry) {
    const std::string& d = w.retry_duration;
    parts.push_back("retry on " + (w.retry_on.empty() ? std::string("no-capacity, interruption, error") : Join(w.retry_on, ", ")) +
                    (d.empty() ? std::string(" for 1h") : d == "off" ? std::string(" for ever") : " for " + d));
  }
  if (!w.start_timeout.empty()) parts.push_back("startTimeout " + w.start_timeout);
  if (!w.ttl_seconds_after_finished.empty()) parts.push_back("ttlSecondsAfterFinished " + w.ttl_seconds_after_finished);
  return Join(parts, "; ");
}

// What a user wants to know of a Pod: Running, Succeeded, "Failed (exit 3)", "Failed (OutOfcpu)",
// "Pending (ContainerCreating)", "Terminating".
std::string PodState(const k8s::PodView& pod) {
  if (pod.meta.deleting) return "Terminating";
  std::string phase = pod.phase;
  if (phase.empty()) phase = api::ToApi(api::PodPhase::kPending);
  std::string detail = pod.reason;
  for (const auto& c : pod.statuses) {
    if (c.waiting && detail.empty()) detail = c.waiting_reason;
    if (c.terminated && api::IsPodPhase(phase, api::PodPhase::kFailed) && c.exit_code != 0 && detail.empty()) {
      detail = "exit " + std::to_string(c.exit_code);
    }
  }
  return detail.empty() ? phase : phase + " (" + detail + ")";
}

const k8s::PodView* PodNamed(const std::vector<k8s::PodView>& pods, const std::string& name) {
  for (const k8s::PodView& p : pods) {
    if (p.meta.name == name) return &p;
  }
  return nullptr;
}

void Line(std::ostringstream& out, const std::string& label, const std::string& value) {
  if (value.empty()) return;
  std::string padded = label + ":";
  padded.resize(std::max<size_t>(padded.size() + 1, 14), ' ');
  out << padded << Printable(value, TextLines::kOne) << "\n";
}

void Placement(std::ostringstream& out, std::vector<api::PlacementEntry> ranks, const std::vector<k8s::PodView>& pods) {
  if (ranks.empty()) return;
  std::stable_sort(ranks.begin(), ranks.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  Table t({"RANK", "NODE", "BLOCKS", "POD", "POD STATE"});
  for (const auto& e : ranks) {
    const k8s::PodView* p = PodNamed(pods, e.pod);
    t.AddRow({std::to_string(e.rank), e.node, std::to_string(e.blocks), e.pod, p ? PodState(*p) : "gone"});
  }
  out << "Placement:\n" << t.Render("  ");
}

void Conditions(std::ostringstream& out, const std::vector<api::Condition>& conditions, k8s::TimePoint now) {
  if (conditions.empty()) return;
  Table t({"TYPE", "STATUS", "REASON", "AGE", "MESSAGE"});
  for (const auto& c : conditions) {
    t.AddRow({c.type.str(), std::string(api::ToApi(c.status)), c.reason.str(),
              Age(api::FormatTime(c.last_transition_time), now), c.message});
  }
  out << "Conditions:\n" << t.Render("  ");
}

void Events(std::ostringstream& out, std::vector<k8s::EventView> events, k8s::TimePoint now) {
  if (events.empty()) {
    out << "Events:       <none>\n";
    return;
  }
  // Oldest first; RFC 3339 in UTC sorts as text.
  std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.time < b.time; });
  Table t({"AGE", "TYPE", "REASON", "COUNT", "MESSAGE"});
  for (const auto& e : events) {
    t.AddRow({Age(e.time, now), e.type, e.reason, std::to_string(e.count < 1 ? 1 : e.count), e.message});
  }
  out << "Events:\n" << t.Render("  ");
}

// A pending run's start-time estimate (issue 33) and what it rests on; for an unknown one the
// reason the controller's message gives ("estimated start unknown: ...").
std::string Estimate(const api::RunStatus& status, k8s::TimePoint now) {
  if (status.estimated_start_at) {
    std::string range;
    if (const auto& r = status.estimated_start_range) {
      range = "; likely between " + WhenWithAge(api::FormatTime(r->earliest), now) + " and " +
              WhenWithAge(api::FormatTime(r->latest), now);
    }
    return WhenWithAge(api::FormatTime(status.estimated_start_at), now) +
           ", if nothing new arrives: the queue's rules run forward over the running runs' expected ends"
           " (maxDuration, or the runtime of finished runs like them)" + range;
  }
  static constexpr std::string_view kUnknown = "estimated start unknown: ";
  if (size_t at = status.message.find(kUnknown); at != std::string::npos) {
    const std::string why = status.message.substr(at + kUnknown.size());
    return "unknown: " + why.substr(0, why.find("; "));
  }
  return "unknown (not forecast yet, or estimates are off: --estimate-interval)";
}

// A pending run's preemption record (issue 17): whom it stops, the victims of its own namespace
// by name and the others counted (issue 44: the status names no run of another namespace), and
// the nodes kept for it.
std::string Preempting(const api::RunStatus::Preemption& p) {
  std::string who;
  for (const auto& v : p.victims) who += (who.empty() ? "" : ", ") + v;
  if (p.other_victims > 0) {
    who += (who.empty() ? "" : ", ") + std::to_string(p.other_victims) +
           (p.other_victims == 1 ? " run of another namespace" : " runs of other namespaces");
  }
  std::string nodes;
  for (const auto& n : p.nodes) nodes += (nodes.empty() ? "" : ", ") + n;
  return (p.reclaim ? "reclaiming its team's share from " : "") + (who.empty() ? "runs already stopped" : who) +
         "; kept for it: " + (nodes.empty() ? "no node" : nodes) + " (fleet " + p.fleet + ")";
}

void Times(std::ostringstream& out, const api::Run& run, k8s::TimePoint now) {
  const api::RunStatus& status = run.status;
  const std::string created = run.meta.created == k8s::TimePoint{} ? "" : k8s::FormatRfc3339(run.meta.created);
  const std::string submitted = api::FormatTime(status.submitted_at);
  Line(out, "Submitted", WhenWithAge(submitted.empty() ? created : submitted, now));
  const std::pair<const char*, const std::optional<api::Time>*> times[] = {
      {"Scheduled", &status.scheduled_at}, {"Started", &status.started_at},
      {"Finished", &status.finished_at},   {"Retry after", &status.retry_after}};
  for (const auto& [label, t] : times) {
    if (*t) Line(out, label, WhenWithAge(api::FormatTime(*t), now));
  }
  const int64_t resubmissions = status.resubmissions;
  Line(out, "Attempts",
       std::to_string(resubmissions + 1) +
           (resubmissions == 0 ? std::string()
                               : " (" + std::to_string(resubmissions) + (resubmissions == 1 ? " resubmission)" : " resubmissions)")));
}

}  // namespace

std::string FormatRunDescription(const api::Run& run, const std::vector<k8s::PodView>& pods,
                                 std::vector<k8s::EventView> events, k8s::TimePoint now, const std::string& domain) {
  const api::RunStatus& status = run.status;
  const api::RunSpelling written = run.spelling.value_or(api::RunSpelling{});
  std::ostringstream out;
  Line(out, "Name", run.meta.name);
  Line(out, "Namespace", run.meta.ns);

  const int64_t priority = run.spec.priority;
  std::string prio = std::to_string(priority);
  if (status.effective_priority && *status.effective_priority != priority) {
    prio += " (effective " + std::to_string(*status.effective_priority) + ", aged while waiting)";
  }
  Line(out, "Priority", prio);

  std::string phase(api::PhaseName(status.phase));
  if (run.meta.deleting) phase += phase.empty() ? "Deleting" : " (deleting)";
  Line(out, "Phase", phase.empty() ? "Pending (not yet seen by the berth controller)" : phase);
  Line(out, "Reason", status.reason.str());
  Line(out, "Message", status.message);
  if (status.queue_position) Line(out, "Position", std::to_string(*status.queue_position) + " in the queue");
  if (api::IsPendingPhase(status.phase) && !run.meta.deleting && !run.spec.suspend && !status.reason.str().empty()) {
    Line(out, "Estimate", Estimate(status, now));
  }
  if (status.preemption) Line(out, "Preempting", Preempting(*status.preemption));
  Line(out, "Asks", Asks(run, written));
  Line(out, "Limits", Limits(written));
  Times(out, run, now);
  Line(out, "Fleet", status.fleet);
  Line(out, "Domain", domain);
  Placement(out, status.placement, pods);
  Conditions(out, status.conditions, now);
  Events(out, std::move(events), now);
  return Printable(out.str(), TextLines::kMany);  // every line above is made printable; this is the last guard
}

std::string FormatRunDescription(const k8s::json::Value& run, const std::vector<const k8s::json::Value*>& pods,
                                 const std::vector<const k8s::json::Value*>& events, k8s::TimePoint now) {
  std::vector<k8s::PodView> pod_views;
  for (const auto* p : pods) {
    if (p != nullptr) pod_views.push_back(k8s::DecodePodView(*p));
  }
  std::vector<k8s::EventView> event_views;
  for (const auto* e : events) {
    if (e != nullptr) event_views.push_back(k8s::DecodeEventView(*e));
  }
  api::RunDecodeOptions options;
  options.keep_spelling = true;
  return FormatRunDescription(api::DecodeRunLeniently(run, options), pod_views, std::move(event_views), now);
}

}  // namespace berth::cli
