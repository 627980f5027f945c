#include "runops/log_targets.h"

#include <algorithm>
#include <iterator>
#include <map>

#include "api/v1alpha1/codec.h"
#include "k8s/client.h"

namespace berth::runops {

namespace api = api::v1alpha1;
using k8s::Status;

namespace {

constexpr const char* kRunLabel = "berth.dev/run";
constexpr const char* kRankLabel = "berth.dev/rank";
constexpr const char* kAttemptLabel = "berth.dev/attempt";

// A label's value as a whole number >= 0, or -1.
int64_t LabelNumber(const k8s::PodView& pod, const char* label) {
  const std::string v = pod.meta.Label(label);
  if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(v);
}

bool OwnedBy(const k8s::PodView& pod, const std::string& uid) {
  for (const auto& o : pod.meta.owners) {
    if (o.uid == uid && o.controller) return true;
  }
  return false;
}

std::string RanksText(int64_t nodes) {
  return nodes == 1 ? std::string("one rank (0)") : std::to_string(nodes) + " ranks (0 to " + std::to_string(nodes - 1) + ")";
}

// rank -> Pod of each attempt.
using ByAttempt = std::map<int64_t, std::map<int64_t, const k8s::PodView*>>;

ByAttempt PodsByAttempt(const api::Run& run, const std::vector<k8s::PodView>& pods) {
  ByAttempt by_attempt;
  for (const k8s::PodView& p : pods) {
    if (!OwnedBy(p, run.meta.uid) || p.meta.Label(kRunLabel) != run.meta.name) continue;
    const int64_t a = LabelNumber(p, kAttemptLabel), r = LabelNumber(p, kRankLabel);
    if (a < 0 || r < 0) continue;
    by_attempt[a][r] = &p;
  }
  return by_attempt;
}

}  // namespace

k8s::Result<LogSelection> SelectLogTargets(const api::Run& run, const std::vector<k8s::PodView>& pods,
                                           std::optional<int> rank) {
  const std::string& name = run.meta.name;
  const int64_t nodes = std::max<int64_t>(run.spec.nodes, 1);
  if (rank && (*rank < 0 || *rank >= nodes)) {
    return Status::Error("run \"" + name + "\" has " + RanksText(nodes) + ": --rank " + std::to_string(*rank) +
                         " is out of range");
  }
  const std::string phase(api::PhaseName(run.status.phase));
  const std::string reason = run.status.reason.str();
  const std::string words = (phase.empty() ? std::string("no status yet") : phase) +
                            (reason.empty() || reason == phase ? "" : ", " + reason);
  const int64_t current = run.status.resubmissions;
  ByAttempt by_attempt = PodsByAttempt(run, pods);
  if (by_attempt.empty()) {
    const bool ended = api::IsTerminalPhase(run.status.phase);
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
    const k8s::PodView& pod = *it->second;
    sel.targets.push_back(LogTarget{static_cast<int>(r), pod.meta.name, pod.containers.empty() ? "" : pod.containers[0]});
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

k8s::Result<LogSelection> SelectLogTargets(const k8s::json::Value& run, const std::vector<const k8s::json::Value*>& pods,
                                           std::optional<int> rank) {
  std::vector<k8s::PodView> views;
  for (const k8s::json::Value* p : pods) {
    if (p != nullptr) views.push_back(k8s::DecodePodView(*p));
  }
  return SelectLogTargets(api::DecodeRunLeniently(run), views, rank);
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
