#include "harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "k8s/config.h"

extern char** environ;

namespace berth::testing {
namespace {

std::string ReadAll(int fd) {
  std::string out;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

std::string RandomSuffix() {
  static std::mt19937_64 rng(std::random_device{}());
  static const char* chars = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string s;
  for (int i = 0; i < 6; ++i) s.push_back(chars[rng() % 36]);
  return s;
}

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& input,
                         const std::vector<std::string>& extra_env) {
  int in_pipe[2], out_pipe[2], err_pipe[2];
  // Close-on-exec: a command started at the same moment from another thread must not inherit
  // these pipes (its background children would hold them open, and this read would never end).
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) return {};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) {
    posix_spawn_file_actions_addclose(&fa, fd);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_store;
  for (char** e = environ; *e != nullptr; ++e) env_store.emplace_back(*e);
  for (const auto& e : extra_env) env_store.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  CommandResult res;
  if (rc != 0) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    close(err_pipe[0]);
    res.err = "cannot start " + argv[0];
    return res;
  }
  std::thread writer([&] {
    size_t off = 0;
    while (off < input.size()) {
      ssize_t n = write(in_pipe[1], input.data() + off, input.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(in_pipe[1]);
  });
  std::string err;
  std::thread err_reader([&] { err = ReadAll(err_pipe[0]); });
  res.out = ReadAll(out_pipe[0]);
  err_reader.join();
  writer.join();
  close(out_pipe[0]);
  close(err_pipe[0]);
  res.err = err;
  int status = 0;
  waitpid(pid, &status, 0);
  res.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  return res;
}

ControlPlane& ControlPlane::Get() {
  // Never destroyed: OpenSSL's atexit clean-up runs before static destructors, and freeing the
  // client's TLS connections after it crashes the process at exit.
  static ControlPlane* cp = new ControlPlane;
  return *cp;
}

CommandResult ControlPlane::Script(const std::string& verb) {
  return RunCommand({"bash", std::string(BERTH_SOURCE_DIR) + "/hack/control-plane.sh", verb, dir_});
}

void ControlPlane::Start() {
  // kubectl and helm of the project's pinned builds (hack/build-kube.sh) come first on PATH for
  // this process and every command it runs, whatever else the machine has installed.
  CommandResult bin = RunCommand({"bash", std::string(BERTH_SOURCE_DIR) + "/hack/build-kube.sh", "--bin"});
  std::string kube_bin = bin.out.substr(0, bin.out.find('\n'));
  if (bin.exit_code != 0 || kube_bin.empty()) {
    std::fprintf(stderr, "hack/build-kube.sh --bin failed: %s\n", bin.err.c_str());
    std::abort();
  }
  const char* home = std::getenv("HOME");
  const char* cache = std::getenv("BERTH_CACHE");
  std::string tools = (cache ? std::string(cache) : std::string(home ? home : "/root") + "/.cache/berth") + "/tools/bin";
  const char* path = std::getenv("PATH");
  std::string new_path = kube_bin + ":" + tools + ":" + (path ? path : "/usr/bin:/bin");
  setenv("PATH", new_path.c_str(), 1);
  const char* base = std::getenv("BERTH_TEST_TMP");
  dir_ = std::string(base ? base : "/tmp") + "/berth-it-" + std::to_string(getpid()) + "-" + RandomSuffix();
  CommandResult r = Script("start");
  if (r.exit_code != 0) {
    std::fprintf(stderr, "control plane did not start:\n%s\n%s\n", r.out.c_str(), r.err.c_str());
    std::abort();
  }
  auto cfg = k8s::LoadKubeconfig({kubeconfig()});
  if (!cfg.ok()) {
    std::fprintf(stderr, "kubeconfig: %s\n", cfg.status().message().c_str());
    std::abort();
  }
  client_ = std::make_shared<k8s::Client>(cfg.value());
  CommandResult crds = Kubectl({"apply", "-f", std::string(BERTH_SOURCE_DIR) + "/deploy/crds/"});
  if (crds.exit_code != 0) {
    std::fprintf(stderr, "CRDs not applied: %s\n", crds.err.c_str());
    std::abort();
  }
  bool established = Eventually([&] {
    return Kubectl({"get", "runs.berth.dev", "-A"}).exit_code == 0 && Kubectl({"get", "fleets.berth.dev"}).exit_code == 0 &&
           Kubectl({"get", "teams.berth.dev"}).exit_code == 0;
  });
  if (!established) {
    std::fprintf(stderr, "CRDs never became established\n");
    std::abort();
  }
}

void ControlPlane::Stop() { Script("stop"); }
void ControlPlane::StopApiserver() { Script("stop-apiserver"); }
void ControlPlane::StartApiserver() {
  CommandResult r = Script("start-apiserver");
  ASSERT_EQ(r.exit_code, 0) << r.err;
}
void ControlPlane::StopEtcd() { Script("stop-etcd"); }
void ControlPlane::StartEtcd() {
  CommandResult r = Script("start-etcd");
  ASSERT_EQ(r.exit_code, 0) << r.err;
}
std::string ControlPlane::Compact() {
  CommandResult r = Script("compact");
  std::string rev = r.out;
  while (!rev.empty() && (rev.back() == '\n' || rev.back() == ' ')) rev.pop_back();
  return rev;
}

CommandResult ControlPlane::Kubectl(const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> argv = {"kubectl", "--kubeconfig", kubeconfig()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, input);
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

std::string ControlPlane::AdminToken() const {
  std::string token;
  std::ifstream(dir_ + "/admin.token") >> token;
  return token;
}

std::string ControlPlane::KubeconfigOf(const std::string& name, const std::string& user_lines) const {
  std::string port;
  std::ifstream(dir_ + "/apiserver.port") >> port;
  const std::string path = dir_ + "/kubeconfig-" + name;
  std::ofstream(path) << "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n"
                      << "    server: https://127.0.0.1:" << port << "\n"
                      << "    certificate-authority: " << dir_ << "/certs/apiserver.crt\n"
                      << "users:\n- name: u\n  user:\n" << user_lines
                      << "contexts:\n- name: c\n  context: {cluster: local, user: u}\ncurrent-context: c\n";
  return path;
}

std::string ControlPlane::TokenOf(const std::string& who) const {
  std::string token;
  std::ifstream(dir_ + "/" + who + ".token") >> token;
  return token;
}

std::string ControlPlane::HostIp() const {
  std::string ip;
  std::ifstream(dir_ + "/host-ip") >> ip;
  return ip;
}

QueueApiRegistration::QueueApiRegistration(std::string ns) : ns_(std::move(ns)) {
  host_ = ControlPlane::Get().HostIp();
  EXPECT_FALSE(host_.empty()) << "this machine has no non-loopback IPv4 address (DIR/host-ip) for the APIService's endpoint";
  port_ = FreePort();
  Create();
}

QueueApiRegistration::QueueApiRegistration(std::string ns, std::string host, int port)
    : ns_(std::move(ns)), host_(std::move(host)), port_(port) {
  Create();
}

void QueueApiRegistration::Create() {
  ControlPlane& cp = ControlPlane::Get();
  dir_ = cp.dir() + "/queue-api-" + RandomSuffix();
  const std::string svc = "berth-queue." + ns_ + ".svc";
  CommandResult r = RunCommand(
      {"bash", "-c",
       "set -e; mkdir -p \"$0\"; cd \"$0\"; "
       "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=berth-queue-test-ca 2>/dev/null; "
       "openssl req -newkey rsa:2048 -nodes -keyout tls.key -out tls.csr -subj /CN=$1 2>/dev/null; "
       "printf 'subjectAltName=DNS:%s\\nextendedKeyUsage=serverAuth\\n' \"$1\" > tls.ext; "
       "openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out tls.crt -days 2 -extfile tls.ext 2>/dev/null",
       dir_, svc});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  CommandResult applied = cp.Kubectl({"apply", "-f", "-"}, R"(apiVersion: v1
kind: Service
metadata: {name: berth-queue, namespace: )" + ns_ + R"(}
spec:
  ports: [{name: https, port: 443, protocol: TCP, targetPort: )" + std::to_string(port_) + R"(}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: berth-queue-host
  namespace: )" + ns_ + R"(
  labels: {kubernetes.io/service-name: berth-queue, endpointslice.kubernetes.io/managed-by: berth-tests}
addressType: IPv4
endpoints: [{addresses: [")" + host_ + R"("], conditions: {ready: true}}]
ports: [{name: https, port: )" + std::to_string(port_) + R"(, protocol: TCP}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: berth-queue-reader-test}
rules: [{apiGroups: [queue.berth.dev], resources: [queue, fleets, teams], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: berth-queue-reader-test}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: berth-queue-reader-test}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:authenticated"}]
)");
  EXPECT_EQ(applied.exit_code, 0) << applied.err;
}

QueueApiRegistration::~QueueApiRegistration() {
  ControlPlane::Get().Kubectl({"delete", "apiservice", "v1alpha1.queue.berth.dev", "--ignore-not-found", "--wait=false"});
  ControlPlane::Get().Kubectl(
      {"delete", "clusterrolebinding,clusterrole", "berth-queue-reader-test", "--ignore-not-found", "--wait=false"});
}

std::vector<std::string> QueueApiRegistration::ControllerArgs() const {
  return {"--queue-api-bind-address=" + host_ + ":" + std::to_string(port_), "--queue-api-cert-dir=" + dir_};
}

bool QueueApiRegistration::Register(std::chrono::milliseconds timeout) {
  ControlPlane& cp = ControlPlane::Get();
  cp.Kubectl({"annotate", "--overwrite", "-n", ns_, "endpointslice", "berth-queue-host",
              "berth.dev/touched=" + std::to_string(++touches_)});
  CommandResult ca = RunCommand({"base64", "-w0", dir_ + "/ca.crt"});
  CommandResult applied = cp.Kubectl({"apply", "-f", "-"}, R"(apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.queue.berth.dev}
spec:
  group: queue.berth.dev
  version: v1alpha1
  groupPriorityMinimum: 1000
  versionPriority: 15
  service: {name: berth-queue, namespace: )" + ns_ + R"(, port: 443}
  caBundle: )" + ca.out + "\n");
  EXPECT_EQ(applied.exit_code, 0) << applied.err;
  if (applied.exit_code != 0) return false;
  return Eventually(
      [&] {
        CommandResult a = cp.Kubectl({"get", "apiservice", "v1alpha1.queue.berth.dev", "-o",
                                      "jsonpath={.status.conditions[?(@.type==\"Available\")].status}"});
        return a.out == "True";
      },
      timeout);
}

CommandResult QueueApiRegistration::GetRaw(const std::string& path, const std::vector<std::string>& extra) const {
  std::vector<std::string> args = extra;
  args.insert(args.end(), {"get", "--raw", "/apis/queue.berth.dev/v1alpha1" + path});
  return ControlPlane::Get().Kubectl(args);
}

std::string HttpGet(const std::string& url, int* code, const std::string& bearer) {
  // 30 s: longer than any wait of the controller's own (its /queue waits up to 5 s for the loop to
  // make a fresh view; with curl's old 5 s, a loaded machine's answer came a moment too late and
  // positions_test saw no answer at all).
  std::vector<std::string> argv = {"curl", "-s", "-m", "30", "-w", "\n%{http_code}", url};
  if (!bearer.empty()) argv.insert(argv.end(), {"-H", "Authorization: Bearer " + bearer});
  CommandResult r = RunCommand(argv);
  std::string out = r.out;
  auto nl = out.rfind('\n');
  int status = 0;
  if (nl != std::string::npos) {
    try {
      status = std::stoi(out.substr(nl + 1));
    } catch (...) {
    }
    out = out.substr(0, nl);
  }
  if (code != nullptr) *code = status;
  return status == 0 ? std::string() : out;
}

CommandResult RunPlugin(const std::string& kubeconfig, const std::vector<std::string>& args) {
  const std::string bin = BERTH_CONTROLLER_BIN;
  std::vector<std::string> argv = {"env", "KUBECONFIG=" + kubeconfig, bin.substr(0, bin.rfind("/src/controller/")) + "/src/cli/kubectl-berth"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

std::string YamlDocumentsNamed(const std::string& yaml, const std::vector<std::string>& names) {
  std::string out;
  for (size_t pos = 0; pos < yaml.size();) {
    const size_t next = yaml.find("\n---", pos);
    const std::string doc = yaml.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    pos = next == std::string::npos ? yaml.size() : next + 4;
    for (const auto& n : names) {
      if (doc.find("name: " + n + "\n") != std::string::npos) {
        out += "---\n" + doc + "\n";
        break;
      }
    }
  }
  return out;
}

bool Eventually(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (cond()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

ControllerProcess::ControllerProcess(std::vector<std::string> extra_args, std::string log_name, std::string kubeconfig)
    : args_(std::move(extra_args)), kubeconfig_(std::move(kubeconfig)) {
  log_path_ = ControlPlane::Get().dir() + "/" + log_name + "-" + RandomSuffix() + ".log";
  // Another build's controller (a benchmark's figures before and after a change).
  if (const char* bin = std::getenv("BERTH_CONTROLLER_BIN"); bin != nullptr && *bin != '\0') binary_ = bin;
}

ControllerProcess::~ControllerProcess() {
  if (Running()) Stop();
}

std::unique_ptr<ControllerProcess> ControllerProcess::KubeletSim(std::string log_name) {
  auto p = std::make_unique<ControllerProcess>(std::vector<std::string>{}, std::move(log_name));
  p->binary_ = BERTH_KUBELET_SIM_BIN;
  return p;
}

std::unique_ptr<ControllerProcess> ControllerProcess::LocalDashboard(std::string kubeconfig, int port, std::string log_name) {
  auto p = std::make_unique<ControllerProcess>(std::vector<std::string>{"dashboard", "--port", std::to_string(port)},
                                               std::move(log_name), std::move(kubeconfig));
  std::string bin = BERTH_CONTROLLER_BIN;
  p->binary_ = bin.substr(0, bin.rfind("/src/controller/")) + "/src/cli/kubectl-berth";
  return p;
}

bool ControllerProcess::StartServing() {
  Start();
  return Eventually([&] { return Log().find("Serving the berth dashboard at ") != std::string::npos; });
}

void ControllerProcess::Start() {
  std::vector<std::string> argv = {binary_, "--kubeconfig",
                                   kubeconfig_.empty() ? ControlPlane::Get().kubeconfig() : kubeconfig_};
  if (binary_ == BERTH_CONTROLLER_BIN) {
    argv.insert(argv.end(), {"--metrics-bind-address=0", "--health-probe-bind-address=0", "--log-level=debug"});
  }
  argv.insert(argv.end(), args_.begin(), args_.end());
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  int rc = posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ASSERT_EQ(rc, 0) << "cannot start " << argv[0];
}

int ControllerProcess::Stop() {
  if (pid_ <= 0) return exit_;
  kill(pid_, SIGCONT);
  kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 600; ++i) {  // 30 s
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return -SIGKILL;
}

void ControllerProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

void ControllerProcess::Pause() {
  if (pid_ > 0) kill(pid_, SIGSTOP);
}
void ControllerProcess::Resume() {
  if (pid_ > 0) kill(pid_, SIGCONT);
}

bool ControllerProcess::Running() const {
  if (pid_ <= 0) return false;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  if (r == pid_) {
    exit_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    pid_ = -1;
  }
  return false;
}

std::string ControllerProcess::Log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void IntegrationTest::SetUp() {
  // Through the client, not kubectl: a kubectl process per test costs about a second on a busy
  // machine, and the suite makes hundreds of namespaces.
  ns_ = "t-" + RandomSuffix();
  auto created = client()->Create(k8s::resources::kNamespaces.Path(),
                                  R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + ns_ + R"("}})");
  ASSERT_TRUE(created.ok()) << "creating namespace " << ns_ << ": " << created.status().ToString();
}

void IntegrationTest::TearDown() {
  // Not waited for: nothing else uses the name.
  (void)client()->Delete(k8s::resources::kNamespaces.Path("", ns_));
}

CommandResult IntegrationTest::Kubectl(std::vector<std::string> args, const std::string& input) {
  args.insert(args.begin(), {"-n", ns_});
  return cp().Kubectl(args, input);
}

void IntegrationTest::Apply(const std::string& yaml) {
  CommandResult r = Kubectl({"apply", "-f", "-"}, yaml);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
}

k8s::json::Document IntegrationTest::GetRun(const std::string& name) {
  auto r = client()->Get(k8s::resources::kRuns.Path(ns_, name));
  if (!r.ok()) return k8s::json::Document();
  return std::move(r).value();
}

}  // namespace berth::testing

namespace {
class ControlPlaneEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { berth::testing::ControlPlane::Get().Start(); }
  void TearDown() override { berth::testing::ControlPlane::Get().Stop(); }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new ControlPlaneEnvironment);
}  // namespace
