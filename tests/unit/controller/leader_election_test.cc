#include "controller/leader_election.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "k8s/client.h"
#include "k8s/json.h"

namespace berth::controller {
namespace {

namespace json = k8s::json;
using std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;

constexpr const char* kLeasePath = "/apis/coordination.k8s.io/v1/namespaces/berth-system/leases/berth-controller";
constexpr const char* kLeasesPath = "/apis/coordination.k8s.io/v1/namespaces/berth-system/leases";

// An API server holding at most one Lease, with optimistic concurrency as the real one: GET 404
// when absent, POST creates (409 AlreadyExists when present), PUT and merge PATCH check
// metadata.resourceVersion (409 Conflict when stale) and bump it.
class FakeLeaseApi : public k8s::Transport {
 public:
  struct Spec {
    std::string holder, acquire_time, renew_time;
    int64_t duration_s = 0, transitions = 0;
  };

  k8s::Result<k8s::HttpResponse> Send(const k8s::HttpRequest& req) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++requests_;
    if (failing_) return k8s::Status::Error("connection refused");
    if (req.method == "GET" && req.path == kLeasePath) {
      if (!spec_) return Answer(404, Status(404, "NotFound", R"(leases.coordination.k8s.io "berth-controller" not found)"));
      return Answer(200, LeaseJson());
    }
    if (req.method == "POST" && req.path == kLeasesPath) {
      if (spec_) return Answer(409, Status(409, "AlreadyExists", "already exists"));
      auto body = json::Parse(req.body);
      EXPECT_TRUE(body.ok());
      EXPECT_EQ(json::GetString(json::Find(*body, {"metadata", "name"})), "berth-controller");
      EXPECT_EQ(json::GetString(json::Find(*body, {"metadata", "namespace"})), "berth-system");
      spec_ = ReadSpec(*body, Spec{});
      ++creates_;
      rv_ = 1;
      last_write_at_ = Steady::now();
      return Answer(201, LeaseJson());
    }
    if ((req.method == "PUT" || req.method == "PATCH") && req.path == kLeasePath) {
      if (!spec_) return Answer(404, Status(404, "NotFound", "not found"));
      if (before_write_) {
        auto hook = std::move(before_write_);
        before_write_ = nullptr;
        hook();
      }
      auto body = json::Parse(req.body);
      EXPECT_TRUE(body.ok()) << req.body;
      std::string rv = json::GetString(json::Find(*body, {"metadata", "resourceVersion"}));
      if (req.method == "PUT") {
        EXPECT_FALSE(rv.empty()) << "an update must carry the resourceVersion it read";
      }
      if (!rv.empty() && rv != std::to_string(rv_)) {
        ++conflicts_;
        return Answer(409, Status(409, "Conflict", "the object has been modified; please apply your changes to the latest version"));
      }
      if (req.method == "PUT") {
        EXPECT_EQ(req.content_type, "application/json");
        spec_ = ReadSpec(*body, Spec{});
        ++updates_;
      } else {
        EXPECT_EQ(req.content_type, "application/merge-patch+json");
        spec_ = ReadSpec(*body, *spec_);
        ++patches_;
      }
      ++rv_;
      last_write_at_ = Steady::now();
      return Answer(200, LeaseJson());
    }
    ADD_FAILURE() << "unexpected request " << req.method << " " << req.path;
    return Answer(400, Status(400, "BadRequest", "unexpected"));
  }

  k8s::Result<k8s::HttpResponse> Stream(const k8s::HttpRequest& req, const std::function<bool(std::string&)>&,
                                        k8s::Cancellation*, int) override {
    ADD_FAILURE() << "unexpected stream " << req.path;
    return k8s::Status::Error("no streams");
  }

  // Test-side control, as another candidate or a broken network would act.
  void SetOtherHolder(const std::string& holder, int64_t duration_s, int64_t transitions) {
    std::lock_guard<std::mutex> lock(mu_);
    spec_ = Spec{holder, "2026-01-01T00:00:00.000000Z", NextRenewTime(), duration_s, transitions};
    ++rv_;
  }
  void RenewOther() {  // the other holder renews
    std::lock_guard<std::mutex> lock(mu_);
    spec_->renew_time = NextRenewTime();
    ++rv_;
    last_other_renew_at_ = Steady::now();
  }
  void SetFailing(bool f) {
    std::lock_guard<std::mutex> lock(mu_);
    failing_ = f;
  }
  // Runs `fn` (under the lock) just before the next PUT/PATCH is checked: a concurrent write.
  void BeforeNextWrite(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    before_write_ = std::move(fn);
  }
  void BumpResourceVersionLocked() { ++rv_; }

