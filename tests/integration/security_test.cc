// Security against the real API server: bearer tokens never reach the log (text and JSON, debug
// level, a refused token and a working one; the dashboard's users' tokens reach neither the
// controller nor the dashboard's own log); a rotated token file takes effect without a restart once
// the old token is revoked; the dashboard (`kubectl berth dashboard`, issue 44) acts only with its
// user's own kubeconfig, so a user without rights cannot change a priority through it; the
// controller serves no route that acts for a user.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "engine_fixture.h"
#include "harness.h"
#include "k8s/json.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kRuns;

// The API server of this binary keeps an audit log of every write (who made it, with what
// result): DashboardWritePathUsesOnlyTheUsersKubeconfig reads it.
[[maybe_unused]] const bool kAudit = [] { return setenv("BERTH_AUDIT", "1", 1) == 0; }();

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// Writes `content` to `path` atomically (a rename), as the kubelet rotates a projected token.
void WriteAtomically(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << content << "\n";
  }
  ASSERT_EQ(std::rename(tmp.c_str(), path.c_str()), 0);
}

class Security : public EngineTest {
 protected:
  Security() {
    metrics_port_ = FreePort();
    controller_args_ = {"--metrics-bind-address=127.0.0.1:" + std::to_string(metrics_port_)};
  }

  std::string Token(const char* who) { return cp().TokenOf(who); }
  std::string Port() { return Trim(ReadFile(cp().dir() + "/apiserver.port")); }

  // A kubeconfig for the control plane with `user_lines` (YAML under `user:`, 4-space indent).
  std::string Kubeconfig(const std::string& name, const std::string& user_lines) {
    return cp().KubeconfigOf(name + "-" + ns_, user_lines);
  }

  // Replaces the fixture's controller with one using `kubeconfig` and `args`.
  void RestartController(const std::string& kubeconfig, std::vector<std::string> args, const std::string& log_name) {
    if (controller_) controller_->Stop();
    args.push_back("--metrics-bind-address=127.0.0.1:" + std::to_string(metrics_port_));
    controller_ = std::make_unique<ControllerProcess>(args, log_name, kubeconfig);
    controller_->Start();
  }

  // HTTP status of GET /api/v1/namespaces with `token` (curl, the API server's CA).
  int ApiStatusWith(const std::string& token) {
    CommandResult r = RunCommand({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert",
                                  cp().dir() + "/certs/apiserver.crt", "-H", "Authorization: Bearer " + token,
                                  "https://127.0.0.1:" + Port() + "/api/v1/namespaces/" + ns_});
    try {
      return std::stoi(r.out);
    } catch (...) {
      return 0;
    }
  }

  // `kubectl berth dashboard` with a kubeconfig of `who`'s token ("wrong": one the API server
  // refuses), serving at `url`; its log is "dashboard-<who>".
  struct Dashboard {
    std::unique_ptr<ControllerProcess> process;
    std::string url;
  };
  Dashboard DashboardOf(const std::string& who, const std::string& token) {
    const int port = FreePort();
    Dashboard d{ControllerProcess::LocalDashboard(Kubeconfig("dash-" + who, "    token: " + token + "\n"), port,
                                                  "dashboard-" + who),
                ControllerProcess::LocalDashboardUrl(port)};
    EXPECT_TRUE(d.process->StartServing()) << d.process->Log();
    return d;
  }

  // POST of a priority change to `base` (a dashboard's URL) with the page's headers: the CSRF
  // header and a JSON body, no credential (the dashboard holds its user's kubeconfig).
  std::pair<int, std::string> PostPriority(const std::string& base, const std::string& ns, const std::string& run,
                                           int priority) {
    std::string url = base + "api/runs/" + ns + "/" + run + "/priority";
    CommandResult r = RunCommand({"curl", "-s", "-m", "30", "-w", "\n%{http_code}", "-X", "POST", "--data",
                                  "{\"priority\":" + std::to_string(priority) + "}", "-H", "Content-Type: application/json",
                                  "-H", "X-Berth-CSRF: 1", url});
    auto nl = r.out.rfind('\n');
    if (nl == std::string::npos) return {0, r.out};
    int code = 0;
    try {
      code = std::stoi(r.out.substr(nl + 1));
    } catch (...) {
    }
    return {code, r.out.substr(0, nl)};
  }

