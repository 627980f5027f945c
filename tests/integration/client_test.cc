// The Kubernetes client (src/k8s) against a real kube-apiserver: requests, typed errors,
// pagination, subresources, binding, watch, informer, events and TLS.

#include <gtest/gtest.h>

#include <fstream>
#include <mutex>
#include <set>

#include "harness.h"
#include "k8s/config.h"
#include "k8s/events.h"
#include "k8s/informer.h"
#include "k8s/objects.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kNodes;
using k8s::resources::kPods;
using k8s::resources::kRuns;

std::string RunJson(const std::string& name, int priority = 50, const std::string& labels = "{}") {
  return R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":")" + name + R"(","labels":)" + labels +
         R"(},"spec":{"priority":)" + std::to_string(priority) +
         R"(,"template":{"spec":{"containers":[{"name":"main","image":"busybox"}]}}}})";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ClientTest : public IntegrationTest {};

TEST_F(ClientTest, TypedErrors) {
  auto missing = client()->Get(kRuns.Path(ns_, "nope"));
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsNotFound());
  EXPECT_EQ(missing.status().reason(), "NotFound");
  EXPECT_NE(missing.status().message().find("\"nope\" not found"), std::string::npos) << missing.status().message();

  ASSERT_TRUE(client()->Create(kRuns.Path(ns_), RunJson("a")).ok());
  auto dup = client()->Create(kRuns.Path(ns_), RunJson("a"));
  ASSERT_FALSE(dup.ok());
  EXPECT_TRUE(dup.status().IsAlreadyExists());
  EXPECT_FALSE(dup.status().IsConflict());

  auto invalid = client()->Create(kRuns.Path(ns_), RunJson("b", 101));
  ASSERT_FALSE(invalid.ok());
  EXPECT_TRUE(invalid.status().IsInvalid());
  EXPECT_EQ(invalid.status().code(), 422);
  EXPECT_NE(invalid.status().message().find("spec.priority"), std::string::npos) << invalid.status().message();

  k8s::ClientConfig bad = client()->config();
  bad.token = k8s::TokenSource::Static("not-a-token");
  k8s::Client stranger(bad);
  auto denied = stranger.Get(kRuns.Path(ns_, "a"));
  ASSERT_FALSE(denied.ok());
  EXPECT_TRUE(denied.status().IsUnauthorized());
}

TEST_F(ClientTest, UpdateIsGuardedByResourceVersion) {
  auto created = client()->Create(kRuns.Path(ns_), RunJson("guarded"));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  std::string stale = json::Serialize(*created);
  // Someone else changes it first.
  ASSERT_TRUE(client()->MergePatch(kRuns.Path(ns_, "guarded"), R"({"spec":{"priority":60}})").ok());
  // Our PUT carries the old resourceVersion: 409 Conflict, nothing lost.
  std::string body = stale;
  body.replace(body.find("\"priority\":50"), 13, "\"priority\":70");
  auto put = client()->Update(kRuns.Path(ns_, "guarded"), body);
  ASSERT_FALSE(put.ok());
  EXPECT_TRUE(put.status().IsConflict()) << put.status().ToString();
  auto now = client()->Get(kRuns.Path(ns_, "guarded"));
  EXPECT_EQ(json::GetInt(*json::Find(*now, {"spec"}), "priority"), 60);
  // With the current resourceVersion the update goes through.
  std::string fresh = json::Serialize(*now);
  fresh.replace(fresh.find("\"priority\":60"), 13, "\"priority\":70");
  auto ok = client()->Update(kRuns.Path(ns_, "guarded"), fresh);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(json::GetInt(*json::Find(*ok, {"spec"}), "priority"), 70);
}