  std::optional<Spec> spec() const {
    std::lock_guard<std::mutex> lock(mu_);
    return spec_;
  }
  // When the elector's last successful write (create, update, patch) was answered.
  Steady::time_point last_write_at() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_write_at_;
  }
  Steady::time_point last_other_renew_at() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_other_renew_at_;
  }
  int64_t resource_version() const {
    std::lock_guard<std::mutex> lock(mu_);
    return rv_;
  }
  int requests() const { std::lock_guard<std::mutex> lock(mu_); return requests_; }
  int creates() const { std::lock_guard<std::mutex> lock(mu_); return creates_; }
  int updates() const { std::lock_guard<std::mutex> lock(mu_); return updates_; }
  int patches() const { std::lock_guard<std::mutex> lock(mu_); return patches_; }
  int conflicts() const { std::lock_guard<std::mutex> lock(mu_); return conflicts_; }

 private:
  static k8s::Result<k8s::HttpResponse> Answer(int status, std::string body) {
    k8s::HttpResponse r;
    r.status = status;
    r.body = std::move(body);
    return r;
  }
  static std::string Status(int code, const std::string& reason, const std::string& message) {
    return R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":)" + json::Quote(message) +
           R"(,"reason":")" + reason + R"(","code":)" + std::to_string(code) + "}";
  }
  static Spec ReadSpec(const json::Value& body, Spec s) {
    const json::Value* spec = json::Find(body, {"spec"});
    EXPECT_NE(spec, nullptr);
    if (spec == nullptr) return s;
    if (spec->HasMember("holderIdentity")) s.holder = json::GetString(*spec, "holderIdentity");
    if (spec->HasMember("acquireTime")) s.acquire_time = json::GetString(*spec, "acquireTime");
    if (spec->HasMember("renewTime")) s.renew_time = json::GetString(*spec, "renewTime");
    if (spec->HasMember("leaseDurationSeconds")) s.duration_s = json::GetInt(*spec, "leaseDurationSeconds");
    if (spec->HasMember("leaseTransitions")) s.transitions = json::GetInt(*spec, "leaseTransitions");
    return s;
  }
  std::string LeaseJson() const {
    return R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"berth-controller",)"
           R"("namespace":"berth-system","resourceVersion":")" +
           std::to_string(rv_) + R"("},"spec":{"holderIdentity":)" + json::Quote(spec_->holder) +
           R"(,"leaseDurationSeconds":)" + std::to_string(spec_->duration_s) + R"(,"acquireTime":)" +
           json::Quote(spec_->acquire_time) + R"(,"renewTime":)" + json::Quote(spec_->renew_time) +
           R"(,"leaseTransitions":)" + std::to_string(spec_->transitions) + "}}";
  }
  std::string NextRenewTime() { return "2026-01-01T00:00:" + std::to_string(10 + (++renewals_ % 50)) + ".000000Z"; }

  mutable std::mutex mu_;
  std::optional<Spec> spec_;
  int64_t rv_ = 0;
  bool failing_ = false;
  std::function<void()> before_write_;
  Steady::time_point last_write_at_{}, last_other_renew_at_{};
  int requests_ = 0, creates_ = 0, updates_ = 0, patches_ = 0, conflicts_ = 0, renewals_ = 0;
};

LeaderElectionConfig FastConfig(const std::string& identity) {
  LeaderElectionConfig c;
  c.identity = identity;
  c.lease_duration = milliseconds(200);  // written as 1 s: the Lease counts whole seconds
  c.renew_deadline = milliseconds(100);
  c.retry_period = milliseconds(20);
  return c;
}

class LeaderElectionTest : public ::testing::Test {
 protected:
  LeaderElectionTest()
      : api_(std::make_shared<FakeLeaseApi>()), client_(std::make_shared<k8s::Client>(k8s::ClientConfig{}, api_)) {
    client_->SetMaxRetries(0);  // the elector retries on its own schedule
  }

