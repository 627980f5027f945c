// Issue 31: teams end to end through the real API server (Team objects, berth-controller as a
// process; these tests play the kubelet). A team's idle nominal share is borrowed, its owner's
// run takes it back (the borrower Reclaimed), borrowing and lending limits hold with their numbers, the team
// with less past usage goes first among borrowers, and usage survives a controller restart.
// Without Team objects every other suite runs unchanged (the harness installs the CRD).

#include <gtest/gtest.h>

#include <cmath>

#include "api/v1alpha1/codec.h"
#include "engine_fixture.h"
#include "k8s/clock.h"
#include "k8s/timefmt.h"
#include "scheduling/usage.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
namespace api = api::v1alpha1;
using k8s::resources::kEvents;
using k8s::resources::kNamespaces;
using k8s::resources::kRuns;
using k8s::resources::kTeams;

const std::string kRequeue = "  retry: {onEvents: [interruption], duration: \"off\"}\n";
const std::string kQueue = "  retry: {onEvents: [no-capacity], duration: \"off\"}\n";

class Teams : public EngineTest {
 protected:
  // Team status (usage) brought up to date every second, so a test waits seconds, not minutes.
  Teams() {
    metrics_port_ = FreePort();
    controller_args_ = {"--team-status-interval=1s", "--metrics-bind-address=127.0.0.1:" + std::to_string(metrics_port_),
                       "--queue-auth=false"};
  }
  std::string Http(const std::string& path) {
    return HttpGet("http://127.0.0.1:" + std::to_string(metrics_port_) + path, nullptr, cp().AdminToken());
  }
  int metrics_port_ = 0;

  void TearDown() override {
    EngineTest::TearDown();
    for (const auto& t : teams_) (void)client()->Delete(kTeams.Path("", t));
    for (const auto& n : namespaces_) (void)client()->Delete(kNamespaces.Path("", n));
  }

  std::string TeamName(const std::string& name) const { return name + "-" + ns_; }
  // A second namespace of this test ("<ns>-<suffix>").
  std::string OtherNamespace(const std::string& suffix) {
    const std::string name = ns_ + "-" + suffix;
    auto r = client()->Create(kNamespaces.Path(), R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + name + R"("}})");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    namespaces_.push_back(name);
    return name;
  }
  // Team TeamName(name) of `namespaces` with one share of fleet FleetName(fleet) (YAML lines of
  // the share after `fleet:`, at 4-space indent).
  void Team(const std::string& name, const std::vector<std::string>& namespaces, const std::string& fleet,
            const std::string& share) {
    std::string list;
    for (const auto& n : namespaces) list += (list.empty() ? "" : ", ") + n;
    const std::string yaml = "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + TeamName(name) +
                             "}\nspec:\n  namespaces: [" + list + "]\n  shares:\n  - fleet: " + FleetName(fleet) + "\n" + share;
    CommandResult r = cp().Kubectl({"apply", "-f", "-"}, yaml);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    teams_.push_back(TeamName(name));
  }
  json::Document TeamDoc(const std::string& name) {
    auto d = client()->Get(kTeams.Path("", TeamName(name)));
    return d.ok() ? std::move(d.value()) : json::Document();
  }
  double GpuHours(const std::string& name) {
    auto d = TeamDoc(name);
    const json::Value* v = d.IsObject() ? json::Find(d, {"status", "usage", "gpuHours"}) : nullptr;
    return v != nullptr && v->IsNumber() ? v->GetDouble() : -1;
  }
  // status.fleets[fleet].<part>.gpu of a Team (-1 when absent).
  int64_t FleetGpus(const std::string& name, const std::string& fleet, const char* part) {
    auto d = TeamDoc(name);
    const json::Value* fleets = d.IsObject() ? json::Find(d, {"status", "fleets"}) : nullptr;
    if (fleets == nullptr || !fleets->IsArray()) return -1;
    for (const auto& f : fleets->GetArray()) {
      if (json::GetString(f, "fleet") != FleetName(fleet)) continue;
      const json::Value* v = json::Find(f, {part, "gpu"});
      return v != nullptr && v->IsInt64() ? v->GetInt64() : -1;
    }
    return -1;
  }
  // A run in another namespace of this test, and its status fields.
  void RunIn(const std::string& ns, const std::string& name, const std::string& extra_spec) {
    const std::string yaml = "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name + ", namespace: " + ns +
                             "}\nspec:\n" + extra_spec + "  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n";
    CommandResult r = cp().Kubectl({"apply", "-f", "-"}, yaml);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::string StatusIn(const std::string& ns, const std::string& name, const char* field) {
    auto d = client()->Get(kRuns.Path(ns, name));
    return d.ok() ? json::GetString(json::Find(*d, {"status", field})) : "";
  }
  void DeleteRunsIn(const std::string& ns) { cp().Kubectl({"-n", ns, "delete", "runs", "--all", "--wait=false"}); }
  std::vector<std::string> EventMessages(const std::string& ns, const std::string& run, const std::string& reason) {
    std::vector<std::string> out;
    auto l = client()->List(kEvents.Path(ns));
    if (!l.ok()) return out;
    for (auto& e : l->items) {
      if (json::GetString(json::Find(e, {"involvedObject", "name"})) == run && json::GetString(e, "reason") == reason) {
        out.push_back(json::GetString(e, "message"));
      }
    }
    return out;
  }

  std::vector<std::string> teams_, namespaces_;
};

