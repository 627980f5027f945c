#include "controller/leader_pod_label.h"

#include <spdlog/spdlog.h>

#include <regex>

#include "k8s/json.h"

namespace berth::controller {

k8s::Status ParseLeaderPod(const std::string& value, std::string* ns, std::string* name) {
  static const std::regex kDnsLabel("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");
  static const std::regex kDnsSubdomain("[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?");
  const auto slash = value.find('/');
  if (slash == std::string::npos) {
    return k8s::Status::Error("must be NAMESPACE/NAME (the Pod this controller runs in), got \"" + value + "\"");
  }
  std::string n = value.substr(0, slash), p = value.substr(slash + 1);
  if (!std::regex_match(n, kDnsLabel) || !std::regex_match(p, kDnsSubdomain)) {
    return k8s::Status::Error("must be NAMESPACE/NAME with a namespace and a Pod name as Kubernetes spells them, got \"" +
                              value + "\"");
  }
  *ns = std::move(n);
  *name = std::move(p);
  return k8s::Status();
}

LeaderPodLabel::LeaderPodLabel(k8s::ClientPtr client, const k8s::Clock& clock, std::string ns, std::string name)
    : client_(std::move(client)), clock_(clock), ns_(std::move(ns)), name_(std::move(name)) {}

LeaderPodLabel::~LeaderPodLabel() { Stop(); }

k8s::Status LeaderPodLabel::Patch(bool leader) {
  const std::string body = std::string(R"({"metadata":{"labels":{)") + k8s::json::Quote(kLeaderPodLabel) + ":" +
                           (leader ? R"("true")" : "null") + "}}}";
  return client_->MergePatchNoAnswer("/api/v1/namespaces/" + ns_ + "/pods/" + name_, body);
}

void LeaderPodLabel::Clear() {
  k8s::Status s;
  for (int attempt = 0; attempt < 3; ++attempt) {
    s = Patch(false);
    if (s.ok()) return;
    if (s.code() == 404) break;  // no such Pod: nothing to clear
  }
  spdlog::warn("could not remove the label {} from Pod {}/{}: {}", kLeaderPodLabel, ns_, name_, s.message());
}

void LeaderPodLabel::SetInBackground(std::chrono::milliseconds retry) {
  Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = false;
  }
  setter_ = std::thread([this, retry] {
    for (;;) {
      k8s::Status s = Patch(true);
      if (s.ok()) {
        spdlog::info("labelled Pod {}/{} {}=true: the queue API's Service now selects it", ns_, name_, kLeaderPodLabel);
        return;
      }
      spdlog::warn("could not label Pod {}/{} {}=true (the queue API's Service selects the leader by it): {}; "
                   "trying again",
                   ns_, name_, kLeaderPodLabel, s.message());
      std::unique_lock<std::mutex> lock(mu_);
      clock_.WaitFor(lock, cv_, retry, [this] { return stopping_; });
      if (stopping_) return;
    }
  });
}

void LeaderPodLabel::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (setter_.joinable()) setter_.join();
}

}  // namespace berth::controller
