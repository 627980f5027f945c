// Issue 6 (CLI half): every `kubectl berth` command run as a user would, through kubectl's plugin
// mechanism, against the real API server and a real berth-controller.
//
// `kubectl berth queue` reads the controller's queue through the API server as berth's aggregated
// API (issue 44: APIService v1alpha1.queue.berth.dev, served on N:8443; the harness's
// QueueApiRegistration); /metrics is checked through the API server's service proxy. The
// proxies only dial non-loopback endpoints, and the API server listens on 127.0.0.1 only. So the
// suite builds its own network:
//
//   host netns                                      netns berth-cli-<pid>
//   kube-apiserver 127.0.0.1:P  <- socat H:F  <-veth->  socat 127.0.0.1:P <- berth-controller
//                                  (H = 10.213.a.b+1)    berth-controller serves N:8080 (N = H+1)
//
// Service berth-system/berth-controller (port "http") + an EndpointSlice N:8080 whose targetRef is a Pod
// object whose status.podIPs is N. The controller keeps the harness kubeconfig
// (https://127.0.0.1:P), so TLS verification against the API server's certificate stays on.

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <random>
#include <map>
#include <regex>
#include <sstream>
#include <thread>
#include <tuple>

#include <gtest/gtest.h>

#include "api/v1alpha1/codec.h"
#include "base/time.h"
#include "engine_fixture.h"
#include "k8s/timefmt.h"

extern char** environ;

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kRuns;

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

// First whitespace-separated field of each data line (after the header), or field `col`.
std::vector<std::string> Column(const std::string& table, size_t col) {
  std::vector<std::string> out;
  auto lines = Lines(table);
  for (size_t i = 1; i < lines.size(); ++i) {
    std::istringstream in(lines[i]);
    std::string f;
    for (size_t c = 0; c <= col && (in >> f); ++c) {
    }
    out.push_back(f);
  }
  return out;
}

// The kubectl-berth binary next to berth-controller in the build tree.
std::string PluginDir() {
  std::string bin = BERTH_CONTROLLER_BIN;
  const std::string suffix = "/src/controller/berth-controller";
  if (bin.size() < suffix.size() || bin.compare(bin.size() - suffix.size(), suffix.size(), suffix) != 0) return {};
  return bin.substr(0, bin.size() - suffix.size()) + "/src/cli";
}

// A process in its own process group (so forwarders' forked children go with it), output to `log`.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -1;
}

// SIGTERM to the process group, SIGKILL after `grace`; reaps the leader. Every signal goes out
// before the leader is reaped: until then its pid (the group's id) cannot be handed to another
// process, whose group a late kill(-pid) would otherwise hit.
void StopGroup(pid_t& pid, std::chrono::milliseconds grace = std::chrono::seconds(10)) {
  if (pid <= 0) return;
  kill(-pid, SIGCONT);
  kill(-pid, SIGTERM);
  auto exited = [&](int options) {
    siginfo_t info{};
    return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT | options) == 0 && info.si_pid == pid;
  };
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (!exited(WNOHANG)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(-pid, SIGKILL);
      exited(0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(-pid, SIGKILL);  // forked forwarder children, if any are left
  int status = 0;
  waitpid(pid, &status, 0);
  pid = -1;
}

// The network namespace, veth pair, forwarders and the proxy objects; one per test binary.
class ControllerNetwork {
 public:
  static ControllerNetwork& Get() {
    static ControllerNetwork n;
    return n;
  }

  // Builds everything; returns an error sentence, or "" when ready.
  std::string SetUp() {
    if (ready_) return {};
    if (!error_.empty()) return error_;
    error_ = Build();
    if (error_.empty()) ready_ = true;
    return error_;
  }

  void TearDown() {
    StopGroup(netns_forwarder_);
    StopGroup(host_forwarder_);
    if (!netns_.empty()) {
      RunCommand({"ip", "netns", "del", netns_});
      netns_.clear();
    }
    if (!host_if_.empty()) {
      RunCommand({"ip", "link", "del", host_if_});  // normally gone with the netns
      host_if_.clear();
    }
    ready_ = false;
  }

  const std::string& netns() const { return netns_; }
  const std::string& controller_ip() const { return ns_ip_; }

 private:
  std::string Ip(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"ip"};
    argv.insert(argv.end(), args.begin(), args.end());
    CommandResult r = RunCommand(argv);
    if (r.exit_code == 0) return {};
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    return "`" + cmd + "` failed (" + Trim(r.err) + ")";
  }

  // Namespaces and veths of earlier runs of this binary that died without their teardown.
  void RemoveStale() {
    std::istringstream list(RunCommand({"ip", "netns", "list"}).out);
    std::string line;
    while (std::getline(list, line)) {
      std::smatch m;
      if (!std::regex_match(line, m, std::regex("berth-cli-([0-9]+)( .*)?"))) continue;
      const pid_t pid = static_cast<pid_t>(std::stol(m[1].str()));
      if (pid == getpid() || kill(pid, 0) == 0) continue;  // alive: not ours to remove
      RunCommand({"ip", "netns", "del", "berth-cli-" + m[1].str()});
      RunCommand({"ip", "link", "del", "bcli" + m[1].str() + "h"});
    }
  }

  std::string Build() {
    const std::string why = "the CLI test needs a network namespace (run as root with iproute2 and socat): ";
    RemoveStale();
    ControlPlane& cp = ControlPlane::Get();
    const std::string api_port = Trim(ReadText(cp.dir() + "/apiserver.port"));
    if (api_port.empty()) return "cannot read " + cp.dir() + "/apiserver.port";
    // A /30 of 10.213.0.0/16 that no interface uses yet.
    std::mt19937 rng(std::random_device{}());
    const std::string addrs = RunCommand({"ip", "-o", "-4", "addr", "show"}).out;
    std::string base;
    int last = 0;
    for (int attempt = 0; attempt < 50 && base.empty(); ++attempt) {
      std::string candidate = "10.213." + std::to_string(rng() % 256) + ".";
      last = static_cast<int>(rng() % 64) * 4;
      if (addrs.find(candidate + std::to_string(last + 1) + "/") == std::string::npos &&
          addrs.find(candidate + std::to_string(last + 2) + "/") == std::string::npos) {
        base = candidate;
      }
    }
    if (base.empty()) return "no free /30 in 10.213.0.0/16";
    host_ip_ = base + std::to_string(last + 1);
    ns_ip_ = base + std::to_string(last + 2);
    const std::string id = std::to_string(getpid());
    netns_ = "berth-cli-" + id;
    if (std::string e = Ip({"netns", "add", netns_}); !e.empty()) {
      netns_.clear();
      return why + e;
    }
    const std::string ns_if = "bcli" + id + "n";
    host_if_ = "bcli" + id + "h";
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"link", "add", host_if_, "type", "veth", "peer", "name", ns_if},
             {"link", "set", ns_if, "netns", netns_},
             {"addr", "add", host_ip_ + "/30", "dev", host_if_},
             {"link", "set", host_if_, "up"},
             {"netns", "exec", netns_, "ip", "addr", "add", ns_ip_ + "/30", "dev", ns_if},
             {"netns", "exec", netns_, "ip", "link", "set", ns_if, "up"},
             {"netns", "exec", netns_, "ip", "link", "set", "lo", "up"},
         }) {
      if (std::string e = Ip(args); !e.empty()) return why + e;
    }
    // 127.0.0.1:P inside -> H:F on the host -> 127.0.0.1:P (the API server).
    const std::string hop_port = "16443";
    host_forwarder_ = Spawn({"socat", "TCP-LISTEN:" + hop_port + ",bind=" + host_ip_ + ",fork,reuseaddr",
                             "TCP:127.0.0.1:" + api_port},
                            cp.dir() + "/cli-forwarder-host.log");
    netns_forwarder_ = Spawn({"ip", "netns", "exec", netns_, "socat",
                              "TCP-LISTEN:" + api_port + ",bind=127.0.0.1,fork,reuseaddr", "TCP:" + host_ip_ + ":" + hop_port},
                             cp.dir() + "/cli-forwarder-netns.log");
    if (host_forwarder_ <= 0 || netns_forwarder_ <= 0) return why + "cannot start socat";
    const std::string token = Trim(ReadText(cp.dir() + "/admin.token"));
    bool through = Eventually([&] {
      CommandResult r = RunCommand({"ip", "netns", "exec", netns_, "curl", "-s", "--max-time", "2", "--cacert",
                                    cp.dir() + "/certs/apiserver.crt", "-H", "Authorization: Bearer " + token,
                                    "https://127.0.0.1:" + api_port + "/readyz"});
      return r.out == "ok";
    }, std::chrono::seconds(10));
    if (!through) {
      return "the API server is not reachable from netns " + netns_ + " through socat: " +
             ReadText(cp.dir() + "/cli-forwarder-netns.log") + ReadText(cp.dir() + "/cli-forwarder-host.log");
    }
    // The controller's Service as the Helm chart makes it, with an EndpointSlice we own.
    const std::string objects = R"(apiVersion: v1
kind: Namespace
metadata: {name: berth-system}
---
apiVersion: v1
kind: Pod
metadata: {name: berth-controller-cli-test, namespace: berth-system}
spec:
  containers: [{name: controller, image: berth-controller:test}]
---
apiVersion: v1
kind: Service
metadata: {name: berth-controller, namespace: berth-system}
spec:
  ports: [{name: http, port: 8080, targetPort: 8080}]
---
# The API server's service proxy (1.33+) finds a Service's endpoints in its EndpointSlices (no
# kube-controller-manager runs here to make them from the Pod: the test makes one).
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: berth-controller-cli-test
  namespace: berth-system
  labels: {kubernetes.io/service-name: berth-controller}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- addresses: [)" + ns_ip_ + R"(]
  conditions: {ready: true}
  targetRef: {kind: Pod, namespace: berth-system, name: berth-controller-cli-test}
)";
    CommandResult applied = cp.Kubectl({"apply", "-f", "-"}, objects);
    if (applied.exit_code != 0) return "cannot create the controller's Service: " + applied.err;
    auto patched = cp.client()->MergePatch(
        k8s::resources::kPods.Path("berth-system", "berth-controller-cli-test", "status"),
        R"({"status":{"phase":"Running","podIP":")" + ns_ip_ + R"(","podIPs":[{"ip":")" + ns_ip_ + R"("}]}})");
    if (!patched.ok()) return "cannot set the stand-in Pod's IP: " + patched.status().ToString();
    return {};
  }

  bool ready_ = false;
  std::string error_;
  std::string netns_, host_if_, host_ip_, ns_ip_;
  pid_t host_forwarder_ = -1, netns_forwarder_ = -1;
};

// The queue API's registration for the whole suite (Service berth-system/berth-queue, its
// EndpointSlice N:8443, the serving certificate, the APIService once a controller serves).
QueueApiRegistration& QueueApi() {
  static QueueApiRegistration* r = new QueueApiRegistration("berth-system", ControllerNetwork::Get().controller_ip(), 8443);
  return *r;
}

