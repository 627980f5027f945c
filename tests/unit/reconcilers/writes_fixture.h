#pragma once
// The engine components' tests that write through RunWrites: ApiFixture with the engine's options,
// its caches (not started: a test starts them when it needs what they hold) and the pass' snapshot
// of them (Snap), the admissions and the run writes, each write done at once on the test's thread and its key recorded in keys_.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "reconcilers/state/admissions.h"
#include "reconcilers/state/engine_caches.h"
#include "reconcilers/engine/engine_options.h"
#include "reconcilers/writers/run_writes.h"
#include "unit/reconcilers/api_fixture.h"

namespace berth::reconcilers {

class WritesFixture : public ApiFixture {
 protected:
  WritesFixture()
      : caches_(client_),
        admissions_(client_, clock_, events_, [](reconcilers::PassWrite w) { return w.write(); }),
        writes_(
            client_, clock_, events_, admissions_, options_,
            [this](reconcilers::PassWrite w) {
              keys_.push_back(w.key);
              return w.write();  // a writer thread's work, done at once
            },
            [this](const reconcilers::Run& run) { return caches_.live().PodsOf(run); }) {}
  ~WritesFixture() override { caches_.Stop(); }

  EngineOptions options_;
  // The pass' snapshot of the caches now (what the components under test read).
  void Snap() { caches_.UpdateSnapshot(snapshot_); }

  EngineCaches caches_;
  PassSnapshot snapshot_;
  Admissions admissions_;
  RunWrites writes_;
  std::vector<std::string> keys_;  // the key of each write, in order
};

}  // namespace berth::reconcilers
