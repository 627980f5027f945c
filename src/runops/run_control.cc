#include "runops/run_control.h"

#include "api/v1alpha1/codec.h"

namespace berth::runops {

namespace api = api::v1alpha1;
using k8s::Status;

namespace {

std::string Quoted(const api::Run& run) { return "run \"" + run.meta.name + "\""; }

// "Failed, Stopped" or "Succeeded".
std::string PhaseWords(const api::Run& run) {
  const std::string phase(api::PhaseName(run.status.phase));
  const std::string reason = run.status.reason.str();
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

Status CheckControl(Control c, const api::Run& run) {
  const std::string who = Quoted(run);
  auto conflict = [](const std::string& why) { return Status::Error(why, 409, "Conflict"); };
  if (run.meta.deleting) return conflict(who + " is being deleted; there is nothing to " + ControlVerb(c));
  if (api::IsTerminalPhase(run.status.phase)) {
    return conflict(who + " has already ended (" + PhaseWords(run) + "); there is nothing to " + ControlVerb(c) +
                    " (kubectl berth apply -f FILE runs it again)");
  }
  if (run.spec.stop) return conflict(who + " is already being stopped (spec.stop is true); berth-controller ends it");
  const bool suspended = run.spec.suspend;
  if (c == Control::kSuspend && suspended) {
    return conflict(who + " is already suspended (spec.suspend is true); kubectl berth resume " + run.meta.name +
                    " queues it again");
  }
  if (c == Control::kResume && !suspended) return conflict(who + " is not suspended (spec.suspend is not true)");
  return Status();
}

Status CheckControl(Control c, const k8s::json::Value& run) { return CheckControl(c, api::DecodeRunLeniently(run)); }

std::string ControlPatch(Control c, const std::string& resource_version) {
  return c == Control::kStop ? api::StopPatch(resource_version) : api::SuspendPatch(c == Control::kSuspend, resource_version);
}

k8s::Result<ControlChange> ApplyControl(k8s::Client& client, const std::string& ns, const std::string& name, Control c,
                                        int attempts) {
  const std::string path = k8s::resources::kRuns.Path(ns, name);
  ControlChange change;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    auto got = client.Get(path);
    if (!got.ok()) return Status::Error(RunErrorSentence(got.status(), ns, name), got.status().code(), got.status().reason());
    const api::Run run = api::DecodeRunLeniently(*got);
    if (Status s = CheckControl(c, run); !s.ok()) return s;
    change.phase = std::string(api::PhaseName(run.status.phase));
    auto patched = client.MergePatch(path, ControlPatch(c, run.meta.resource_version));
    if (patched.ok()) {
      change.generation = k8s::DecodeMeta(*patched).generation;
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

bool ControlDone(Control c, const api::Run& run, int64_t generation) {
  const bool ended = api::IsTerminalPhase(run.status.phase);
  if (c == Control::kStop) return ended;
  if (!Observed(run, generation)) return false;
  const bool suspended_reason = run.status.reason == api::Reason::kSuspended;
  if (c == Control::kSuspend) return ended || (run.status.phase == api::Phase::kPending && suspended_reason);
  return !suspended_reason;
}

bool ControlDone(Control c, const k8s::json::Value& run, int64_t generation) {
  return ControlDone(c, api::DecodeRunLeniently(run), generation);
}

std::string StatusLine(const api::Run& run) {
  const std::string phase(api::PhaseName(run.status.phase));
  const std::string reason = run.status.reason.str();
  std::string s = phase.empty() ? "no status yet" : phase;
  if (!reason.empty() && reason != phase) s += " (" + reason + ")";
  if (run.status.queue_position) s += ", position " + std::to_string(*run.status.queue_position) + " in the queue";
  if (!run.status.message.empty()) s += ": " + run.status.message;
  return s;
}

std::string StatusLine(const k8s::json::Value& run) { return StatusLine(api::DecodeRunLeniently(run)); }

std::string RunErrorSentence(const Status& s, const std::string& ns, const std::string& name) {
  if (s.IsNotFound()) return "run \"" + name + "\" not found in namespace \"" + ns + "\"";
  if (s.IsForbidden()) return s.message();
  if (s.IsUnauthorized()) return "the API server did not accept the credentials (401 Unauthorized): " + s.message();
  if (s.code() == 0) return s.message();
  return s.ToString();
}

bool Observed(const api::Run& run, int64_t generation) { return run.status.observed_generation >= generation; }

bool Observed(const k8s::json::Value& run, int64_t generation) { return Observed(api::DecodeRunLeniently(run), generation); }

}  // namespace berth::runops
