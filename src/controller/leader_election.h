#pragma once
// Leader election with a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it:
// a candidate takes the Lease when its holder has not renewed it for leaseDuration (measured on
// the candidate's own clock from when it last saw the record change, so clock skew between
// machines does not matter); the leader renews every retryPeriod and gives up when it could not
// renew for renewDeadline (< leaseDuration), before anyone else may take the Lease.
//
// What keeps two controllers from writing at once (the contract the manager wires up):
//  - the leadership guard (StillLeading) is asked before every write the leader sends, each
//    retry included (k8s::Client::SetWriteGuard), not once per task: a write is never sent once
//    renew_deadline has passed since the last successful renewal;
//  - every request's timeout (ClientConfig::request_timeout, --request-timeout, default half the
//    renew deadline) is shorter than renew_deadline (Options refuses otherwise): a renewal that
//    hangs fails in time to be retried before the deadline, and a write sent just before the
//    deadline has ended or failed on our side within renew_deadline + request_timeout of the last
//    renewal, and Options refuses settings where that sum plus a tenth of leaseDuration exceeds
//    leaseDuration (12 s with the defaults 8 s + 4 s, below the 15 s lease a standby waits from
//    when it saw that renewal);
//  - the elector uses its own Client (no write guard, no client retries: the renew loop retries).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "k8s/client.h"
#include "k8s/clock.h"

namespace berth::controller {

struct LeaderElectionConfig {
  std::string ns = "berth-system";
  std::string name = "berth-controller";
  std::string identity;
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{8000};
  std::chrono::milliseconds retry_period{2000};
};

class LeaderElector {
 public:
  LeaderElector(k8s::ClientPtr client, const k8s::Clock& clock, LeaderElectionConfig config);
  ~LeaderElector();

  // Blocks until this process holds the Lease (true) or `stop` is set (false).
  bool Acquire(const std::atomic<bool>& stop);
  // Renews in the background; calls `on_lost` once (from the renew thread) if renewing failed
  // for renew_deadline. Only after Acquire returned true.
  void KeepRenewing(std::function<void()> on_lost);
  // Stops renewing and, when leading, releases the Lease so a standby can take over at once.
  void Release();

  bool IsLeader() const { return leader_.load(); }
  // True while the last successful renewal is less than renew_deadline ago (the clock's monotonic
  // time: every duration the elector measures reads clock.Monotonic(), and it waits on the clock). A
  // process that was paused (or cut off) longer than that must not write anything anymore.
  bool StillLeading() const;
  const std::string& identity() const { return config_.identity; }

 private:
  // One attempt: take or renew the Lease. True when we hold it afterwards.
  bool TryAcquireOrRenew();
  // We hold the Lease, renewed at `renew_time` (as written into it), seen at `at`.
  void NoteRenewed(const std::string& renew_time, base::MonoTime at);

  k8s::ClientPtr client_;
  const k8s::Clock& clock_;
  LeaderElectionConfig config_;
  std::atomic<bool> leader_{false};
  // What we last saw of the Lease and when (the clock's monotonic time) it last changed.
  std::string observed_holder_, observed_renew_;
  base::MonoTime observed_at_{};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread renewer_;
  std::atomic<int64_t> last_renew_ns_{0};  // clock_.Monotonic(), of the last successful acquire/renew
};

// "<hostname>_<random>": unique per process.
std::string DefaultIdentity();

}  // namespace berth::controller
