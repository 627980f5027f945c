#include "controller/options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace berth::controller {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;

using Args = std::vector<std::string>;

std::string Join(const Args& args) {
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "" : " ") + a;
  return out;
}

Options MustParse(const Args& args) {
  auto o = ParseOptions(args);
  EXPECT_TRUE(o.ok()) << Join(args) << ": " << o.status().message();
  return o.ok() ? o.value() : Options{};
}

TEST(OptionsTest, Defaults) {
  Options o = MustParse({});
  EXPECT_EQ(o.kubeconfig, "");
  EXPECT_EQ(o.context, "");
  EXPECT_FALSE(o.leader_elect);
  EXPECT_EQ(o.leader_election_namespace, "berth-system");
  EXPECT_EQ(o.leader_election_id, "berth-controller");
  EXPECT_EQ(o.lease_duration, seconds(15));
  EXPECT_EQ(o.renew_deadline, seconds(8));
  EXPECT_EQ(o.retry_period, seconds(2));
  EXPECT_EQ(o.metrics_bind_address, ":8080");
  EXPECT_EQ(o.health_probe_bind_address, ":8081");
  EXPECT_EQ(o.aging_interval, minutes(15));
  EXPECT_EQ(o.retry_backoff, seconds(10));
  EXPECT_EQ(o.max_retry_backoff, minutes(10));
  EXPECT_EQ(o.start_timeout, minutes(10));
  EXPECT_EQ(o.finished_run_ttl, seconds(0)) << "finished runs are kept unless asked";
  EXPECT_EQ(o.log_format, "text");
  EXPECT_EQ(o.log_level, "info");
  EXPECT_EQ(o.workers, 4);
  EXPECT_EQ(o.request_timeout, seconds(30));
  EXPECT_TRUE(o.queue_auth) << "the metrics port's queue routes are closed unless turned off (issue 44, 4)";
  EXPECT_EQ(o.queue_api_bind_address, "0") << "the queue API is served only when asked for";
  EXPECT_EQ(o.queue_api_cert_dir, "/tmp/berth-queue-api/serving-certs");
  EXPECT_FALSE(o.help);
}

TEST(OptionsTest, FinishedRunTtlIsADuration) {
  EXPECT_EQ(MustParse({"--finished-run-ttl=24h"}).finished_run_ttl, hours(24));
  EXPECT_EQ(MustParse({"--finished-run-ttl", "0"}).finished_run_ttl, seconds(0));
  auto bad = ParseOptions({"--finished-run-ttl=soon"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("finished-run-ttl"), std::string::npos) << bad.status().message();
}

TEST(OptionsTest, TeamFlagsHaveDefaultsAndBounds) {
  EXPECT_EQ(MustParse({}).fair_share_half_life, hours(7 * 24));
  EXPECT_EQ(MustParse({}).team_status_interval, seconds(60));
  EXPECT_EQ(MustParse({"--fair-share-half-life=1d"}).fair_share_half_life, hours(24));
  EXPECT_EQ(MustParse({"--team-status-interval=5s"}).team_status_interval, seconds(5));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--fair-share-half-life=0"}, {"--team-status-interval=2m"}, {"--team-status-interval=0"}}) {
    auto bad = ParseOptions(args);
    ASSERT_FALSE(bad.ok()) << args[0];
    EXPECT_NE(bad.status().message().find(args[0].substr(0, args[0].find('='))), std::string::npos) << bad.status().message();
  }
}

TEST(OptionsTest, EstimateIntervalHasADefaultZeroTurnsItOffAndBounds) {
  EXPECT_EQ(MustParse({}).estimate_interval, seconds(30));
  EXPECT_EQ(MustParse({"--estimate-interval=0"}).estimate_interval, seconds(0));
  EXPECT_EQ(MustParse({"--estimate-interval=2m"}).estimate_interval, minutes(2));
  for (const char* v : {"--estimate-interval=500ms", "--estimate-interval=2h", "--estimate-interval=soon"}) {
    auto bad = ParseOptions({v});
    ASSERT_FALSE(bad.ok()) << v;
    EXPECT_NE(bad.status().message().find("estimate-interval"), std::string::npos) << bad.status().message();
  }
}

