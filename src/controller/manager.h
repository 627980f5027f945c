#pragma once
// The manager: owns the engine (informers, scheduling loop, writers) and shuts it down in order.

#include <atomic>
#include <memory>

#include "controller/options.h"
#include "k8s/client.h"
#include "k8s/clock.h"
#include "reconcilers/run_controller.h"

namespace berth::controller {

class Manager {
 public:
  Manager(Options options, k8s::ClientPtr client, const k8s::Clock& clock);
  ~Manager();

  // Starts watching and waits until the caches are synced (or `stop` is set).
  k8s::Status Start(const std::atomic<bool>& stop);
  // Stops the loop, lets writes in flight finish, stops the watches.
  void Stop();

  bool CachesSynced() const;
  reconcilers::RunController& engine() { return *engine_; }

 private:
  Options options_;
  k8s::ClientPtr client_;
  std::unique_ptr<reconcilers::RunController> engine_;
  bool stopped_ = false;
};

}  // namespace berth::controller
