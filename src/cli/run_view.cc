#include "cli/run_view.h"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <utility>

#include "api/v1alpha1/enums.h"
#include "cli/format.h"
#include "k8s/timefmt.h"

namespace berth::cli {
namespace {

namespace json = k8s::json;

// A field that is a string or a number, as text ("4", "16Gi", "500m"); empty when absent.
std::string Scalar(const json::Value* v) {
  if (v == nullptr) return "";
  if (v->IsString()) return std::string(v->GetString(), v->GetStringLength());
  if (v->IsInt64()) return std::to_string(v->GetInt64());
  if (v->IsNumber()) {
    std::ostringstream s;
    s << v->GetDouble();
    return s.str();
  }
  if (v->IsBool()) return v->GetBool() ? "true" : "false";
  return "";
}

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

std::vector<std::string> Strings(const json::Value* arr) {
  std::vector<std::string> out;
  if (arr == nullptr || !arr->IsArray()) return out;
  for (const auto& v : arr->GetArray()) {
    std::string s = Scalar(&v);
    if (!s.empty()) out.push_back(s);
  }
  return out;
}

// "2 nodes, each 8 CPU, 64Gi memory, 8 GPU; fleets a100, h100" (what the run asks for).
std::string Asks(const json::Value& spec) {
  const int64_t nodes = spec.HasMember("nodes") ? json::GetInt(spec, "nodes", 1) : 1;
  std::vector<std::string> res;
  if (const json::Value* r = json::Find(spec, {"resources"})) {
    if (std::string cpu = Scalar(json::Find(*r, {"cpu"})); !cpu.empty()) res.push_back(cpu + " CPU");
    if (std::string mem = Scalar(json::Find(*r, {"memory"})); !mem.empty()) res.push_back(mem + " memory");
    if (std::string gpu = Scalar(json::Find(*r, {"gpu"})); !gpu.empty() && gpu != "0") res.push_back(gpu + " GPU");
  }
  std::string out = std::to_string(nodes) + (nodes == 1 ? " node" : " nodes");
  out += res.empty() ? std::string(", no resources named") : ", each " + Join(res, ", ");
  auto fleets = Strings(json::Find(spec, {"fleets"}));
  out += fleets.empty() ? std::string("; any fleet") : "; fleets " + Join(fleets, ", ");
  return out;
}

// "maxDuration 4h; retry on no-capacity, error for 1h; startTimeout 10m; ttlSecondsAfterFinished 600".
std::string Limits(const json::Value& spec) {
  std::vector<std::string> parts;
  if (std::string d = Scalar(json::Find(spec, {"maxDuration"})); !d.empty()) parts.push_back("maxDuration " + d);
  if (const json::Value* retry = json::Find(spec, {"retry"}); retry != nullptr && retry->IsObject()) {
    auto on = Strings(json::Find(*retry, {"onEvents"}));
    std::string d = Scalar(json::Find(*retry, {"duration"}));
    parts.push_back("retry on " + (on.empty() ? std::string("no-capacity, interruption, error") : Join(on, ", ")) +
                    (d.empty() ? std::string(" for 1h") : d == "off" ? std::string(" for ever") : " for " + d));
  }
  if (std::string d = Scalar(json::Find(spec, {"startTimeout"})); !d.empty()) parts.push_back("startTimeout " + d);
  if (std::string t = Scalar(json::Find(spec, {"ttlSecondsAfterFinished"})); !t.empty()) {
    parts.push_back("ttlSecondsAfterFinished " + t);
  }
  return Join(parts, "; ");
}

// What a user wants to know of a Pod: Running, Succeeded, "Failed (exit 3)", "Failed (OutOfcpu)",
// "Pending (ContainerCreating)", "Terminating".
std::string PodState(const json::Value& pod) {
  if (json::Find(pod, {"metadata", "deletionTimestamp"}) != nullptr) return "Terminating";
  const json::Value* status = json::Find(pod, {"status"});
  std::string phase = status ? json::GetString(*status, "phase") : "";
  if (phase.empty()) phase = api::v1alpha1::ToApi(api::v1alpha1::PodPhase::kPending);
  std::string detail = status ? json::GetString(*status, "reason") : "";
  if (const json::Value* cs = status ? json::Find(*status, {"containerStatuses"}) : nullptr; cs && cs->IsArray()) {
    for (const auto& c : cs->GetArray()) {
      if (const json::Value* w = json::Find(c, {"state", "waiting"}); w != nullptr && detail.empty()) {
        detail = json::GetString(*w, "reason");
      }
      if (const json::Value* t = json::Find(c, {"state", "terminated"}); t != nullptr && api::v1alpha1::IsPodPhase(phase, api::v1alpha1::PodPhase::kFailed)) {
        const int64_t code = json::GetInt(*t, "exitCode");
        if (code != 0 && detail.empty()) detail = "exit " + std::to_string(code);
      }
    }
  }
  return detail.empty() ? phase : phase + " (" + detail + ")";
}

const json::Value* PodNamed(const std::vector<const json::Value*>& pods, const std::string& name) {
  for (const json::Value* p : pods) {
    if (p != nullptr && json::GetString(json::Find(*p, {"metadata", "name"})) == name) return p;
  }
  return nullptr;
}

std::string EventTime(const json::Value& e) {
  for (const char* key : {"lastTimestamp", "eventTime", "firstTimestamp"}) {
    std::string t = json::GetString(e, key);
    if (!t.empty()) return t;
  }
  return json::GetString(json::Find(e, {"metadata", "creationTimestamp"}));
}

void Line(std::ostringstream& out, const std::string& label, const std::string& value) {
  if (value.empty()) return;
  std::string padded = label + ":";
  padded.resize(std::max<size_t>(padded.size() + 1, 14), ' ');
  out << padded << value << "\n";
}

void Placement(std::ostringstream& out, const json::Value* placement, const std::vector<const json::Value*>& pods) {
  if (placement == nullptr || !placement->IsArray() || placement->GetArray().Empty()) return;
  std::vector<const json::Value*> ranks;
  for (const auto& e : placement->GetArray()) ranks.push_back(&e);
  std::stable_sort(ranks.begin(), ranks.end(), [](const json::Value* a, const json::Value* b) {
    return json::GetInt(*a, "rank") < json::GetInt(*b, "rank");
  });
  Table t({"RANK", "NODE", "BLOCKS", "POD", "POD STATE"});
  for (const json::Value* e : ranks) {
    const std::string pod = json::GetString(*e, "pod");
    const json::Value* p = PodNamed(pods, pod);
    t.AddRow({std::to_string(json::GetInt(*e, "rank")), json::GetString(*e, "node"),
              std::to_string(json::GetInt(*e, "blocks")), pod, p ? PodState(*p) : "gone"});
  }
  out << "Placement:\n" << t.Render("  ");
}

void Conditions(std::ostringstream& out, const json::Value* conditions, k8s::TimePoint now) {
  if (conditions == nullptr || !conditions->IsArray() || conditions->GetArray().Empty()) return;
  Table t({"TYPE", "STATUS", "REASON", "AGE", "MESSAGE"});
  for (const auto& c : conditions->GetArray()) {
    t.AddRow({json::GetString(c, "type"), json::GetString(c, "status"), json::GetString(c, "reason"),
              Age(json::GetString(c, "lastTransitionTime"), now), json::GetString(c, "message")});
  }
  out << "Conditions:\n" << t.Render("  ");
}

void Events(std::ostringstream& out, std::vector<const json::Value*> events, k8s::TimePoint now) {
  events.erase(std::remove(events.begin(), events.end(), nullptr), events.end());
  if (events.empty()) {
    out << "Events:       <none>\n";
    return;
  }
  // Oldest first; RFC 3339 in UTC sorts as text.
  std::stable_sort(events.begin(), events.end(),
                   [](const json::Value* a, const json::Value* b) { return EventTime(*a) < EventTime(*b); });
  Table t({"AGE", "TYPE", "REASON", "COUNT", "MESSAGE"});
  for (const json::Value* e : events) {
    const int64_t count = json::GetInt(*e, "count", 1);
    t.AddRow({Age(EventTime(*e), now), json::GetString(*e, "type"), json::GetString(*e, "reason"),
              std::to_string(count < 1 ? 1 : count), json::GetString(*e, "message")});
  }
  out << "Events:\n" << t.Render("  ");
}

}  // namespace

std::string FormatRunDescription(const json::Value& run, const std::vector<const json::Value*>& pods,
                                 const std::vector<const json::Value*>& events, k8s::TimePoint now) {
  static const json::Value kEmpty(rapidjson::kObjectType);
  const json::Value* meta = json::Find(run, {"metadata"});
  const json::Value& spec = json::Find(run, {"spec"}) ? *json::Find(run, {"spec"}) : kEmpty;
  const json::Value& status = json::Find(run, {"status"}) ? *json::Find(run, {"status"}) : kEmpty;
  std::ostringstream out;
  Line(out, "Name", meta ? json::GetString(*meta, "name") : "");
  Line(out, "Namespace", meta ? json::GetString(*meta, "namespace") : "");

  const int64_t priority = spec.HasMember("priority") ? json::GetInt(spec, "priority", 50) : 50;
  std::string prio = std::to_string(priority);
  if (status.HasMember("effectivePriority") && json::GetInt(status, "effectivePriority", priority) != priority) {
    prio += " (effective " + std::to_string(json::GetInt(status, "effectivePriority")) + ", aged while waiting)";
  }
  Line(out, "Priority", prio);

  std::string phase = json::GetString(status, "phase");
  if (meta != nullptr && meta->HasMember("deletionTimestamp")) phase += phase.empty() ? "Deleting" : " (deleting)";
  Line(out, "Phase", phase.empty() ? "Pending (not yet seen by the berth controller)" : phase);
  Line(out, "Reason", json::GetString(status, "reason"));
  Line(out, "Message", json::GetString(status, "message"));
  if (status.HasMember("queuePosition")) {
    Line(out, "Position", std::to_string(json::GetInt(status, "queuePosition")) + " in the queue");
  }
  Line(out, "Asks", Asks(spec));
  Line(out, "Limits", Limits(spec));

  const std::string created = meta ? json::GetString(*meta, "creationTimestamp") : "";
  const std::string submitted = json::GetString(status, "submittedAt");
  Line(out, "Submitted", WhenWithAge(submitted.empty() ? created : submitted, now));
  if (std::string s = json::GetString(status, "scheduledAt"); !s.empty()) Line(out, "Scheduled", WhenWithAge(s, now));
  if (std::string s = json::GetString(status, "startedAt"); !s.empty()) Line(out, "Started", WhenWithAge(s, now));
  if (std::string s = json::GetString(status, "finishedAt"); !s.empty()) Line(out, "Finished", WhenWithAge(s, now));
  if (std::string s = json::GetString(status, "retryAfter"); !s.empty()) Line(out, "Retry after", WhenWithAge(s, now));
  const int64_t resubmissions = json::GetInt(status, "resubmissions");
  Line(out, "Attempts",
       std::to_string(resubmissions + 1) +
           (resubmissions == 0 ? std::string()
                               : " (" + std::to_string(resubmissions) + (resubmissions == 1 ? " resubmission)" : " resubmissions)")));
  Line(out, "Fleet", json::GetString(status, "fleet"));
  Placement(out, json::Find(status, {"placement"}), pods);
  Conditions(out, json::Find(status, {"conditions"}), now);
  Events(out, events, now);
  return out.str();
}

}  // namespace berth::cli
