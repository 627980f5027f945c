#pragma once
// Reconciles one Run: makes its status say what berth knows about it.

#include <memory>
#include <string>

#include "k8s/client.h"
#include "k8s/clock.h"
#include "k8s/informer.h"
#include "reconcilers/run_types.h"

namespace berth::reconcilers {

using RunInformer = k8s::Informer<Run>;

class RunReconciler {
 public:
  RunReconciler(k8s::ClientPtr client, const RunInformer& runs, const k8s::Clock& clock);

  // Level-based: reads the Run from the cache (never from the event) and writes its status when
  // it differs. An error means "try again later".
  k8s::Status Reconcile(const std::string& key);

 private:
  k8s::ClientPtr client_;
  const RunInformer& runs_;
  const k8s::Clock& clock_;
};

// The Run informer over all namespaces.
std::unique_ptr<RunInformer> NewRunInformer(k8s::ClientPtr client);

}  // namespace berth::reconcilers
