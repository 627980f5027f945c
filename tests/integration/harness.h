#pragma once
// Integration-test harness: one real etcd + kube-apiserver per test binary (hack/control-plane.sh),
// a fresh namespace per test, kubectl and berth-controller as real subprocesses. The harness may
// play the kubelet (patch pod status); it never fakes the API server.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "k8s/client.h"

namespace berth::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs `argv` (no shell), feeding `input` to stdin.
CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& input = {},
                         const std::vector<std::string>& extra_env = {});

class ControlPlane {
 public:
  // The control plane of this test binary (started by the gtest Environment below).
  static ControlPlane& Get();

  void Start();
  void Stop();
  void StopApiserver();
  void StartApiserver();
  // Stops etcd / starts it again on its ports with its data (kube-apiserver keeps running).
  void StopEtcd();
  void StartEtcd();
  // Compacts etcd at its current revision; returns the revision.
  std::string Compact();

  const std::string& dir() const { return dir_; }
  // The token of user `admin` (system:masters), which may list runs everywhere.
  std::string AdminToken() const;
  std::string kubeconfig() const { return dir_ + "/kubeconfig"; }
  // A kubeconfig for this control plane with `user_lines` (YAML under `user:`, 4-space indent,
  // e.g. "    token: T\n"), written to DIR/kubeconfig-<name>; its path.
  std::string KubeconfigOf(const std::string& name, const std::string& user_lines) const;
  // The token in DIR/<who>.token (admin, editor, viewer: static users of the API server).
  std::string TokenOf(const std::string& who) const;
  // This machine's non-loopback address (DIR/host-ip), where a controller on this machine serves
  // an APIService's endpoint (endpoints may not be loopback); empty when it has none.
  std::string HostIp() const;
  k8s::ClientPtr client() const { return client_; }

  // kubectl against this control plane.
  CommandResult Kubectl(const std::vector<std::string>& args, const std::string& input = {});

 private:
  CommandResult Script(const std::string& verb);
  std::string dir_;
  k8s::ClientPtr client_;
};

// A TCP port on 127.0.0.1 that is free right now.
int FreePort();

// Body of an HTTP GET (curl); empty on failure. `code` receives the HTTP status when given.
// `bearer`: sent as `Authorization: Bearer` (the controller's queue answers only a caller with a
// token, issue 29 item 8).
std::string HttpGet(const std::string& url, int* code = nullptr, const std::string& bearer = {});

// The documents of a multi-document YAML (helm template's output) with a line "name: N" for one
// of `names` (metadata.name, indented), each after a "---" line, ready for kubectl apply.
std::string YamlDocumentsNamed(const std::string& yaml, const std::vector<std::string>& names);

// `kubectl-berth ARGS` (the plugin beside berth-controller in the build tree) with `kubeconfig`.
CommandResult RunPlugin(const std::string& kubeconfig, const std::vector<std::string>& args);

// Polls `cond` every 20 ms until it holds or `timeout` passes; returns whether it held.
bool Eventually(const std::function<bool()>& cond, std::chrono::milliseconds timeout = std::chrono::seconds(30));

// A berth-controller process.
class ControllerProcess {
 public:
  // `kubeconfig` empty: the admin kubeconfig of the control plane (tests of RBAC pass another).
  explicit ControllerProcess(std::vector<std::string> extra_args = {}, std::string log_name = "controller",
                             std::string kubeconfig = {});
  ~ControllerProcess();
  // berth-kubelet-sim instead of the controller: plays the kubelet for every bound Pod (Running,
  // then Succeeded after the Pod's berth.dev/sim-seconds).
  static std::unique_ptr<ControllerProcess> KubeletSim(std::string log_name = "kubelet-sim");
  // `kubectl berth dashboard --port PORT` instead (the plugin beside berth-controller in the build
  // tree; its target must be built): the dashboard a user runs on their own machine with
  // `kubeconfig` (issue 44), at LocalDashboardUrl(port) once its log says it serves.
  static std::unique_ptr<ControllerProcess> LocalDashboard(std::string kubeconfig, int port,
                                                           std::string log_name = "dashboard");
  static std::string LocalDashboardUrl(int port) { return "http://127.0.0.1:" + std::to_string(port) + "/"; }
  // Starts it and waits (up to 30 s) until it serves; false if it never did.
  bool StartServing();
  void Start();
  // SIGTERM and wait; returns the exit code (-signal when killed by a signal).
  int Stop();
  void Kill();    // SIGKILL
  void Pause();   // SIGSTOP
  void Resume();  // SIGCONT
  bool Running() const;
  std::string Log() const;
  const std::string& log_path() const { return log_path_; }
  int pid() const { return pid_; }

 private:
  std::vector<std::string> args_;
  std::string log_path_;
  std::string kubeconfig_;
  std::string binary_ = BERTH_CONTROLLER_BIN;
  // -1 once the process is reaped (by Stop, Kill or Running): a reaped pid belongs to no one and
  // the kernel hands it to the next process, which a later signal must never reach.
  mutable int pid_ = -1;
  mutable int exit_ = -1;  // what Stop returns for a process Running found already gone
};

// berth's aggregated queue API (issue 44, 4: APIService v1alpha1.queue.berth.dev) served by a
// controller on this machine, as the chart sets it up in a cluster: a Service `berth-queue` in `ns`
// without a selector, an EndpointSlice with this machine's address and a free port (the API server
// routes to endpoints: hack/control-plane.sh), a serving certificate for berth-queue.<ns>.svc
// signed by a CA of its own (the APIService's caBundle), and the chart's RBAC (every authenticated
// user may get the queue resources; berth decides what they show). The destructor removes the
// APIService and the RBAC: an APIService nobody serves would slow every later kubectl.
class QueueApiRegistration {
 public:
  explicit QueueApiRegistration(std::string ns);
  // Served at `host`:`port` instead (a controller in a network namespace of its own).
  QueueApiRegistration(std::string ns, std::string host, int port);
  ~QueueApiRegistration();
  // The controller's flags that serve it.
  std::vector<std::string> ControllerArgs() const;
  // Creates the APIService (once the controller serves; again after a restart) and waits until the
  // API server says it is Available (its check reached the controller); false after `timeout`. The
  // EndpointSlice is touched first, so the API server checks again at once (after a failed check
  // it waits up to 30 s).
  bool Register(std::chrono::milliseconds timeout = std::chrono::seconds(90));
  const std::string& host() const { return host_; }
  int port() const { return port_; }
  const std::string& dir() const { return dir_; }  // ca.crt, tls.crt, tls.key
  // `kubectl get --raw PATH` (PATH under /apis/queue.berth.dev/v1alpha1) with `extra` kubectl args.
  CommandResult GetRaw(const std::string& path, const std::vector<std::string>& extra = {}) const;

 private:
  void Create();
  std::string ns_, host_, dir_;
  int port_ = 0;
  int touches_ = 0;
};

// Gives each test its own namespace (created in SetUp, deleted in TearDown).
class IntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  ControlPlane& cp() { return ControlPlane::Get(); }
  k8s::ClientPtr client() { return cp().client(); }
  CommandResult Kubectl(std::vector<std::string> args, const std::string& input = {});  // adds -n ns
  // kubectl apply -f - of `yaml` in the test namespace; fails the test on error.
  void Apply(const std::string& yaml);
  // GET of a Run in the test namespace (null document on error).
  k8s::json::Document GetRun(const std::string& name);
  std::string ns_;
};

}  // namespace berth::testing
