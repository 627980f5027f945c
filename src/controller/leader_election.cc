#include "controller/leader_election.h"

#include <unistd.h>

#include <random>

#include <spdlog/spdlog.h>

#include "k8s/core_types.h"
#include "k8s/timefmt.h"

namespace berth::controller {

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
  k8s::Lease ours{config_.name, config_.ns, "", config_.identity, duration_s, now, now, 0};
  auto got = client_->Get(path);
  if (!got.ok()) {
    if (!got.status().IsNotFound()) {
      spdlog::warn("leader election: cannot read lease {}/{}: {}", config_.ns, config_.name, got.status().ToString());
      return false;
    }
    auto created = client_->Create(kLeases.Path(config_.ns), k8s::EncodeLease(ours));
    if (!created.ok()) return false;
    NoteRenewed(now, clock_.Monotonic());
    return true;
  }
  const k8s::Lease lease = k8s::DecodeLease(*got);
  const base::MonoTime steady_now = clock_.Monotonic();
  if (lease.holder != observed_holder_ || lease.renew_time != observed_renew_) {
    observed_holder_ = lease.holder;
    observed_renew_ = lease.renew_time;
    observed_at_ = steady_now;
  }
  if (!lease.holder.empty() && lease.holder != config_.identity &&
      steady_now < observed_at_ + std::chrono::seconds(lease.duration_seconds.value_or(duration_s))) {
    return false;  // held by someone who renewed recently (as far as we have seen)
  }
  const bool held = lease.holder == config_.identity;
  ours.resource_version = lease.resource_version;
  if (held && !lease.acquire_time.empty()) ours.acquire_time = lease.acquire_time;
  ours.transitions = held ? lease.transitions : lease.transitions + 1;
  auto updated = client_->Update(path, k8s::EncodeLease(ours));
  if (!updated.ok()) {
    if (!updated.status().IsConflict()) {
      spdlog::warn("leader election: cannot update lease: {}", updated.status().ToString());
    }
    return false;
  }
  NoteRenewed(now, steady_now);
  return true;
}

void LeaderElector::NoteRenewed(const std::string& renew_time, base::MonoTime at) {
  observed_holder_ = config_.identity;
  observed_renew_ = renew_time;
  observed_at_ = at;
  last_renew_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
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
  if (!got.ok()) return;
  const k8s::Lease lease = k8s::DecodeLease(*got);
  if (lease.holder != config_.identity) return;
  const std::string now = k8s::FormatRfc3339Micro(clock_.Now());
  auto r = client_->MergePatch(kLeases.Path(config_.ns, config_.name), k8s::LeaseReleasePatch(lease.resource_version, now));
  if (r.ok()) {
    spdlog::info("leader election: released lease {}/{}", config_.ns, config_.name);
  } else {
    spdlog::warn("leader election: lease {}/{} not released ({}); a standby takes over when it expires", config_.ns,
                 config_.name, r.status().ToString());
  }
}

}  // namespace berth::controller