  // Waits (polling every few ms) until `pred` holds or `limit` passes.
  static bool WaitFor(const std::function<bool()>& pred, milliseconds limit) {
    auto deadline = Steady::now() + limit;
    while (Steady::now() < deadline) {
      if (pred()) return true;
      std::this_thread::sleep_for(milliseconds(2));
    }
    return pred();
  }

  k8s::SystemClock clock_;
  std::shared_ptr<FakeLeaseApi> api_;
  k8s::ClientPtr client_;
};

TEST_F(LeaderElectionTest, AcquiresAnAbsentLeaseByCreatingIt) {
  LeaderElector e(client_, clock_, FastConfig("me"));
  EXPECT_FALSE(e.IsLeader());
  EXPECT_FALSE(e.StillLeading());
  std::atomic<bool> stop{false};
  auto start = Steady::now();
  ASSERT_TRUE(e.Acquire(stop));
  EXPECT_LT(Steady::now() - start, milliseconds(100)) << "an absent lease is taken at once";
  EXPECT_TRUE(e.IsLeader());
  EXPECT_TRUE(e.StillLeading());
  EXPECT_EQ(e.identity(), "me");
  auto spec = api_->spec();
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(api_->creates(), 1);
  EXPECT_EQ(spec->holder, "me");
  EXPECT_EQ(spec->transitions, 0);
  EXPECT_EQ(spec->duration_s, 1);
  EXPECT_FALSE(spec->renew_time.empty());
  EXPECT_EQ(spec->acquire_time, spec->renew_time);
}

TEST_F(LeaderElectionTest, LeaseDurationIsNeverWrittenShorterThanConfigured) {
  // Other candidates wait leaseDurationSeconds; writing less than the configured duration would
  // let one take over while this leader still trusts its renew deadline.
  struct Case {
    milliseconds configured;
    int64_t want_seconds;
  };
  for (const Case& c : {Case{milliseconds(200), 1}, Case{milliseconds(1000), 1}, Case{milliseconds(1001), 2},
                        Case{milliseconds(2900), 3}, Case{milliseconds(15000), 15}}) {
    SCOPED_TRACE(c.configured.count());
    auto api = std::make_shared<FakeLeaseApi>();
    auto client = std::make_shared<k8s::Client>(k8s::ClientConfig{}, api);
    LeaderElectionConfig cfg = FastConfig("me");
    cfg.lease_duration = c.configured;
    LeaderElector e(client, clock_, cfg);
    std::atomic<bool> stop{false};
    ASSERT_TRUE(e.Acquire(stop));
    EXPECT_EQ(api->spec()->duration_s, c.want_seconds);
    e.Release();
  }
}

TEST_F(LeaderElectionTest, TakesOverOnlyAfterTheHolderStopsRenewing) {
  api_->SetOtherHolder("other", /*duration_s=*/1, /*transitions=*/3);
  LeaderElector e(client_, clock_, FastConfig("me"));
  std::atomic<bool> stop{false};
  std::atomic<bool> acquired{false};
  std::thread candidate([&] { acquired = e.Acquire(stop); });

  // The other holder renews every 50 ms for longer than its lease duration: no takeover.
  auto renewing_until = Steady::now() + milliseconds(1300);
  while (Steady::now() < renewing_until) {
    api_->RenewOther();
    std::this_thread::sleep_for(milliseconds(50));
    ASSERT_FALSE(acquired.load()) << "took the lease from a holder that renews";
  }
  EXPECT_EQ(api_->spec()->holder, "other");
  EXPECT_FALSE(e.IsLeader());

  // It stops: the candidate takes over after the lease duration (1 s) since the last renewal it
  // saw, not before.
  ASSERT_TRUE(WaitFor([&] { return acquired.load(); }, milliseconds(3000)));
  candidate.join();
  EXPECT_GE(api_->last_write_at() - api_->last_other_renew_at(), milliseconds(1000));
  EXPECT_TRUE(e.IsLeader());
  auto spec = api_->spec();
  EXPECT_EQ(spec->holder, "me");
  EXPECT_EQ(spec->transitions, 4) << "a takeover is a transition";
  EXPECT_EQ(spec->acquire_time, spec->renew_time) << "a new holder's acquireTime is its first renewal";
}