// With leader election every request must time out before the renew deadline
// (leader_election.h): half of it by default, and an explicit value at or past it is refused.
TEST(OptionsTest, RequestTimeoutStaysBelowTheRenewDeadline) {
  EXPECT_EQ(MustParse({"--leader-elect"}).request_timeout, seconds(4));
  EXPECT_EQ(MustParse({"--leader-elect", "--leader-election-lease-duration=5s", "--leader-election-renew-deadline=3s",
                       "--leader-election-retry-period=500ms"})
                .request_timeout,
            milliseconds(1500));
  EXPECT_EQ(MustParse({"--leader-elect", "--request-timeout=5500ms"}).request_timeout, milliseconds(5500));
  EXPECT_EQ(MustParse({"--request-timeout=2m"}).request_timeout, minutes(2)) << "no lease, no bound";
  for (const Args& args : std::vector<Args>{{"--leader-elect", "--request-timeout=10s"},
                                            {"--leader-elect", "--request-timeout=1m"},
                                            {"--leader-elect", "--leader-election-renew-deadline=4s", "--request-timeout=4s"}}) {
    auto o = ParseOptions(args);
    ASSERT_FALSE(o.ok()) << Join(args) << " was accepted";
    EXPECT_EQ(o.status().message(), "--request-timeout must be shorter than --leader-election-renew-deadline") << Join(args);
  }
  for (const std::string bad : {"0", "-1s", "soon"}) {
    auto o = ParseOptions({"--request-timeout=" + bad});
    ASSERT_FALSE(o.ok()) << bad << " was accepted";
    EXPECT_THAT(o.status().message(), HasSubstr("flag --request-timeout=" + bad)) << bad;
  }
}

// Each valued flag, checked through what it sets.
struct ValuedCase {
  std::string flag, value;
  std::function<bool(const Options&)> check;
};

std::vector<ValuedCase> ValuedCases() {
  return {
      {"kubeconfig", "/etc/kube/config", [](const Options& o) { return o.kubeconfig == "/etc/kube/config"; }},
      {"context", "kind-berth", [](const Options& o) { return o.context == "kind-berth"; }},
      {"leader-election-namespace", "ops", [](const Options& o) { return o.leader_election_namespace == "ops"; }},
      {"leader-election-id", "berth-2", [](const Options& o) { return o.leader_election_id == "berth-2"; }},
      {"leader-election-lease-duration", "1m", [](const Options& o) { return o.lease_duration == minutes(1); }},
      {"leader-election-renew-deadline", "5s", [](const Options& o) { return o.renew_deadline == seconds(5); }},
      {"leader-election-retry-period", "500ms",
       [](const Options& o) { return o.retry_period == milliseconds(500); }},
      {"metrics-bind-address", "0", [](const Options& o) { return o.metrics_bind_address == "0"; }},
      {"metrics-bind-address", "127.0.0.1:9090",
       [](const Options& o) { return o.metrics_bind_address == "127.0.0.1:9090"; }},
      {"health-probe-bind-address", ":9440", [](const Options& o) { return o.health_probe_bind_address == ":9440"; }},
      {"aging-interval", "30m", [](const Options& o) { return o.aging_interval == minutes(30); }},
      {"retry-backoff", "2s", [](const Options& o) { return o.retry_backoff == seconds(2); }},
      {"retry-backoff", "0", [](const Options& o) { return o.retry_backoff == milliseconds(0); }},
      {"max-retry-backoff", "1h", [](const Options& o) { return o.max_retry_backoff == minutes(60); }},
      {"aging-interval", "1h30m", [](const Options& o) { return o.aging_interval == minutes(90); }},
      {"log-format", "json", [](const Options& o) { return o.log_format == "json"; }},
      {"log-format", "text", [](const Options& o) { return o.log_format == "text"; }},
      {"log-level", "debug", [](const Options& o) { return o.log_level == "debug"; }},
      {"log-level", "error", [](const Options& o) { return o.log_level == "error"; }},
      {"workers", "16", [](const Options& o) { return o.workers == 16; }},
      {"workers", "1", [](const Options& o) { return o.workers == 1; }},
      {"workers", "64", [](const Options& o) { return o.workers == 64; }},
  };
}