// berth-controller inside the netns, serving /metrics on N:8080 and the queue API on N:8443.
class NetnsController {
 public:
  void Start() {
    ControlPlane& cp = ControlPlane::Get();
    log_ = cp.dir() + "/cli-controller-" + std::to_string(++starts_) + ".log";
    std::vector<std::string> argv = {"ip", "netns", "exec", ControllerNetwork::Get().netns(), BERTH_CONTROLLER_BIN,
                                     "--kubeconfig", cp.kubeconfig(),
                                     "--metrics-bind-address=" + ControllerNetwork::Get().controller_ip() + ":8080",
                                     "--health-probe-bind-address=0", "--log-level=debug"};
    for (const auto& a : QueueApi().ControllerArgs()) argv.push_back(a);
    for (const auto& a : extra_args) argv.push_back(a);
    pid_ = Spawn(argv, log_);
    ASSERT_GT(pid_, 0) << "cannot start berth-controller in the netns";
    // Serving through the API server: the whole path works.
    ASSERT_TRUE(Eventually([&] {
      return cp.Kubectl({"get", "--raw", "/api/v1/namespaces/berth-system/services/http:berth-controller:http/proxy/metrics"})
                 .exit_code == 0;
    })) << "the controller's /metrics never answered through the service proxy:\n"
        << Log();
    ASSERT_TRUE(QueueApi().Register()) << "the queue API never became available:\n"
                                       << cp.Kubectl({"get", "apiservice", "v1alpha1.queue.berth.dev", "-o", "yaml"}).out
                                       << Log();
  }
  void Stop() { StopGroup(pid_, std::chrono::seconds(30)); }
  bool Running() const { return pid_ > 0; }
  std::string Log() const { return ReadText(log_); }

  std::vector<std::string> extra_args;  // more flags for the next Start

 private:
  pid_t pid_ = -1;
  int starts_ = 0;
  std::string log_;
};

// Removes a second namespace a test made (and its runs, so that their finalizers are gone first).
struct OtherNamespaceDropper {
  std::string ns;
  ~OtherNamespaceDropper() {
    ControlPlane::Get().Kubectl({"delete", "runs", "--all", "-n", ns, "--wait=true", "--timeout=60s"});
    ControlPlane::Get().Kubectl({"delete", "namespace", ns, "--wait=false"});
  }
};

class Cli : public EngineTest {
 protected:
  static void SetUpTestSuite() { ControllerNetwork::Get().SetUp(); }
  static void TearDownTestSuite() {
    ControlPlane::Get().Kubectl({"delete", "apiservice", "v1alpha1.queue.berth.dev", "--ignore-not-found"});
    ControllerNetwork::Get().TearDown();
  }

  void SetUp() override {
    // EngineTest's helpers, with our controller in the netns instead of EngineTest's own one
    // (which is created but never started, so its TearDown has nothing to stop).
    controller_ = std::make_unique<ControllerProcess>();
    const std::string plumbing = ControllerNetwork::Get().SetUp();
    ASSERT_TRUE(plumbing.empty()) << plumbing;
    plugin_dir_ = PluginDir();
    ASSERT_FALSE(plugin_dir_.empty()) << "cannot locate the build tree from " << BERTH_CONTROLLER_BIN;
    ASSERT_EQ(access((plugin_dir_ + "/kubectl-berth").c_str(), X_OK), 0)
        << plugin_dir_ << "/kubectl-berth is missing: build the kubectl-berth target";
    IntegrationTest::SetUp();
    netns_controller_.Start();
  }

  void TearDown() override {
    if (ns_.empty()) return;  // SetUp stopped before making the namespace
    // The controller removes the runs' finalizers when EngineTest deletes them.
    if (!netns_controller_.Running()) netns_controller_.Start();
    EngineTest::TearDown();
    if (HasFailure()) std::printf("---- berth-controller in the netns ----\n%s\n", netns_controller_.Log().c_str());
    netns_controller_.Stop();
  }

  // `kubectl berth ARGS` with the plugin first on PATH and KUBECONFIG=`kubeconfig` (default: the
  // harness's).
  CommandResult Berth(const std::vector<std::string>& args, const std::string& input = {},
                      const std::string& kubeconfig = {}) {
    const char* path = std::getenv("PATH");
    std::vector<std::string> argv = {"env", "PATH=" + plugin_dir_ + ":" + (path ? path : "/usr/bin:/bin"),
                                     "KUBECONFIG=" + (kubeconfig.empty() ? cp().kubeconfig() : kubeconfig), "kubectl",
                                     "berth"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, input);
  }

  // `kubectl berth ARGS -n <test namespace>`.
  CommandResult BerthNs(std::vector<std::string> args, const std::string& input = {}) {
    args.insert(args.end(), {"-n", ns_});
    return Berth(args, input);
  }

