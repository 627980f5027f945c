// The in-memory API of tests/fakes (fake_api.h), through berth's own client and informer: the
// API server behaviours the in-process engine tests rely on.

#include "fakes/fake_api.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>

#include "k8s/client.h"
#include "k8s/informer.h"
#include "k8s/objects.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kNodes;
using k8s::resources::kPods;
using k8s::resources::kRuns;

class FakeApiTest : public ::testing::Test {
 protected:
  FakeApiTest() : api_(std::make_shared<FakeApi>(clock_)), client_(std::make_shared<k8s::Client>(k8s::ClientConfig{}, api_)) {
    client_->SetMaxRetries(0);
  }

  std::string CreateRun(const std::string& name, const std::string& extra_meta = {}) {
    auto r = client_->Create(kRuns.Path("ns"), R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":")" +
                                                    name + "\"" + extra_meta + R"(},"spec":{"priority":50},"status":{"phase":"Running"}})");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? json::GetString(json::Find(*r, {"metadata", "resourceVersion"})) : "";
  }
  std::string CreatePod(const std::string& name, const std::string& run_label = "r") {
    auto r = client_->Create(kPods.Path("ns"), R"({"metadata":{"name":")" + name + R"(","labels":{"berth.dev/run":")" +
                                                    run_label + R"("}},"spec":{"containers":[{"name":"main","image":"busybox"}]}})");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? json::GetString(json::Find(*r, {"metadata", "uid"})) : "";
  }

  k8s::FakeClock clock_;
  std::shared_ptr<FakeApi> api_;
  k8s::ClientPtr client_;
};