TEST(OptionsTest, FlagEqualsValue) {
  for (const ValuedCase& c : ValuedCases()) {
    Args args = {"--" + c.flag + "=" + c.value};
    Options o = MustParse(args);
    EXPECT_TRUE(c.check(o)) << Join(args);
  }
}

TEST(OptionsTest, FlagSpaceValue) {
  for (const ValuedCase& c : ValuedCases()) {
    Args args = {"--" + c.flag, c.value};
    Options o = MustParse(args);
    EXPECT_TRUE(c.check(o)) << Join(args);
  }
}

TEST(OptionsTest, GoStyleSingleDash) {
  for (const ValuedCase& c : ValuedCases()) {
    Args args = {"-" + c.flag + "=" + c.value};
    Options o = MustParse(args);
    EXPECT_TRUE(c.check(o)) << Join(args);
  }
  EXPECT_TRUE(MustParse({"-leader-elect"}).leader_elect);
}

TEST(OptionsTest, ValuesMayContainEqualsSignsAndBeEmpty) {
  Options o = MustParse({"--kubeconfig=/tmp/a=b", "--context="});
  EXPECT_EQ(o.kubeconfig, "/tmp/a=b");
  EXPECT_EQ(o.context, "");
}

TEST(OptionsTest, ManyFlagsTogetherAndTheLastOneWins) {
  Options o = MustParse({"--kubeconfig", "/a", "--leader-elect", "--log-format=json", "--workers", "2",
                         "--kubeconfig=/b", "--metrics-bind-address", ":9000"});
  EXPECT_EQ(o.kubeconfig, "/b");
  EXPECT_TRUE(o.leader_elect);
  EXPECT_EQ(o.log_format, "json");
  EXPECT_EQ(o.workers, 2);
  EXPECT_EQ(o.metrics_bind_address, ":9000");
}

TEST(OptionsTest, LeaderElectIsABoolean) {
  struct Case {
    Args args;
    bool want;
  };
  const std::vector<Case> cases = {
      {{}, false},
      {{"--leader-elect"}, true},
      {{"--leader-elect=true"}, true},
      {{"--leader-elect=false"}, false},
      {{"--leader-elect", "--leader-elect=false"}, false},
      {{"--leader-elect=false", "--leader-elect"}, true},
  };
  for (const Case& c : cases) EXPECT_EQ(MustParse(c.args).leader_elect, c.want) << Join(c.args);

  // A bare boolean does not eat the next argument.
  Options o = MustParse({"--leader-elect", "--workers=3"});
  EXPECT_TRUE(o.leader_elect);
  EXPECT_EQ(o.workers, 3);
  // --queue-auth reads the same way (default true).
  EXPECT_FALSE(MustParse({"--queue-auth=false"}).queue_auth);
  EXPECT_TRUE(MustParse({"--queue-auth=false", "--queue-auth"}).queue_auth);
  // The queue API's address and certificate directory (issue 44).
  Options q = MustParse({"--queue-api-bind-address=:8443", "--queue-api-cert-dir", "/certs"});
  EXPECT_EQ(q.queue_api_bind_address, ":8443");
  EXPECT_EQ(q.queue_api_cert_dir, "/certs");
}

TEST(OptionsTest, AgingIntervalZeroTurnsAgingOff) {
  for (const Args& args : {Args{"--aging-interval=0"}, Args{"--aging-interval", "0"}, Args{"--aging-interval=0s"}}) {
    EXPECT_EQ(MustParse(args).aging_interval, milliseconds(0)) << Join(args);
  }
}

TEST(OptionsTest, LeaseTimings) {
  Options o = MustParse({"--leader-election-lease-duration=60s", "--leader-election-renew-deadline=40s",
                         "--leader-election-retry-period=5s"});
  EXPECT_EQ(o.lease_duration, seconds(60));
  EXPECT_EQ(o.renew_deadline, seconds(40));
  EXPECT_EQ(o.retry_period, seconds(5));
}

