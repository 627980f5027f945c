#include "controller/leader_election.h"

#include <unistd.h>

#include <random>

#include <spdlog/spdlog.h>

#include "k8s/timefmt.h"

namespace berth::controller {

namespace json = k8s::json;
using k8s::resources::kLeases;

std::string DefaultIdentity() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::mt19937_64 rng(std::random_device{}());
  char suffix[17];
  std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(rng()));
  return std::string(host) + "_" + suffix;
}

LeaderElector::LeaderElector(k8s::ClientPtr client, const k8s::Clock& clock, LeaderElectionConfig config)
    : client_(std::move(client)), clock_(clock), config_(std::move(config)) {
  if (config_.identity.empty()) config_.identity = DefaultIdentity();
}

LeaderElector::~LeaderElector() { Release(); }

bool LeaderElector::StillLeading() const {
  if (!leader_) return false;
  auto now = clock_.Monotonic().time_since_epoch();
  return std::chrono::nanoseconds(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count() -
                                  last_renew_ns_.load()) < config_.renew_deadline;
}

bool LeaderElector::TryAcquireOrRenew() {
  const std::string now = k8s::FormatRfc3339Micro(clock_.Now());
  // Rounded up: other candidates wait this long, which must not be shorter than the renew deadline
  // this leader trusts (truncating 2.9 s to 2 s would let one take over while we still lead).
  const int64_t duration_s = std::max<int64_t>(1, std::chrono::ceil<std::chrono::seconds>(config_.lease_duration).count());
  const std::string path = kLeases.Path(config_.ns, config_.name);
  auto got = client_->Get(path);
  if (!got.ok()) {
    if (!got.status().IsNotFound()) {
      spdlog::warn("leader election: cannot read lease {}/{}: {}", config_.ns, config_.name, got.status().ToString());
      return false;
    }
    std::string body = R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":)" + json::Quote(config_.name) +
                       R"(,"namespace":)" + json::Quote(config_.ns) + R"(},"spec":{"holderIdentity":)" +
                       json::Quote(config_.identity) + R"(,"leaseDurationSeconds":)" + std::to_string(duration_s) +
                       R"(,"acquireTime":)" + json::Quote(now) + R"(,"renewTime":)" + json::Quote(now) +
                       R"(,"leaseTransitions":0}})";
    auto created = client_->Create(kLeases.Path(config_.ns), body);
    if (!created.ok()) return false;
    observed_holder_ = config_.identity;
    observed_renew_ = now;
    observed_at_ = clock_.Monotonic();
    last_renew_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(observed_at_.time_since_epoch()).count();
    return true;
  }
  const json::Value* spec = json::Find(*got, {"spec"});
  std::string holder = spec ? json::GetString(*spec, "holderIdentity") : "";
  std::string renew = spec ? json::GetString(*spec, "renewTime") : "";
  std::string acquire = spec ? json::GetString(*spec, "acquireTime") : "";
  int64_t transitions = spec ? json::GetInt(*spec, "leaseTransitions") : 0;
  int64_t their_duration_s = spec ? json::GetInt(*spec, "leaseDurationSeconds", duration_s) : duration_s;
  const base::MonoTime steady_now = clock_.Monotonic();
  if (holder != observed_holder_ || renew != observed_renew_) {
    observed_holder_ = holder;
    observed_renew_ = renew;
    observed_at_ = steady_now;
  }
  if (!holder.empty() && holder != config_.identity &&
      steady_now < observed_at_ + std::chrono::seconds(their_duration_s)) {
    return false;  // held by someone who renewed recently (as far as we have seen)
  }
  bool ours = holder == config_.identity;
  std::string rv = json::GetString(json::Find(*got, {"metadata", "resourceVersion"}));
  std::string body = R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":)" + json::Quote(config_.name) +
                     R"(,"namespace":)" + json::Quote(config_.ns) + R"(,"resourceVersion":)" + json::Quote(rv) +
                     R"(},"spec":{"holderIdentity":)" + json::Quote(config_.identity) + R"(,"leaseDurationSeconds":)" +
                     std::to_string(duration_s) + R"(,"acquireTime":)" + json::Quote(ours && !acquire.empty() ? acquire : now) +
                     R"(,"renewTime":)" + json::Quote(now) + R"(,"leaseTransitions":)" +
                     std::to_string(ours ? transitions : transitions + 1) + "}}";
  auto updated = client_->Update(path, body);
  if (!updated.ok()) {
    if (!updated.status().IsConflict()) {
      spdlog::warn("leader election: cannot update lease: {}", updated.status().ToString());
    }
    return false;
  }
  observed_holder_ = config_.identity;
  observed_renew_ = now;
  observed_at_ = steady_now;
  last_renew_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(steady_now.time_since_epoch()).count();
  return true;
}

bool LeaderElector::Acquire(const std::atomic<bool>& stop) {
  spdlog::info("leader election: {} is trying to acquire lease {}/{}", config_.identity, config_.ns, config_.name);
  while (!stop) {
    if (TryAcquireOrRenew()) {
      leader_ = true;
      spdlog::info("leader election: {} became the leader", config_.identity);
      return true;
    }
    std::unique_lock<std::mutex> lock(mu_);
    clock_.WaitFor(lock, cv_, config_.retry_period, [this] { return stopping_; });
    if (stopping_) return false;
  }
  return false;
}

void LeaderElector::KeepRenewing(std::function<void()> on_lost) {
  renewer_ = std::thread([this, on_lost = std::move(on_lost)] {
    base::MonoTime last_renew = clock_.Monotonic();
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        clock_.WaitFor(lock, cv_, config_.retry_period, [this] { return stopping_; });
        if (stopping_) return;
      }
      if (TryAcquireOrRenew()) {
        last_renew = clock_.Monotonic();
        continue;
      }
      if (clock_.Monotonic() - last_renew >= config_.renew_deadline) {
        leader_ = false;
        spdlog::error("leader election: {} could not renew the lease for {} ms; giving up leadership",
                      config_.identity, config_.renew_deadline.count());
        on_lost();
        return;
      }
    }
  });
}

void LeaderElector::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (renewer_.joinable()) renewer_.join();
  if (!leader_) return;
  leader_ = false;
  // Hand over at once: an empty holder lets a standby take the Lease on its next try.
  auto got = client_->Get(kLeases.Path(config_.ns, config_.name));
  if (!got.ok() || json::GetString(json::Find(*got, {"spec", "holderIdentity"})) != config_.identity) return;
  std::string rv = json::GetString(json::Find(*got, {"metadata", "resourceVersion"}));
  std::string now = k8s::FormatRfc3339Micro(clock_.Now());
  auto r = client_->MergePatch(kLeases.Path(config_.ns, config_.name),
                               R"({"metadata":{"resourceVersion":)" + json::Quote(rv) +
                                   R"(},"spec":{"holderIdentity":"","leaseDurationSeconds":1,"renewTime":)" + json::Quote(now) + "}}");
  if (r.ok()) {
    spdlog::info("leader election: released lease {}/{}", config_.ns, config_.name);
  } else {
    spdlog::warn("leader election: lease {}/{} not released ({}); a standby takes over when it expires", config_.ns,
                 config_.name, r.status().ToString());
  }
}

}  // namespace berth::controller
