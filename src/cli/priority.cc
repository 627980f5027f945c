#include "cli/priority.h"

#include "api/v1alpha1/codec.h"
#include "base/priority.h"

namespace berth::cli {

namespace api = api::v1alpha1;
using k8s::Status;

k8s::Result<int> ParsePriority(const std::string& text) {
  const std::string why = "invalid priority \"" + text + "\": it must be a whole number from 0 (lowest) to 100 (highest)";
  bool negative = !text.empty() && text[0] == '-';
  size_t start = negative ? 1 : 0;
  if (text.size() == start || text.size() - start > 4) return Status::Error(why);
  int v = 0;
  for (size_t i = start; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return Status::Error(why);
    v = v * 10 + (text[i] - '0');
  }
  if (negative || v > base::kMaxPriority) return Status::Error(why);
  return v;
}

k8s::Result<PriorityChange> ChangePriority(k8s::Client& client, const std::string& ns, const std::string& name,
                                           int value, int attempts) {
  const std::string path = k8s::resources::kRuns.Path(ns, name);
  PriorityChange change;
  change.new_priority = value;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    auto got = client.Get(path);
    if (!got.ok()) return Status::Error(RunErrorSentence(got.status(), ns, name), got.status().code(), got.status().reason());
    const api::Run run = api::DecodeRunLeniently(*got);
    change.old_priority = run.spec.priority;  // the CRD's default when unset
    if (change.old_priority == value) {
      change.generation = run.meta.generation;
      change.changed = false;
      return change;
    }
    auto patched = client.MergePatch(path, api::PriorityPatch(value, run.meta.resource_version));
    if (patched.ok()) {
      change.generation = k8s::DecodeMeta(*patched).generation;
      change.changed = true;
      return change;
    }
    if (!patched.status().IsConflict()) {
      return Status::Error(RunErrorSentence(patched.status(), ns, name), patched.status().code(), patched.status().reason());
    }
    ++change.conflicts;
  }
  return Status::Error("run \"" + name + "\" in namespace \"" + ns + "\" kept changing while its priority was written (" +
                           std::to_string(attempts) + " conflicts); try again",
                       409, "Conflict");
}

std::string CapNote(const api::Run& run) {
  const std::string& message = run.status.message;
  const size_t at = message.find("priority capped at ");
  return at == std::string::npos ? std::string() : message.substr(at);
}

bool Queued(const api::Run& run) { return api::IsPendingPhase(run.status.phase); }

std::string DescribePlace(const api::Run& run) {
  const std::string phase(api::PhaseName(run.status.phase));
  if (api::IsPlacedPhase(run.status.phase)) return "admitted (" + phase + ")";
  if (api::IsTerminalPhase(run.status.phase)) return "finished (" + phase + ")";
  if (run.status.queue_position) return "position " + std::to_string(*run.status.queue_position) + " in the queue";
  if (run.status.phase == api::Phase::kPending) return "pending, not in the top 100 of the queue";
  return "pending, not placed in the queue yet";
}

std::string CapNote(const k8s::json::Value& run) { return CapNote(api::DecodeRunLeniently(run)); }
bool Queued(const k8s::json::Value& run) { return Queued(api::DecodeRunLeniently(run)); }
std::string DescribePlace(const k8s::json::Value& run) { return DescribePlace(api::DecodeRunLeniently(run)); }

}  // namespace berth::cli