TEST(OptionsTest, ErrorsNameTheFlag) {
  struct Case {
    Args args;
    std::string want;
  };
  const std::vector<Case> cases = {
      // Bad durations.
      {{"--aging-interval=soon"}, "flag --aging-interval=soon: invalid duration"},
      {{"--aging-interval", "-5m"}, "flag --aging-interval=-5m: invalid duration"},
      {{"--aging-interval=15"}, "flag --aging-interval=15: invalid duration"},
      {{"--aging-interval=off"}, "flag --aging-interval=off"},
      {{"--leader-election-lease-duration=forever"}, "flag --leader-election-lease-duration=forever"},
      {{"--leader-election-renew-deadline=10"}, "flag --leader-election-renew-deadline=10"},
      {{"--leader-election-retry-period=2x"}, "flag --leader-election-retry-period=2x"},
      // Bad values of other kinds.
      {{"--log-format=yaml"}, "flag --log-format=yaml: must be text or json"},
      {{"--log-level=trace"}, "flag --log-level=trace: must be debug, info, warn or error"},
      {{"--workers=0"}, "flag --workers=0: must be an integer from 1 to 64"},
      {{"--workers=65"}, "flag --workers=65: must be an integer from 1 to 64"},
      {{"--workers=four"}, "flag --workers=four: must be an integer from 1 to 64"},
      {{"--workers=4x"}, "flag --workers=4x: must be an integer from 1 to 64"},
      {{"--workers=-1"}, "flag --workers=-1: must be an integer from 1 to 64"},
      {{"--workers=99999999999999999999"}, "flag --workers=99999999999999999999: must be an integer"},
      {{"--leader-elect=yes"}, "flag --leader-elect takes true or false, not \"yes\""},
      // Unknown flags and stray arguments.
      {{"--bogus"}, "unknown flag --bogus"},
      {{"--bogus=1"}, "unknown flag --bogus"},
      {{"--kube-config=/x"}, "unknown flag --kube-config"},
      {{"-x"}, "unknown flag --x"},
      {{"extra"}, "unexpected argument \"extra\""},
      {{"--workers", "2", "stray"}, "unexpected argument \"stray\""},
      // Missing values.
      {{"--kubeconfig"}, "flag --kubeconfig needs a value"},
      {{"--log-level=debug", "--aging-interval"}, "flag --aging-interval needs a value"},
      {{"--workers"}, "flag --workers needs a value"},
  };
  for (const Case& c : cases) {
    auto o = ParseOptions(c.args);
    ASSERT_FALSE(o.ok()) << Join(c.args) << " was accepted";
    EXPECT_THAT(o.status().message(), HasSubstr(c.want)) << Join(c.args);
  }
}

// Flag sets that must parse (`want` empty) or be refused; `refusal` checks a refusal's message.
struct FlagCase {
  Args args;
  std::string want;  // "" = accepted
};
void ExpectFlagCases(const std::vector<FlagCase>& cases,
                     const std::function<void(const std::string& message, const FlagCase& c)>& refusal) {
  for (const FlagCase& c : cases) {
    auto o = ParseOptions(c.args);
    if (c.want.empty()) {
      EXPECT_TRUE(o.ok()) << Join(c.args) << ": " << o.status().message();
    } else {
      ASSERT_FALSE(o.ok()) << Join(c.args) << " was accepted";
      refusal(o.status().message(), c);
    }
  }
}

TEST(OptionsTest, RenewDeadlineMustBeShorterThanLeaseDuration) {
  const std::vector<FlagCase> cases = {
      {{"--leader-election-renew-deadline=15s"},
       "--leader-election-renew-deadline must be shorter than --leader-election-lease-duration"},
      {{"--leader-election-renew-deadline=20s"},
       "--leader-election-renew-deadline must be shorter than --leader-election-lease-duration"},
      {{"--leader-election-lease-duration=8s"},
       "--leader-election-renew-deadline must be shorter than --leader-election-lease-duration"},
      {{"--leader-election-lease-duration=10s", "--leader-election-renew-deadline=9s"}, ""},
      {{"--leader-election-renew-deadline=2s"},
       "--leader-election-retry-period must be shorter than --leader-election-renew-deadline"},
      {{"--leader-election-retry-period=10s"},
       "--leader-election-retry-period must be shorter than --leader-election-renew-deadline"},
      {{"--leader-election-renew-deadline=14999ms"}, ""},
  };
  ExpectFlagCases(cases, [](const std::string& message, const FlagCase& c) {
    EXPECT_EQ(message, c.want) << Join(c.args);
  });
}

