// Store and Informer::Mirror (k8s/store.h, k8s/informer.h): a mirror brings its store to the
// informer's content, applying only what changed since its last update, with the informer's own
// pointers and the same indexes.

#include "k8s/store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fakes/fake_api.h"
#include "k8s/client.h"
#include "k8s/informer.h"
#include "k8s/objects.h"

namespace berth::testing {
namespace {

using k8s::resources::kPods;

class StoreTest : public ::testing::Test {
 protected:
  StoreTest()
      : api_(std::make_shared<FakeApi>(clock_)),
        client_(std::make_shared<k8s::Client>(k8s::ClientConfig{}, api_)),
        pods_(client_, kPods.Path(), k8s::DecodePod,
              [](const k8s::Pod& p) { return k8s::ObjectKey(p.meta.ns, p.meta.name); }, "pods") {
    client_->SetMaxRetries(0);
    pods_.AddIndex("node", [](const k8s::Pod& p) {
      return p.node_name.empty() ? std::vector<std::string>{} : std::vector<std::string>{p.node_name};
    });
    pods_.AddIndex("run", [](const k8s::Pod& p) { return std::vector<std::string>{p.meta.Label("berth.dev/run")}; });
  }
  ~StoreTest() override { pods_.Stop(); }

  void CreatePod(const std::string& name, const std::string& run = "r") {
    auto r = client_->Create(kPods.Path("ns"), R"({"metadata":{"name":")" + name + R"(","labels":{"berth.dev/run":")" + run +
                                                    R"("}},"spec":{"containers":[{"name":"main","image":"busybox"}]}})");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  void Idle() { api_->WaitWatchesIdle(1); }
  // Pods `names` (of run "r") in the API, then the informer started and synced.
  void StartWith(const std::vector<std::string>& names) {
    for (const auto& n : names) CreatePod(n);
    pods_.Start();
    Idle();
  }

  static std::vector<std::string> Names(const std::vector<std::shared_ptr<const k8s::Pod>>& pods) {
    std::vector<std::string> out;
    for (const auto& p : pods) out.push_back(p->meta.name);
    std::sort(out.begin(), out.end());
    return out;
  }
  // The store answers as the informer does, with the informer's pointers (nothing copied).
  void ExpectSame(const k8s::Store<k8s::Pod>& store) {
    EXPECT_EQ(store.Size(), pods_.Size());
    EXPECT_EQ(store.Version(), pods_.Version());
    for (const auto& p : pods_.List()) {
      const std::string key = k8s::ObjectKey(p->meta.ns, p->meta.name);
      EXPECT_EQ(store.Get(key).get(), p.get()) << key;
    }
    EXPECT_EQ(Names(store.List()), Names(pods_.List()));
    for (const char* node : {"n1", "n2", "n3"}) {
      EXPECT_EQ(Names(store.ByIndex("node", node)), Names(pods_.ByIndex("node", node))) << node;
    }
    for (const char* run : {"r", "s"}) EXPECT_EQ(Names(store.ByIndex("run", run)), Names(pods_.ByIndex("run", run))) << run;
    EXPECT_TRUE(store.ByIndex("no-such-index", "x").empty());
  }

  k8s::FakeClock clock_;
  std::shared_ptr<FakeApi> api_;
  k8s::ClientPtr client_;
  k8s::Informer<k8s::Pod> pods_;
};

TEST_F(StoreTest, AMirrorSeesAddsUpdatesAndDeletesWithTheInformersIndexes) {
  CreatePod("b", "s");
  StartWith({"a"});
  auto mirror = pods_.NewMirror();
  k8s::Store<k8s::Pod> store;
  mirror.Update(store);
  EXPECT_EQ(store.LastApplied(), 2u) << "the first update takes everything";
  ExpectSame(store);

  CreatePod("c");
  ASSERT_TRUE(client_->Bind("ns", "a", "n1").ok());
  ASSERT_TRUE(client_->Bind("ns", "b", "n2").ok());
  Idle();
  EXPECT_EQ(store.Size(), 2u) << "a store does not move between updates";
  EXPECT_TRUE(store.ByIndex("node", "n1").empty());
  mirror.Update(store);
  EXPECT_EQ(store.LastApplied(), 3u) << "only the changed keys";
  ExpectSame(store);
  ASSERT_EQ(Names(store.ByIndex("node", "n1")), std::vector<std::string>{"a"});

  ASSERT_TRUE(client_->Delete(kPods.Path("ns", "c")).ok());  // not bound: gone at once
  Idle();
  mirror.Update(store);
  EXPECT_EQ(store.LastApplied(), 1u);
  ExpectSame(store);
  EXPECT_EQ(store.Get("ns/c"), nullptr);
  EXPECT_EQ(Names(store.ByIndex("run", "r")), std::vector<std::string>{"a"}) << "a deleted object leaves the indexes";
}