TEST_F(LeaderElectionTest, RenewingKeepsTransitionsAndAcquireTime) {
  LeaderElector e(client_, clock_, FastConfig("me"));
  std::atomic<bool> stop{false};
  ASSERT_TRUE(e.Acquire(stop));
  const auto first = *api_->spec();
  const int64_t rv = api_->resource_version();
  std::atomic<bool> lost{false};
  e.KeepRenewing([&] { lost = true; });
  // Several renewals (retry period 20 ms) over more than the renew deadline.
  ASSERT_TRUE(WaitFor([&] { return api_->resource_version() >= rv + 5; }, milliseconds(2000)));
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_TRUE(e.StillLeading()) << "renewals keep the leadership fresh";
  EXPECT_FALSE(lost.load());
  auto now = *api_->spec();
  EXPECT_EQ(now.holder, "me");
  EXPECT_EQ(now.transitions, first.transitions) << "renewing is not a transition";
  EXPECT_EQ(now.acquire_time, first.acquire_time);
  EXPECT_GE(api_->updates(), 5);
  EXPECT_EQ(api_->conflicts(), 0);
  e.Release();
}

TEST_F(LeaderElectionTest, ReacquiringOwnLeaseAfterRestartIsNotATransition) {
  api_->SetOtherHolder("me", 1, 2);  // this identity held it before a restart
  LeaderElector e(client_, clock_, FastConfig("me"));
  std::atomic<bool> stop{false};
  ASSERT_TRUE(e.Acquire(stop));
  EXPECT_EQ(api_->spec()->transitions, 2);
  EXPECT_EQ(api_->spec()->acquire_time, "2026-01-01T00:00:00.000000Z");
}

TEST_F(LeaderElectionTest, ConflictingWriteIsRetried) {
  // Another writer changes the Lease between our read and our write: 409, then the next try works.
  api_->SetOtherHolder("", 1, 5);  // released: free to take
  api_->BeforeNextWrite([this] { api_->BumpResourceVersionLocked(); });
  LeaderElector e(client_, clock_, FastConfig("me"));
  std::atomic<bool> stop{false};
  ASSERT_TRUE(e.Acquire(stop));
  EXPECT_EQ(api_->conflicts(), 1);
  EXPECT_EQ(api_->spec()->holder, "me");
  EXPECT_EQ(api_->spec()->transitions, 6);
}

TEST_F(LeaderElectionTest, AcquireGivesUpWhenStopped) {
  api_->SetOtherHolder("other", 3600, 0);  // held for an hour
  LeaderElector e(client_, clock_, FastConfig("me"));
  std::atomic<bool> stop{false};
  auto result = std::async(std::launch::async, [&] { return e.Acquire(stop); });
  std::this_thread::sleep_for(milliseconds(60));
  stop = true;
  ASSERT_EQ(result.wait_for(milliseconds(1000)), std::future_status::ready);
  EXPECT_FALSE(result.get());
  EXPECT_FALSE(e.IsLeader());
  EXPECT_EQ(api_->spec()->holder, "other");
}

TEST_F(LeaderElectionTest, ReleaseHandsTheLeaseOverAtOnce) {
  auto leader = std::make_unique<LeaderElector>(client_, clock_, FastConfig("first"));
  std::atomic<bool> stop{false};
  ASSERT_TRUE(leader->Acquire(stop));
  leader->KeepRenewing([] { ADD_FAILURE() << "lost the lease while healthy"; });
  leader->Release();
  EXPECT_FALSE(leader->IsLeader());
  EXPECT_FALSE(leader->StillLeading());
  auto spec = api_->spec();
  EXPECT_EQ(spec->holder, "");
  EXPECT_EQ(spec->duration_s, 1);
  EXPECT_EQ(api_->patches(), 1);
  const int requests = api_->requests();
  leader->Release();  // idempotent, and the destructor's release makes no request either
  leader.reset();
  EXPECT_EQ(api_->requests(), requests);

  // A standby takes the released lease at once, without waiting out the lease duration.
  LeaderElector standby(client_, clock_, FastConfig("second"));
  auto start = Steady::now();
  ASSERT_TRUE(standby.Acquire(stop));
  EXPECT_LT(Steady::now() - start, milliseconds(300));
  EXPECT_EQ(api_->spec()->holder, "second");
  EXPECT_EQ(api_->spec()->transitions, 1);
}