TEST_F(ClientTest, PatchesAndStatusSubresource) {
  ASSERT_TRUE(client()->Create(kRuns.Path(ns_), RunJson("p")).ok());
  auto jp = client()->JsonPatch(kRuns.Path(ns_, "p"), R"([{"op":"replace","path":"/spec/priority","value":33}])");
  ASSERT_TRUE(jp.ok()) << jp.status().ToString();
  EXPECT_EQ(json::GetInt(*json::Find(*jp, {"spec"}), "priority"), 33);

  // A status write through /status does not touch spec, and a spec write does not touch status.
  auto st = client()->MergePatch(kRuns.Path(ns_, "p", "status"), R"({"status":{"phase":"Pending"},"spec":{"priority":1}})");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(json::GetString(json::Find(*st, {"status", "phase"})), "Pending");
  EXPECT_EQ(json::GetInt(*json::Find(*st, {"spec"}), "priority"), 33);
  auto sp = client()->MergePatch(kRuns.Path(ns_, "p"), R"({"status":{"phase":"Failed"}})");
  ASSERT_TRUE(sp.ok());
  EXPECT_EQ(json::GetString(json::Find(*sp, {"status", "phase"})), "Pending");
}

TEST_F(ClientTest, DeleteWithPreconditions) {
  auto created = client()->Create(kRuns.Path(ns_), RunJson("d"));
  ASSERT_TRUE(created.ok());
  std::string uid = json::GetString(json::Find(*created, {"metadata", "uid"}));
  k8s::DeleteOptions wrong;
  wrong.precondition_uid = "00000000-0000-0000-0000-000000000000";
  k8s::Status s = client()->Delete(kRuns.Path(ns_, "d"), wrong);
  EXPECT_EQ(s.code(), 409) << s.ToString();
  EXPECT_TRUE(client()->Get(kRuns.Path(ns_, "d")).ok());
  k8s::DeleteOptions right;
  right.precondition_uid = uid;
  right.propagation_policy = "Background";
  s = client()->Delete(kRuns.Path(ns_, "d"), right);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(client()->Get(kRuns.Path(ns_, "d")).status().IsNotFound());
  EXPECT_TRUE(client()->Delete(kRuns.Path(ns_, "d")).IsNotFound());
}

TEST_F(ClientTest, ListFollowsContinueAcrossPages) {
  for (int i = 0; i < 11; ++i) {
    ASSERT_TRUE(client()->Create(kRuns.Path(ns_), RunJson("page-" + std::to_string(i), 50,
                                                          i % 2 ? R"({"odd":"yes"})" : "{}")).ok());
  }
  k8s::ListOptions lo;
  lo.limit = 3;
  auto all = client()->List(kRuns.Path(ns_), lo);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->items.size(), 11u);
  EXPECT_FALSE(all->resource_version.empty());
  std::set<std::string> names;
  for (auto& item : all->items) names.insert(json::GetString(json::Find(item, {"metadata", "name"})));
  EXPECT_EQ(names.size(), 11u);
  lo.label_selector = "odd=yes";
  auto odd = client()->List(kRuns.Path(ns_), lo);
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->items.size(), 5u);
}

TEST_F(ClientTest, BindsPodsThroughBindingSubresource) {
  std::string node = "bind-node-" + ns_;
  ASSERT_TRUE(client()->Create(kNodes.Path(), R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + node +
                                                  R"("},"status":{"allocatable":{"cpu":"4"}}})").ok());
  auto pod = client()->Create(kPods.Path(ns_), R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"w"},
      "spec":{"schedulerName":"berth","containers":[{"name":"main","image":"busybox"}]}})");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  k8s::Status s = client()->Bind(ns_, "w", node, json::GetString(json::Find(*pod, {"metadata", "uid"})));
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto got = client()->Get(kPods.Path(ns_, "w"));
  EXPECT_EQ(json::GetString(json::Find(*got, {"spec", "nodeName"})), node);
  // Binding again is refused with 409: the caller can tell "already bound".
  s = client()->Bind(ns_, "w", node);
  EXPECT_EQ(s.code(), 409) << s.ToString();
  (void)client()->Delete(kNodes.Path("", node));
}

