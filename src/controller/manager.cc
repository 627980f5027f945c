#include "controller/manager.h"

#include <thread>

#include <spdlog/spdlog.h>

namespace berth::controller {

Manager::Manager(Options options, k8s::ClientPtr client, const k8s::Clock& clock)
    : options_(std::move(options)), client_(std::move(client)) {
  reconcilers::EngineOptions eo;
  eo.aging_interval = options_.aging_interval;
  eo.writers = std::max(4, options_.workers * 4);
  engine_ = std::make_unique<reconcilers::RunController>(client_, clock, eo);
}

Manager::~Manager() { Stop(); }

bool Manager::CachesSynced() const { return engine_->HasSynced(); }

k8s::Status Manager::Start(const std::atomic<bool>& stop) {
  engine_->Start();
  while (!CachesSynced()) {
    if (stop) return k8s::Status::Error("stopped before the caches synced");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return k8s::Status();
}

void Manager::Stop() {
  if (stopped_) return;
  stopped_ = true;
  engine_->Stop();
}

}  // namespace berth::controller
