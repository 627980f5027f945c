#include "runops/log_targets.h"

#include <iterator>
#include <map>

#include "api/v1alpha1/enums.h"
#include "k8s/client.h"

namespace berth::runops {

namespace json = k8s::json;
using k8s::Status;

namespace {

constexpr const char* kRunLabel = "berth.dev/run";
constexpr const char* kRankLabel = "berth.dev/rank";
constexpr const char* kAttemptLabel = "berth.dev/attempt";

// A label's value as a whole number >= 0, or -1.
int64_t LabelNumber(const json::Value& obj, const char* label) {
  const std::string v = json::GetString(json::Find(obj, {"metadata", "labels", label}));
  if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(v);
}

bool OwnedBy(const json::Value& pod, const std::string& uid) {
  const json::Value* owners = json::Find(pod, {"metadata", "ownerReferences"});
  if (owners == nullptr || !owners->IsArray()) return false;
  for (const auto& o : owners->GetArray()) {
    if (json::GetString(o, "uid") == uid && json::GetBool(o, "controller")) return true;
  }
  return false;
}

std::string FirstContainer(const json::Value& pod) {
  const json::Value* cs = json::Find(pod, {"spec", "containers"});
  if (cs == nullptr || !cs->IsArray() || cs->GetArray().Empty()) return "";
  return json::GetString(cs->GetArray()[0], "name");
}

}  // namespace

k8s::Result<LogSelection> SelectLogTargets(const json::Value& run, const std::vector<const json::Value*>& pods,
                                           std::optional<int> rank) {
  const std::string name = json::GetString(json::Find(run, {"metadata", "name"}));
  const std::string uid = json::GetString(json::Find(run, {"metadata", "uid"}));
  const json::Value* n = json::Find(run, {"spec", "nodes"});
  const int64_t nodes = n != nullptr && n->IsInt64() && n->GetInt64() >= 1 ? n->GetInt64() : 1;
  if (rank && (*rank < 0 || *rank >= nodes)) {
    return Status::Error("run \"" + name + "\" has " +
                         (nodes == 1 ? std::string("one rank (0)") : std::to_string(nodes) + " ranks (0 to " + std::to_string(nodes - 1) + ")") +
                         ": --rank " + std::to_string(*rank) + " is out of range");
  }
  const std::string phase = json::GetString(json::Find(run, {"status", "phase"}));
  const std::string reason = json::GetString(json::Find(run, {"status", "reason"}));
  const std::string words = (phase.empty() ? std::string("no status yet") : phase) +
                            (reason.empty() || reason == phase ? "" : ", " + reason);
  const json::Value* resub = json::Find(run, {"status", "resubmissions"});
  const int64_t current = resub != nullptr && resub->IsInt64() ? resub->GetInt64() : 0;
  // rank -> Pod of each attempt.
  std::map<int64_t, std::map<int64_t, const json::Value*>> by_attempt;
  for (const json::Value* p : pods) {
    if (p == nullptr || !OwnedBy(*p, uid) || json::GetString(json::Find(*p, {"metadata", "labels", kRunLabel})) != name) continue;
    const int64_t a = LabelNumber(*p, kAttemptLabel), r = LabelNumber(*p, kRankLabel);
    if (a < 0 || r < 0) continue;
    by_attempt[a][r] = p;
  }
  if (by_attempt.empty()) {
    const bool ended = api::v1alpha1::IsTerminalPhase(phase);
    return Status::Error("run \"" + name + "\" has no Pods " + (ended ? "any more" : "yet") + " (" + words + ")");
  }
  LogSelection sel;
  auto chosen = by_attempt.find(current);
  if (chosen == by_attempt.end()) {
    chosen = std::prev(by_attempt.end());
    sel.note = "run \"" + name + "\"'s current attempt (" + std::to_string(current + 1) + ") has no Pods yet (" + words +
               "); showing attempt " + std::to_string(chosen->first + 1);
  }
  std::vector<std::string> missing;
  for (int64_t r = 0; r < nodes; ++r) {
    if (rank && r != *rank) continue;
    auto it = chosen->second.find(r);
    if (it == chosen->second.end()) {
      missing.push_back(std::to_string(r));
      continue;
    }
    sel.targets.push_back(LogTarget{static_cast<int>(r), json::GetString(json::Find(*it->second, {"metadata", "name"})),
                                    FirstContainer(*it->second)});
  }
  if (sel.targets.empty()) {
    return Status::Error("run \"" + name + "\" has no Pod for rank " + (rank ? std::to_string(*rank) : missing.front()) +
                         " yet (" + words + ")");
  }
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size(); ++i) list += (i ? ", " : "") + missing[i];
    sel.note += (sel.note.empty() ? "" : "; ") + std::string("no Pod yet for rank ") + list;
  }
  return sel;
}

std::vector<std::string> SplitLog(const std::string& body) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < body.size()) {
    size_t nl = body.find('\n', start);
    if (nl == std::string::npos) {
      lines.push_back(body.substr(start));
      break;
    }
    lines.push_back(body.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

std::string LogPath(const std::string& ns, const LogTarget& t, bool follow, const std::string& since_time) {
  std::string p = "/api/v1/namespaces/" + k8s::UrlEncode(ns) + "/pods/" + k8s::UrlEncode(t.pod) +
                  "/log?container=" + k8s::UrlEncode(t.container);
  if (follow) p += "&follow=true&timestamps=true";
  if (!since_time.empty()) p += "&sinceTime=" + k8s::UrlEncode(since_time);
  return p;
}

}  // namespace berth::runops