  std::string RunYaml(const std::string& name, const std::string& spec = {}) {
    return "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name + "}\nspec:\n" + spec +
           "  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n";
  }

  // One busy instance: everything applied with -Q after this waits in the queue.
  void BusySlot() {
    Nodes("slot", 1, "4", "8Gi");
    Fleet("slot", "slot");
    CommandResult r = BerthNs({"apply", "-Q", "-f", "-"}, RunYaml("blocker"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_TRUE(WaitPhase("blocker", "Scheduled")) << Phase("blocker") << ": " << Message("blocker");
  }

  std::string File(const std::string& name, const std::string& text) {
    std::string path = cp().dir() + "/" + ns_ + "-" + name;
    WriteText(path, text);
    return path;
  }

  // A kubeconfig for the harness's API server (verified with its CA) with the credentials
  // `user_lines` (YAML under `user:`, 4-space indent), in the test namespace; its path.
  // A kubeconfig `name` for ServiceAccount "tenant" of the test namespace, which a Role `role`
  // (its `rules` as YAML) bound by `binding` gives its only rights.
  struct UserConfig {
    std::string kubeconfig, token;  // token: empty when none was made (a failure is recorded)
  };
  UserConfig ServiceAccountKubeconfig(const std::string& name, const std::string& role, const std::string& binding,
                                      const std::string& rules) {
    Apply("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: tenant}\n---\n"
          "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: " + role + "}\n" + rules +
          "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: " + binding + "}\n"
          "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: " + role + "}\n"
          "subjects: [{kind: ServiceAccount, name: tenant}]\n");
    CommandResult token = Kubectl({"create", "token", "tenant"});
    if (token.exit_code != 0) {
      ADD_FAILURE() << "no token for ServiceAccount tenant: " << token.err;
      return {};
    }
    return {UserKubeconfig(name, "    token: " + Trim(token.out) + "\n"), Trim(token.out)};
  }

  std::string UserKubeconfig(const std::string& name, const std::string& user_lines) {
    const std::string harness = ReadText(cp().kubeconfig());
    std::smatch server, ca;
    EXPECT_TRUE(std::regex_search(harness, server, std::regex("server: (\\S+)")));
    EXPECT_TRUE(std::regex_search(harness, ca, std::regex("certificate-authority: (\\S+)")));
    return File(name + ".kubeconfig", "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " +
                                          server[1].str() + "\n    certificate-authority: " + ca[1].str() +
                                          "\nusers:\n- name: u\n  user:\n" + user_lines +
                                          "contexts:\n- name: u\n  context: {cluster: c, user: u, namespace: " + ns_ +
                                          "}\ncurrent-context: u\n");
  }

  // Plays the kubelet's part once a Pod's containers stopped (there is no kubelet here): removes
  // the run's Pods that are being deleted. True when the run has no Pods left.
  bool PodsGoneOnceStopped(const std::string& run) {
    for (const auto& [name, pod] : PodsOf(run)) {
      if (json::Find(pod, {"metadata", "deletionTimestamp"}) == nullptr) continue;
      k8s::DeleteOptions o;
      o.grace_period_seconds = 0;
      o.precondition_uid = json::GetString(json::Find(pod, {"metadata", "uid"}));
      (void)client()->Delete(k8s::resources::kPods.Path(ns_, name), o);
    }
    return PodsOf(run).empty();
  }

  NetnsController netns_controller_;
  std::string plugin_dir_;
};

TEST_F(Cli, HelpForEveryCommand) {
  for (const std::string cmd : {"apply", "queue", "priority", "fleets", "teams", "describe", "stop", "suspend", "resume", "logs",
                                "dashboard"}) {
    CommandResult r = Berth({cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd << ": " << r.err;
    EXPECT_NE(r.out.find("Usage: kubectl berth " + cmd), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--kubeconfig"), std::string::npos) << r.out;
    CommandResult h = Berth({"help", cmd});
    EXPECT_EQ(h.exit_code, 0);
    EXPECT_EQ(h.out, r.out);
    CommandResult short_flag = Berth({cmd, "-h"});
    EXPECT_EQ(short_flag.out, r.out);
  }
  CommandResult overview = Berth({"--help"});
  EXPECT_EQ(overview.exit_code, 0);
  for (const char* cmd : {"apply -f FILE [-Q]", "queue [-n NS | -A]", "priority RUN VALUE", "fleets", "teams", "describe RUN"}) {
    EXPECT_NE(overview.out.find(cmd), std::string::npos) << overview.out;
  }
  EXPECT_EQ(Berth({}).out, overview.out);
}

TEST_F(Cli, BadContextFlagsAndKubeconfigAreClearErrors) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"queue", "--context", "nope"}, {"priority", "x", "10", "--context", "nope"}, {"fleets", "--context=nope"}}) {
    CommandResult r = Berth(args);
    EXPECT_EQ(r.exit_code, 1) << args[0];
    EXPECT_EQ(r.err, "error: context \"nope\" not found in kubeconfig\n") << args[0];
    EXPECT_EQ(r.out, "");
  }
  // apply hands the context to kubectl, which refuses it in its own words.
  CommandResult a = Berth({"apply", "-f", "-", "--context", "nope"}, RunYaml("x"));
  EXPECT_NE(a.exit_code, 0);
  EXPECT_NE(a.err.find("nope"), std::string::npos) << a.err;

  CommandResult missing = Berth({"fleets", "--kubeconfig", "/nonexistent/kubeconfig"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "error: kubeconfig /nonexistent/kubeconfig cannot be read\n");

  CommandResult flag = Berth({"queue", "--bogus"});
  EXPECT_EQ(flag.exit_code, 1);
  EXPECT_EQ(flag.err, "error: unknown flag --bogus (see kubectl berth --help)\n");
  CommandResult cmd = Berth({"launch"});
  EXPECT_EQ(cmd.exit_code, 1);
  EXPECT_EQ(cmd.err, "error: unknown command \"launch\" for \"kubectl berth\" (commands: apply, queue, priority, fleets, teams, describe, stop, suspend, resume, logs, dashboard)\n");
  CommandResult both = Berth({"queue", "-A", "-n", "x"});
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_EQ(both.err, "error: -A and -n cannot be used together\n");
}

TEST_F(Cli, ApplyWithQueueingOnAMultiDocumentFile) {
  const std::string file = File("runs.yaml", RunYaml("plain") + "---\n" +
                                                 RunYaml("own", "  retry: {duration: 2h}\n") + "---\n" +
                                                 RunYaml("bare", "  maxDuration: off\n") +
                                                 "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n"
                                                 "data: {enabled: \"yes\", mode: \"0644\"}\n");
  CommandResult r = BerthNs({"apply", "-f", file, "-Q"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(r.out,
            "run.berth.dev/plain created\n"
            "run.berth.dev/own created\n"
            "run.berth.dev/bare created\n"
            "configmap/settings created\n"
            "run/plain: queueing on (retry on no-capacity, duration off)\n"
            "run/own: queueing on (retry on no-capacity, duration 2h)\n"
            "run/bare: queueing on (retry on no-capacity, duration off)\n");

  auto retry = [&](const std::string& run) {
    auto d = GetRun(run);
    const json::Value* r = d.IsObject() ? json::Find(d, {"spec", "retry"}) : nullptr;
    return r == nullptr ? std::string("<none>") : json::Serialize(*r);
  };
  EXPECT_EQ(retry("plain"), R"({"duration":"off","onEvents":["no-capacity"]})");
  EXPECT_EQ(retry("own"), R"({"duration":"2h","onEvents":["no-capacity"]})");  // the file's duration wins
  auto bare = GetRun("bare");
  EXPECT_EQ(json::GetString(json::Find(bare, {"spec", "maxDuration"})), "off");  // not false
  CommandResult cm = Kubectl({"get", "configmap", "settings", "-o", "jsonpath={.data.enabled}/{.data.mode}"});
  EXPECT_EQ(cm.out, "yes/0644");

  // Applying the same file again changes nothing.
  CommandResult again = BerthNs({"apply", "-f", file, "-Q"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("run.berth.dev/plain unchanged"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("configmap/settings unchanged"), std::string::npos) << again.out;

  // -f - reads stdin; without -Q the run is applied as written.
  CommandResult piped = BerthNs({"apply", "-Q", "-f", "-"}, RunYaml("piped"));
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out, "run.berth.dev/piped created\nrun/piped: queueing on (retry on no-capacity, duration off)\n");
  EXPECT_EQ(retry("piped"), R"({"duration":"off","onEvents":["no-capacity"]})");
  CommandResult plain = BerthNs({"apply", "-f", "-"}, RunYaml("noq"));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out, "run.berth.dev/noq created\n");
  EXPECT_EQ(retry("noq"), "<none>");

  // What queueing is for: no fleet can hold these runs; queued ones wait, the other one fails.
  ASSERT_TRUE(WaitPhase("noq", "Failed")) << Phase("noq");
  EXPECT_EQ(Reason("noq"), "Unschedulable");
  // Each queued run's first status write says why it waits; a run that would fail has failed by then.
  for (const char* queued : {"plain", "own"}) {
    EXPECT_TRUE(Eventually([&] { return Reason(queued) == "Unschedulable"; })) << queued << ": " << Reason(queued);
    EXPECT_EQ(Phase(queued), "Pending") << queued;
  }

  // A directory: its .yaml/.yml/.json files in name order; --dry-run reaches kubectl.
  const std::string dir = cp().dir() + "/" + ns_ + "-dir";
  ASSERT_EQ(RunCommand({"mkdir", "-p", dir}).exit_code, 0);
  WriteText(dir + "/b.yml", RunYaml("from-b"));
  WriteText(dir + "/a.yaml", RunYaml("from-a"));
  WriteText(dir + "/notes.txt", "not a manifest\n");
  CommandResult fromdir = BerthNs({"apply", "-Q", "-f", dir});
  ASSERT_EQ(fromdir.exit_code, 0) << fromdir.err;
  EXPECT_EQ(fromdir.out,
            "run.berth.dev/from-a created\nrun.berth.dev/from-b created\n"
            "run/from-a: queueing on (retry on no-capacity, duration off)\n"
            "run/from-b: queueing on (retry on no-capacity, duration off)\n");
  CommandResult dry = BerthNs({"apply", "-Q", "--dry-run=server", "-f", "-"}, RunYaml("dry"));
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("run.berth.dev/dry created (server dry run)"), std::string::npos) << dry.out;
  EXPECT_FALSE(GetRun("dry").IsObject());

  // kubectl's own refusal comes through with its exit code.
  CommandResult invalid = BerthNs({"apply", "-f", "-"}, RunYaml("loud", "  priority: 500\n"));
  EXPECT_NE(invalid.exit_code, 0);
  EXPECT_NE(invalid.err.find("spec.priority"), std::string::npos) << invalid.err;
  CommandResult nofile = BerthNs({"apply", "-f", "/nonexistent.yaml"});
  EXPECT_EQ(nofile.exit_code, 1);
  EXPECT_EQ(nofile.err, "error: file /nonexistent.yaml does not exist\n");
  CommandResult broken = BerthNs({"apply", "-f", "-"}, "a: [1, 2\n");
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_NE(broken.err.find("error: stdin: line "), std::string::npos) << broken.err;
}

TEST_F(Cli, ApplyResubmitsEndedRunsUnlessAskedNotTo) {
  // No fleet can hold the run yet: applied without -Q it fails.
  const std::string file = File("again.yaml", RunYaml("again"));
  CommandResult first = BerthNs({"apply", "-f", file});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_TRUE(WaitPhase("again", "Failed")) << Phase("again");
  ASSERT_EQ(Reason("again"), "Unschedulable");
  auto uid = [&] { return json::GetString(json::Find(GetRun("again"), {"metadata", "uid"})); };
  const std::string first_uid = uid();

  // A plain kubectl apply of an edited file changes the spec of the ended run, which stays ended:
  // its message and a Warning Event say so, and how to run it again.
  const std::string edited = File("again-edited.yaml", RunYaml("again", "  priority: 70\n"));
  CommandResult plain = Kubectl({"apply", "-f", edited});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_TRUE(Eventually([&] {
    return Message("again").find("kubectl berth apply -f FILE submits it again") != std::string::npos;
  })) << Message("again");
  EXPECT_EQ(Phase("again"), "Failed");
  EXPECT_EQ(Reason("again"), "Unschedulable");
  EXPECT_TRUE(Eventually([&] {
    CommandResult ev = Kubectl({"get", "events", "--field-selector", "involvedObject.uid=" + first_uid + ",reason=SpecChangeIgnored",
                                "-o", "jsonpath={.items[*].message}"});
    return ev.out.find("the run has ended (Failed)") != std::string::npos;
  })) << "no SpecChangeIgnored Event on the ended run";

  // --no-resubmit keeps it as it is.
  CommandResult kept = BerthNs({"apply", "-Q", "--no-resubmit", "-f", file});
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_NE(kept.out.find("run/again: has ended (Failed, Unschedulable); not submitted again (--no-resubmit)"),
            std::string::npos) << kept.out;
  EXPECT_EQ(uid(), first_uid);
  EXPECT_EQ(Phase("again"), "Failed");
  // --dry-run says what would happen and does nothing.
  CommandResult dry = BerthNs({"apply", "-Q", "--dry-run=server", "-f", file});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("run/again: has ended (Failed, Unschedulable); would be deleted and submitted again"),
            std::string::npos) << dry.out;
  EXPECT_EQ(uid(), first_uid);

  // kubectl berth apply: the ended run is deleted and created anew from the file, queued this time.
  CommandResult again = BerthNs({"apply", "-Q", "-f", file});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out,
            "run/again: had ended (Failed, Unschedulable); deleted to submit it again\n"
            "run.berth.dev/again created\n"
            "run/again: queueing on (retry on no-capacity, duration off)\n");
  EXPECT_NE(uid(), first_uid);
  EXPECT_TRUE(Eventually([&] { return Phase("again") == "Pending" && Reason("again") == "Unschedulable"; }))
      << Phase("again") << "/" << Reason("again");
  // And it runs once there is room: run again means run again.
  Nodes("again", 1, "4", "8Gi");
  Fleet("again", "again");
  EXPECT_TRUE(WaitPhase("again", "Scheduled")) << Phase("again") << ": " << Message("again");
  // A run that exists and has not ended is applied as kubectl apply does.
  CommandResult live = BerthNs({"apply", "-Q", "-f", file});
  ASSERT_EQ(live.exit_code, 0) << live.err;
  EXPECT_EQ(live.out, "run.berth.dev/again unchanged\nrun/again: queueing on (retry on no-capacity, duration off)\n");
}