// Team "owner" has the whole fleet (16 GPUs) as its nominal share and runs nothing: runs of a
// namespace in no Team borrow it. The owner's run, at a lower priority than theirs, takes it
// back: one borrower is Reclaimed (back in the queue, it retries on interruption), the owner's
// run is placed; both sides get Events; the Team's status shows nominal and use.
TEST_F(Teams, IdleShareIsBorrowedAndTheOwnersRunTakesItBack) {
  const std::string owner_ns = OtherNamespace("owner");
  Nodes("g", 2, "16", "64Gi", 8);
  Fleet("g", "g", "  blocks: 8\n  preemption: {minRuntime: 0s}\n");
  ASSERT_NO_FATAL_FAILURE(Team("owner", {owner_ns}, "g", "    nominal: {gpu: 16}\n"));
  for (const char* name : {"b1", "b2"}) {
    Run(name, "  priority: 80\n  resources: {gpu: 8}\n" + kRequeue);
    ASSERT_TRUE(WaitPhase(name, "Scheduled")) << name << ": " << Message(name);
    StartRun(name);
  }
  ASSERT_TRUE(Eventually([&] { return FleetGpus("owner", "g", "lent") == 16; })) << FleetGpus("owner", "g", "lent");
  EXPECT_EQ(FleetGpus("owner", "g", "nominal"), 16);
  EXPECT_EQ(FleetGpus("owner", "g", "used"), 0);

  ASSERT_NO_FATAL_FAILURE(RunIn(owner_ns, "mine", "  priority: 10\n  resources: {gpu: 8}\n" + kQueue));
  ASSERT_TRUE(Eventually([&] { return StatusIn(owner_ns, "mine", "phase") == "Scheduled"; }, std::chrono::seconds(60)))
      << StatusIn(owner_ns, "mine", "phase") << ": " << StatusIn(owner_ns, "mine", "message");
  // Exactly one borrower was stopped: Pending again, reason Reclaimed, saying who took it back.
  int reclaimed = 0;
  for (const char* name : {"b1", "b2"}) {
    if (Reason(name) != "Reclaimed") {
      EXPECT_EQ(Phase(name), "Running") << name;
      continue;
    }
    ++reclaimed;
    EXPECT_EQ(Phase(name), "Pending") << name;
    EXPECT_EQ(StatusInt(name, "resubmissions"), 1);
    std::vector<std::string> retrying;
    ASSERT_TRUE(Eventually([&] { return !(retrying = EventMessages(ns_, name, "Retrying")).empty(); }));
    // The owners' run is of another namespace: not named (issue 44); the team is.
    EXPECT_NE(retrying.front().find("reclaimed by team " + TeamName("owner") + " for a run of another namespace"),
              std::string::npos)
        << retrying.front();
  }
  EXPECT_EQ(reclaimed, 1);
  std::vector<std::string> preempting;
  ASSERT_TRUE(Eventually([&] { return !(preempting = EventMessages(owner_ns, "mine", "Preempting")).empty(); }));
  EXPECT_NE(preempting.front().find("reclaiming team " + TeamName("owner") + "'s nominal share"), std::string::npos)
      << preempting.front();
  EXPECT_TRUE(Eventually([&] { return FleetGpus("owner", "g", "used") == 8 && FleetGpus("owner", "g", "lent") == 8; }))
      << FleetGpus("owner", "g", "used") << " / " << FleetGpus("owner", "g", "lent");
  // The metrics count the reclaim by fleet and the stopped run's team: none holds ns_ (team="").
  const std::string reclaims = "berth_reclaims_total{fleet=\"" + FleetName("g") + "\",team=\"\"} 1";
  EXPECT_TRUE(Eventually([&] { return Http("/metrics").find(reclaims) != std::string::npos; })) << Http("/metrics");
  DeleteRunsIn(owner_ns);
}