TEST_F(StoreTest, NothingIsAppliedWhenNothingChanged) {
  StartWith({"a", "b"});
  auto mirror = pods_.NewMirror();
  k8s::Store<k8s::Pod> store;
  mirror.Update(store);
  const auto a = store.Get("ns/a");
  const uint64_t version = store.Version();
  mirror.Update(store);
  EXPECT_EQ(store.LastApplied(), 0u);
  EXPECT_EQ(store.Version(), version);
  EXPECT_EQ(store.Get("ns/a").get(), a.get()) << "the same object, not a copy";
  ExpectSame(store);
}

TEST_F(StoreTest, TwoMirrorsAreIndependent) {
  StartWith({"a"});
  auto first = pods_.NewMirror();
  auto second = pods_.NewMirror();
  k8s::Store<k8s::Pod> one, two;
  first.Update(one);
  second.Update(two);
  CreatePod("b");
  Idle();
  first.Update(one);
  EXPECT_EQ(one.LastApplied(), 1u);
  EXPECT_EQ(one.Size(), 2u);
  EXPECT_EQ(two.Size(), 1u) << "the second store has not been updated";
  ASSERT_TRUE(client_->Bind("ns", "a", "n3").ok());
  Idle();
  second.Update(two);
  EXPECT_EQ(two.LastApplied(), 2u) << "what changed since the second mirror's own last update";
  ExpectSame(two);
  first.Update(one);
  EXPECT_EQ(one.LastApplied(), 1u);
  ExpectSame(one);
  {
    auto gone = pods_.NewMirror();  // a mirror dropped unregisters itself
  }
  CreatePod("c");
  Idle();
  first.Update(one);
  ExpectSame(one);
}

// A relist (after a 410 Gone) replaces the cache with objects decoded anew: each mirror takes everything anew.
TEST_F(StoreTest, AMirrorFollowsARelist) {
  StartWith({"a", "b", "d"});
  auto mirror = pods_.NewMirror();
  k8s::Store<k8s::Pod> store;
  mirror.Update(store);
  ASSERT_TRUE(client_->Delete(kPods.Path("ns", "a")).ok());
  Idle();
  const auto b = pods_.Get("ns/b");
  // A change the Pod watch does not see (a Node), then the history forgotten: the Pod watch's
  // resourceVersion is now too old, and once it is closed the informer lists anew (410 Gone).
  ASSERT_TRUE(client_->Create(k8s::resources::kNodes.Path(), R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n9"}})").ok());
  api_->Compact();
  api_->CloseWatches();
  for (int i = 0; i < 10000 && pods_.Get("ns/b") == b; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_NE(pods_.Get("ns/b"), b) << "relisted: every object decoded anew";
  Idle();
  mirror.Update(store);
  EXPECT_EQ(store.LastApplied(), 2u) << "everything anew, not only the key deleted before";
  ExpectSame(store);
  EXPECT_EQ(store.Get("ns/a"), nullptr);
}

// A store filled by hand (Store::Fill: a test's snapshot, no informer): the objects given under
// their keys (the pointers given), indexed by the functions given, at the version given; a second
// fill replaces all of it.
TEST_F(StoreTest, AStoreFilledByHandIsKeyedIndexedAndVersionedAsGiven) {
  auto pod = [](const std::string& name, const std::string& node) {
    auto p = std::make_shared<k8s::Pod>();
    p->meta.ns = "ns";
    p->meta.name = name;
    p->node_name = node;
    return std::shared_ptr<const k8s::Pod>(std::move(p));
  };
  const k8s::Store<k8s::Pod>::KeyFn key = [](const k8s::Pod& p) { return k8s::ObjectKey(p.meta.ns, p.meta.name); };
  const k8s::Store<k8s::Pod>::NamedIndexFns by_node = {
      {"node", [](const k8s::Pod& p) { return std::vector<std::string>{p.node_name}; }}};
  k8s::Store<k8s::Pod> store;
  const auto a = pod("a", "n0");
  store.Fill({a, pod("b", "n1"), pod("c", "n0")}, key, by_node, 7);
  EXPECT_EQ(store.Get("ns/a"), a);
  EXPECT_EQ(store.Size(), 3u);
  EXPECT_EQ(Names(store.ByIndex("node", "n0")), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(Names(store.List()), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(store.Version(), 7u);
  EXPECT_EQ(store.LastApplied(), 3u);
  store.Fill({pod("d", "n0")}, key, by_node, 8);
  EXPECT_EQ(store.Get("ns/a"), nullptr);
  EXPECT_EQ(Names(store.ByIndex("node", "n0")), (std::vector<std::string>{"d"}));
  EXPECT_TRUE(store.ByIndex("node", "n1").empty());
  EXPECT_EQ(store.Version(), 8u);
}

}  // namespace
}  // namespace berth::testing
