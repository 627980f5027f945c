#include "controller/manager.h"

#include <spdlog/spdlog.h>

namespace berth::controller {

Manager::Manager(Options options, k8s::ClientPtr client, const k8s::Clock& clock)
    : options_(std::move(options)), client_(std::move(client)), clock_(clock) {
  queue_ = std::make_unique<WorkQueue>(clock_);
  runs_ = reconcilers::NewRunInformer(client_);
  runs_->AddHandler([this](const std::string& key, const auto&, const auto&) { queue_->Add(key); });
  run_reconciler_ = std::make_unique<reconcilers::RunReconciler>(client_, *runs_, clock_);
}

Manager::~Manager() { Stop(); }

bool Manager::CachesSynced() const { return runs_->HasSynced(); }

k8s::Status Manager::Start(const std::atomic<bool>& stop) {
  runs_->Start();
  while (!CachesSynced()) {
    if (stop) return k8s::Status::Error("stopped before the caches synced");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  spdlog::info("caches synced: {} runs", runs_->Size());
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { Worker(); });
  return k8s::Status();
}

void Manager::Stop() {
  if (stopped_) return;
  stopped_ = true;
  runs_->Stop();
  queue_->ShutDownWithDrain();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void Manager::Worker() {
  while (auto key = queue_->Get()) {
    k8s::Status s = run_reconciler_->Reconcile(*key);
    if (s.ok()) {
      queue_->Forget(*key);
    } else {
      spdlog::warn("reconcile run {} failed: {} (retry {})", *key, s.ToString(), queue_->NumRequeues(*key) + 1);
      queue_->AddRateLimited(*key);
    }
    queue_->Done(*key);
  }
}

}  // namespace berth::controller