// Issue 44, item 11: the Lease's durations pace requests to the API server; 0 would send them
// without pause (a retry period of 0: a standby asks for the Lease in a loop), so 0 is refused
// naming the flag (negative durations never parse), with or without --leader-elect.
TEST(OptionsTest, LeaseDurationsOfZeroAreRefused) {
  const std::string why = " must be longer than 0 (it paces requests to the API server: 0 would send them without pause)";
  const std::vector<FlagCase> cases = {
      {{"--leader-elect", "--leader-election-retry-period=0"}, "--leader-election-retry-period" + why},
      {{"--leader-election-retry-period=0s"}, "--leader-election-retry-period" + why},
      {{"--leader-elect", "--leader-election-renew-deadline=0"}, "--leader-election-renew-deadline" + why},
      {{"--leader-election-lease-duration=0", "--leader-election-renew-deadline=0"},
       "--leader-election-lease-duration" + why},
      {{"--leader-elect", "--leader-election-retry-period=1ms"}, ""},
  };
  ExpectFlagCases(cases, [](const std::string& message, const FlagCase& c) {
    EXPECT_EQ(message, c.want) << Join(c.args);
  });
  for (const std::string flag : {"--leader-election-retry-period=-1s", "--request-timeout=0"}) {
    EXPECT_FALSE(ParseOptions({flag}).ok()) << flag;
  }
}

// Issue 29, item 7: with leader election, renew deadline + request timeout + a tenth of the lease
// must fit in the lease duration (leader_election.h), or two leaders could write at once. The
// defaults (and the chart's) fit; settings that do not are refused with a sentence naming all three.
TEST(OptionsTest, LeaderElectionTimingsCannotOverlap) {
  Options d = MustParse({"--leader-elect"});
  EXPECT_LE(d.renew_deadline + d.request_timeout + d.lease_duration / 10, d.lease_duration) << "the defaults fit";
  const std::vector<FlagCase> cases = {
      // The chart's defaults: 15s, 8s, 2s (request timeout 4s).
      {{"--leader-elect", "--leader-election-lease-duration=15s", "--leader-election-renew-deadline=8s",
        "--leader-election-retry-period=2s"},
       ""},
      // The defaults of client-go (15s, 10s) with half the renew deadline as request timeout: 15s.
      {{"--leader-elect", "--leader-election-lease-duration=15s", "--leader-election-renew-deadline=10s"},
       "--leader-election-renew-deadline (10s) plus --request-timeout (5s) must stay below "
       "--leader-election-lease-duration (15s) by at least a tenth of it (1s500ms)"},
      {{"--leader-elect", "--request-timeout=6s"},
       "--leader-election-renew-deadline (8s) plus --request-timeout (6s) must stay below "
       "--leader-election-lease-duration (15s) by at least a tenth of it (1s500ms)"},
      // Exactly at the margin: accepted; a millisecond more: refused.
      {{"--leader-elect", "--request-timeout=5500ms"}, ""},
      {{"--leader-elect", "--request-timeout=5501ms"}, "plus --request-timeout (5s501ms) must stay below"},
      // Without leader election no Lease is held: no bound.
      {{"--leader-election-lease-duration=15s", "--leader-election-renew-deadline=10s"}, ""},
  };
  ExpectFlagCases(cases, [](const std::string& message, const FlagCase& c) {
    EXPECT_THAT(message, HasSubstr(c.want)) << Join(c.args);
    EXPECT_THAT(message, HasSubstr("two controllers would write at once")) << Join(c.args);
  });
}

