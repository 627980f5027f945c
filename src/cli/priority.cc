#include "cli/priority.h"

#include "base/priority.h"
#include "api/v1alpha1/enums.h"

namespace berth::cli {

namespace json = k8s::json;
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
    auto run = client.Get(path);
    if (!run.ok()) return Status::Error(RunErrorSentence(run.status(), ns, name), run.status().code(), run.status().reason());
    const json::Value* p = json::Find(*run, {"spec", "priority"});
    change.old_priority = p != nullptr && p->IsInt64() ? p->GetInt64() : 50;  // the CRD's default
    const std::string rv = json::GetString(json::Find(*run, {"metadata", "resourceVersion"}));
    if (change.old_priority == value) {
      const json::Value* g = json::Find(*run, {"metadata", "generation"});
      change.generation = g != nullptr && g->IsInt64() ? g->GetInt64() : 0;
      change.changed = false;
      return change;
    }
    const std::string body = R"({"metadata":{"resourceVersion":)" + json::Quote(rv) + R"(},"spec":{"priority":)" +
                             std::to_string(value) + "}}";
    auto patched = client.MergePatch(path, body);
    if (patched.ok()) {
      const json::Value* g = json::Find(*patched, {"metadata", "generation"});
      change.generation = g != nullptr && g->IsInt64() ? g->GetInt64() : 0;
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

std::string CapNote(const json::Value& run) {
  const std::string message = json::GetString(json::Find(run, {"status", "message"}));
  const size_t at = message.find("priority capped at ");
  return at == std::string::npos ? std::string() : message.substr(at);
}

bool Queued(const json::Value& run) {
  const std::string phase = json::GetString(json::Find(run, {"status", "phase"}));
  return phase.empty() || api::v1alpha1::IsPhase(phase, api::v1alpha1::Phase::kPending);
}

std::string DescribePlace(const json::Value& run) {
  const json::Value* status = json::Find(run, {"status"});
  const std::string phase = status != nullptr ? json::GetString(*status, "phase") : "";
  if (api::v1alpha1::IsPhase(phase, api::v1alpha1::Phase::kScheduled) || api::v1alpha1::IsPhase(phase, api::v1alpha1::Phase::kRunning)) return "admitted (" + phase + ")";
  if (api::v1alpha1::IsTerminalPhase(phase)) return "finished (" + phase + ")";
  const json::Value* pos = status != nullptr ? json::Find(*status, {"queuePosition"}) : nullptr;
  if (pos != nullptr && pos->IsInt64()) return "position " + std::to_string(pos->GetInt64()) + " in the queue";
  if (api::v1alpha1::IsPhase(phase, api::v1alpha1::Phase::kPending)) return "pending, not in the top 100 of the queue";
  return "pending, not placed in the queue yet";
}

}  // namespace berth::cli
