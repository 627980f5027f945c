#pragma once
// The manager: owns the informers, the workqueue and the reconcile workers, and shuts them down
// in order (stop watches, drain workers).

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "controller/options.h"
#include "controller/workqueue.h"
#include "k8s/client.h"
#include "k8s/clock.h"
#include "reconcilers/run_reconciler.h"

namespace berth::controller {

class Manager {
 public:
  Manager(Options options, k8s::ClientPtr client, const k8s::Clock& clock);
  ~Manager();

  // Starts the informers, waits until their caches are synced (or `stop` is set), then starts
  // the workers. Returns an error if the caches never synced.
  k8s::Status Start(const std::atomic<bool>& stop);
  // Stops the watches, lets the workers finish the key in hand, and joins every thread.
  void Stop();

  bool CachesSynced() const;

 private:
  void Worker();

  Options options_;
  k8s::ClientPtr client_;
  const k8s::Clock& clock_;
  std::unique_ptr<reconcilers::RunInformer> runs_;
  std::unique_ptr<reconcilers::RunReconciler> run_reconciler_;
  std::unique_ptr<WorkQueue> queue_;
  std::vector<std::thread> workers_;
  bool stopped_ = false;
};

}  // namespace berth::controller