TEST(OptionsTest, HttpReadTimeout) {
  EXPECT_EQ(MustParse({}).http_read_timeout, std::chrono::seconds(10));
  EXPECT_EQ(MustParse({"--http-read-timeout=1500ms"}).http_read_timeout, std::chrono::milliseconds(1500));
  for (const std::string bad : {"--http-read-timeout=0", "--http-read-timeout=-1s", "--http-read-timeout=soon"}) {
    EXPECT_FALSE(ParseOptions({bad}).ok()) << bad;
  }
}

TEST(OptionsTest, Help) {
  for (const std::string flag : {"--help", "-h", "-help"}) {
    auto o = ParseOptions({flag});
    ASSERT_TRUE(o.ok()) << flag << ": " << o.status().message();
    EXPECT_TRUE(o->help) << flag;
  }
  // Other flags are still read.
  Options o = MustParse({"--workers=8", "--help"});
  EXPECT_TRUE(o.help);
  EXPECT_EQ(o.workers, 8);
}

TEST(OptionsTest, UsageListsEveryFlagWithItsDefault) {
  std::string usage = Usage();
  for (const std::string flag :
       {"--kubeconfig", "--context", "--leader-elect", "--leader-election-namespace", "--leader-election-id",
        "--leader-election-lease-duration", "--leader-election-renew-deadline", "--leader-election-retry-period",
        "--metrics-bind-address", "--health-probe-bind-address", "--webhook-bind-address", "--http-read-timeout",
        "--queue-auth",
        "--aging-interval", "--log-format", "--log-level", "--workers", "--help"}) {
    EXPECT_THAT(usage, HasSubstr(flag));
  }
  for (const std::string def : {"default :8080", "default :8081", "default 15m", "default 15s", "default 10s",
                                "default 2s", "default text", "default info", "default 4", "default berth-system"}) {
    EXPECT_THAT(usage, HasSubstr(def));
  }
}

// Issue 44 (7): --default-max-priority, a whole number from 0 to 100 (default 100: no cap).
TEST(OptionsTest, DefaultMaxPriorityIsAWholeNumberFrom0To100) {
  EXPECT_EQ(MustParse({}).default_max_priority, 100);
  EXPECT_EQ(MustParse({"--default-max-priority=60"}).default_max_priority, 60);
  EXPECT_EQ(MustParse({"--default-max-priority", "0"}).default_max_priority, 0);
  for (const std::string v : {"101", "-1", "", "sixty", "60.5", "1000", " 60"}) {
    auto bad = ParseOptions({"--default-max-priority=" + v});
    ASSERT_FALSE(bad.ok()) << v;
    EXPECT_THAT(bad.status().message(), HasSubstr("flag --default-max-priority=" + v + ": must be a whole number from 0 to 100"));
  }
  EXPECT_THAT(Usage(), HasSubstr("--default-max-priority N"));
}

// --leader-pod names the Pod the leader labels berth.dev/leader=true (the queue API's Service).
TEST(OptionsTest, LeaderPodIsANamespaceAndAPodName) {
  Options none = MustParse({});
  EXPECT_EQ(none.leader_pod_namespace, "");
  EXPECT_EQ(none.leader_pod_name, "");
  Options o = MustParse({"--leader-pod=berth-system/berth-controller-7d9f8-x2x4q"});
  EXPECT_EQ(o.leader_pod_namespace, "berth-system");
  EXPECT_EQ(o.leader_pod_name, "berth-controller-7d9f8-x2x4q");
  // The chart's $(POD_NAMESPACE)/$(POD_NAME) left unexpanded (no env) is refused, as is anything
  // that is not two names.
  for (const std::string v : {"", "berth-system", "/pod", "ns/", "$(POD_NAMESPACE)/$(POD_NAME)", "NS/pod", "ns/pod/x"}) {
    auto bad = ParseOptions({"--leader-pod=" + v});
    ASSERT_FALSE(bad.ok()) << v;
    EXPECT_THAT(bad.status().message(), HasSubstr("flag --leader-pod=" + v + ": must be NAMESPACE/NAME")) << v;
  }
  EXPECT_THAT(Usage(), HasSubstr("--leader-pod NAMESPACE/NAME"));
}

}  // namespace
}  // namespace berth::controller