TEST_F(FakeApiTest, CreateSetsMetadataDropsCustomResourceStatusAndRefusesDuplicates) {
  CreateRun("a");
  auto got = client_->Get(kRuns.Path("ns", "a"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(json::GetString(json::Find(*got, {"metadata", "resourceVersion"})), "1");
  EXPECT_EQ(json::GetInt(*json::Find(*got, {"metadata"}), "generation"), 1);
  EXPECT_FALSE(json::GetString(json::Find(*got, {"metadata", "uid"})).empty());
  EXPECT_EQ(json::GetString(json::Find(*got, {"metadata", "creationTimestamp"})), "2023-11-14T22:13:20Z");
  EXPECT_EQ(json::Find(*got, {"status"}), nullptr);  // the status subresource is not written on create
  auto again = client_->Create(kRuns.Path("ns"), R"({"metadata":{"name":"a"},"spec":{}})");
  EXPECT_TRUE(again.status().IsAlreadyExists()) << again.status().ToString();
  EXPECT_EQ(again.status().message(), R"(runs.berth.dev "a" already exists)");
  auto missing = client_->Get(kRuns.Path("ns", "b"));
  EXPECT_TRUE(missing.status().IsNotFound());
  EXPECT_EQ(missing.status().message(), R"(runs.berth.dev "b" not found)");
  auto generated = client_->Create("/api/v1/namespaces/ns/events", R"({"metadata":{"generateName":"a."},"reason":"X"})");
  ASSERT_TRUE(generated.ok());
  EXPECT_EQ(json::GetString(json::Find(*generated, {"metadata", "name"})).rfind("a.", 0), 0u);
  CreatePod("p");
  auto pod = client_->Get(kPods.Path("ns", "p"));
  EXPECT_EQ(json::GetString(json::Find(*pod, {"status", "phase"})), "Pending");
}

TEST_F(FakeApiTest, ResourceVersionPreconditionsAndStatusSubresource) {
  std::string rv = CreateRun("a");
  // A stale resourceVersion in a merge patch: 409 Conflict as the API server words it.
  auto stale = client_->MergePatch(kRuns.Path("ns", "a", "status"), R"({"metadata":{"resourceVersion":"999"},"status":{"phase":"Scheduled"}})");
  EXPECT_TRUE(stale.status().IsConflict()) << stale.status().ToString();
  EXPECT_EQ(stale.status().message(),
            R"(Operation cannot be fulfilled on runs.berth.dev "a": the object has been modified; please apply your changes to the latest version and try again)");
  // A status write changes only the status, and not the generation.
  auto st = client_->MergePatch(kRuns.Path("ns", "a", "status"),
                                R"({"metadata":{"resourceVersion":")" + rv + R"("},"spec":{"priority":99},"status":{"phase":"Scheduled"}})");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(json::GetString(json::Find(*st, {"status", "phase"})), "Scheduled");
  EXPECT_EQ(json::GetInt(*json::Find(*st, {"spec"}), "priority"), 50);
  EXPECT_EQ(json::GetInt(*json::Find(*st, {"metadata"}), "generation"), 1);
  // A spec write leaves the status alone and bumps the generation.
  auto spec = client_->MergePatch(kRuns.Path("ns", "a"), R"({"spec":{"priority":70},"status":{"phase":"Failed"}})");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(json::GetString(json::Find(*spec, {"status", "phase"})), "Scheduled");
  EXPECT_EQ(json::GetInt(*json::Find(*spec, {"metadata"}), "generation"), 2);
  // A label change is not a spec change; a write that changes nothing takes no resourceVersion.
  auto label = client_->MergePatch(kRuns.Path("ns", "a"), R"({"metadata":{"labels":{"x":"y"}}})");
  ASSERT_TRUE(label.ok());
  EXPECT_EQ(json::GetInt(*json::Find(*label, {"metadata"}), "generation"), 2);
  const uint64_t before = api_->ResourceVersion();
  auto same = client_->MergePatch(kRuns.Path("ns", "a"), R"({"metadata":{"labels":{"x":"y"}}})");
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(api_->ResourceVersion(), before);
  // JSON patch: a failed test op refuses the whole patch.
  auto test = client_->JsonPatch(kRuns.Path("ns", "a"), R"([{"op":"test","path":"/spec/priority","value":1},{"op":"remove","path":"/spec"}])");
  EXPECT_EQ(test.status().code(), 422);
  auto ok = client_->JsonPatch(kRuns.Path("ns", "a"), R"([{"op":"test","path":"/spec/priority","value":70},{"op":"replace","path":"/spec/priority","value":80}])");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(json::GetInt(*json::Find(*ok, {"spec"}), "priority"), 80);
  // Strategic merge patch is not served.
  auto smp = client_->transport()->Send(k8s::HttpRequest{"PATCH", kRuns.Path("ns", "a"), "{}", "application/strategic-merge-patch+json", {}, {}});
  ASSERT_TRUE(smp.ok());
  EXPECT_EQ(smp->status, 415);
}

TEST_F(FakeApiTest, DeletionWithFinalizersPreconditionsAndGracefulPods) {
  CreateRun("a", R"(,"finalizers":["berth.dev/run-cleanup"])");
  k8s::DeleteOptions wrong;
  wrong.precondition_uid = "not-its-uid";
  k8s::Status s = client_->Delete(kRuns.Path("ns", "a"), wrong);
  EXPECT_TRUE(s.IsConflict()) << s.ToString();
  EXPECT_NE(s.message().find("Precondition failed: UID in precondition: not-its-uid"), std::string::npos);
  ASSERT_TRUE(client_->Delete(kRuns.Path("ns", "a")).ok());
  auto got = client_->Get(kRuns.Path("ns", "a"));
  ASSERT_TRUE(got.ok());  // held by its finalizer
  EXPECT_NE(json::Find(*got, {"metadata", "deletionTimestamp"}), nullptr);
  ASSERT_TRUE(client_->MergePatch(kRuns.Path("ns", "a"), R"({"metadata":{"finalizers":null}})").ok());
  EXPECT_TRUE(client_->Get(kRuns.Path("ns", "a")).status().IsNotFound());

  // A Pod on a node waits for its kubelet (a delete with grace period 0); one not bound goes at once.
  std::string uid = CreatePod("bound");
  ASSERT_TRUE(client_->Bind("ns", "bound", "n1").ok());
  k8s::Status twice = client_->Bind("ns", "bound", "n2");
  EXPECT_EQ(twice.code(), 409);
  EXPECT_NE(twice.message().find(R"(is already assigned to node "n1")"), std::string::npos);
  ASSERT_TRUE(client_->Delete(kPods.Path("ns", "bound")).ok());
  ASSERT_TRUE(client_->Get(kPods.Path("ns", "bound")).ok());
  k8s::DeleteOptions now;
  now.grace_period_seconds = 0;
  now.precondition_uid = uid;
  ASSERT_TRUE(client_->Delete(kPods.Path("ns", "bound"), now).ok());
  EXPECT_TRUE(client_->Get(kPods.Path("ns", "bound")).status().IsNotFound());
  CreatePod("loose");
  ASSERT_TRUE(client_->Delete(kPods.Path("ns", "loose")).ok());
  EXPECT_TRUE(client_->Get(kPods.Path("ns", "loose")).status().IsNotFound());
}

TEST_F(FakeApiTest, ListsWithSelectorsAndPages) {
  for (int i = 0; i < 5; ++i) CreatePod("p" + std::to_string(i), i % 2 ? "odd" : "even");
  auto other = client_->Create(kPods.Path("ns"), R"({"metadata":{"name":"other"},"spec":{}})");
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(client_->MergePatch(kPods.Path("ns", "p0", "status"), R"({"status":{"phase":"Succeeded"}})").ok());
  auto names = [&](const k8s::ListOptions& o) {
    std::vector<std::string> out;
    std::string rv;
    k8s::Status s = client_->ListEach(kPods.Path(), o, [&](const json::Value& item) {
      out.push_back(json::GetString(json::Find(item, {"metadata", "name"})));
    }, &rv);
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(rv, std::to_string(api_->ResourceVersion()));
    return out;
  };
  k8s::ListOptions o;
  o.limit = 2;  // three pages
  EXPECT_EQ(names(o), (std::vector<std::string>{"other", "p0", "p1", "p2", "p3", "p4"}));
  o.label_selector = "berth.dev/run";
  EXPECT_EQ(names(o), (std::vector<std::string>{"p0", "p1", "p2", "p3", "p4"}));
  o.label_selector = "!berth.dev/run";
  EXPECT_EQ(names(o), (std::vector<std::string>{"other"}));
  o.label_selector = "berth.dev/run=odd";
  EXPECT_EQ(names(o), (std::vector<std::string>{"p1", "p3"}));
  o.label_selector = "berth.dev/run!=odd,berth.dev/run";
  o.field_selector = "status.phase!=Succeeded,status.phase!=Failed";
  EXPECT_EQ(names(o), (std::vector<std::string>{"p2", "p4"}));
  // A continue token of a compacted list: 410 Expired.
  auto first = client_->transport()->Send(k8s::HttpRequest{"GET", kPods.Path() + "?limit=1", {}, "application/json", {}, {}});
  ASSERT_TRUE(first.ok());
  auto doc = json::Parse(first->body);
  std::string token = json::GetString(json::Find(*doc, {"metadata", "continue"}));
  ASSERT_FALSE(token.empty());
  api_->Compact();
  auto expired = client_->transport()->Send(k8s::HttpRequest{"GET", kPods.Path() + "?limit=1&continue=" + token, {}, "application/json", {}, {}});
  ASSERT_TRUE(expired.ok());
  EXPECT_EQ(expired->status, 410);
}

// Polls `done` for at most `limit` of real time.
template <typename F>
bool Eventually(F done, std::chrono::seconds limit = std::chrono::seconds(10)) {
  for (auto until = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < until;) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

TEST_F(FakeApiTest, InformersFollowWatchesIncludingObjectsLeavingTheirSelector) {
  k8s::Informer<k8s::Pod> live(client_, kPods.Path(), k8s::DecodePod,
                               [](const k8s::Pod& p) { return k8s::ObjectKey(p.meta.ns, p.meta.name); }, "live");
  live.SetFieldSelector("status.phase!=Succeeded,status.phase!=Failed");
  CreatePod("before");
  live.Start();
  ASSERT_TRUE(Eventually([&] { return live.HasSynced() && live.Size() == 1; }));
  CreatePod("after");
  ASSERT_TRUE(Eventually([&] { return live.Size() == 2; }));
  ASSERT_TRUE(client_->Bind("ns", "after", "n1").ok());
  ASSERT_TRUE(Eventually([&] { auto p = live.Get("ns/after"); return p && p->node_name == "n1"; }));
  ASSERT_TRUE(client_->MergePatch(kPods.Path("ns", "after", "status"), R"({"status":{"phase":"Succeeded"}})").ok());
  ASSERT_TRUE(Eventually([&] { return live.Get("ns/after") == nullptr; }));  // left the selector: DELETED
  ASSERT_TRUE(client_->Delete(kPods.Path("ns", "before")).ok());
  ASSERT_TRUE(Eventually([&] { return live.Size() == 0; }));
  // A closed watch resumes from its resourceVersion: nothing is missed.
  api_->CloseWatches();
  CreatePod("later");
  ASSERT_TRUE(Eventually([&] { return live.Get("ns/later") != nullptr; }));
  // A lagging watch: GET shows a change at once, the informer only after ReleaseWatches.
  api_->HoldWatches();
  CreatePod("held");
  EXPECT_TRUE(client_->Get(kPods.Path("ns", "held")).ok());
  EXPECT_EQ(live.Get("ns/held"), nullptr);
  api_->ReleaseWatches();
  ASSERT_TRUE(Eventually([&] { return live.Get("ns/held") != nullptr; }));
  live.Stop();
}

// An optional resource (Teams on a cluster whose Team CRD is not applied yet): the API server's
// 404 for the type is an empty list, so the cache is synced and the engine goes on.
TEST_F(FakeApiTest, AnOptionalResourceTheServerDoesNotServeIsAnEmptySyncedCache) {
  k8s::Informer<k8s::Pod> widgets(client_, "/apis/example.com/v1/widgets", k8s::DecodePod,
                                  [](const k8s::Pod& p) { return p.meta.name; }, "widgets");
  widgets.SetAbsentIsEmpty(true);
  std::promise<void> synced;
  std::once_flag once;
  widgets.SetSyncedHandler([&] { std::call_once(once, [&] { synced.set_value(); }); });
  widgets.Start();
  ASSERT_EQ(synced.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready)
      << "a 404 for the type did not count as an empty list";
  EXPECT_TRUE(widgets.HasSynced());
  EXPECT_EQ(widgets.Size(), 0u);
  // It asks again (after 0.8 s, then 1.6 s ...); hearing 404 again changes nothing, so its version
  // stays (the engine keeps its cluster view while the versions hold).
  const uint64_t v = widgets.Version();
  const auto lists = [&] {
    int n = 0;
    for (const auto& r : api_->Requests()) n += r == "GET /apis/example.com/v1/widgets" ? 1 : 0;
    return n;
  };
  ASSERT_TRUE(Eventually([&] { return lists() >= 3; }, std::chrono::seconds(60))) << lists();
  EXPECT_EQ(widgets.Version(), v);
  EXPECT_TRUE(widgets.HasSynced());
  widgets.Stop();
}

// WaitWatchesIdle (what a stepping engine test waits on): once it returns, the informer's cache
// and handlers have every change made before it that no HoldWatches holds back; no polling.
TEST_F(FakeApiTest, WaitWatchesIdleReturnsOnceEveryWatchEventWasHandled) {
  k8s::Informer<k8s::Pod> pods(client_, kPods.Path(), k8s::DecodePod,
                               [](const k8s::Pod& p) { return k8s::ObjectKey(p.meta.ns, p.meta.name); }, "pods");
  std::atomic<int> handled{0};
  pods.AddHandler([&](const std::string&, const auto&, const auto&) { ++handled; });
  CreatePod("listed");
  pods.Start();
  api_->WaitWatchesIdle(1);  // listed, and its watch is open
  EXPECT_TRUE(pods.HasSynced());
  EXPECT_EQ(handled.load(), 1);
  for (int i = 0; i < 20; ++i) CreatePod("p" + std::to_string(i));
  ASSERT_TRUE(client_->Delete(kPods.Path("ns", "listed")).ok());
  api_->WaitWatchesIdle(1);
  EXPECT_EQ(pods.Size(), 20u);
  EXPECT_EQ(handled.load(), 22);
  api_->HoldWatches();  // held events are not waited for
  CreatePod("held");
  api_->WaitWatchesIdle(1);
  EXPECT_EQ(pods.Get("ns/held"), nullptr);
  api_->ReleaseWatches();
  api_->WaitWatchesIdle(1);
  EXPECT_NE(pods.Get("ns/held"), nullptr);
  pods.Stop();
}

// Informer::Version() moves with each change the cache takes in (the engine keeps its cluster view
// while the versions it was made from hold), and not while nothing changes.
TEST_F(FakeApiTest, AnInformersVersionMovesWithEveryChangeToItsCache) {
  k8s::Informer<k8s::Pod> pods(client_, kPods.Path(), k8s::DecodePod,
                               [](const k8s::Pod& p) { return k8s::ObjectKey(p.meta.ns, p.meta.name); }, "pods");
  CreatePod("a");
  pods.Start();
  ASSERT_TRUE(Eventually([&] { return pods.HasSynced() && pods.Size() == 1; }));
  uint64_t v = pods.Version();
  EXPECT_GT(v, 0u) << "the list";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(pods.Version(), v) << "nothing changed";
  CreatePod("b");
  ASSERT_TRUE(Eventually([&] { return pods.Version() > v; })) << "added";
  ASSERT_EQ(pods.Size(), 2u);
  v = pods.Version();
  ASSERT_TRUE(client_->Bind("ns", "b", "n1").ok());
  ASSERT_TRUE(Eventually([&] { return pods.Version() > v; })) << "changed";
  EXPECT_EQ(pods.Get("ns/b")->node_name, "n1");
  v = pods.Version();
  ASSERT_TRUE(client_->Delete(kPods.Path("ns", "a")).ok());
  ASSERT_TRUE(Eventually([&] { return pods.Version() > v; })) << "deleted";
  EXPECT_EQ(pods.Get("ns/a"), nullptr);
  pods.Stop();
}

TEST_F(FakeApiTest, FaultsFailRequestsOrLoseRepliesOfAppliedWrites) {
  std::string rv = CreateRun("a");
  api_->FailNext({"PATCH", kRuns.Path("ns", "a", "status"), {}}, 1, 503);
  auto failed = client_->MergePatch(kRuns.Path("ns", "a", "status"), R"({"status":{"phase":"Scheduled"}})");
  EXPECT_EQ(failed.status().code(), 503);
  EXPECT_EQ(failed.status().reason(), "ServiceUnavailable");
  EXPECT_TRUE(client_->Get(kRuns.Path("ns", "a")).ok());
  EXPECT_EQ(json::Find(*client_->Get(kRuns.Path("ns", "a")), {"status"}), nullptr);  // not applied

  // The reply to an applied write is lost; the client's retry meets its own result (409).
  client_->SetMaxRetries(1);
  api_->DropReplyAfterApply({"PATCH", {}, [](const k8s::HttpRequest& r) { return r.body.find("Scheduled") != std::string::npos; }}, 1);
  auto lost = client_->MergePatch(kRuns.Path("ns", "a", "status"),
                                  R"({"metadata":{"resourceVersion":")" + rv + R"("},"status":{"phase":"Scheduled"}})");
  EXPECT_TRUE(lost.status().IsConflict()) << lost.status().ToString();
  auto got = client_->Get(kRuns.Path("ns", "a"));
  EXPECT_EQ(json::GetString(json::Find(*got, {"status", "phase"})), "Scheduled");
  EXPECT_EQ(api_->FaultsFired(), 2);
}

}  // namespace
}  // namespace berth::testing
