#include "runops/run_control.h"

#include "api/v1alpha1/enums.h"

namespace berth::runops {

namespace json = k8s::json;
using k8s::Status;

namespace {

bool SpecBool(const json::Value& run, const char* field) {
  const json::Value* v = json::Find(run, {"spec", field});
  return v != nullptr && v->IsBool() && v->GetBool();
}

std::string Quoted(const json::Value& run) { return "run \"" + json::GetString(json::Find(run, {"metadata", "name"})) + "\""; }

// "Failed, Stopped" or "Succeeded".
std::string PhaseWords(const json::Value& run) {
  const std::string phase = json::GetString(json::Find(run, {"status", "phase"}));
  const std::string reason = json::GetString(json::Find(run, {"status", "reason"}));
  return phase + (reason.empty() || reason == phase ? "" : ", " + reason);
}

}  // namespace

const char* ControlVerb(Control c) {
  switch (c) {
    case Control::kStop: return "stop";
    case Control::kSuspend: return "suspend";
    case Control::kResume: return "resume";
  }
  return "";
}

Status CheckControl(Control c, const json::Value& run) {
  const std::string who = Quoted(run);
  const std::string phase = json::GetString(json::Find(run, {"status", "phase"}));
  auto conflict = [](const std::string& why) { return Status::Error(why, 409, "Conflict"); };
  if (json::Find(run, {"metadata", "deletionTimestamp"}) != nullptr) {
    return conflict(who + " is being deleted; there is nothing to " + ControlVerb(c));
  }
  if (api::v1alpha1::IsTerminalPhase(phase)) {
    return conflict(who + " has already ended (" + PhaseWords(run) + "); there is nothing to " + ControlVerb(c) +
                    " (kubectl berth apply -f FILE runs it again)");
  }
  if (SpecBool(run, "stop")) {
    return conflict(who + " is already being stopped (spec.stop is true); berth-controller ends it");
  }
  const bool suspended = SpecBool(run, "suspend");
  if (c == Control::kSuspend && suspended) {
    return conflict(who + " is already suspended (spec.suspend is true); kubectl berth resume " +
                    json::GetString(json::Find(run, {"metadata", "name"})) + " queues it again");
  }
  if (c == Control::kResume && !suspended) return conflict(who + " is not suspended (spec.suspend is not true)");
  return Status();
}

std::string ControlPatch(Control c, const std::string& resource_version) {
  const std::string field = c == Control::kStop ? R"("stop":true)" : c == Control::kSuspend ? R"("suspend":true)" : R"("suspend":false)";
  return R"({"metadata":{"resourceVersion":)" + json::Quote(resource_version) + R"(},"spec":{)" + field + "}}";
}

k8s::Result<ControlChange> ApplyControl(k8s::Client& client, const std::string& ns, const std::string& name, Control c,
                                        int attempts, const std::string& bearer_token) {
  const std::string path = k8s::resources::kRuns.Path(ns, name);
  ControlChange change;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    auto run = client.Get(path, bearer_token);
    if (!run.ok()) return Status::Error(RunErrorSentence(run.status(), ns, name), run.status().code(), run.status().reason());
    if (Status s = CheckControl(c, *run); !s.ok()) return s;
    change.phase = json::GetString(json::Find(*run, {"status", "phase"}));
    const std::string rv = json::GetString(json::Find(*run, {"metadata", "resourceVersion"}));
    auto patched = client.MergePatch(path, ControlPatch(c, rv), bearer_token);
    if (patched.ok()) {
      const json::Value* g = json::Find(*patched, {"metadata", "generation"});
      change.generation = g != nullptr && g->IsInt64() ? g->GetInt64() : 0;
      return change;
    }
    if (!patched.status().IsConflict()) {
      return Status::Error(RunErrorSentence(patched.status(), ns, name), patched.status().code(), patched.status().reason());
    }
    ++change.conflicts;
  }
  return Status::Error("run \"" + name + "\" in namespace \"" + ns + "\" kept changing while it was asked to " +
                           ControlVerb(c) + " (" + std::to_string(attempts) + " conflicts); try again",
                       409, "Conflict");
}

bool ControlDone(Control c, const json::Value& run, int64_t generation) {
  const std::string phase = json::GetString(json::Find(run, {"status", "phase"}));
  const std::string reason = json::GetString(json::Find(run, {"status", "reason"}));
  const bool ended = api::v1alpha1::IsTerminalPhase(phase);
  if (c == Control::kStop) return ended;
  if (!Observed(run, generation)) return false;
  if (c == Control::kSuspend) return ended || (api::v1alpha1::IsPhase(phase, api::v1alpha1::Phase::kPending) && api::v1alpha1::IsReason(reason, api::v1alpha1::Reason::kSuspended));
  return !api::v1alpha1::IsReason(reason, api::v1alpha1::Reason::kSuspended);
}

std::string StatusLine(const json::Value& run) {
  const std::string phase = json::GetString(json::Find(run, {"status", "phase"}));
  const std::string reason = json::GetString(json::Find(run, {"status", "reason"}));
  const std::string message = json::GetString(json::Find(run, {"status", "message"}));
  std::string s = phase.empty() ? "no status yet" : phase;
  if (!reason.empty() && reason != phase) s += " (" + reason + ")";
  if (const json::Value* pos = json::Find(run, {"status", "queuePosition"}); pos != nullptr && pos->IsInt64()) {
    s += ", position " + std::to_string(pos->GetInt64()) + " in the queue";
  }
  if (!message.empty()) s += ": " + message;
  return s;
}

std::string RunErrorSentence(const Status& s, const std::string& ns, const std::string& name) {
  if (s.IsNotFound()) return "run \"" + name + "\" not found in namespace \"" + ns + "\"";
  if (s.IsForbidden()) return s.message();
  if (s.IsUnauthorized()) return "the API server did not accept the credentials (401 Unauthorized): " + s.message();
  if (s.code() == 0) return s.message();
  return s.ToString();
}

bool Observed(const json::Value& run, int64_t generation) {
  const json::Value* og = json::Find(run, {"status", "observedGeneration"});
  return og != nullptr && og->IsInt64() && og->GetInt64() >= generation;
}

}  // namespace berth::runops