  int64_t SpecPriority(const std::string& run) {
    auto d = RunDoc(run);
    return d.IsObject() ? json::GetInt(*json::Find(d, {"spec"}), "priority", -1) : -1;
  }

  void WaitServing() {
    ASSERT_TRUE(Eventually([&] {
      int code = 0;
      HttpGet("http://127.0.0.1:" + std::to_string(metrics_port_) + "/metrics", &code);
      return code == 200;
    })) << controller_->Log();
  }

  // The editor may get, list and patch runs in the test namespace; the viewer has no rights.
  void GrantEditor() {
    Apply(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: run-editor}
rules:
- apiGroups: [berth.dev]
  resources: [runs]
  verbs: [get, list, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: editor-edits-runs}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: run-editor}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: editor}]
)");
  }

  // Every secret in `secrets` is absent from `log`, whole or as its first 12 characters.
  void ExpectNoSecret(const std::string& log, const std::vector<std::pair<std::string, std::string>>& secrets,
                      const std::string& what) {
    ASSERT_FALSE(log.empty()) << what << ": empty log";
    for (const auto& [name, secret] : secrets) {
      ASSERT_GE(secret.size(), 12u) << name;
      EXPECT_EQ(log.find(secret), std::string::npos) << what << ": the " << name << " token is in the log";
      EXPECT_EQ(log.find(secret.substr(0, 12)), std::string::npos) << what << ": a prefix of the " << name << " token is in the log";
    }
  }

  int metrics_port_;
};

// (a) Bearer tokens never logged: debug level, both formats, a refused token (401 on every
// list/watch) and a working one read from a token file. The dashboard's users (issue 44: each runs
// `kubectl berth dashboard` with its own kubeconfig) act with their tokens: a viewer refused (403),
// an editor's change made, a wrong token refused (401); no token reaches the controller's log or
// the dashboard's.
TEST_F(Security, BearerTokensNeverReachTheLog) {
  GrantEditor();
  Nodes("s", 1, "4", "8Gi");
  Fleet("s", "s", "  blocks: 2\n");
  const std::string admin = Token("admin"), viewer = Token("viewer"), editor = Token("editor");
  const std::string wrong = "wrongtoken" + ns_ + "0123456789abcdef";
  const std::vector<std::pair<std::string, std::string>> secrets = {
      {"admin", admin}, {"viewer", viewer}, {"editor", editor}, {"wrong", wrong}};
  const std::string token_file = cp().dir() + "/token-" + ns_;
  WriteAtomically(token_file, admin);

  for (const std::string format : {"text", "json"}) {
    SCOPED_TRACE(format);
    // A token the API server refuses: every list fails with 401 and is logged as such.
    RestartController(Kubeconfig("wrong", "    token: " + wrong + "\n"), {"--log-format=" + format, "--log-level=debug"},
                      "wrong-" + format);
    ASSERT_TRUE(Eventually([&] { return controller_->Log().find("Unauthorized") != std::string::npos; }))
        << controller_->Log();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    controller_->Stop();
    const std::string refused_log = controller_->Log();
    ExpectNoSecret(refused_log, secrets, format + " log with a refused token");

    // A working token from a token file; the dashboard's users act on a run meanwhile.
    RestartController(Kubeconfig("file", "    tokenFile: " + token_file + "\n"), {"--log-format=" + format, "--log-level=debug"},
                      "file-" + format);
    const std::string run = "logged-" + format;
    Run(run, "  retry: {onEvents: [no-capacity], duration: \"off\"}\n");
    ASSERT_TRUE(WaitPhase(run, "Scheduled")) << Phase(run) << ": " << Message(run) << "\n" << controller_->Log();
    const std::vector<std::tuple<std::string, std::string, int, int>> users = {
        {"viewer", viewer, 10, 403}, {"editor", editor, 60, 200}, {"wrong", wrong, 70, 401}};
    for (const auto& [who, token, priority, want] : users) {
      Dashboard d = DashboardOf(who + "-" + format, token);
      auto [code, body] = PostPriority(d.url, ns_, run, priority);
      EXPECT_EQ(code, want) << who << ": " << body;
      RunCommand({"curl", "-s", "-m", "30", d.url + "api/runs/" + ns_ + "/" + run});  // the run detail
      d.process->Stop();
      const std::string dashboard_log = d.process->Log();
      if (who == "editor") {
        EXPECT_NE(dashboard_log.find("priority of run " + ns_ + "/" + run + " set to 60"), std::string::npos) << dashboard_log;
      }
      ExpectNoSecret(dashboard_log, secrets, "the dashboard's log (" + who + ")");
    }
    EXPECT_EQ(SpecPriority(run), 60);
    controller_->Stop();
    const std::string log = controller_->Log();
    if (format == "json") {
      EXPECT_EQ(log.rfind("{\"ts\":", 0), 0u) << log.substr(0, 200);
    }
    ExpectNoSecret(log, secrets, format + " log with a working token");
  }
  // An admin controller again, so that TearDown can finalize the runs.
  RestartController("", {}, "controller");
}