TEST_F(LeaderElectionTest, ReleaseLeavesSomeoneElsesLeaseAlone) {
  LeaderElector e(client_, clock_, FastConfig("me"));
  std::atomic<bool> stop{false};
  ASSERT_TRUE(e.Acquire(stop));
  api_->SetOtherHolder("usurper", 1, 9);  // e.g. after we were paused
  e.Release();
  EXPECT_EQ(api_->spec()->holder, "usurper");
  EXPECT_EQ(api_->patches(), 0);
}

TEST_F(LeaderElectionTest, ReleaseWithoutLeadingWritesNothing) {
  api_->SetOtherHolder("other", 3600, 0);
  LeaderElector e(client_, clock_, FastConfig("me"));
  const int requests = api_->requests();
  e.Release();
  EXPECT_EQ(api_->requests(), requests);
  EXPECT_EQ(api_->spec()->holder, "other");
}

TEST_F(LeaderElectionTest, StillLeadingExpiresAfterTheRenewDeadlineWithoutRenewals) {
  LeaderElector e(client_, clock_, FastConfig("me"));
  std::atomic<bool> stop{false};
  ASSERT_TRUE(e.Acquire(stop));
  EXPECT_TRUE(e.StillLeading());
  std::this_thread::sleep_for(milliseconds(130));  // renew deadline is 100 ms; nobody renews
  EXPECT_FALSE(e.StillLeading()) << "a paused leader must stop writing after the renew deadline";
}

TEST_F(LeaderElectionTest, KeepRenewingReportsTheLossWhenTheApiFails) {
  LeaderElector e(client_, clock_, FastConfig("me"));
  std::atomic<bool> stop{false};
  ASSERT_TRUE(e.Acquire(stop));
  std::mutex mu;
  std::condition_variable cv;
  int lost_calls = 0;
  std::thread::id lost_thread;
  Steady::time_point lost_at;
  e.KeepRenewing([&] {
    std::lock_guard<std::mutex> lock(mu);
    ++lost_calls;
    lost_thread = std::this_thread::get_id();
    lost_at = Steady::now();
    cv.notify_all();
  });
  const int64_t rv = api_->resource_version();
  ASSERT_TRUE(WaitFor([&] { return api_->resource_version() >= rv + 2; }, milliseconds(1000))) << "not renewing";

  api_->SetFailing(true);
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, milliseconds(2000), [&] { return lost_calls > 0; })) << "on_lost never called";
    EXPECT_GE(lost_at - api_->last_write_at(), milliseconds(100))
        << "gave up before the renew deadline passed since the last successful renewal";
  }
  EXPECT_FALSE(e.IsLeader());
  EXPECT_FALSE(e.StillLeading());
  EXPECT_NE(lost_thread, std::this_thread::get_id());

  api_->SetFailing(false);
  std::this_thread::sleep_for(milliseconds(60));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(lost_calls, 1) << "on_lost is called once; the renew loop ends";
  }
  const int requests = api_->requests();
  e.Release();  // not leading anymore: no release write
  EXPECT_EQ(api_->requests(), requests);
}

TEST_F(LeaderElectionTest, KeepRenewingReportsTheLossWhenSomeoneElseTookTheLease) {
  LeaderElector e(client_, clock_, FastConfig("me"));
  std::atomic<bool> stop{false};
  ASSERT_TRUE(e.Acquire(stop));
  std::atomic<int> lost{0};
  e.KeepRenewing([&] { ++lost; });
  api_->SetOtherHolder("other", 60, 1);
  ASSERT_TRUE(WaitFor([&] { return lost.load() > 0; }, milliseconds(2000)));
  EXPECT_FALSE(e.IsLeader());
  EXPECT_EQ(api_->spec()->holder, "other") << "a leader that lost the lease must not overwrite the new holder";
  e.Release();
  EXPECT_EQ(api_->spec()->holder, "other");
}