TEST_F(ClientTest, WatchDeliversChangesAndReports410ForCompactedVersions) {
  auto list = client()->List(kRuns.Path(ns_));
  ASSERT_TRUE(list.ok());
  k8s::Cancellation cancel;
  std::mutex mu;
  std::vector<std::string> seen;
  std::thread watcher([&] {
    k8s::WatchOptions wo;
    wo.resource_version = list->resource_version;
    wo.timeout_seconds = 30;
    (void)client()->Watch(kRuns.Path(ns_), wo, [&](const k8s::WatchEvent& ev) {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(ev.type + " " + json::GetString(json::Find(*ev.object, {"metadata", "name"})));
      return true;
    }, &cancel);
  });
  ASSERT_TRUE(client()->Create(kRuns.Path(ns_), RunJson("w1")).ok());
  ASSERT_TRUE(client()->MergePatch(kRuns.Path(ns_, "w1"), R"({"spec":{"priority":5}})").ok());
  ASSERT_TRUE(client()->Delete(kRuns.Path(ns_, "w1")).ok());
  bool all = Eventually([&] {
    std::lock_guard<std::mutex> lock(mu);
    return seen.size() >= 3;
  }, std::chrono::seconds(10));
  cancel.Cancel();
  watcher.join();
  ASSERT_TRUE(all);
  EXPECT_EQ(seen[0], "ADDED w1");
  EXPECT_EQ(seen[1], "MODIFIED w1");
  EXPECT_EQ(seen[2], "DELETED w1");

  // A resourceVersion older than the compaction: 410 Gone.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client()->Create(kRuns.Path(ns_), RunJson("c" + std::to_string(i))).ok());
  cp().Compact();
  k8s::WatchOptions wo;
  wo.resource_version = "1";
  wo.timeout_seconds = 5;
  k8s::Status s = client()->Watch(kRuns.Path(ns_), wo, [](const k8s::WatchEvent&) { return true; }, nullptr);
  EXPECT_TRUE(s.IsGone()) << s.ToString();
}

TEST_F(ClientTest, InformerKeepsIndexedCacheAndCallsHandlers) {
  k8s::Informer<k8s::Pod> pods(client(), kPods.Path(ns_), k8s::DecodePod,
                               [](const k8s::Pod& p) { return k8s::ObjectKey(p.meta.ns, p.meta.name); }, "pods");
  pods.AddIndex("run", [](const k8s::Pod& p) { return std::vector<std::string>{p.meta.Label("berth.dev/run")}; });
  std::mutex mu;
  std::vector<std::string> calls;
  pods.AddHandler([&](const std::string& key, const auto& old, const auto& cur) {
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back((old ? std::string("u") : std::string("a")) + (cur ? "" : "-del") + " " + key);
  });
  auto pod_json = [](const std::string& name, const std::string& run) {
    return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(","labels":{"berth.dev/run":")" + run +
           R"("}},"spec":{"containers":[{"name":"main","image":"busybox"}]}})";
  };
  ASSERT_TRUE(client()->Create(kPods.Path(ns_), pod_json("before", "r1")).ok());
  pods.Start();
  ASSERT_TRUE(Eventually([&] { return pods.HasSynced(); }));
  EXPECT_EQ(pods.Size(), 1u);
  ASSERT_TRUE(client()->Create(kPods.Path(ns_), pod_json("x", "r1")).ok());
  ASSERT_TRUE(client()->Create(kPods.Path(ns_), pod_json("y", "r2")).ok());
  ASSERT_TRUE(Eventually([&] { return pods.ByIndex("run", "r1").size() == 2 && pods.ByIndex("run", "r2").size() == 1; }));
  ASSERT_TRUE(client()->Delete(kPods.Path(ns_, "x"), {"", "", "", std::nullopt}).ok());
  ASSERT_TRUE(Eventually([&] { return pods.ByIndex("run", "r1").size() == 1; }));
  EXPECT_EQ(pods.Get(ns_ + "/x"), nullptr);
  ASSERT_NE(pods.Get(ns_ + "/y"), nullptr);
  pods.Stop();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(calls.front(), "a " + ns_ + "/before");
  EXPECT_NE(std::find(calls.begin(), calls.end(), "u-del " + ns_ + "/x"), calls.end());
}