// (b) Token rotation: the controller reads its token from a file (kubeconfig tokenFile). The file
// gets a new ServiceAccount token and the old one is revoked (its bound Secret deleted); the
// controller keeps working at once, without a restart: a 401 makes it re-read the file.
TEST_F(Security, RotatedTokenFileTakesEffectWithoutARestart) {
  const std::string sa = "berth-rotation";
  const std::string binding = "berth-rotation-" + ns_;
  Apply("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: " + sa + "}\n---\n"
        "apiVersion: v1\nkind: Secret\nmetadata: {name: token-a}\ntype: Opaque\n---\n"
        "apiVersion: v1\nkind: Secret\nmetadata: {name: token-b}\ntype: Opaque\n");
  CommandResult crb = cp().Kubectl({"create", "clusterrolebinding", binding, "--clusterrole=cluster-admin",
                                    "--serviceaccount=" + ns_ + ":" + sa});
  ASSERT_EQ(crb.exit_code, 0) << crb.err;
  auto token_for = [&](const std::string& secret) {
    CommandResult t = Kubectl({"create", "token", sa, "--duration=1h", "--bound-object-kind=Secret",
                               "--bound-object-name=" + secret});
    EXPECT_EQ(t.exit_code, 0) << t.err;
    return Trim(t.out);
  };
  const std::string a = token_for("token-a"), b = token_for("token-b");
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  ASSERT_NE(a, b);
  ASSERT_TRUE(Eventually([&] { return ApiStatusWith(a) == 200 && ApiStatusWith(b) == 200; }));

  const std::string token_file = cp().dir() + "/rotating-token-" + ns_;
  WriteAtomically(token_file, a);
  // The default refresh interval (60 s) stays: the test must not depend on it.
  RestartController(Kubeconfig("rotating", "    tokenFile: " + token_file + "\n"), {"--log-format=json"}, "rotating");
  const int pid = controller_->pid();

  Nodes("r", 2, "4", "8Gi");
  Fleet("r", "r");
  Run("before");
  ASSERT_TRUE(WaitPhase("before", "Scheduled")) << Phase("before") << ": " << Message("before") << "\n" << controller_->Log();

  // Rotate: the new token into the file, then revoke the old one.
  WriteAtomically(token_file, b);
  const auto revoke_at = std::chrono::steady_clock::now();
  ASSERT_EQ(Kubectl({"delete", "secret", "token-a"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return ApiStatusWith(a) == 401; }, std::chrono::seconds(30)))
      << "token A was never revoked: " << ApiStatusWith(a);
  ASSERT_EQ(ApiStatusWith(b), 200);
  const auto rotated_at = std::chrono::steady_clock::now();
  std::printf("token A refused %lld ms after its Secret was deleted\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(rotated_at - revoke_at).count()));

  // Writes keep working well within the 60 s refresh interval: a new run is admitted and placed,
  // the old one moves on.
  Run("after");
  EXPECT_TRUE(WaitPhase("after", "Scheduled", std::chrono::seconds(20)))
      << Phase("after") << ": " << Message("after") << "\n" << controller_->Log();
  std::printf("run admitted %lld ms after the revocation took effect\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - rotated_at).count()));
  StartRun("before");
  const std::string log = controller_->Log();
  EXPECT_NE(log.find("the token file has a new token"), std::string::npos) << log;
  EXPECT_TRUE(controller_->Running());
  EXPECT_EQ(controller_->pid(), pid) << "the controller restarted";
  ExpectNoSecret(log, {{"old", a}, {"new", b}}, "rotation log");

  // An admin controller for TearDown (it finalizes the runs), then the ServiceAccount's rights go.
  RestartController("", {}, "controller");
  cp().Kubectl({"delete", "clusterrolebinding", binding, "--wait=false"});
}

// (c) berth takes no user credential (issue 44, 4): the controller serves no page and no route that
// acts with a token it is sent, whatever its flags (--queue-auth=false opens only the queue,
// fleets and teams as JSON, for local tests). The admin's token sent to it changes nothing. Failed
// before the token page was deleted: with --queue-auth=false the priority change was made (200).
TEST_F(Security, TheControllerServesNoRouteThatActsForAUser) {
  Run("target", "  retry: {onEvents: [no-capacity], duration: \"off\"}\n");
  ASSERT_TRUE(Eventually([&] { return !Phase("target").empty(); }));
  const std::string admin = Token("admin");
  for (const bool open : {false, true}) {
    SCOPED_TRACE(open ? "--queue-auth=false" : "default flags");
    RestartController("", open ? std::vector<std::string>{"--queue-auth=false"} : std::vector<std::string>{},
                      open ? "controller-open" : "controller-default");
    WaitServing();
    const std::string base = "http://127.0.0.1:" + std::to_string(metrics_port_) + "/";
    for (const std::string action : {"priority", "stop", "suspend"}) {
      CommandResult r = RunCommand({"curl", "-s", "-m", "30", "-w", "\n%{http_code}", "-X", "POST", "--data",
                                    action == "priority" ? R"({"priority":99})" : "{}", "-H", "Content-Type: application/json",
                                    "-H", "X-Berth-CSRF: 1", "-H", "Authorization: Bearer " + admin, "-H",
                                    "X-Berth-Token: " + admin, base + "api/runs/" + ns_ + "/target/" + action});
      EXPECT_EQ(r.out.substr(r.out.rfind('\n') + 1), "405") << action << ": " << r.out;
    }
    int code = 0;
    for (const std::string& path :
         std::vector<std::string>{"api/runs/" + ns_ + "/target", "api/runs/" + ns_ + "/target/logs", "api/session"}) {
      std::string body = HttpGet(base + path, &code, admin);
      EXPECT_EQ(code, 404) << path << ": " << body;
    }
    std::string page = HttpGet(base, &code);
    EXPECT_EQ(code, 404);
    EXPECT_NE(page.find("kubectl berth dashboard"), std::string::npos) << page;
    HttpGet(base + "api/fleets", &code);
    EXPECT_EQ(code, open ? 200 : 401);
  }
  EXPECT_EQ(SpecPriority("target"), 50) << "a change reached the run through the controller";
  const json::Value* stop = json::Find(RunDoc("target"), {"spec", "stop"});
  EXPECT_TRUE(stop == nullptr || (stop->IsBool() && !stop->GetBool()));
  RestartController("", {}, "controller");  // the fixture's controller again
}

// (d) The dashboard's write path uses only its user's kubeconfig (`kubectl berth dashboard`,
// issue 44): a viewer without rights is refused with the API server's own message and nothing
// changes; the editor's change is made, in its namespace only; the API server's audit log shows
// who made each patch (the viewer refused, the editor allowed), never berth.
TEST_F(Security, DashboardWritePathUsesOnlyTheUsersKubeconfig) {
  GrantEditor();
  Run("target", "  retry: {onEvents: [no-capacity], duration: \"off\"}\n");
  ASSERT_TRUE(Eventually([&] { return !Phase("target").empty(); }));
  Dashboard viewer = DashboardOf("viewer", Token("viewer"));
  Dashboard editor = DashboardOf("editor", Token("editor"));

  auto [vc, vb] = PostPriority(viewer.url, ns_, "target", 99);
  EXPECT_EQ(vc, 403) << vb;
  EXPECT_NE(vb.find("runs.berth.dev \\\"target\\\" is forbidden: User \\\"viewer\\\" cannot patch resource \\\"runs\\\""),
            std::string::npos)
      << vb;
  EXPECT_EQ(SpecPriority("target"), 50) << "the viewer's change went through";

  auto [ec, eb] = PostPriority(editor.url, ns_, "target", 77);
  EXPECT_EQ(ec, 200) << eb;
  EXPECT_EQ(SpecPriority("target"), 77);

  // The audit log: the viewer's patch of the run refused, the editor's made, each in its own name.
  bool viewer_refused = false, editor_allowed = false;
  EXPECT_TRUE(Eventually([&] {
    std::istringstream audit(ReadFile(cp().dir() + "/audit.log"));
    viewer_refused = editor_allowed = false;
    for (std::string line; std::getline(audit, line);) {
      auto e = json::Parse(line);
      if (!e.ok() || !e->IsObject()) continue;
      const json::Value* ref = json::Find(*e, {"objectRef"});
      if (ref == nullptr || json::GetString(*ref, "name") != "target" || json::GetString(*ref, "namespace") != ns_ ||
          json::GetString(*e, "verb") != "patch" || !json::GetString(*ref, "subresource").empty()) {
        continue;
      }
      const std::string user = json::GetString(json::Find(*e, {"user", "username"}));
      const json::Value* code_of = json::Find(*e, {"responseStatus", "code"});
      const int64_t status = code_of != nullptr && code_of->IsInt64() ? code_of->GetInt64() : 0;
      viewer_refused |= user == "viewer" && status == 403;
      editor_allowed |= user == "editor" && status == 200;
    }
    return viewer_refused && editor_allowed;
  })) << "viewer refused: " << viewer_refused << ", editor allowed: " << editor_allowed;

  // The editor's rights end at the namespace: the same change elsewhere is refused too.
  const std::string other = "t-other-" + ns_.substr(2);
  ASSERT_EQ(cp().Kubectl({"create", "namespace", other}).exit_code, 0);
  ASSERT_EQ(cp().Kubectl({"-n", other, "apply", "-f", "-"},
                         "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: elsewhere}\nspec:\n  template:\n"
                         "    spec:\n      containers: [{name: main, image: busybox}]\n")
                .exit_code,
            0);
  auto [oc, ob] = PostPriority(editor.url, other, "elsewhere", 1);
  EXPECT_EQ(oc, 403) << ob;
  auto elsewhere = client()->Get(kRuns.Path(other, "elsewhere"));
  ASSERT_TRUE(elsewhere.ok());
  EXPECT_EQ(json::GetInt(*json::Find(*elsewhere, {"spec"}), "priority"), 50);
  cp().Kubectl({"-n", other, "delete", "runs", "--all", "--wait=false"});
  Eventually([&] {
    auto l = client()->List(kRuns.Path(other));
    return l.ok() && l->items.empty();
  });
  cp().Kubectl({"delete", "namespace", other, "--wait=false"});
}

}  // namespace
}  // namespace berth::testing
