// berth-controller: queues Runs by priority and places them onto Fleets.

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <malloc.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include "controller/leader_election.h"
#include "controller/logging.h"
#include "controller/manager.h"
#include "controller/options.h"
#include "k8s/config.h"

namespace {

using namespace berth;

// Signals are taken by sigwait (WaitForSignal), never by worker threads.
sigset_t BlockShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A client that hangs up while OpenSSL writes (e.g. a TLS 1.3 session ticket right after the
  // handshake) must cost an EPIPE, not the process (found by tests/integration/hostile_test.cc).
  std::signal(SIGPIPE, SIG_IGN);
  return signals;
}

// The Kubernetes config, with berth's User-Agent (naming `identity`) and request timeout.
k8s::Result<k8s::ClientConfig> LoadConfig(const controller::Options& opts, const std::string& identity) {
  auto config = k8s::LoadDefaultConfig(opts.kubeconfig, opts.context, /*allow_in_cluster=*/true);
  if (!config.ok()) return config;
  spdlog::info("berth-controller starting: server={} aging-interval={}ms", config->server, opts.aging_interval.count());
  // One identity per process: it holds the Lease and is in the User-Agent of every request, so
  // the API server's audit log tells two controller processes apart.
  config->user_agent = "berth-controller/" + std::string(PROJECT_VERSION_STRING) + " (" + identity + ")";
  config->request_timeout = opts.request_timeout;
  return config;
}

// Runs the manager until SIGINT or SIGTERM, then shuts it down and leaves the process.
[[noreturn]] void Serve(const controller::Options& opts, const k8s::ClientConfig& config, const std::string& identity,
                        sigset_t signals) {
  k8s::SystemClock clock;
  auto client = std::make_shared<k8s::Client>(config);
  controller::Manager manager(opts, client, clock, identity);

  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("received signal {}, shutting down", sig);
    manager.RequestStop();
  });

  k8s::Status ran = manager.Run();
  if (!ran.ok()) {
    spdlog::error("berth-controller cannot run: {}", ran.message());
    std::_Exit(1);
  }
  signal_thread.join();
  // Every thread of berth's ends here: the engine's queued writes are done, Events flushed, the
  // Lease released, the servers closed.
  manager.Shutdown();
  spdlog::info("berth-controller stopped");
  spdlog::default_logger()->flush();
  std::fflush(nullptr);
  // Leave without static destructors and atexit handlers: cpprestsdk's shared thread pool and its
  // connection pools outlive main and can free TLS connections after OpenSSL's own exit cleanup
  // has run (microsoft/cpprestsdk#1482). That crashed a clean shutdown once, after an API server
  // restart (SIGSEGV instead of exit 0 in foundation_test under load). Nothing is left to finish.
  std::_Exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  // glibc's malloc raises its mmap threshold (up to 32 MiB) each time a block it mapped is freed,
  // so after the first large list page or object the buffers of large objects come from the
  // per-thread arenas, and what they free there stays in the process: a restart that relisted 60
  // Runs of 256 KiB kept 64 MB more than a fresh controller, though the caches held 1 MB of them
  // (tests/integration/memory_test.cc, issue 29 item 6). A fixed threshold (which also fixes the
  // trim threshold) maps every block over 128 KiB on its own and gives it back when freed.
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  std::vector<std::string> args(argv + 1, argv + argc);
  auto opts = controller::ParseOptions(args);
  if (!opts.ok()) {
    std::cerr << "berth-controller: " << opts.status().message() << "\n";
    return 2;
  }
  if (opts->help) {
    std::cout << controller::Usage();
    return 0;
  }
  controller::SetUpLogging(opts->log_format, opts->log_level);
  const sigset_t signals = BlockShutdownSignals();
  // One identity per process (the Lease's holder, in every request's User-Agent).
  const std::string identity = controller::DefaultIdentity();
  auto config = LoadConfig(opts.value(), identity);
  if (!config.ok()) {
    spdlog::error("cannot load Kubernetes config: {}", config.status().message());
    return 1;
  }
  Serve(opts.value(), config.value(), identity, signals);
}
