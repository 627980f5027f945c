// PassWrites (issue 46): the pass' writes as data answer what KeyedWriter::Dispatch answered when
// the pass dispatched as it decided, and carrying the list out queues the same writes in the same
// order.
#include "reconcilers/engine/pass_writes.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "k8s/clock.h"
#include "reconcilers/writers/keyed_writer.h"

namespace berth::reconcilers {
namespace {

KeyedWriter::Options NoWorkers() { return KeyedWriter::Options{1, 1, BackoffPolicy{std::chrono::milliseconds(100), std::chrono::milliseconds(1000)}}; }

PassWrite Write(const std::string& key, bool background, std::function<bool()> fn = [] { return true; }) {
  return PassWrite{.key = key, .kind = WriteKind::kRunStatus, .target = key, .body = [key] { return "{" + key + "}"; },
                   .write = std::move(fn), .background = background};
}

TEST(PassWritesTest, RefusesWhatTheWriterHadBusyOrBackingOffAndASecondWriteForAKey) {
  PassWrites::Gate gate;
  gate.busy = {"ns/busy", "ns/refresh"};
  gate.replaceable = {"ns/refresh"};
  gate.backing_off = {"ns/failed"};
  gate.background_queued = 1;
  PassWrites w(gate);
  EXPECT_FALSE(w.Add(Write("ns/busy", false))) << "a write queued or in flight when the pass began";
  EXPECT_FALSE(w.Add(Write("ns/failed", false))) << "backing off";
  EXPECT_FALSE(w.Add(Write("ns/refresh", true))) << "a refresh does not replace a refresh";
  EXPECT_TRUE(w.Add(Write("ns/refresh", false))) << "a decision replaces a waiting refresh";
  EXPECT_EQ(w.BackgroundQueued(), 0u) << "the replaced refresh is no longer queued";
  EXPECT_TRUE(w.Add(Write("ns/a", true)));
  EXPECT_EQ(w.BackgroundQueued(), 1u);
  EXPECT_FALSE(w.Add(Write("ns/a", true)));
  EXPECT_TRUE(w.Busy("ns/a"));
  EXPECT_TRUE(w.Add(Write("ns/b", false)));
  EXPECT_FALSE(w.Add(Write("ns/b", false))) << "one write per key and pass";
  EXPECT_TRUE(w.Add(Write("ns/a", false))) << "this pass' refresh replaced by its decision";
  EXPECT_EQ(w.BackgroundQueued(), 0u);
  std::vector<std::string> order;
  for (const PassWrite* p : w.List()) order.push_back(p->key + (p->background ? "(bg)" : ""));
  EXPECT_EQ(order, (std::vector<std::string>{"ns/refresh", "ns/b", "ns/a"}))
      << "the replaced refresh leaves the list; its decision comes where it was decided";
  EXPECT_FALSE(w.Busy("ns/c"));
}

TEST(PassWritesTest, NothingOnceStopping) {
  PassWrites w(PassWrites::Gate{.busy = {}, .backing_off = {}, .replaceable = {}, .background_queued = 0, .stopping = true});
  EXPECT_FALSE(w.Add(Write("ns/a", false)));
  EXPECT_TRUE(w.List().empty());
}

TEST(PassWritesTest, CollectingIsTheCallersThreadsOnly) {
  PassWrites w;
  EXPECT_EQ(PassWrites::Current(), nullptr);
  {
    PassWrites::Collecting c(w);
    EXPECT_EQ(PassWrites::Current(), &w);
    PassWrites* other = &w;
    std::thread([&] { other = PassWrites::Current(); }).join();
    EXPECT_EQ(other, nullptr) << "a writer thread dispatches at once";
  }
  EXPECT_EQ(PassWrites::Current(), nullptr);
}

// Random histories: two writers with the same past (writes queued, refreshes waiting, failures
// backing off); a pass dispatches into one as it decides (the engine before issue 46) and into a
// PassWrites gated by the other, whose list is then carried out into it. Every answer is the same,
// and the writers then run the same writes in the same order.
TEST(PassWritesTest, AnswersAndOrderAreTheWritersOnRandomPasses) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    k8s::FakeClock clock;
    KeyedWriter direct(clock, NoWorkers(), {});
    KeyedWriter listed(clock, NoWorkers(), {});
    auto ran_direct = std::make_shared<std::vector<int>>();
    auto ran_listed = std::make_shared<std::vector<int>>();
    const auto key = [&] { return "ns/r" + std::to_string(rng() % 8); };
    // The past: writes queued (some failing, run once so that they back off), refreshes waiting.
    for (int i = 0; i < 10; ++i) {
      const std::string k = key();
      const bool bg = rng() % 2 == 0, fails = rng() % 3 == 0;
      direct.Dispatch(k, [fails] { return !fails; }, bg);
      listed.Dispatch(k, [fails] { return !fails; }, bg);
      if (rng() % 3 == 0) {
        direct.RunQueued();
        listed.RunQueued();
      }
    }
    PassWrites pass(listed.TakeGate());
    ASSERT_EQ(pass.BackgroundQueued(), direct.BackgroundQueued()) << "seed " << seed;
    for (int id = 0; id < 20; ++id) {
      const std::string k = key();
      const bool bg = rng() % 2 == 0;
      const bool want = direct.Dispatch(k, [ran_direct, id] { ran_direct->push_back(id); return true; }, bg);
      const bool got = pass.Add(Write(k, bg, [ran_listed, id] { ran_listed->push_back(id); return true; }));
      ASSERT_EQ(got, want) << "seed " << seed << " write " << id << " " << k << (bg ? " (background)" : "");
      ASSERT_EQ(pass.BackgroundQueued(), direct.BackgroundQueued()) << "seed " << seed << " write " << id;
      ASSERT_EQ(pass.Busy(k), direct.Busy(k)) << "seed " << seed << " write " << id;
    }
    for (PassWrite& w : pass.Take()) ASSERT_TRUE(listed.Dispatch(w.key, std::move(w.write), w.background)) << "seed " << seed;
    direct.RunQueued();
    listed.RunQueued();
    EXPECT_EQ(*ran_listed, *ran_direct) << "seed " << seed;
  }
}

}  // namespace
}  // namespace berth::reconcilers