// A team at its nominal share with borrowingLimit 0 waits (reason TeamShare, with the numbers)
// though the fleet has room, whatever its retry says (it has none: a capacity wait would fail it).
TEST_F(Teams, BorrowingLimitHoldsWithTheNumbers) {
  Nodes("g", 2, "16", "64Gi", 8);
  Fleet("g", "g", "  blocks: 8\n");
  ASSERT_NO_FATAL_FAILURE(Team("t", {ns_}, "g", "    nominal: {gpu: 8}\n    borrowingLimit: {gpu: 0}\n"));
  Run("first", "  resources: {gpu: 8}\n");
  ASSERT_TRUE(WaitPhase("first", "Scheduled")) << Message("first");
  Run("second", "  resources: {gpu: 8}\n");
  ASSERT_TRUE(Eventually([&] { return Reason("second") == "TeamShare"; })) << Reason("second") << ": " << Message("second");
  EXPECT_EQ(Phase("second"), "Pending");
  EXPECT_EQ(Message("second"), "team " + TeamName("t") + " uses 8 of its 8 GPUs on " + FleetName("g") +
                                   " and may borrow 0 more; it needs 8 GPUs");
  // The queue names the run's team; the metrics show the team's use on the fleet.
  auto queue = json::Parse(Http("/queue?namespace=" + ns_));
  ASSERT_TRUE(queue.ok());
  const json::Value* items = json::Find(*queue, {"items"});
  ASSERT_TRUE(items != nullptr && items->IsArray() && items->Size() == 1);
  EXPECT_EQ(json::GetString((*items)[0], "team"), TeamName("t"));
  EXPECT_TRUE(Eventually([&] {
    return Http("/metrics").find("berth_team_resources{fleet=\"" + FleetName("g") + "\",resource=\"gpu\",state=\"used\",team=\"" +
                                 TeamName("t") + "\"} 8") != std::string::npos;
  })) << Http("/metrics");
  // Raising the limit lets it borrow the other machine.
  CommandResult r = cp().Kubectl({"patch", "team", TeamName("t"), "--type=json", "-p",
                                  R"([{"op":"replace","path":"/spec/shares/0/borrowingLimit/gpu","value":8}])"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(WaitPhase("second", "Scheduled")) << Message("second");
}

// A lendingLimit keeps part of an idle share for its owner: of the lender's idle 16 GPUs, only 8
// are borrowed; the next borrower waits TeamShare, saying what can be borrowed.
TEST_F(Teams, LendingLimitKeepsPartOfAnIdleShare) {
  const std::string lender_ns = OtherNamespace("lender");
  Nodes("g", 2, "16", "64Gi", 8);
  Fleet("g", "g", "  blocks: 8\n");
  ASSERT_NO_FATAL_FAILURE(Team("lender", {lender_ns}, "g", "    nominal: {gpu: 16}\n    lendingLimit: {gpu: 8}\n"));
  Run("b1", "  resources: {gpu: 8}\n");
  ASSERT_TRUE(WaitPhase("b1", "Scheduled")) << Message("b1");
  Run("b2", "  resources: {gpu: 8}\n");
  ASSERT_TRUE(Eventually([&] { return Reason("b2") == "TeamShare"; })) << Reason("b2") << ": " << Message("b2");
  EXPECT_NE(Message("b2").find("0 GPUs can be borrowed"), std::string::npos) << Message("b2");
  EXPECT_TRUE(Eventually([&] { return FleetGpus("lender", "g", "lent") == 8; })) << FleetGpus("lender", "g", "lent");
}

// Two teams that only borrow (nominal 0). Team "busy" ran 8 GPUs for a while; then, one machine
// free, its run submitted first waits and team "idle"'s run submitted later goes first (the
// message of the cycle that decides it, "behind team ...: usage ...", is the core's:
// tests/unit/scheduling/teams_test.cc).
TEST_F(Teams, AtEqualPriorityTheTeamWithLessPastUsageGoesFirst) {
  const std::string idle_ns = OtherNamespace("idle");
  Nodes("g", 1, "16", "64Gi", 8);
  Fleet("g", "g", "  blocks: 8\n");
  ASSERT_NO_FATAL_FAILURE(Team("busy", {ns_}, "g", "    nominal: {gpu: 0}\n"));
  ASSERT_NO_FATAL_FAILURE(Team("idle", {idle_ns}, "g", "    nominal: {gpu: 0}\n"));
  Run("past", "  resources: {gpu: 8}\n");
  ASSERT_TRUE(WaitPhase("past", "Scheduled")) << Message("past");
  StartRun("past");
  ASSERT_TRUE(Eventually([&] { return GpuHours("busy") > 0; })) << GpuHours("busy");
  Run("later", "  resources: {gpu: 8}\n" + kQueue);
  ASSERT_TRUE(Eventually([&] { return Phase("later") == "Pending" && !Message("later").empty(); })) << Message("later");
  ASSERT_NO_FATAL_FAILURE(RunIn(idle_ns, "fresh", "  resources: {gpu: 8}\n" + kQueue));
  ASSERT_TRUE(Eventually([&] { return !StatusIn(idle_ns, "fresh", "message").empty(); }));
  FinishRun("past");
  ASSERT_TRUE(Eventually([&] { return StatusIn(idle_ns, "fresh", "phase") == "Scheduled"; }))
      << StatusIn(idle_ns, "fresh", "message");
  EXPECT_EQ(Phase("later"), "Pending") << Message("later");
  DeleteRunsIn(idle_ns);
}

// `kubectl berth teams` shows per team and fleet the nominal share, use, borrowing and lending, and
// the usage, from the Teams' status.
TEST_F(Teams, KubectlBerthTeamsShowsSharesUseAndUsage) {
  const std::string bin = BERTH_CONTROLLER_BIN;
  const std::string plugin = bin.substr(0, bin.rfind("/src/controller/")) + "/src/cli/kubectl-berth";
  Nodes("g", 1, "16", "64Gi", 8);
  Fleet("g", "g", "  blocks: 8\n");
  ASSERT_NO_FATAL_FAILURE(Team("t", {ns_}, "g", "    nominal: {gpu: 4}\n"));
  Run("big", "  resources: {gpu: 6}\n");
  ASSERT_TRUE(WaitPhase("big", "Scheduled")) << Message("big");
  ASSERT_TRUE(Eventually([&] { return FleetGpus("t", "g", "borrowed") == 2; })) << FleetGpus("t", "g", "borrowed");
  CommandResult r = RunCommand({plugin, "teams", "--kubeconfig", cp().kubeconfig()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string row;
  for (size_t at = 0, nl; at < r.out.size(); at = nl + 1) {
    nl = r.out.find('\n', at);
    if (nl == std::string::npos) nl = r.out.size();
    if (r.out.compare(at, TeamName("t").size() + 1, TeamName("t") + " ") == 0) row = r.out.substr(at, nl - at);
  }
  ASSERT_FALSE(row.empty()) << r.out;
  EXPECT_NE(row.find(FleetName("g")), std::string::npos) << row;
  std::string words;  // the row with its columns' padding collapsed
  for (char c : row) {
    if (c != ' ' || (!words.empty() && words.back() != ' ')) words += c;
  }
  EXPECT_NE(words.find(" 4 GPUs 6 GPUs 2 GPUs "), std::string::npos) << "nominal, used, borrowed:\n" << r.out;
  EXPECT_NE(row.find("GPU-h"), std::string::npos) << row;
}

// The CRD refuses what it can see is wrong, naming the field; a namespace two Teams list belongs
// to the first by name, and the other one says so in a Conflict condition.
TEST_F(Teams, SchemaRefusesBadTeamsAndANamespaceClashIsReported) {
  const std::string head = "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + TeamName("bad") + "}\nspec:\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"  weight: 0\n", "spec.weight"},
      {"  parent: " + TeamName("bad") + "\n", "cannot be its own parent"},
      {"  shares: [{fleet: a, nominal: {gpu: -1}}]\n", "spec.shares[0].nominal.gpu"},
      {"  shares: [{fleet: a, nominal: {cpu: four}}]\n", "spec.shares[0].nominal.cpu"},
      {"  shares: [{fleet: a, nominal: {gpu: 1}}, {fleet: a, nominal: {gpu: 2}}]\n", "Duplicate value"},
      {"  shares: [{fleet: a}]\n", "spec.shares[0].nominal: Required value"},
  };
  for (const auto& [spec, says] : cases) {
    CommandResult r = cp().Kubectl({"apply", "-f", "-"}, head + spec);
    EXPECT_NE(r.exit_code, 0) << spec;
    EXPECT_NE(r.err.find(says), std::string::npos) << spec << ": " << r.err;
  }
  Nodes("g", 1, "16", "64Gi", 8);
  Fleet("g", "g", "  blocks: 8\n");
  ASSERT_NO_FATAL_FAILURE(Team("a", {ns_}, "g", "    nominal: {gpu: 4}\n"));
  ASSERT_NO_FATAL_FAILURE(Team("b", {ns_}, "g", "    nominal: {gpu: 4}\n"));
  auto conflict = [&](const std::string& team) {
    auto d = TeamDoc(team);
    const json::Value* conds = d.IsObject() ? json::Find(d, {"status", "conditions"}) : nullptr;
    if (conds == nullptr || !conds->IsArray()) return std::string();
    for (const auto& c : conds->GetArray()) {
      if (json::GetString(c, "type") == "Conflict" && json::GetString(c, "status") == "True") return json::GetString(c, "message");
    }
    return std::string();
  };
  ASSERT_TRUE(Eventually([&] { return !conflict("b").empty(); })) << Kubectl({"get", "team", TeamName("b"), "-o", "yaml"}).out;
  EXPECT_EQ(conflict("b"), "namespace " + ns_ + " belongs to Team " + TeamName("a") + " (the older Team that lists it)");
  EXPECT_EQ(conflict("a"), "");
}

// Usage is kept in the Team's status: a new controller goes on from it, not from zero.
TEST_F(Teams, UsageSurvivesAControllerRestart) {
  Nodes("g", 1, "16", "64Gi", 8);
  Fleet("g", "g", "  blocks: 8\n");
  ASSERT_NO_FATAL_FAILURE(Team("t", {ns_}, "g", "    nominal: {gpu: 8}\n"));
  Run("long", "  resources: {gpu: 8}\n");
  ASSERT_TRUE(WaitPhase("long", "Scheduled")) << Message("long");
  StartRun("long");
  // At least 8 GPU-seconds.
  ASSERT_TRUE(Eventually([&] { return GpuHours("t") >= 8.0 / 3600; }, std::chrono::seconds(60))) << GpuHours("t");
  controller_->Stop();
  const double before = GpuHours("t");
  controller_ = std::make_unique<ControllerProcess>(controller_args_);
  controller_->Start();
  const std::string written = json::GetString(json::Find(TeamDoc("t"), {"status", "usage", "updatedAt"}));
  // The new controller writes the usage again (a later updatedAt), going on from what it read.
  ASSERT_TRUE(Eventually([&] {
    return json::GetString(json::Find(TeamDoc("t"), {"status", "usage", "updatedAt"})) != written;
  }, std::chrono::seconds(60)));
  EXPECT_GE(GpuHours("t"), before * 0.999) << "before the restart: " << before;
}

// Issue 44 (6): without admission, a namespace two Teams list belongs to the OLDER Team (creation
// time, then name), not to the first by name: Team "zeta" lists the namespace, then Team "alpha"
// (a name that sorts first) lists it too. zeta keeps it (its runs count as zeta's), alpha reports
// Conflict=True naming zeta.
TEST_F(Teams, TheOlderTeamKeepsANamespaceAYoungerTeamAlsoLists) {
  Nodes("g", 1, "16", "64Gi", 8);
  Fleet("g", "g", "  blocks: 8\n");
  ASSERT_NO_FATAL_FAILURE(Team("zeta", {ns_}, "g", "    nominal: {gpu: 8}\n"));
  // Creation times have whole seconds: alpha is created in a later second than zeta.
  const std::string zeta_created = json::GetString(json::Find(TeamDoc("zeta"), {"metadata", "creationTimestamp"}));
  ASSERT_FALSE(zeta_created.empty());
  ASSERT_TRUE(Eventually([&] { return k8s::FormatRfc3339(k8s::SystemClock().Now()) > zeta_created; }));
  ASSERT_NO_FATAL_FAILURE(Team("alpha", {ns_}, "g", "    nominal: {gpu: 8}\n"));
  auto conflict = [&](const std::string& team) {
    auto d = TeamDoc(team);
    const json::Value* conds = d.IsObject() ? json::Find(d, {"status", "conditions"}) : nullptr;
    if (conds == nullptr || !conds->IsArray()) return std::string();
    for (const auto& c : conds->GetArray()) {
      if (json::GetString(c, "type") == "Conflict" && json::GetString(c, "status") == "True") return json::GetString(c, "message");
    }
    return std::string();
  };
  ASSERT_TRUE(Eventually([&] { return !conflict("alpha").empty() || !conflict("zeta").empty(); }))
      << Kubectl({"get", "teams", "-o", "yaml"}).out;
  EXPECT_EQ(conflict("alpha"), "namespace " + ns_ + " belongs to Team " + TeamName("zeta") + " (the older Team that lists it)");
  EXPECT_EQ(conflict("zeta"), "");
  // The namespace's running run is zeta's use (what reclaim and borrowing count), not alpha's.
  Run("work", "  resources: {gpu: 8}\n");
  ASSERT_TRUE(WaitPhase("work", "Scheduled")) << Message("work");
  StartRun("work");
  EXPECT_TRUE(Eventually([&] { return FleetGpus("zeta", "g", "used") == 8; }))
      << Kubectl({"get", "team", TeamName("zeta"), "-o", "yaml"}).out;
  EXPECT_TRUE(FleetGpus("alpha", "g", "used") <= 0) << Kubectl({"get", "team", TeamName("alpha"), "-o", "yaml"}).out;
}

// Issue 47 (5): two Teams without any share compete for one fleet (all of it common pool): as
// above, the team with less past usage goes first though its run was submitted later.
TEST_F(Teams, TwoTeamsWithoutSharesOnOneFleetGoByPastUsage) {
  const std::string idle_ns = OtherNamespace("idle");
  Nodes("g", 1, "16", "64Gi", 8);
  Fleet("g", "g", "  blocks: 8\n");
  for (const auto& [name, ns] : {std::pair<std::string, std::string>{"busy", ns_}, {"idle", idle_ns}}) {
    const std::string yaml = "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + TeamName(name) +
                             "}\nspec:\n  namespaces: [" + ns + "]\n";
    CommandResult r = cp().Kubectl({"apply", "-f", "-"}, yaml);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    teams_.push_back(TeamName(name));
  }
  // busy's first run holds the one machine for a while: busy has past usage, idle none.
  Run("past", "  resources: {gpu: 8}\n");
  ASSERT_TRUE(WaitPhase("past", "Scheduled")) << Message("past");
  StartRun("past");
  ASSERT_TRUE(Eventually([&] { return GpuHours("busy") > 0; })) << GpuHours("busy");
  // Then each team queues a run for it, busy's first; idle's goes first when the machine frees.
  const std::vector<std::pair<std::string, std::string>> queued = {{ns_, "later"}, {idle_ns, "fresh"}};
  for (const auto& q : queued) {
    ASSERT_NO_FATAL_FAILURE(RunIn(q.first, q.second, "  resources: {gpu: 8}\n" + kQueue));
    ASSERT_TRUE(Eventually([&] { return !StatusIn(q.first, q.second, "message").empty(); })) << q.second;
  }
  FinishRun("past");
  EXPECT_TRUE(Eventually([&] { return StatusIn(idle_ns, "fresh", "phase") == "Scheduled"; }))
      << StatusIn(idle_ns, "fresh", "message");
  EXPECT_EQ(StatusIn(ns_, "later", "phase"), "Pending") << StatusIn(ns_, "later", "message");
  DeleteRunsIn(idle_ns);
}

// Issue 47 (3, 7): a Team's budget in the engine. Team "spent" has a 50 GPU-hour budget over 2h;
// its history (written as the usage fold writes it, api::TeamUsagePatch) holds 20 GPU-hours in the
// last full hour on fleet g, whose costWeight is 3: 60 weighted hours, spent. Its run waits with
// BudgetExhausted and the numbers; the Team's status shows the budget measured; when the budget
// is raised to 100 the run starts.
TEST_F(Teams, ARunOfATeamPastItsBudgetWaitsUntilTheBudgetIsRaised) {
  Nodes("g", 1, "16", "64Gi", 8);
  Fleet("g", "g", "  blocks: 8\n  costWeight: 3\n");
  const std::string team = TeamName("spent");
  auto apply = [&](const std::string& hours) {
    const std::string yaml = "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + team + "}\nspec:\n  namespaces: [" +
                             ns_ + "]\n  budgets:\n  - {resource: gpu, hours: " + hours + ", period: 2h}\n";
    CommandResult r = cp().Kubectl({"apply", "-f", "-"}, yaml);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  ASSERT_NO_FATAL_FAILURE(apply("50"));
  teams_.push_back(team);
  // 20 GPUs over the last full hour on g, folded up to its end.
  const base::TimePoint now = std::chrono::time_point_cast<base::Duration>(k8s::SystemClock().Now());
  const base::TimePoint hour = base::TimePoint(now.time_since_epoch() - now.time_since_epoch() % std::chrono::hours(1));
  scheduling::UsageHistory history;
  scheduling::FoldUsage(history,
                        {{.ns = ns_, .fleet = FleetName("g"), .start = hour - std::chrono::hours(1), .end = hour, .gpus = 20,
                          .cpu_milli = 0, .memory_bytes = 0}},
                        hour - std::chrono::hours(1), hour,
                        {.hourly_since = hour - std::chrono::hours(48), .max_bytes = scheduling::kMaxUsageBytes});
  bool written = false;
  for (int attempt = 0; attempt < 20 && !written; ++attempt) {
    auto t = client()->Get(kTeams.Path("", team));
    ASSERT_TRUE(t.ok());
    const std::string rv = json::GetString(json::Find(*t, {"metadata", "resourceVersion"}));
    auto w = client()->MergePatch(kTeams.Path("", team, "status"), api::TeamUsagePatch(history, api::Time(hour), rv));
    ASSERT_TRUE(w.ok() || w.status().IsConflict()) << w.status().ToString();
    written = w.ok();
  }
  ASSERT_TRUE(written);
  auto budget = [&](const char* field) {
    auto d = TeamDoc("spent");
    const json::Value* b = d.IsObject() ? json::Find(d, {"status", "budgets"}) : nullptr;
    if (b == nullptr || !b->IsArray() || b->GetArray().Empty()) return std::string();
    const json::Value* v = json::Find(b->GetArray()[0], {field});
    return v == nullptr ? std::string() : v->IsNumber() ? std::to_string(std::lround(v->GetDouble())) : json::GetString(v);
  };
  ASSERT_TRUE(Eventually([&] { return budget("used") == "60"; })) << budget("used");
  EXPECT_FALSE(budget("refillsAt").empty()) << "spent: it says when it refills";

  Run("held", "  resources: {gpu: 8}\n" + kQueue);
  ASSERT_TRUE(Eventually([&] { return StatusIn(ns_, "held", "reason") == "BudgetExhausted"; })) << Message("held");
  EXPECT_EQ(Phase("held"), "Pending");
  EXPECT_NE(Message("held").find("team " + team + " has used 60 of its 50 gpu-hours over 2h on all fleets; the budget refills at " +
                                 budget("refillsAt")),
            std::string::npos)
      << Message("held");

  ASSERT_NO_FATAL_FAILURE(apply("100"));
  EXPECT_TRUE(Eventually([&] { return Phase("held") == "Scheduled"; })) << Message("held");
  EXPECT_TRUE(Eventually([&] { return budget("refillsAt").empty(); })) << budget("refillsAt");
}

}  // namespace
}  // namespace berth::testing