// The elector measures every duration on the injected clock (its monotonic time) and waits on it
// (its retry period), so a test steps it: these three run on a FakeClock that moves only when told
// to, and every try of the elector follows a step of the clock.

// Moves `fake` by `d` once the elector sleeps on it, and waits until the elector has made its next
// try and sleeps again (or `done` says it will not sleep again).
void StepElector(k8s::FakeClock& fake, milliseconds d, const FakeLeaseApi& api,
                 const std::function<bool()>& done = [] { return false; }) {
  while (fake.Waiters() < 1) std::this_thread::yield();
  const int seen = api.requests();
  fake.Advance(d);
  while (api.requests() == seen || (fake.Waiters() < 1 && !done())) std::this_thread::yield();
}

TEST_F(LeaderElectionTest, StillLeadingFollowsTheInjectedClock) {
  k8s::FakeClock fake;
  LeaderElector e(client_, fake, FastConfig("me"));
  std::atomic<bool> stop{false};
  ASSERT_TRUE(e.Acquire(stop));
  std::this_thread::sleep_for(milliseconds(130));  // real time passes; the elector's does not
  EXPECT_TRUE(e.StillLeading());
  fake.Advance(milliseconds(99));
  EXPECT_TRUE(e.StillLeading());
  fake.Advance(milliseconds(1));
  EXPECT_FALSE(e.StillLeading()) << "renew deadline (100 ms) reached on the elector's clock";
}

TEST_F(LeaderElectionTest, CandidateWaitsTheLeaseDurationOnItsOwnClock) {
  api_->SetOtherHolder("other", /*duration_s=*/1, /*transitions=*/0);  // and never renews
  k8s::FakeClock fake;
  LeaderElector e(client_, fake, FastConfig("me"));
  std::atomic<bool> stop{false};
  auto result = std::async(std::launch::async, [&] { return e.Acquire(stop); });
  // A try every retry period (20 ms) on the elector's clock: none may take the lease before a
  // whole lease duration (1 s) has passed since it first saw the record.
  for (int step = 1; step <= 49; ++step) {
    StepElector(fake, milliseconds(20), *api_);
    ASSERT_EQ(result.wait_for(milliseconds(0)), std::future_status::timeout) << "took over after " << step * 20 << " ms";
  }
  EXPECT_EQ(api_->spec()->holder, "other");
  StepElector(fake, milliseconds(20), *api_, [&] { return api_->spec()->holder == "me"; });
  ASSERT_EQ(result.wait_for(milliseconds(5000)), std::future_status::ready) << "1 s passed; no takeover";
  EXPECT_TRUE(result.get());
  EXPECT_EQ(api_->spec()->holder, "me");
  EXPECT_EQ(api_->spec()->transitions, 1);
}

TEST_F(LeaderElectionTest, RenewDeadlineIsMeasuredOnTheInjectedClock) {
  k8s::FakeClock fake;
  LeaderElector e(client_, fake, FastConfig("me"));
  std::atomic<bool> stop{false};
  ASSERT_TRUE(e.Acquire(stop));
  std::atomic<int> lost{0};
  e.KeepRenewing([&] { ++lost; });
  api_->SetFailing(true);
  // Renewals every retry period (20 ms) fail; within the renew deadline (100 ms) that is no loss.
  for (int step = 1; step <= 4; ++step) {
    StepElector(fake, milliseconds(20), *api_);
    EXPECT_EQ(lost.load(), 0) << step * 20 << " ms";
    EXPECT_TRUE(e.IsLeader());
  }
  StepElector(fake, milliseconds(20), *api_, [&] { return lost.load() > 0; });
  while (lost.load() == 0) std::this_thread::yield();  // reported by the renewer right after its try
  EXPECT_FALSE(e.IsLeader());
  EXPECT_FALSE(e.StillLeading());
  e.Release();
  EXPECT_EQ(lost.load(), 1);
}

TEST(DefaultIdentityTest, UniquePerCall) {
  std::string a = DefaultIdentity(), b = DefaultIdentity();
  EXPECT_NE(a, b);
  EXPECT_NE(a.find('_'), std::string::npos);
  EXPECT_EQ(a.size() - a.rfind('_') - 1, 16u);
}

}  // namespace
}  // namespace berth::controller
