// k8s::Cancellation (k8s/transport.h): a hook removed is never run afterwards. A watch's hook
// refers to the watch's own stack; when Cancel ran it just after the watch had returned, a
// shutdown crashed (SIGSEGV in foundation_test's ReconnectsAfterApiServerRestart).

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

#include "k8s/transport.h"

namespace berth::k8s {
namespace {

TEST(Cancellation, HooksRunOnCancelOrAtOnceWhenAlreadyCancelled) {
  Cancellation c;
  int ran = 0;
  const int id = c.OnCancel([&] { ++ran; });
  EXPECT_GE(id, 0);
  EXPECT_FALSE(c.cancelled());
  c.Cancel();
  EXPECT_TRUE(c.cancelled());
  EXPECT_EQ(ran, 1);
  c.Cancel();
  EXPECT_EQ(ran, 1) << "once";
  EXPECT_EQ(c.OnCancel([&] { ++ran; }), -1);
  EXPECT_EQ(ran, 2) << "already cancelled: at once";
  c.Remove(id);  // taken and run by the Cancel: nothing left to remove
}

TEST(Cancellation, ARemovedHookIsNeverRun) {
  Cancellation c;
  int ran = 0;
  c.Remove(c.OnCancel([&] { ++ran; }));
  c.Cancel();
  EXPECT_EQ(ran, 0);
}

// The watch's pattern: a hook that writes to state the caller frees as soon as Remove returns,
// with Cancel on another thread at the same moment. Remove must not return while the hook runs:
// the hook must always have finished (or never start) before the caller goes on.
TEST(Cancellation, RemoveWaitsForAHookACancelIsRunning) {
  for (int i = 0; i < 2000; ++i) {
    Cancellation c;
    auto state = std::make_unique<std::atomic<int>>(0);  // 0 untouched, 1 hook running, 2 hook done
    std::atomic<bool> freed{false};
    std::atomic<bool> touched_after_free{false};
    const int id = c.OnCancel([&, s = state.get()] {
      s->store(1);
      std::this_thread::yield();  // widen the window in which the caller might go on
      if (freed.load()) touched_after_free = true;
      s->store(2);
    });
    std::thread canceller([&] { c.Cancel(); });
    while (!c.cancelled()) std::this_thread::yield();  // the watch sees the cancellation and returns
    c.Remove(id);
    const int seen = state->load();
    EXPECT_NE(seen, 1) << "Remove returned while the hook was running (iteration " << i << ")";
    freed = true;
    state.reset();
    canceller.join();
    ASSERT_FALSE(touched_after_free.load()) << "the hook ran after Remove returned (iteration " << i << ")";
  }
}

}  // namespace
}  // namespace berth::k8s