// Patches that move runs far up a queue whose first places are all shown: each is printed at its
// new place. berth used to write a moved run's new observedGeneration with the place it still
// showed (or none, mid-move), and the command printed "not in the top 100".
TEST_F(Cli, PriorityPrintsTheNewPlaceOfARunMovedFarUpTheQueue) {
  BusySlot();
  constexpr int kRuns = 30;
  std::string yaml;
  for (int i = 1; i <= kRuns; ++i) yaml += (i > 1 ? "---\n" : "") + RunYaml((i < 10 ? "q0" : "q") + std::to_string(i));
  CommandResult r = BerthNs({"apply", "-Q", "-f", "-"}, yaml);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(Eventually([&] { return StatusInt("q" + std::to_string(kRuns), "queuePosition") == kRuns; },
                         std::chrono::seconds(60)));
  // (Created in one second, they queue by name: q01 ... q30.) One after the other, without
  // waiting for the others to move: runs from the back to the front.
  const std::vector<std::pair<std::string, int>> patches = {{"q30", 99}, {"q25", 98}, {"q20", 97}, {"q15", 96}};
  for (size_t i = 0; i < patches.size(); ++i) {
    const auto& [name, priority] = patches[i];
    // --wait: the place is what this test checks, and a loaded machine may take more than 3 s.
    CommandResult p = BerthNs({"priority", name, std::to_string(priority), "--wait", "60s"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(p.out, "run/" + name + " priority 50 -> " + std::to_string(priority) + "\nrun/" + name + ": position " +
                         std::to_string(i + 1) + " in the queue\n");
  }
}

TEST_F(Cli, PriorityChangesTheOrderAndRefusesBadValues) {
  BusySlot();
  CommandResult r = BerthNs({"apply", "-Q", "-f", "-"}, RunYaml("first") + "---\n" + RunYaml("second") + "---\n" + RunYaml("third"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(Eventually([&] {
    return StatusInt("first", "queuePosition") == 1 && StatusInt("second", "queuePosition") == 2 &&
           StatusInt("third", "queuePosition") == 3;
  })) << StatusInt("first", "queuePosition") << StatusInt("second", "queuePosition") << StatusInt("third", "queuePosition");

  CommandResult p = BerthNs({"priority", "third", "90", "--wait", "60s"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(p.out, "run/third priority 50 -> 90\nrun/third: position 1 in the queue\n");
  EXPECT_EQ(StatusInt("third", "queuePosition"), 1);
  EXPECT_EQ(StatusInt("third", "effectivePriority"), 90);
  ASSERT_TRUE(Eventually([&] {
    return StatusInt("first", "queuePosition") == 2 && StatusInt("second", "queuePosition") == 3;
  }, std::chrono::seconds(10)));

  CommandResult same = BerthNs({"priority", "third", "90", "--wait=60s"});
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(same.out, "run/third priority 90 (unchanged)\nrun/third: position 1 in the queue\n");
  CommandResult admitted = BerthNs({"priority", "blocker", "20", "--wait", "60s"});
  ASSERT_EQ(admitted.exit_code, 0) << admitted.err;
  EXPECT_EQ(admitted.out, "run/blocker priority 50 -> 20\nrun/blocker: admitted (Scheduled)\n");

  for (const std::string bad : {"101", "abc", "-5", "5.5"}) {
    CommandResult b = BerthNs({"priority", "first", bad});
    EXPECT_EQ(b.exit_code, 1) << bad;
    EXPECT_EQ(b.err, "error: invalid priority \"" + bad + "\": it must be a whole number from 0 (lowest) to 100 (highest)\n");
    EXPECT_EQ(b.out, "");
  }
  EXPECT_EQ(json::GetInt(*json::Find(GetRun("first"), {"spec"}), "priority"), 50);  // nothing was written

  CommandResult ghost = BerthNs({"priority", "ghost", "10"});
  EXPECT_EQ(ghost.exit_code, 1);
  EXPECT_EQ(ghost.err, "error: run \"ghost\" not found in namespace \"" + ns_ + "\"\n");
  CommandResult usage = BerthNs({"priority", "first"});
  EXPECT_EQ(usage.exit_code, 1);
  EXPECT_EQ(usage.err, "error: kubectl berth priority needs exactly two arguments, RUN and VALUE, got 1\n");
}

TEST_F(Cli, QueueShowsTheControllersOrderThroughTheQueueApi) {
  BusySlot();
  std::string yaml;
  for (auto [name, prio] : std::vector<std::pair<std::string, int>>{{"low", 10}, {"mid", 50}, {"high", 90}, {"mid2", 50}}) {
    yaml += (yaml.empty() ? "" : "---\n") + RunYaml(name, "  priority: " + std::to_string(prio) + "\n");
  }
  CommandResult applied = BerthNs({"apply", "-Q", "-f", "-"}, yaml);
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  const std::vector<std::string> order = {"high", "mid", "mid2", "low"};

  // -o json: the controller's positions, which its status writes agree with.
  std::string last;
  ASSERT_TRUE(Eventually([&] {
    CommandResult q = BerthNs({"queue", "-o", "json"});
    last = q.out + q.err;
    auto doc = json::Parse(q.out);
    if (q.exit_code != 0 || !doc.ok() || !doc->IsArray() || doc->Size() != order.size()) return false;
    for (size_t i = 0; i < order.size(); ++i) {
      const json::Value& item = (*doc)[static_cast<rapidjson::SizeType>(i)];
      if (json::GetString(item, "name") != order[i] || json::GetString(item, "namespace") != ns_) return false;
      if (json::GetInt(item, "position") != StatusInt(order[i], "queuePosition")) return false;
      if (json::GetString(item, "reason") != "NoCapacity") return false;
    }
    return true;
  }, std::chrono::seconds(20))) << last;

  CommandResult table = BerthNs({"queue"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  auto lines = Lines(table.out);
  ASSERT_EQ(lines.size(), 5u) << table.out;
  EXPECT_TRUE(std::regex_match(lines[0], std::regex("POSITION +NAME +KIND +TEAM +PRIORITY +EFFECTIVE +WAITING +ETA +NODES +REASON +MESSAGE")))
      << lines[0];
  EXPECT_EQ(Column(table.out, 1), order);
  std::vector<std::string> positions;
  for (const auto& n : order) positions.push_back(std::to_string(StatusInt(n, "queuePosition")));
  EXPECT_EQ(Column(table.out, 0), positions);
  EXPECT_EQ(Column(table.out, 2), (std::vector<std::string>{"Run", "Run", "Run", "Run"})) << "issue 45: KIND";
  EXPECT_EQ(Column(table.out, 3), (std::vector<std::string>{"-", "-", "-", "-"})) << "no Team holds the namespace";
  EXPECT_EQ(Column(table.out, 4), (std::vector<std::string>{"90", "50", "50", "10"}));
  EXPECT_TRUE(std::regex_match(lines[1], std::regex("1 +high +Run +- +90 +90 +[0-9]+s +(~[0-9].*|now|unknown) +1 +NoCapacity +needs .*"))) << lines[1];

  CommandResult all = Berth({"queue", "-A"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_TRUE(std::regex_search(Lines(all.out)[0], std::regex("^POSITION +NAMESPACE +NAME "))) << all.out;
  EXPECT_TRUE(std::regex_search(all.out, std::regex("\n1 +" + ns_ + " +high +Run +- +90 "))) << all.out;

  CommandResult wide = BerthNs({"queue", "-o", "wide"});
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  EXPECT_TRUE(std::regex_search(Lines(wide.out)[0], std::regex("NODES +FLEETS +SUBMITTED +REASON"))) << wide.out;
  EXPECT_NE(wide.out.find("<any>"), std::string::npos) << wide.out;

  CommandResult limited = BerthNs({"queue", "--limit", "2"});
  ASSERT_EQ(limited.exit_code, 0) << limited.err;
  EXPECT_EQ(Column(limited.out, 1), (std::vector<std::string>{"high", "mid"}));

  CommandResult empty = Berth({"queue", "-n", ns_ + "-empty"});
  EXPECT_EQ(empty.exit_code, 0);
  EXPECT_EQ(empty.out, "");
  EXPECT_EQ(empty.err, "No pending runs in namespace " + ns_ + "-empty.\n");

  // Not served (no APIService: berth installed without its chart's queue API) or not reachable
  // (the controller stopped): the queue as the runs' status shows it, and a note on stderr that
  // says why and where it comes from.
  ASSERT_EQ(cp().Kubectl({"delete", "apiservice", "v1alpha1.queue.berth.dev"}).exit_code, 0);
  CommandResult noapi;
  ASSERT_TRUE(Eventually([&] {
    noapi = BerthNs({"queue"});
    return noapi.err.find("does not serve") != std::string::npos;
  })) << noapi.err;
  EXPECT_EQ(noapi.exit_code, 0) << noapi.err;
  EXPECT_EQ(noapi.err,
            "note: the API server does not serve the queue API (APIService v1alpha1.queue.berth.dev): is berth installed "
            "with its chart?\n"
            "note: showing the queue as the runs' status shows it instead (status.queuePosition, kept for the first 100 "
            "places and refreshed within seconds)\n");
  EXPECT_EQ(Column(noapi.out, 1), order) << noapi.out;
  EXPECT_EQ(Column(noapi.out, 0), positions) << noapi.out;
  EXPECT_TRUE(std::regex_match(Lines(noapi.out)[1], std::regex("1 +high +Run +- +90 +90 +[0-9]+s +(~[0-9].*|now|unknown) +1 +NoCapacity +needs .*")))
      << noapi.out;
  ASSERT_TRUE(QueueApi().Register()) << "the queue API did not come back";
  netns_controller_.Stop();
  CommandResult down;
  ASSERT_TRUE(Eventually([&] {
    down = BerthNs({"queue", "-o", "json"});
    return down.err.find("note:") != std::string::npos;
  })) << down.err;
  EXPECT_EQ(down.exit_code, 0) << down.err;
  EXPECT_NE(down.err.find("note: the queue API (APIService v1alpha1.queue.berth.dev) did not answer through the API server: 503"),
            std::string::npos)
      << down.err;
  EXPECT_NE(down.err.find("showing the queue as the runs' status shows it"), std::string::npos) << down.err;
  auto doc = json::Parse(down.out);
  ASSERT_TRUE(doc.ok() && doc->IsArray() && doc->Size() == order.size()) << down.out;
  EXPECT_EQ(json::GetString((*doc)[0], "name"), "high");
}

// Issue 29 (8) as issue 44 (4) closes it: the controller shows a user only the runs of the
// namespaces it may list runs in, and `kubectl berth queue` sends berth no credential: it reads the
// aggregated queue API with the user's kubeconfig (the API server authenticates the user and names
// it to berth). Any kubeconfig works, a client certificate too.
TEST_F(Cli, QueueShowsAUserOnlyTheRunsItMayList) {
  BusySlot();
  const std::string other = ns_ + "-other";
  ASSERT_EQ(cp().Kubectl({"create", "namespace", other}).exit_code, 0);
  OtherNamespaceDropper drop{other};
  CommandResult theirs = Berth({"apply", "-Q", "-n", other, "-f", "-"}, RunYaml("theirs", "  priority: 90\n"));
  ASSERT_EQ(theirs.exit_code, 0) << theirs.err;
  ASSERT_EQ(BerthNs({"apply", "-Q", "-f", "-"}, RunYaml("mine", "  priority: 10\n")).exit_code, 0);

  // A user who may list runs in the test namespace (and nothing about berth's Services).
  const UserConfig user = ServiceAccountKubeconfig("tenant", "run-lister", "tenant-lists-runs",
                                                   "rules: [{apiGroups: [berth.dev], resources: [runs], verbs: [get, list]}]\n");
  ASSERT_FALSE(user.token.empty());
  const std::string& tenant = user.kubeconfig;

  // The admin (the harness's token) sees both runs, theirs first.
  std::string last;
  ASSERT_TRUE(Eventually([&] {
    CommandResult q = Berth({"queue", "-A", "-o", "json"});
    last = q.out + q.err;
    auto doc = json::Parse(q.out);
    if (q.exit_code != 0 || !doc.ok() || !doc->IsArray()) return false;
    std::vector<std::string> names;
    for (const auto& it : doc->GetArray()) {
      const std::string n = json::GetString(it, "namespace");
      if (n == ns_ || n == other) names.push_back(n + "/" + json::GetString(it, "name"));
    }
    return names == std::vector<std::string>{other + "/theirs", ns_ + "/mine"};
  }, std::chrono::seconds(20))) << last;

  // The tenant: its own run only, from the controller (no note), at its global position.
  CommandResult mine = Berth({"queue", "-A", "-o", "json"}, {}, tenant);
  ASSERT_EQ(mine.exit_code, 0) << mine.err;
  EXPECT_EQ(mine.err, "");
  auto doc = json::Parse(mine.out);
  ASSERT_TRUE(doc.ok() && doc->IsArray() && doc->Size() == 1) << mine.out;
  EXPECT_EQ(json::GetString((*doc)[0], "name"), "mine");
  EXPECT_EQ(json::GetString((*doc)[0], "namespace"), ns_);
  EXPECT_EQ(json::GetInt((*doc)[0], "position"), StatusInt("mine", "queuePosition"));
  EXPECT_EQ(mine.out.find("theirs"), std::string::npos) << mine.out;
  // Asking for the other namespace by name: berth's refusal, naming the user the API server named.
  CommandResult refused = Berth({"queue", "-n", other}, {}, tenant);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.err, "error: system:serviceaccount:" + ns_ + ":tenant may not list runs.berth.dev in namespace " + other +
                             "\n");
  EXPECT_EQ(refused.out, "");

  // A client certificate (user cert-admin of system:masters) works the same way: the API server
  // authenticates it and berth shows cert-admin every run, from the controller (no note).
  const std::string cert = UserKubeconfig("cert", "    client-certificate: " + cp().dir() + "/client.crt\n    client-key: " +
                                                  cp().dir() + "/client.key\n");
  CommandResult by_cert = Berth({"queue", "-A"}, {}, cert);
  EXPECT_EQ(by_cert.exit_code, 0) << by_cert.err;
  EXPECT_EQ(by_cert.err, "");
  EXPECT_NE(by_cert.out.find("theirs"), std::string::npos) << by_cert.out;
  EXPECT_NE(by_cert.out.find("mine"), std::string::npos) << by_cert.out;

  // What reached the controller names the user and carries no credential of it.
  const std::string log = netns_controller_.Log();
  EXPECT_NE(log.find("as system:serviceaccount:" + ns_ + ":tenant"), std::string::npos);
  EXPECT_EQ(log.find(user.token), std::string::npos) << "the tenant's token reached the controller";
  EXPECT_EQ(log.find("x-berth-token"), std::string::npos);
}

// Issue 44 (4): `kubectl berth dashboard` serves the dashboard on 127.0.0.1 with the user's own
// kubeconfig: the queue (through berth's queue API: only the user's namespace), a run's details
// and a priority change (Kubernetes requests with the user's credentials), nothing for a Host that
// is not its own (DNS rebinding), and nothing of the user's token reaches the controller.
TEST_F(Cli, DashboardServesThePageWithTheUsersOwnKubeconfig) {
  BusySlot();
  const std::string other = ns_ + "-other";
  ASSERT_EQ(cp().Kubectl({"create", "namespace", other}).exit_code, 0);
  OtherNamespaceDropper drop{other};
  ASSERT_EQ(Berth({"apply", "-Q", "-n", other, "-f", "-"}, RunYaml("theirs", "  priority: 90\n")).exit_code, 0);
  ASSERT_EQ(BerthNs({"apply", "-Q", "-f", "-"}, RunYaml("mine", "  priority: 10\n")).exit_code, 0);
  const UserConfig user = ServiceAccountKubeconfig("dash", "run-editor", "tenant-edits-runs",
                                                  "rules:\n"
                                                  "- {apiGroups: [berth.dev], resources: [runs], verbs: [get, list, patch]}\n"
                                                  "- {apiGroups: [\"\"], resources: [events], verbs: [list]}\n");
  ASSERT_FALSE(user.token.empty());
  const std::string& kc = user.kubeconfig;

  const int port = FreePort();
  const std::string log = cp().dir() + "/dashboard-" + ns_ + ".log";
  const char* path = std::getenv("PATH");
  pid_t pid = Spawn({"env", "PATH=" + plugin_dir_ + ":" + (path ? path : "/usr/bin:/bin"), "KUBECONFIG=" + kc, "kubectl",
                     "berth", "dashboard", "--port", std::to_string(port)},
                    log);
  ASSERT_GT(pid, 0);
  struct Stop {
    pid_t& pid;
    ~Stop() { StopGroup(pid); }
  } stop{pid};
  const std::string base = "http://127.0.0.1:" + std::to_string(port) + "/";
  ASSERT_TRUE(Eventually([&] { return ReadText(log).find("Serving the berth dashboard at " + base) != std::string::npos; }))
      << ReadText(log);

  int code = 0;
  std::string page = HttpGet(base, &code);
  EXPECT_EQ(code, 200);
  EXPECT_NE(page.find("static/app.js"), std::string::npos) << page;
  // The page asks for no credential (the token form of the controller's old page is gone).
  EXPECT_EQ(page.find("type=\"password\""), std::string::npos) << page;
  EXPECT_EQ(page.find("token"), std::string::npos) << page;
  // The queue: the tenant's run only (berth's answer through the API server).
  std::string queue;
  ASSERT_TRUE(Eventually([&] {
    queue = HttpGet(base + "api/queue", &code);
    return code == 200 && queue.find("\"mine\"") != std::string::npos;
  })) << code << " " << queue;
  EXPECT_EQ(queue.find("theirs"), std::string::npos) << queue;
  EXPECT_EQ(queue.find(other), std::string::npos) << queue;
  std::string refused = HttpGet(base + "api/queue?namespace=" + other, &code);
  EXPECT_EQ(code, 403) << refused;
  EXPECT_NE(refused.find("may not list runs.berth.dev in namespace " + other), std::string::npos) << refused;
  // A run's details, read with the tenant's credentials (no token in the request).
  std::string detail = HttpGet(base + "api/runs/" + ns_ + "/mine", &code);
  EXPECT_EQ(code, 200) << detail;
  EXPECT_NE(detail.find("\"name\":\"mine\""), std::string::npos) << detail;
  HttpGet(base + "api/runs/" + other + "/theirs", &code);
  EXPECT_EQ(code, 403) << "the tenant may not read the other namespace's run";
  // A priority change: the page's headers, no token; the API server checks the tenant's rights.
  CommandResult post = RunCommand({"curl", "-s", "-m", "30", "-w", "\n%{http_code}", "-X", "POST", "-H", "X-Berth-CSRF: 1",
                                   "-H", "Content-Type: application/json", "-d", "{\"priority\":77}",
                                   base + "api/runs/" + ns_ + "/mine/priority"});
  EXPECT_NE(post.out.find("\n200"), std::string::npos) << post.out;
  auto run = GetRun("mine");
  const json::Value* prio = run.IsObject() ? json::Find(run, {"spec", "priority"}) : nullptr;
  ASSERT_NE(prio, nullptr);
  EXPECT_EQ(prio->GetInt64(), 77);
  // Another Host (a DNS name pointed at 127.0.0.1 by another site): refused before anything is read.
  CommandResult rebound = RunCommand({"curl", "-s", "-m", "30", "-w", "\n%{http_code}", "-H",
                                      "Host: evil.example:" + std::to_string(port), base + "api/queue"});
  EXPECT_NE(rebound.out.find("\n403"), std::string::npos) << rebound.out;
  EXPECT_EQ(rebound.out.find("mine"), std::string::npos) << rebound.out;
  // What reached the controller: the tenant's name, never its token.
  const std::string controller_log = netns_controller_.Log();
  EXPECT_NE(controller_log.find("as system:serviceaccount:" + ns_ + ":tenant"), std::string::npos);
  EXPECT_EQ(controller_log.find(user.token), std::string::npos) << "the tenant's token reached the controller";
}

TEST_F(Cli, PermissionErrorsShowTheApiMessage) {
  CommandResult applied = BerthNs({"apply", "-Q", "-f", "-"}, RunYaml("mine"));
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  ASSERT_EQ(Kubectl({"create", "serviceaccount", "nobody"}).exit_code, 0);
  CommandResult token = Kubectl({"create", "token", "nobody"});
  ASSERT_EQ(token.exit_code, 0) << token.err;
  const std::string kc = UserKubeconfig("nobody", "    token: " + Trim(token.out) + "\n");
  const std::string user = "User \"system:serviceaccount:" + ns_ + ":nobody\"";

  CommandResult get = Berth({"priority", "mine", "10"}, {}, kc);
  EXPECT_EQ(get.exit_code, 1);
  EXPECT_EQ(get.err, "error: runs.berth.dev \"mine\" is forbidden: " + user +
                         " cannot get resource \"runs\" in API group \"berth.dev\" in the namespace \"" + ns_ + "\"\n");
  CommandResult queue = Berth({"queue"}, {}, kc);
  EXPECT_EQ(queue.exit_code, 1);
  EXPECT_EQ(queue.err, "error: system:serviceaccount:" + ns_ + ":nobody may not list runs.berth.dev in namespace " + ns_ + "\n");
  CommandResult fleets = Berth({"fleets"}, {}, kc);
  EXPECT_EQ(fleets.exit_code, 1);
  EXPECT_EQ(fleets.err, "error: fleets.berth.dev is forbidden: " + user +
                            " cannot list resource \"fleets\" in API group \"berth.dev\" at the cluster scope\n");

  // Allowed to read runs but not to change them: the patch is refused.
  ASSERT_EQ(Kubectl({"create", "role", "run-reader", "--verb=get", "--resource=runs.berth.dev"}).exit_code, 0);
  ASSERT_EQ(Kubectl({"create", "rolebinding", "nobody-reads", "--role=run-reader", "--serviceaccount=" + ns_ + ":nobody"}).exit_code, 0);
  CommandResult patch;
  ASSERT_TRUE(Eventually([&] {
    patch = Berth({"priority", "mine", "10"}, {}, kc);
    return patch.err.find("cannot patch") != std::string::npos;
  }, std::chrono::seconds(10))) << patch.err;
  EXPECT_EQ(patch.exit_code, 1);
  EXPECT_EQ(patch.err, "error: runs.berth.dev \"mine\" is forbidden: " + user +
                           " cannot patch resource \"runs\" in API group \"berth.dev\" in the namespace \"" + ns_ + "\"\n");
  EXPECT_EQ(json::GetInt(*json::Find(GetRun("mine"), {"spec"}), "priority"), 50);
}

TEST_F(Cli, KubeconfigFromTheEnvironmentAndTheContextsNamespace) {
  // A kubeconfig whose context points at the test namespace; no -n anywhere below.
  std::string text = ReadText(cp().kubeconfig());
  text = std::regex_replace(text, std::regex("namespace: default"), "namespace: " + ns_);
  const std::string kc = File("ctx.kubeconfig", text);
  CommandResult applied = Berth({"apply", "-Q", "-f", "-"}, RunYaml("here"), kc);
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_EQ(json::GetString(json::Find(GetRun("here"), {"metadata", "namespace"})), ns_);
  CommandResult p = Berth({"priority", "here", "70"}, {}, kc);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(Lines(p.out).at(0), "run/here priority 50 -> 70");
  ASSERT_TRUE(Eventually([&] { return !Reason("here").empty(); }));
  CommandResult q = Berth({"queue", "-o", "json"}, {}, kc);
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("\"name\": \"here\""), std::string::npos) << q.out;
  // --kubeconfig wins over KUBECONFIG.
  CommandResult flag = Berth({"priority", "here", "75", "--kubeconfig", kc}, {}, "/nonexistent/kubeconfig");
  ASSERT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_EQ(Lines(flag.out).at(0), "run/here priority 70 -> 75");
}

TEST_F(Cli, FleetsShowBlocksRunsExpiryAndState) {
  const std::string in3h = k8s::FormatRfc3339(k8s::SystemClock().Now() + std::chrono::hours(3));
  const std::string past = k8s::FormatRfc3339(k8s::SystemClock().Now() - std::chrono::minutes(5));
  auto expiring = Nodes("box", 1, "4", "8Gi", 0, {}, {{"berth.dev/expires-at", in3h}});
  auto plain = Nodes("box", 1, "4", "8Gi");
  Fleet("box", "box", "  blocks: 4\n  maxRunsPerInstance: 5\n");
  auto old = Nodes("old", 1, "4", "8Gi", 0, {}, {{"berth.dev/expires-at", past}});
  Fleet("old", "old");
  CommandResult r = BerthNs({"apply", "-f", "-"}, RunYaml("job", "  resources: {cpu: \"2\"}\n"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitPhase("job", "Scheduled")) << Phase("job") << ": " << Message("job");
  // Blocks are busy as soon as the admission is seen; runsStarted follows in a later write (the
  // durable count): wait for both.
  ASSERT_TRUE(Eventually([&] {
    const std::string started =
        cp().Kubectl({"get", "fleet", FleetName("box"), "-o", "jsonpath={.status.instances[*].runsStarted}"}).out;
    return cp().Kubectl({"get", "fleet", FleetName("box"), "-o", "jsonpath={.status.busyBlocks}/{.status.totalBlocks}"}).out == "2/8" &&
           (started == "1 0" || started == "0 1") &&
           cp().Kubectl({"get", "fleet", FleetName("old"), "-o", "jsonpath={.status.instances[0].state}"}).out == "Expired";
  }));
  const std::string busy_node = PlacementNodes("job").at(0);
  const std::string idle_node = busy_node == expiring[0] ? plain[0] : expiring[0];

  CommandResult f = Berth({"fleets"});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  auto lines = Lines(f.out);
  auto line_of = [&](const std::string& start) {
    for (const auto& l : lines) {
      if (l.rfind(start, 0) == 0) return l;
    }
    return std::string("<no line starting with " + start + ">\n" + f.out);
  };
  EXPECT_EQ(line_of(FleetName("box") + " "), FleetName("box") +
                                                 "   2 instances (2 ready), 2/8 blocks busy, placement any, max 5 runs per "
                                                 "instance");
  EXPECT_TRUE(std::regex_match(line_of("  " + busy_node + " "),
                               std::regex(" +" + busy_node + " +\\[##\\.\\.\\] 2/4 +1/5 +(-|in 17[0-9]m|in 3h) +Busy")))
      << f.out;
  EXPECT_TRUE(std::regex_match(line_of("  " + idle_node + " "),
                               std::regex(" +" + idle_node + " +\\[\\.\\.\\.\\.\\] 0/4 +0/5 +(-|in 17[0-9]m|in 3h) +Idle")))
      << f.out;
  EXPECT_TRUE(std::regex_search(line_of("  " + expiring[0] + " "), std::regex("in (17[0-9]m|3h) "))) << f.out;
  EXPECT_TRUE(std::regex_match(line_of("  " + old[0] + " "), std::regex(" +" + old[0] + " +\\[.\\] 0/1 +0 +expired +Expired")))
      << f.out;
  EXPECT_TRUE(std::regex_search(f.out, std::regex("\n  INSTANCE +BLOCKS +RUNS +EXPIRES +STATE\n"))) << f.out;

  CommandResult wide = Berth({"fleets", "-o", "wide"});
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  EXPECT_TRUE(std::regex_search(wide.out, std::regex("\n  INSTANCE +BLOCKS +RUNS +EXPIRES +STATE +OTHER PODS +MESSAGE\n"))) << wide.out;
}

TEST_F(Cli, DescribeShowsPriorityPlacementPodStatesAndEvents) {
  auto nodes = Nodes("desc", 2, "2", "2Gi");
  Fleet("desc", "desc", "  placement: cluster\n");
  CommandResult a = BerthNs({"apply", "-f", "-"}, RunYaml("pair", "  nodes: 2\n  priority: 70\n  maxDuration: 4h\n"));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_TRUE(WaitPhase("pair", "Scheduled")) << Phase("pair") << ": " << Message("pair");
  std::map<std::string, std::string> node_of_rank;  // pod -> the node it is bound to
  ASSERT_TRUE(Eventually([&] {
    node_of_rank.clear();
    for (const auto& [pod, doc] : PodsOf("pair")) {
      std::string node = json::GetString(json::Find(doc, {"spec", "nodeName"}));
      if (!node.empty()) node_of_rank[pod] = node;
    }
    return node_of_rank.size() == 2;
  })) << "the run's two Pods were never both bound";
  SetPodPhase("pair-0", "Running");  // rank 0 runs; rank 1 has not started yet
  // What a user checks: the run's priority and phase, each rank on its node with its Pod's state,
  // and the Scheduled Event (Events are written in the background: wait for it).
  CommandResult d;
  const bool shown = Eventually([&] {
    d = BerthNs({"describe", "pair"});
    return d.exit_code == 0 && std::regex_search(d.out, std::regex("\nEvents:\n.*\n +[0-9]+[smh] +Normal +Scheduled +1 +"));
  });
  ASSERT_TRUE(shown) << d.out << d.err;
  EXPECT_NE(d.out.find("Name:         pair\nNamespace:    " + ns_ + "\nPriority:     70\nPhase:        Scheduled\n"),
            std::string::npos)
      << d.out;
  EXPECT_NE(d.out.find("Asks:         2 nodes, no resources named; any fleet\n"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("Limits:       maxDuration 4h\n"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("Fleet:        " + FleetName("desc") + "\n"), std::string::npos) << d.out;
  EXPECT_TRUE(std::regex_search(d.out, std::regex("\n  RANK +NODE +BLOCKS +POD +POD STATE\n  0 +" + node_of_rank.at("pair-0") +
                                                  " +1 +pair-0 +Running\n  1 +" + node_of_rank.at("pair-1") +
                                                  " +1 +pair-1 +Pending\n")))
      << d.out;
  EXPECT_EQ(d.err, "");

  CommandResult g = BerthNs({"get", "pair"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(g.out.substr(0, g.out.find("Asks:")), d.out.substr(0, d.out.find("Asks:"))) << "get is describe";

  CommandResult missing = BerthNs({"describe", "nosuch"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "error: run \"nosuch\" not found in namespace \"" + ns_ + "\"\n");
  EXPECT_EQ(missing.out, "");
}

// Issue 44, item 8: text from the API reaches an admin's terminal through describe and queue.
// A tenant may create Events on its own run, and whatever writes a status message may quote
// anyone. Here an Event and a status message carry terminal control sequences (OSC to retitle the
// window, ESC [2J to clear the screen, colours, BEL, a C1 CSI, DEL). Before, kubectl berth printed
// them as they were; now the words are printed and none of the control characters.
TEST_F(Cli, DescribeAndQueuePrintNoControlCharactersFromTheApi) {
  BusySlot();
  CommandResult applied = BerthNs({"apply", "-Q", "-f", "-"}, RunYaml("loud"));
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  ASSERT_TRUE(Eventually([&] { return StatusInt("loud", "queuePosition") == 1; })) << Message("loud");
  const std::string uid = json::GetString(json::Find(RunDoc("loud"), {"metadata", "uid"}));
  // JSON spells the control characters \u001b (ESC), \u0007 (BEL), \u009b (C1 CSI), \u007f (DEL).
  const std::string evil = R"(\u001b]0;owned\u0007\u001b[2Jcleared \u001b[31mred\u001b[0m \u009b6n\u007fdone)";
  auto made = client()->Create(
      k8s::resources::kEvents.Path(ns_),
      R"({"apiVersion":"v1","kind":"Event","metadata":{"name":"loud-1"},"involvedObject":{"apiVersion":"berth.dev/v1alpha1",)"
      R"("kind":"Run","namespace":")" + ns_ + R"(","name":"loud","uid":")" + uid +
          R"("},"type":"Warning","reason":"Bell\u0007Ring","message":")" + evil +
          R"(","count":1,"firstTimestamp":"2026-01-01T00:00:00Z","lastTimestamp":"2026-01-01T00:00:00Z",)"
          R"("source":{"component":"tenant"}})");
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  auto has_control = [](const std::string& text) {
    for (size_t i = 0; i < text.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(text[i]);
      if ((c < 0x20 && c != '\n') || c == 0x7f) return true;
      if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
          static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
        return true;
      }
    }
    return false;
  };
  CommandResult d;
  ASSERT_TRUE(Eventually([&] {
    d = BerthNs({"describe", "loud"});
    return d.exit_code == 0 && d.out.find("owned") != std::string::npos;
  })) << d.out << d.err;
  EXPECT_FALSE(has_control(d.out)) << d.out;
  EXPECT_NE(d.out.find("BellRing"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("Warning"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("]0;owned[2Jcleared [31mred[0m 6ndone"), std::string::npos) << d.out;

  // The queue as the runs' status shows it (the controller is stopped, so nothing rewrites the
  // status written here): its message column, printed.
  netns_controller_.Stop();
  auto patched = client()->MergePatch(k8s::resources::kRuns.Path(ns_, "loud", "status"),
                                      R"({"status":{"message":")" + evil + R"("}})");
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  CommandResult q = BerthNs({"queue"});
  ASSERT_EQ(q.exit_code, 0) << q.out << q.err;
  EXPECT_NE(q.out.find("loud"), std::string::npos) << q.out << q.err;
  EXPECT_NE(q.out.find("]0;owned[2Jcleared [31mred[0m 6ndone"), std::string::npos) << q.out;
  EXPECT_FALSE(has_control(q.out)) << q.out;
  EXPECT_FALSE(has_control(q.err)) << q.err;
  // -o json: the same message, every control character written as an escape.
  CommandResult qj = BerthNs({"queue", "-o", "json"});
  ASSERT_EQ(qj.exit_code, 0) << qj.err;
  EXPECT_FALSE(has_control(qj.out)) << qj.out;
  auto items = json::Parse(qj.out);
  ASSERT_TRUE(items.ok() && items->IsArray() && items->Size() == 1) << qj.out;
  EXPECT_EQ(json::GetString((*items)[0], "message"),
            "\x1b]0;owned\x07\x1b[2Jcleared \x1b[31mred\x1b[0m \xc2\x9b" "6n\x7f" "done");
  d = BerthNs({"describe", "loud"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("Message:      ]0;owned[2Jcleared [31mred[0m 6ndone\n"), std::string::npos) << d.out;
  EXPECT_FALSE(has_control(d.out)) << d.out;
}

TEST_F(Cli, StopEndsARunKeepsItsRecordAndFreesItsBlocks) {
  Nodes("stop", 1, "4", "8Gi");
  Fleet("stop", "stop");
  // Retries on every event: a stop is none of them, so it is never resubmitted. Applied before
  // the other two: runs of one priority created in the same second go by name (api.md), and
  // "early" sorts before "job".
  CommandResult a = BerthNs({"apply", "-Q", "-f", "-"},
                            RunYaml("job", "  retry: {onEvents: [no-capacity, interruption, error], duration: \"off\"}\n"));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_TRUE(WaitPhase("job", "Scheduled")) << Phase("job") << ": " << Message("job");
  a = BerthNs({"apply", "-Q", "-f", "-"}, RunYaml("early") + "---\n" + RunYaml("late"));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  StartRun("job");
  ASSERT_TRUE(Eventually([&] { return PositionsAre({"early", "late"}); }));

  // Logs: clear errors before there is anything to read.
  CommandResult no_pods = BerthNs({"logs", "early"});
  EXPECT_EQ(no_pods.exit_code, 1);
  EXPECT_EQ(no_pods.err.rfind("error: run \"early\" has no Pods yet (Pending, ", 0), 0u) << no_pods.err;
  CommandResult out_of_range = BerthNs({"logs", "job", "--rank", "1"});
  EXPECT_EQ(out_of_range.exit_code, 1);
  EXPECT_EQ(out_of_range.err, "error: run \"job\" has one rank (0): --rank 1 is out of range\n");
  CommandResult ghost_logs = BerthNs({"logs", "ghost"});
  EXPECT_EQ(ghost_logs.exit_code, 1);
  EXPECT_EQ(ghost_logs.err, "error: run \"ghost\" not found in namespace \"" + ns_ + "\"\n");

  // A pending run stopped leaves the queue; the one behind it moves up.
  CommandResult pending = BerthNs({"stop", "early"});
  ASSERT_EQ(pending.exit_code, 0) << pending.err;
  EXPECT_EQ(pending.out, "run/early stop requested (was Pending)\n"
                         "run/early: Failed (Stopped): stopped (spec.stop) before it was scheduled\n");
  EXPECT_EQ(Phase("early"), "Failed");
  EXPECT_EQ(Reason("early"), "Stopped");
  EXPECT_EQ(json::Find(RunDoc("early"), {"status", "queuePosition"}), nullptr);
  EXPECT_TRUE(Eventually([&] { return PositionsAre({"late"}); }));

  // A running run stopped: Failed/Stopped at once, its Pod stopped with its grace period; its
  // block is free once the Pod is gone, and the waiting run gets it.
  CommandResult running = BerthNs({"stop", "job"});
  ASSERT_EQ(running.exit_code, 0) << running.err;
  EXPECT_EQ(running.out, "run/job stop requested (was Running)\n"
                         "run/job: Failed (Stopped): stopped (spec.stop) while running; its Pods are stopped with "
                         "their grace period\n");
  EXPECT_TRUE(Eventually([&] { return PodsGoneOnceStopped("job"); })) << "the stopped run's Pod was never deleted";
  EXPECT_TRUE(WaitPhase("late", "Scheduled")) << Phase("late") << ": " << Message("late");
  EXPECT_EQ(Phase("job"), "Failed");
  EXPECT_EQ(Reason("job"), "Stopped");
  EXPECT_EQ(StatusInt("job", "resubmissions"), 0);
  EXPECT_FALSE(json::GetString(json::Find(RunDoc("job"), {"status", "finishedAt"})).empty());
  const std::string uid = json::GetString(json::Find(RunDoc("job"), {"metadata", "uid"}));
  EXPECT_TRUE(Eventually([&] {
    CommandResult ev = Kubectl({"get", "events", "--field-selector", "involvedObject.uid=" + uid + ",reason=Stopped", "-o",
                                "jsonpath={.items[*].type}"});
    return ev.out == "Normal";
  })) << "no Normal Stopped Event";

  // Ended runs cannot be stopped again; unknown runs are named.
  CommandResult again = BerthNs({"stop", "job"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(again.err, "error: run \"job\" has already ended (Failed, Stopped); there is nothing to stop (kubectl berth "
                       "apply -f FILE runs it again)\n");
  EXPECT_EQ(again.out, "");
  CommandResult ghost = BerthNs({"stop", "ghost"});
  EXPECT_EQ(ghost.exit_code, 1);
  EXPECT_EQ(ghost.err, "error: run \"ghost\" not found in namespace \"" + ns_ + "\"\n");
  CommandResult gone = BerthNs({"logs", "job"});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_EQ(gone.err, "error: run \"job\" has no Pods any more (Failed, Stopped)\n");
}

TEST_F(Cli, SuspendAndResumeKeepTheFirstSubmissionTime) {
  Nodes("susp", 1, "4", "8Gi");
  Fleet("susp", "susp");
  CommandResult a = BerthNs({"apply", "-Q", "-f", "-"}, RunYaml("first"));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_TRUE(WaitPhase("first", "Scheduled")) << Phase("first") << ": " << Message("first");
  StartRun("first");
  a = BerthNs({"apply", "-Q", "-f", "-"}, RunYaml("second") + "---\n" + RunYaml("third"));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_TRUE(Eventually([&] { return PositionsAre({"second", "third"}); }));

  // A pending run suspended leaves the queue: Pending, Suspended, no position.
  CommandResult s = BerthNs({"suspend", "second"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(s.out, "run/second suspension requested (was Pending)\n"
                   "run/second: Pending (Suspended): suspended (spec.suspend): it waits out of the queue until "
                   "spec.suspend is false again (kubectl berth resume)\n");
  EXPECT_EQ(json::Find(RunDoc("second"), {"status", "queuePosition"}), nullptr);
  EXPECT_TRUE(Eventually([&] { return PositionsAre({"third"}); }));
  CommandResult twice = BerthNs({"suspend", "second"});
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_EQ(twice.err, "error: run \"second\" is already suspended (spec.suspend is true); kubectl berth resume second "
                       "queues it again\n");

  // A running run suspended: its Pods stop, it waits suspended, and its block goes to the queue
  // once they are gone.
  s = BerthNs({"suspend", "first"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(s.out.rfind("run/first suspension requested (was Running)\nrun/first: Pending (Suspended): suspended "
                        "(spec.suspend) while running: its Pods are stopped with their grace period",
                        0),
            0u)
      << s.out;
  EXPECT_TRUE(json::Find(RunDoc("first"), {"status", "placement"}) == nullptr ||
              json::Find(RunDoc("first"), {"status", "placement"})->IsNull() ||
              json::Find(RunDoc("first"), {"status", "placement"})->GetArray().Empty());
  EXPECT_TRUE(Eventually([&] { return PodsGoneOnceStopped("first"); })) << "the suspended run's Pod was never deleted";
  EXPECT_TRUE(WaitPhase("third", "Scheduled")) << Phase("third") << ": " << Message("third");
  EXPECT_EQ(Phase("first"), "Pending");
  EXPECT_EQ(Reason("first"), "Suspended");

  // Resumed, both queue again by their first submission time: first before second.
  CommandResult r = BerthNs({"resume", "second"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("run/second resumption requested (was Pending)\nrun/second: Pending (", 0), 0u) << r.out;
  r = BerthNs({"resume", "first"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Eventually([&] { return PositionsAre({"first", "second"}); }))
      << Reason("first") << ": " << Message("first") << " / " << Reason("second");
  CommandResult not_suspended = BerthNs({"resume", "first"});
  EXPECT_EQ(not_suspended.exit_code, 1);
  EXPECT_EQ(not_suspended.err, "error: run \"first\" is not suspended (spec.suspend is not true)\n");

  // When third ends, first (resumed) runs again with new Pods of the same names.
  StartRun("third");
  FinishRun("third");
  EXPECT_TRUE(WaitPhase("first", "Scheduled")) << Phase("first") << ": " << Message("first");
  EXPECT_EQ(StatusInt("first", "resubmissions"), 0);

  // Suspended and resumed at once: its Pod is still stopping (it holds the block, and its name is
  // the next Pod's), so it waits out of the queue until the Pod is gone, then it is first again.
  StartRun("first");
  ASSERT_EQ(BerthNs({"suspend", "first"}).exit_code, 0);
  ASSERT_EQ(BerthNs({"resume", "first"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] {
    return Reason("first") == "Resumed" &&
           Message("first") == "resumed: it queues again at its first submission time once the Pods of its suspended attempt are gone";
  })) << Reason("first") << ": " << Message("first");
  EXPECT_EQ(json::Find(RunDoc("first"), {"status", "queuePosition"}), nullptr);
  EXPECT_FALSE(PodsOf("first").empty());
  EXPECT_TRUE(Eventually([&] { return PodsGoneOnceStopped("first"); }));
  EXPECT_TRUE(WaitPhase("first", "Scheduled")) << Phase("first") << ": " << Message("first");
  EXPECT_EQ(Phase("second"), "Pending");
  EXPECT_TRUE(Eventually([&] { return PodsOf("first").count("first-0") == 1; })) << "the new Pod takes the old name";

  // An ended run: suspend is refused by the plugin, and a patch does nothing but say so.
  CommandResult ended = BerthNs({"suspend", "third"});
  EXPECT_EQ(ended.exit_code, 1);
  EXPECT_EQ(ended.err, "error: run \"third\" has already ended (Succeeded); there is nothing to suspend (kubectl berth "
                       "apply -f FILE runs it again)\n");
  CommandResult patch = Kubectl({"patch", "run", "third", "--type", "merge", "-p", R"({"spec":{"suspend":true}})"});
  ASSERT_EQ(patch.exit_code, 0) << patch.err;
  EXPECT_TRUE(Eventually([&] {
    return Message("third").find("spec.suspend was set after the run ended: an ended run has nothing to suspend") !=
           std::string::npos;
  })) << Message("third");
  EXPECT_EQ(Phase("third"), "Succeeded");
}

// Issue 47: per-user usage through the queue API and `kubectl berth usage`. Two users' runs on a
// Team's namespace (berth.dev/submitted-by alice and bob), one finished before the controller is
// restarted and one after: each user's GPU-hours equal their run's span (as its status records
// it, to the second), the team's their sum; the table shows what the JSON says. An admin sees
// every user's row; alice (impersonated: `kubectl --as`) only hers; a user who may not list Teams
// nothing; bad flags and parameters get a sentence.
TEST_F(Cli, UsageShowsEachUserTheirOwnFiguresEqualToTheRunsSpansAcrossARestart) {
  netns_controller_.Stop();
  netns_controller_.extra_args = {"--team-status-interval=1s"};
  netns_controller_.Start();
  const std::string team = "usage-" + ns_;
  struct Dropper {
    std::string team;
    ~Dropper() {
      ControlPlane::Get().Kubectl({"delete", "team", team, "--ignore-not-found"});
      ControlPlane::Get().Kubectl({"delete", "configmap", "-n", "berth-system", "berth-usage-" + team, "--ignore-not-found"});
      for (const char* role : {"usage-reader-", "usage-only-"}) {
        ControlPlane::Get().Kubectl({"delete", "clusterrole,clusterrolebinding", role + team, "--ignore-not-found"});
      }
    }
  } drop{team};
  ASSERT_EQ(cp().Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + team +
                                                    "}\nspec:\n  namespaces: [" + ns_ + "]\n").exit_code, 0);
  Nodes("u", 2, "16", "64Gi", 8);
  Fleet("u", "u", "  blocks: 8\n");  // a block: 1 GPU, 2 CPUs, 8 GiB
  auto submit = [&](const std::string& name, const std::string& user, int gpus) {
    Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata:\n  name: " + name + "\n  annotations: {berth.dev/submitted-by: " +
          user + "}\nspec:\n  resources: {gpu: " + std::to_string(gpus) +
          "}\n  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n");
  };
  submit("by-alice", "alice", 2);
  submit("by-bob", "bob", 3);
  ASSERT_TRUE(WaitPhase("by-alice", "Scheduled")) << Message("by-alice");
  ASSERT_TRUE(WaitPhase("by-bob", "Scheduled")) << Message("by-bob");
  StartRun("by-alice");
  StartRun("by-bob");
  auto status = [&](const std::string& run) {
    json::Document d = RunDoc(run);
    const json::Value* st = d.IsObject() ? json::Find(d, {"status"}) : nullptr;
    return st != nullptr ? api::v1alpha1::DecodeRunStatusLeniently(*st) : api::v1alpha1::RunStatus{};
  };
  auto accounted = [&](const std::string& run) {
    const auto s = status(run);
    return s.released_at && s.accounted_until && *s.accounted_until >= *s.released_at;
  };
  // GPU-seconds of the run's (accounted) span.
  auto span = [&](const std::string& run) {
    const auto s = status(run);
    if (!s.held_since || !s.released_at || !s.held) return -1.0;
    return static_cast<double>(s.held->gpus) * std::chrono::duration<double>(s.released_at->point() - s.held_since->point()).count();
  };
  std::this_thread::sleep_for(std::chrono::seconds(3));  // the spans grow over a few folds
  FinishRun("by-alice");
  ASSERT_TRUE(Eventually([&] { return accounted("by-alice"); }, std::chrono::seconds(60))) << "alice's span never accounted";
  // A restart mid-run (the next leader folds on from the store's own watermark).
  netns_controller_.Stop();
  netns_controller_.Start();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  FinishRun("by-bob");
  ASSERT_TRUE(Eventually([&] { return accounted("by-bob"); }, std::chrono::seconds(60))) << "bob's span never accounted";
  const double alice = span("by-alice"), bob = span("by-bob");
  ASSERT_GT(alice, 0);
  ASSERT_GT(bob, 0);

  // GPU-seconds of each row of an answer.
  auto rows = [](const std::string& body) {
    std::map<std::string, double> out;
    auto doc = json::Parse(body);
    if (!doc.ok() || json::Find(*doc, {"rows"}) == nullptr) return out;
    for (const auto& r : json::Find(*doc, {"rows"})->GetArray()) {
      out[json::GetString(json::Find(r, {"name"}))] = json::Find(r, {"gpuHours"})->GetDouble() * 3600;
    }
    return out;
  };
  CommandResult users = Berth({"usage", "--by", "user", "-o", "json"});
  ASSERT_EQ(users.exit_code, 0) << users.err;
  std::map<std::string, double> by_user = rows(users.out);
  EXPECT_NEAR(by_user["alice"], alice, 0.01) << users.out;
  EXPECT_NEAR(by_user["bob"], bob, 0.01) << users.out;
  CommandResult teams = Berth({"usage", "--since", "1d", "-o", "json"});
  ASSERT_EQ(teams.exit_code, 0) << teams.err;
  EXPECT_NEAR(rows(teams.out)[team], alice + bob, 0.01) << teams.out;
  // The table: each row's name and GPU-hours as the JSON has them.
  CommandResult table = Berth({"usage", "--by", "user"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out.rfind("USER", 0), 0u) << table.out;
  std::map<std::string, std::string> shown;  // user -> GPU-HOURS cell
  std::istringstream lines(table.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream cells(line);
    std::string name, gpu;
    cells >> name >> gpu;
    shown[name] = gpu;
  }
  for (const auto& [user, secs] : by_user) {
    char hours[32];
    std::snprintf(hours, sizeof hours, "%.1f", secs / 3600);
    EXPECT_EQ(shown[user], hours) << user << "\n" << table.out;
  }

  // alice and bob may read the usage and list Teams, nothing more: each sees their own row.
  Apply("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: usage-reader-" + team + "}\n"
        "rules:\n- {apiGroups: [queue.berth.dev], resources: [usage], verbs: [get, list]}\n"
        "- {apiGroups: [berth.dev], resources: [teams], verbs: [list]}\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: usage-reader-" + team + "}\n"
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: usage-reader-" + team + "}\n"
        "subjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}\n"
        "- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}\n");
  const std::string path = "/apis/queue.berth.dev/v1alpha1/usage?by=user";
  CommandResult as_alice;
  ASSERT_TRUE(Eventually([&] {
    as_alice = Kubectl({"get", "--raw", path, "--as", "alice"});
    return as_alice.exit_code == 0;
  })) << as_alice.err;
  EXPECT_EQ(rows(as_alice.out), (std::map<std::string, double>{{"alice", by_user["alice"]}})) << as_alice.out;
  CommandResult as_bob = Kubectl({"get", "--raw", path, "--as", "bob"});
  ASSERT_EQ(as_bob.exit_code, 0) << as_bob.err;
  EXPECT_EQ(rows(as_bob.out), (std::map<std::string, double>{{"bob", by_user["bob"]}})) << as_bob.out;
  // carol may read the usage resource but not list Teams: berth refuses, naming her.
  Apply("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: usage-only-" + team + "}\n"
        "rules:\n- {apiGroups: [queue.berth.dev], resources: [usage], verbs: [get, list]}\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: usage-only-" + team + "}\n"
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: usage-only-" + team + "}\n"
        "subjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}\n");
  CommandResult as_carol;
  EXPECT_TRUE(Eventually([&] {
    as_carol = Kubectl({"get", "--raw", "/apis/queue.berth.dev/v1alpha1/usage", "--as", "carol"});
    return as_carol.err.find("carol may not list teams.berth.dev, whose usage this is") != std::string::npos;
  })) << as_carol.err;
  EXPECT_NE(as_carol.exit_code, 0);

  // Bad flags and parameters: a sentence.
  CommandResult bad_since = Berth({"usage", "--since", "1y"});
  EXPECT_EQ(bad_since.exit_code, 1);
  EXPECT_EQ(bad_since.err, "error: flag --since takes a duration from 1h to 90d (the usage history berth keeps), not \"1y\"\n");
  CommandResult bad_by = Berth({"usage", "--by", "pod"});
  EXPECT_EQ(bad_by.exit_code, 1);
  EXPECT_EQ(bad_by.err, "error: flag --by takes team, namespace, user or fleet, not \"pod\"\n");
  CommandResult bad_raw = Kubectl({"get", "--raw", "/apis/queue.berth.dev/v1alpha1/usage?since=forever"});
  EXPECT_NE(bad_raw.exit_code, 0);
  EXPECT_NE(bad_raw.err.find("since must be a duration from 1h to 90d"), std::string::npos) << bad_raw.err;
}

// Issue 47: RUNS and MEDIAN-WAIT of `kubectl berth usage` for every --by are what the runs'
// timestamps give: each run counted once, its wait from its creation to its admission
// (status.heldSince), the median (the lower middle run's wait) within the bucket the answer names.
TEST_F(Cli, UsageCountsRunsAndTheirMedianWaitAsTheRunsTimestampsGive) {
  netns_controller_.Stop();
  netns_controller_.extra_args = {"--team-status-interval=1s"};
  netns_controller_.Start();
  const std::string team = "runs-" + ns_;
  const std::string ann = "ann-" + ns_, ben = "ben-" + ns_;  // users no other test has
  struct Dropper {
    std::string team;
    ~Dropper() {
      ControlPlane::Get().Kubectl({"delete", "team", team, "--ignore-not-found"});
      ControlPlane::Get().Kubectl({"delete", "configmap", "-n", "berth-system", "berth-usage-" + team, "--ignore-not-found"});
    }
  } drop{team};
  ASSERT_EQ(cp().Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + team +
                                                    "}\nspec:\n  namespaces: [" + ns_ + "]\n").exit_code, 0);
  Nodes("w", 1, "16", "64Gi", 8);
  Fleet("w", "w", "  blocks: 8\n");  // a block: 1 GPU
  auto submit = [&](const std::string& name, const std::string& user, int gpus) {
    Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata:\n  name: " + name + "\n  annotations: {berth.dev/submitted-by: " +
          user + "}\nspec:\n  resources: {gpu: " + std::to_string(gpus) +
          "}\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n"  // a run that does not fit waits
          "  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n");
  };
  // ann-1 and ben-1 take the 8 GPUs at once; ann-2 and ann-3 wait until ann-1 ends.
  submit("ann-1", ann, 6);
  submit("ben-1", ben, 2);
  ASSERT_TRUE(WaitPhase("ann-1", "Scheduled")) << Message("ann-1");
  ASSERT_TRUE(WaitPhase("ben-1", "Scheduled")) << Message("ben-1");
  submit("ann-2", ann, 3);
  submit("ann-3", ann, 3);
  StartRun("ann-1");
  StartRun("ben-1");
  std::this_thread::sleep_for(std::chrono::seconds(12));  // ann-2 and ann-3 wait a while
  EXPECT_EQ(Phase("ann-2"), "Pending") << Message("ann-2");
  FinishRun("ann-1");
  ASSERT_TRUE(WaitPhase("ann-2", "Scheduled")) << Message("ann-2");
  ASSERT_TRUE(WaitPhase("ann-3", "Scheduled")) << Message("ann-3");
  for (const char* run : {"ann-2", "ann-3"}) {
    StartRun(run);
    FinishRun(run);
  }
  FinishRun("ben-1");
  // The wait of each run from its timestamps, once every span is in the store.
  std::map<std::string, int64_t> wait;
  auto accounted = [&](const std::string& run) {
    json::Document d = RunDoc(run);
    const json::Value* st = d.IsObject() ? json::Find(d, {"status"}) : nullptr;
    if (st == nullptr) return false;
    const auto s = api::v1alpha1::DecodeRunStatusLeniently(*st);
    auto created = k8s::ParseRfc3339(json::GetString(json::Find(d, {"metadata", "creationTimestamp"})));
    if (!s.held_since || !s.released_at || !s.accounted_until || *s.accounted_until < *s.released_at || !created.ok()) return false;
    wait[run] = std::chrono::duration_cast<std::chrono::seconds>(s.held_since->point() - *created).count();
    return true;
  };
  for (const char* run : {"ann-1", "ben-1", "ann-2", "ann-3"}) {
    ASSERT_TRUE(Eventually([&] { return accounted(run); }, std::chrono::seconds(60))) << run << "'s span never accounted";
  }
  EXPECT_GE(wait["ann-2"], 10) << "ann-2 waited for ann-1";
  // The lower middle run's wait of a group of runs.
  auto median = [&](std::vector<std::string> runs) {
    std::vector<int64_t> w;
    for (const auto& r : runs) w.push_back(wait[r]);
    std::sort(w.begin(), w.end());
    return w[(w.size() + 1) / 2 - 1];
  };
  // name -> (runs, medianWait's fromSeconds, underSeconds) of an answer's rows.
  auto rows = [](const std::string& body) {
    std::map<std::string, std::tuple<int64_t, int64_t, int64_t>> out;
    auto doc = json::Parse(body);
    if (!doc.ok() || json::Find(*doc, {"rows"}) == nullptr) return out;
    for (const auto& r : json::Find(*doc, {"rows"})->GetArray()) {
      const json::Value* m = json::Find(r, {"medianWait"});
      if (json::Find(r, {"runs"}) == nullptr || m == nullptr || !m->IsObject()) continue;
      out[json::GetString(json::Find(r, {"name"}))] = {json::GetInt(r, "runs"), json::GetInt(*m, "fromSeconds"),
                                                       json::GetInt(*m, "underSeconds", INT64_MAX)};
    }
    return out;
  };
  auto check = [&](const std::string& by, const std::string& name, const std::vector<std::string>& runs) {
    CommandResult r = Berth({"usage", "--since", "1d", "--by", by, "-o", "json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto got = rows(r.out);
    ASSERT_TRUE(got.count(name)) << by << " " << name << "\n" << r.out;
    const auto [n, from, under] = got.at(name);
    const int64_t m = median(runs);
    EXPECT_EQ(n, static_cast<int64_t>(runs.size())) << by << " " << name << "\n" << r.out;
    EXPECT_LE(from, m) << by << " " << name << "\n" << r.out;
    EXPECT_LT(m, under) << by << " " << name << "\n" << r.out;
  };
  const std::vector<std::string> all = {"ann-1", "ben-1", "ann-2", "ann-3"};
  check("user", ann, {"ann-1", "ann-2", "ann-3"});
  check("user", ben, {"ben-1"});
  check("team", team, all);
  check("namespace", ns_, all);
  check("fleet", FleetName("w"), all);
  // The table: RUNS and MEDIAN-WAIT as the JSON has them ("10s–20s": the bucket's bounds).
  CommandResult users = Berth({"usage", "--since", "1d", "--by", "user", "-o", "json"});
  ASSERT_EQ(users.exit_code, 0) << users.err;
  const auto [ann_runs, ann_from, ann_under] = rows(users.out)[ann];
  ASSERT_GT(ann_from, 0) << users.out;
  CommandResult table = Berth({"usage", "--by", "user"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("RUNS   MEDIAN-WAIT"), std::string::npos) << table.out;
  std::istringstream lines(table.out);
  bool seen = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(ann + " ", 0) != 0) continue;
    std::istringstream cells(line);
    std::vector<std::string> c;
    for (std::string cell; cells >> cell;) c.push_back(cell);
    ASSERT_GE(c.size(), 2u) << line;
    EXPECT_EQ(c[c.size() - 2], std::to_string(ann_runs)) << line;
    EXPECT_EQ(c.back(), base::FormatDuration(std::chrono::seconds(ann_from)) + "\u2013" +
                            base::FormatDuration(std::chrono::seconds(ann_under)))
        << line;
    seen = true;
  }
  EXPECT_TRUE(seen) << table.out;
}

}  // namespace
}  // namespace berth::testing