TEST_F(ClientTest, RecordsEventsAgainstObjects) {
  auto created = client()->Create(kRuns.Path(ns_), RunJson("evented"));
  ASSERT_TRUE(created.ok());
  k8s::SystemClock clock;
  k8s::EventRecorder rec(client(), clock, "berth-controller");
  rec.Record({"berth.dev/v1alpha1", "Run", ns_, "evented", json::GetString(json::Find(*created, {"metadata", "uid"}))},
             "Normal", "Scheduled", "placed on fleet a100");
  rec.Flush();
  CommandResult r = Kubectl({"get", "events", "--field-selector", "involvedObject.name=evented", "-o",
                             "jsonpath={.items[*].reason}/{.items[*].message}/{.items[*].source.component}"});
  EXPECT_EQ(r.out, "Scheduled/placed on fleet a100/berth-controller") << r.err;
}

TEST_F(ClientTest, VerifiesTlsAndSupportsClientCertificates) {
  // The harness kubeconfig verifies the API server against its CA: that already works above.
  // With no CA (system roots only) the self-signed server is refused.
  k8s::ClientConfig untrusted = client()->config();
  untrusted.ca_pem.clear();
  untrusted.insecure_skip_tls_verify = false;
  k8s::Client c1(untrusted);
  c1.SetMaxRetries(0);
  auto r1 = c1.Get(kRuns.Path(ns_));
  EXPECT_FALSE(r1.ok());
  EXPECT_EQ(r1.status().code(), 0) << "expected a TLS failure, got " << r1.status().ToString();

  // insecure-skip-tls-verify from a kubeconfig turns verification off.
  std::string dir = cp().dir();
  std::string port = ReadFile(dir + "/apiserver.port");
  while (!port.empty() && port.back() == '\n') port.pop_back();
  std::string kc = dir + "/insecure.kubeconfig";
  std::ofstream(kc) << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:" << port
                    << "\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: " << ReadFile(dir + "/admin.token")
                    << "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n";
  auto insecure_cfg = k8s::LoadKubeconfig({kc});
  ASSERT_TRUE(insecure_cfg.ok()) << insecure_cfg.status().message();
  EXPECT_TRUE(k8s::Client(*insecure_cfg).Get(kRuns.Path(ns_)).ok());

  // Mutual TLS: a client certificate (as -data) in group system:masters, no token.
  std::string b64;
  CommandResult enc = RunCommand({"base64", "-w0", dir + "/client.crt"});
  std::string cert_b64 = enc.out;
  std::string key_b64 = RunCommand({"base64", "-w0", dir + "/client.key"}).out;
  std::string ca_b64 = RunCommand({"base64", "-w0", dir + "/certs/apiserver.crt"}).out;
  std::string kc2 = dir + "/cert.kubeconfig";
  std::ofstream(kc2) << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:" << port
                     << "\n    certificate-authority-data: " << ca_b64 << "\nusers:\n- name: u\n  user:\n    client-certificate-data: "
                     << cert_b64 << "\n    client-key-data: " << key_b64
                     << "\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n";
  auto cert_cfg = k8s::LoadKubeconfig({kc2});
  ASSERT_TRUE(cert_cfg.ok()) << cert_cfg.status().message();
  EXPECT_FALSE(cert_cfg->token);
  auto r3 = k8s::Client(*cert_cfg).Create(kRuns.Path(ns_), RunJson("by-cert"));
  EXPECT_TRUE(r3.ok()) << r3.status().ToString();
}

}  // namespace
}  // namespace berth::testing
