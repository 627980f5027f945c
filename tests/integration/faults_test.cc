// Faults around the controller, with a real etcd and kube-apiserver: the API server and etcd
// restarting during a burst, every watch expiring (410 Gone), a second writer racing the
// controller, nodes lost under running multi-node runs, leader failover, replies to Run status
// writes lost after the write was applied (a proxy, reply_dropper.h), and the order of a
// run's last writes. Invariants are
// sampled continuously (invariants.h). The API server of this binary keeps an audit log of every
// write, so "one writer at a time" is checked from the API server's own record.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "engine_fixture.h"
#include "k8s/clock.h"
#include "k8s/timefmt.h"
#include "invariants.h"
#include "reply_dropper.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kNodes;
using k8s::resources::kPods;
using k8s::resources::kRuns;

// Before the control plane starts (a gtest Environment, after static initialisation).
[[maybe_unused]] const bool kAudit = [] { return setenv("BERTH_AUDIT", "1", 1) == 0; }();

class Faults : public EngineTest {
 protected:
  std::string RunBody(const std::string& name, const std::string& spec, double sim_seconds,
                      const std::string& retry = R"({"onEvents":["no-capacity"],"duration":"off"})") {
    return R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":")" + name + R"("},"spec":{)" + spec +
           (spec.empty() ? "" : ",") + R"("retry":)" + retry +
           R"(,"template":{"metadata":{"annotations":{"berth.dev/sim-seconds":")" + std::to_string(sim_seconds) +
           R"("}},"spec":{"containers":[{"name":"main","image":"busybox"}]}}}})";
  }
  // A mixed burst: a quarter gangs of 2 whole instances, the rest 1 or 2 blocks. Creation retries
  // through API outages (a user's kubectl would be retried too).
  std::vector<std::string> Burst(const std::string& prefix, int count, std::mt19937& rng) {
    std::vector<std::string> bodies;
    for (int i = 0; i < count; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "%s-%03d", prefix.c_str(), i);
      int kind = static_cast<int>(rng() % 4);
      std::string spec = kind == 0 ? R"("nodes":2)" : R"("resources":{"cpu":")" + std::to_string(kind % 2 + 1) + R"("})";
      bodies.push_back(RunBody(name, spec, 0.2 + 0.1 * static_cast<double>(rng() % 3)));
    }
    return bodies;
  }
  void CreateAll(const std::vector<std::string>& bodies) {
    for (const auto& body : bodies) {
      for (int attempt = 0;; ++attempt) {
        auto r = client()->Create(kRuns.Path(ns_), body);
        if (r.ok() || r.status().IsAlreadyExists()) break;
        ASSERT_LT(attempt, 600) << r.status().ToString();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  }
  std::map<std::string, int> Blocks(const std::vector<std::string>& nodes, int blocks) {
    std::map<std::string, int> m;
    for (const auto& n : nodes) m[n] = blocks;
    return m;
  }
  // No violation in any sample, and samples were taken while runs held blocks (a sampler that
  // never read the API, or only read it when nothing was placed, proves nothing).
  void ExpectNoViolations(const InvariantSampler& s, const char* what) {
    auto v = s.violations();
    for (const auto& line : v) ADD_FAILURE() << line;
    EXPECT_GT(s.samples(), 0) << what << ": the sampler never read the API";
    EXPECT_GT(s.placed_samples(), 0) << what << ": no sample saw a placed run";
    std::printf("%s figures: samples=%lld placed_samples=%lld checks=%lld violations=%zu\n", what,
                static_cast<long long>(s.samples()), static_cast<long long>(s.placed_samples()),
                static_cast<long long>(s.checks()), v.size());
  }
  std::string AuditPath() { return cp().dir() + "/audit.log"; }
};

TEST_F(Faults, ApiServerAndEtcdRestartsDuringABurstNeedNoControllerRestart) {
  std::mt19937 rng(7);
  auto nodes = Nodes("outage", 24, "4", "16Gi");
  Fleet("outage", "outage", "  blocks: 4\n  placement: cluster\n");
  auto kubelet = ControllerProcess::KubeletSim();
  kubelet->Start();
  InvariantSampler sampler(client(), ns_, FleetName("outage"), Blocks(nodes, 4));
  sampler.Start();
  const int pid = controller_->pid();

  constexpr int kCount = 200;
  std::thread submitter([&, bodies = Burst("o", kCount, rng)] { CreateAll(bodies); });
  ASSERT_TRUE(Eventually([&] { return CountPhase("Succeeded") >= 10; }, std::chrono::seconds(60))) << controller_->Log();
  cp().StopApiserver();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  cp().StartApiserver();
  std::printf("API server restarted with %d runs succeeded\n", CountPhase("Succeeded"));
  ASSERT_TRUE(Eventually([&] { return CountPhase("Succeeded") >= 60; }, std::chrono::seconds(120))) << controller_->Log();
  cp().StopEtcd();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  cp().StartEtcd();
  std::printf("etcd restarted with %d runs succeeded\n", CountPhase("Succeeded"));
  submitter.join();
  // A change right after the outage is acted on: a last run, submitted with high priority.
  ASSERT_NO_FATAL_FAILURE(CreateAll({RunBody("late", R"("priority":100,"nodes":2)", 0.2)}));

  EXPECT_TRUE(Eventually([&] { return CountPhase("Succeeded") == kCount + 1; }, std::chrono::seconds(240)))
      << CountPhase("Succeeded") << " of " << kCount + 1 << " succeeded\n"
      << controller_->Log().substr(0, 20000);
  sampler.Stop();
  sampler.CheckSettled("Succeeded");
  ExpectNoViolations(sampler, "API server and etcd restarts");
  // The same process did it all: no crash, no restart.
  EXPECT_TRUE(controller_->Running());
  EXPECT_EQ(controller_->pid(), pid);
  std::string log = controller_->Log();
  EXPECT_NE(log.find("watch failed"), std::string::npos) << "the outages should have broken the watches";
  kubelet->Stop();
}

TEST_F(Faults, WatchExpiryOnEveryWatchIsFollowedByARelistThatSeesTheGap) {
  auto nodes = Nodes("gap", 4, "4", "16Gi");
  Fleet("gap", "gap", "  blocks: 4\n  placement: cluster\n");
  Run("gang", "  nodes: 2\n  retry: {onEvents: [interruption], duration: 1h}\n");
  Run("single", "  resources: {cpu: \"1\"}\n");
  Run("doomed", "  nodes: 9\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n");
  Run("waiting", "  nodes: 4\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n");
  ASSERT_TRUE(WaitPhase("gang", "Scheduled"));
  ASSERT_TRUE(WaitPhase("single", "Scheduled"));
  StartRun("gang");
  StartRun("single");
  ASSERT_TRUE(WaitPhase("waiting", "Pending"));
  ASSERT_TRUE(WaitPhase("doomed", "Pending"));
  std::vector<std::string> gang_nodes = PlacementNodes("gang");
  ASSERT_EQ(gang_nodes.size(), 2u);

  // Freeze the controller and change what it watches while it cannot see: restart the API server
  // (every watch breaks and the new watch cache starts after the controller's resourceVersions),
  // make changes of every kind, then compact etcd.
  controller_->Pause();
  cp().StopApiserver();
  cp().StartApiserver();
  ASSERT_EQ(Kubectl({"patch", "run", "waiting", "--type", "merge", "-p", R"({"spec":{"priority":90}})"}).exit_code, 0);
  Run("newcomer", "  resources: {cpu: \"1\"}\n");
  ASSERT_EQ(Kubectl({"delete", "run", "doomed", "--wait=false"}).exit_code, 0);
  SetPodsPhase("single", "Succeeded");  // the kubelet reports
  ASSERT_TRUE(client()->Delete(kNodes.Path("", gang_nodes[0])).ok());  // a node goes away under the gang
  auto extra = Nodes("gap", 1, "4", "16Gi");                             // and a new one joins
  ASSERT_FALSE(cp().Compact().empty());
  controller_->Resume();

  EXPECT_TRUE(Eventually([&] { return Phase("single") == "Succeeded"; }, std::chrono::seconds(60))) << controller_->Log();
  // The gang lost a node: interrupted, back in the queue (its old pods deleted).
  EXPECT_TRUE(Eventually([&] { return StatusInt("gang", "resubmissions") == 1; }, std::chrono::seconds(60)));
  // The resubmission is written before the old Pods are deleted: wait for the deletes.
  std::string undeleted;
  EXPECT_TRUE(Eventually([&] {
    undeleted.clear();
    for (auto& [name, pod] : PodsOf("gang")) {
      if (!name.ends_with("-r1") && json::Find(pod, {"metadata", "deletionTimestamp"}) == nullptr) {
        undeleted += name + " ";
      }
    }
    return undeleted.empty();
  }, std::chrono::seconds(60))) << undeleted << "should be deleted";
  // The priority patch made in the gap took effect (and, with the freed instances, the run starts).
  EXPECT_TRUE(Eventually([&] { return StatusInt("waiting", "effectivePriority") == 90; }, std::chrono::seconds(60)));
  EXPECT_TRUE(Eventually([&] { return !Phase("newcomer").empty(); }, std::chrono::seconds(60)));
  EXPECT_TRUE(Eventually([&] { return GetRun("doomed").IsNull(); }, std::chrono::seconds(60))) << "the finalizer stays";
  EXPECT_TRUE(Eventually([&] {
    CommandResult r = cp().Kubectl({"get", "fleet", FleetName("gap"), "-o", "jsonpath={.status.totalInstances}"});
    return r.out == "4";  // 4 - 1 deleted + 1 new
  }, std::chrono::seconds(60)));
  // Each informer logs its relist when its own watch comes back, independently of the state
  // checked above (a fleets watch may relist after the runs have settled): wait for each line.
  // The watch resumed from the old resourceVersion expires (410 Gone); or, on Kubernetes 1.35+,
  // the restarted API server answers 429 while that resource's watch cache initializes, and the
  // informer relists at once, which sees the gap just as well.
  for (const char* informer : {"runs", "fleets", "nodes", "pods"}) {
    auto relisted = [&] {
      std::istringstream log(controller_->Log());
      const std::string who = std::string(" ") + informer + ": ";
      for (std::string line; std::getline(log, line);) {
        auto at = line.find(who);
        if (at == std::string::npos) continue;
        std::string rest = line.substr(at + who.size());
        if (rest.rfind("watch resourceVersion ", 0) == 0 && rest.find(" is too old (410 Gone); relisting") != std::string::npos) return true;
        if (rest.rfind("watch failed: 429 ", 0) == 0 && rest.find("; relisting in ") != std::string::npos) return true;
      }
      return false;
    };
    EXPECT_TRUE(Eventually(relisted, std::chrono::seconds(60)))
        << "the " << informer << " watch should have expired (410 Gone) or been refused (429), then relisted";
  }
  std::string log = controller_->Log();
  size_t relists = 0;
  for (size_t at = log.find("(410 Gone); relisting"); at != std::string::npos; at = log.find("(410 Gone); relisting", at + 1)) {
    ++relists;
  }
  std::printf("watch expiry figures: relists after 410=%zu\n", relists);
}

TEST_F(Faults, ASecondWriterRacingTheControllerLosesNothing) {
  auto nodes = Nodes("race", 12, "4", "16Gi");
  Fleet("race", "race", "  blocks: 4\n  placement: cluster\n");
  auto kubelet = ControllerProcess::KubeletSim();
  kubelet->Start();
  InvariantSampler sampler(client(), ns_, FleetName("race"), Blocks(nodes, 4));
  sampler.Start();
  std::mt19937 rng(11);
  constexpr int kCount = 120;
  std::vector<std::string> names;
  {
    auto bodies = Burst("c", kCount, rng);
    for (int i = 0; i < kCount; ++i) {
      char name[16];
      std::snprintf(name, sizeof name, "c-%03d", i);
      names.push_back(name);
    }
    CreateAll(bodies);
  }
  // The second writer: read-modify-write of labels and priority guarded by resourceVersion
  // (retried on 409 like kubectl edit would be), and unguarded label merge patches (kubectl label).
  struct Last {
    std::string label;
    int64_t priority = 50;
  };
  std::map<std::string, Last> last;
  int writes = 0, conflicts = 0;
  // A fixed number of writes, not a time window: on a loaded machine a window held too few.
  constexpr int kWrites = 150;
  for (int i = 0; writes < kWrites; ++i) {
    const std::string& name = names[rng() % names.size()];
    const std::string value = "v" + std::to_string(i);
    if (i % 3 == 2) {
      auto r = client()->MergePatch(kRuns.Path(ns_, name), R"({"metadata":{"labels":{"writer":")" + value + R"("}}})");
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      last[name].label = value;
      ++writes;
      continue;
    }
    int64_t priority = static_cast<int64_t>(rng() % 101);
    for (int attempt = 0;; ++attempt) {
      auto got = client()->Get(kRuns.Path(ns_, name));
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      json::Document doc = std::move(got).value();
      auto& a = doc.GetAllocator();
      json::Value& meta = doc["metadata"];
      if (!meta.HasMember("labels")) meta.AddMember("labels", json::Value(rapidjson::kObjectType), a);
      json::Value& labels = meta["labels"];
      if (labels.HasMember("writer")) labels.RemoveMember("writer");
      labels.AddMember("writer", json::Value(value.c_str(), a), a);
      doc["spec"].RemoveMember("priority");
      doc["spec"].AddMember("priority", priority, a);
      auto put = client()->Update(kRuns.Path(ns_, name), json::Serialize(doc));
      if (put.ok()) break;
      ASSERT_TRUE(put.status().IsConflict()) << put.status().ToString();
      ++conflicts;
      ASSERT_LT(attempt, 50);
    }
    last[name] = {value, priority};
    ++writes;
  }
  EXPECT_TRUE(Eventually([&] { return CountPhase("Succeeded") == kCount; }, std::chrono::seconds(180)))
      << CountPhase("Succeeded") << " of " << kCount;
  sampler.Stop();
  sampler.CheckSettled("Succeeded");
  ExpectNoViolations(sampler, "second writer");
  // Nothing the second writer wrote was overwritten, and the controller's finalizer is intact.
  for (const auto& [name, want] : last) {
    auto run = GetRun(name);
    ASSERT_TRUE(run.IsObject()) << name;
    const json::Value* labels = json::Find(run, {"metadata", "labels"});
    EXPECT_EQ(labels ? json::GetString(*labels, "writer") : "", want.label) << name;
    const json::Value* prio = json::Find(run, {"spec", "priority"});
    ASSERT_TRUE(prio != nullptr && prio->IsInt64()) << name;
    EXPECT_EQ(prio->GetInt64(), want.priority) << name;
    bool has_finalizer = false;
    if (const json::Value* f = json::Find(run, {"metadata", "finalizers"}); f != nullptr && f->IsArray()) {
      for (auto& v : f->GetArray()) has_finalizer |= v.IsString() && std::string(v.GetString()) == "berth.dev/run-cleanup";
    }
    EXPECT_TRUE(has_finalizer) << name;
  }
  std::string log = controller_->Log();
  size_t controller_409 = 0;
  for (size_t at = log.find("409 Conflict"); at != std::string::npos; at = log.find("409 Conflict", at + 1)) ++controller_409;
  std::printf("second writer figures: writes=%d writer_409s=%d controller_409s=%zu runs=%d\n", writes, conflicts,
              controller_409, kCount);
  kubelet->Stop();
}

TEST_F(Faults, NodeLossUnderRunningMultiNodeRunsInterruptsThemAndFreesTheBlocks) {
  auto nodes = Nodes("loss", 8, "4", "16Gi");
  Fleet("loss", "loss", "  blocks: 2\n  placement: cluster\n");
  InvariantSampler sampler(client(), ns_, FleetName("loss"), Blocks(nodes, 2));
  sampler.Start();
  Run("retried", "  nodes: 2\n  retry: {onEvents: [interruption], duration: 1h}\n");
  Run("failed", "  nodes: 2\n");
  Run("notready", "  nodes: 2\n  retry: {onEvents: [interruption], duration: 1h}\n");
  for (const char* r : {"retried", "failed", "notready"}) {
    ASSERT_TRUE(WaitPhase(r, "Scheduled")) << r;
    StartRun(r);
  }
  auto retried_nodes = PlacementNodes("retried");
  auto failed_nodes = PlacementNodes("failed");
  auto notready_nodes = PlacementNodes("notready");
  std::set<std::string> used(retried_nodes.begin(), retried_nodes.end());
  used.insert(failed_nodes.begin(), failed_nodes.end());
  used.insert(notready_nodes.begin(), notready_nodes.end());
  ASSERT_EQ(used.size(), 6u) << "three gangs on six whole instances";

  // One node deleted, two go NotReady (the kubelet stops reporting).
  ASSERT_TRUE(client()->Delete(kNodes.Path("", retried_nodes[1])).ok());
  const std::string not_ready = R"({"status":{"conditions":[{"type":"Ready","status":"False","reason":"KubeletStopped"}]}})";
  ASSERT_TRUE(client()->MergePatch(kNodes.Path("", failed_nodes[0], "status"), not_ready).ok());
  ASSERT_TRUE(client()->MergePatch(kNodes.Path("", notready_nodes[0], "status"), not_ready).ok());

  // Without retry: Failed/Interrupted naming the node; with retry: back in the queue and placed
  // again, only on instances that take runs.
  EXPECT_TRUE(WaitPhase("failed", "Failed", std::chrono::seconds(30)));
  EXPECT_EQ(Reason("failed"), "Interrupted");
  EXPECT_NE(Message("failed").find(failed_nodes[0]), std::string::npos) << Message("failed");
  for (const char* r : {"retried", "notready"}) {
    EXPECT_TRUE(Eventually([&] { return StatusInt(r, "resubmissions") == 1 && Phase(r) == "Scheduled"; },
                           std::chrono::seconds(30)))
        << r << ": " << Phase(r) << " " << Message(r);
    for (const auto& n : PlacementNodes(r)) {
      EXPECT_NE(n, retried_nodes[1]) << r;
      EXPECT_NE(n, failed_nodes[0]) << r;
      EXPECT_NE(n, notready_nodes[0]) << r;
    }
  }
  // The interrupted attempts' pods are deleted; the new attempts have their own.
  // (Status is written before the Pods are deleted: wait for the deletes.)
  for (const char* r : {"retried", "failed", "notready"}) {
    std::string undeleted;
    EXPECT_TRUE(Eventually([&] {
      undeleted.clear();
      for (auto& [name, pod] : PodsOf(r)) {
        bool first_attempt = !name.ends_with("-r1");
        if (first_attempt && json::Find(pod, {"metadata", "deletionTimestamp"}) == nullptr) undeleted += name + " ";
      }
      return undeleted.empty();
    }, std::chrono::seconds(60))) << undeleted << "should be deleted";
  }
  // Blocks: the two re-placed gangs hold 4 whole instances; the failed one holds none; the
  // NotReady instances take nothing new.
  EXPECT_TRUE(Eventually([&] {
    CommandResult r = cp().Kubectl({"get", "fleet", FleetName("loss"), "-o",
                                    "jsonpath={.status.busyBlocks}/{.status.totalInstances}/{.status.readyInstances}"});
    return r.out == "8/7/5";
  }, std::chrono::seconds(30))) << cp().Kubectl({"get", "fleet", FleetName("loss"), "-o", "yaml"}).out;
  sampler.Stop();
  ExpectNoViolations(sampler, "node loss");
}

// Writes that took effect (not Lease updates, not Events) per berth-controller process, from the
// API server's audit log.
struct WriterSpan {
  std::string first, last;  // stageTimestamp, RFC 3339 with microseconds (sorts as text)
  int writes = 0;
};
std::map<std::string, WriterSpan> ControllerWrites(const std::string& audit_path, const std::string& since) {
  std::map<std::string, WriterSpan> spans;
  std::ifstream in(audit_path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("berth-controller/") == std::string::npos) continue;
    auto doc = json::Parse(line);
    if (!doc.ok()) continue;
    std::string ua = json::GetString(*doc, "userAgent");
    std::string resource = json::GetString(json::Find(*doc, {"objectRef", "resource"}));
    std::string ts = json::GetString(*doc, "stageTimestamp");
    if (ua.rfind("berth-controller/", 0) != 0 || resource == "leases" || ts < since) continue;
    // Only writes that took effect: a request cut off when its process froze or died mid-send
    // fails with 500 "unexpected EOF" and changes nothing.
    int64_t code = json::GetInt(json::Find(*doc, {"responseStatus"}) ? *json::Find(*doc, {"responseStatus"}) : *doc, "code");
    if (code < 200 || code >= 300) continue;
    WriterSpan& s = spans[ua];
    if (s.writes == 0 || ts < s.first) s.first = ts;
    if (ts > s.last) s.last = ts;
    ++s.writes;
  }
  return spans;
}

// The reply of every third Run status write (admissions, starts, ends, queue refreshes; the
// client's own retries included) is lost after the API server applied the write: the controller
// sees no answer, retries, and gets 409 Conflict for a write that is in fact done. Its watch of
// Runs lags 1.5 s (so its cache cannot settle the question before the next pass). An admission in
// that state keeps its blocks until the cache or a GET shows whether it was applied, so no block
// is ever given twice; one that was not applied (every attempt refused by the proxy) frees them
// again, so every run still ends Succeeded. (Releasing the blocks on that 409, as
// berth once did, gives blocks twice here within seconds.)
TEST_F(Faults, LostRepliesToRunStatusWritesNeverGiveABlockTwice) {
  auto nodes = Nodes("lost", 8, "4", "16Gi");
  Fleet("lost", "lost", "  blocks: 4\n  placement: cluster\n");
  std::atomic<int64_t> status_writes{0};
  const int apiserver_port = std::stoi(RunCommand({"cat", cp().dir() + "/apiserver.port"}).out);
  // The run a request writes the status of ("" for any other request).
  auto status_of = [](const std::string& method, const std::string& path) -> std::string {
    const std::string p = path.substr(0, path.find('?'));
    const size_t runs = p.find("/runs/");
    if ((method != "PATCH" && method != "PUT") || runs == std::string::npos || p.size() < 7 ||
        p.compare(p.size() - 7, 7, "/status") != 0) {
      return {};
    }
    return p.substr(runs + 6, p.size() - 7 - runs - 6);
  };
  std::mutex refused_mu;
  std::map<std::string, int> refused_per_run;
  ReplyDropper::Faults faults;
  // Runs whose name ends in 7: their first 6 status writes (a write and the client's 5 retries)
  // are answered 503 and never reach the API server, so an admission among them ends ambiguous
  // although nothing was written: its blocks must come free again (a GET shows it still pending).
  faults.refuse = [&](const std::string& method, const std::string& path) {
    const std::string run = status_of(method, path);
    if (run.empty() || run.back() != '7') return false;
    std::lock_guard<std::mutex> lock(refused_mu);
    return refused_per_run[run]++ < 6;
  };
  faults.drop = [&](const std::string& method, const std::string& path) {
    return !status_of(method, path).empty() && status_writes++ % 3 == 0;
  };
  faults.lag = [](const std::string& method, const std::string& path) {
    return method == "GET" && path.rfind("/apis/berth.dev/v1alpha1/runs?", 0) == 0 &&
           path.find("watch=true") != std::string::npos;
  };
  faults.lag_by = std::chrono::milliseconds(1500);
  auto proxy = std::make_unique<ReplyDropper>(apiserver_port, cp().dir() + "/certs/apiserver.crt",
                                              cp().dir() + "/certs/apiserver.key", std::move(faults));
  const std::string kubeconfig = cp().dir() + "/kubeconfig-proxied-" + ns_;
  proxy->WriteKubeconfig(cp().kubeconfig(), kubeconfig);
  controller_->Stop();
  controller_ = std::make_unique<ControllerProcess>(controller_args_, "controller-proxied", kubeconfig);
  controller_->Start();

  auto kubelet = ControllerProcess::KubeletSim();
  kubelet->Start();
  InvariantSampler sampler(client(), ns_, FleetName("lost"), Blocks(nodes, 4));
  sampler.Start();
  std::mt19937 rng(13);
  constexpr int kCount = 80;
  CreateAll(Burst("l", kCount, rng));
  EXPECT_TRUE(Eventually([&] { return CountPhase("Succeeded") == kCount; }, std::chrono::seconds(240)))
      << CountPhase("Succeeded") << " of " << kCount << " succeeded";
  sampler.Stop();
  sampler.CheckSettled("Succeeded");
  ExpectNoViolations(sampler, "lost replies");
  const std::string log = controller_->Log();
  size_t unconfirmed = 0, applied = 0, not_applied = 0;
  for (size_t at = log.find("admission write unconfirmed"); at != std::string::npos;
       at = log.find("admission write unconfirmed", at + 1)) {
    ++unconfirmed;
  }
  for (size_t at = log.find("unconfirmed admission was applied"); at != std::string::npos;
       at = log.find("unconfirmed admission was applied", at + 1)) {
    ++applied;
  }
  for (size_t at = log.find("was not applied"); at != std::string::npos; at = log.find("was not applied", at + 1)) {
    ++not_applied;
  }
  std::printf("lost replies figures: runs=%d requests=%lld status_writes=%lld replies_dropped=%lld refused=%lld "
              "unconfirmed_admissions=%zu settled_applied_by_get=%zu settled_not_applied=%zu\n",
              kCount, static_cast<long long>(proxy->requests()), static_cast<long long>(status_writes.load()),
              static_cast<long long>(proxy->dropped()), static_cast<long long>(proxy->refused()), unconfirmed, applied,
              not_applied);
  EXPECT_GE(proxy->dropped(), kCount / 2) << "the proxy should have cut many replies";
  EXPECT_GT(unconfirmed, 0u) << "some admissions should have met a lost reply";
  EXPECT_GE(not_applied, 1u) << "an admission refused 6 times (l-007's) should have been found not applied and its "
                                "blocks freed";
  // Back to a controller without the proxy before the proxy goes (TearDown needs a controller).
  kubelet->Stop();
  controller_->Stop();
  controller_ = std::make_unique<ControllerProcess>(controller_args_);
  controller_->Start();
}

// Audited requests of one kind, in the API server's order: stageTimestamp of the completed stage.
struct Audited {
  std::string verb, resource, subresource, name, received, completed;
  int64_t code = 0;
};
std::vector<Audited> AuditedRequests(const std::string& audit_path, const std::string& ns) {
  std::vector<Audited> out;
  std::ifstream in(audit_path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(ns) == std::string::npos || line.find("\"ResponseComplete\"") == std::string::npos) continue;
    auto doc = json::Parse(line);
    if (!doc.ok() || json::GetString(*doc, "stage") != "ResponseComplete") continue;
    if (json::GetString(json::Find(*doc, {"objectRef", "namespace"})) != ns) continue;
    if (json::GetString(*doc, "userAgent").rfind("berth-controller/", 0) != 0) continue;
    Audited a;
    a.verb = json::GetString(*doc, "verb");
    a.resource = json::GetString(json::Find(*doc, {"objectRef", "resource"}));
    a.subresource = json::GetString(json::Find(*doc, {"objectRef", "subresource"}));
    a.name = json::GetString(json::Find(*doc, {"objectRef", "name"}));
    a.received = json::GetString(*doc, "requestReceivedTimestamp");
    a.completed = json::GetString(*doc, "stageTimestamp");
    if (const json::Value* st = json::Find(*doc, {"responseStatus"})) a.code = json::GetInt(*st, "code");
    out.push_back(std::move(a));
  }
  return out;
}

// A run that ends (maxDuration, a failed pod) gets its terminal status before its Pods are
// deleted: a crash between the two then leaves a Failed run whose leftover Pods are deleted, not
// a Running run without Pods, which would read as an interruption and be resubmitted (both runs
// retry on interruption). Checked from the API server's audit log.
TEST_F(Faults, ARunThatEndsHasItsTerminalStatusWrittenBeforeItsPodsAreDeleted) {
  Nodes("end", 3, "4", "16Gi");
  Fleet("end", "end", "  blocks: 4\n  placement: cluster\n");
  Run("overtime", "  maxDuration: 3s\n  retry: {onEvents: [interruption], duration: 1h}\n");
  ASSERT_NO_FATAL_FAILURE(StartRun("overtime"));
  Run("crashed", "  nodes: 2\n  retry: {onEvents: [interruption], duration: 1h}\n");
  ASSERT_NO_FATAL_FAILURE(StartRun("crashed"));
  auto pods = PodsOf("crashed");
  ASSERT_EQ(pods.size(), 2u);
  SetPodPhase(pods.begin()->first, "Failed");  // rank 0 fails; rank 1 still runs and is deleted
  ASSERT_TRUE(WaitPhase("crashed", "Failed")) << Phase("crashed") << ": " << Message("crashed");
  EXPECT_EQ(Reason("crashed"), "PodFailed");
  ASSERT_TRUE(WaitPhase("overtime", "Failed", std::chrono::seconds(60))) << Phase("overtime") << ": " << Message("overtime");
  EXPECT_EQ(Reason("overtime"), "MaxDurationExceeded");

  for (const std::string run : {"overtime", "crashed"}) {
    std::string last_status, first_delete;
    ASSERT_TRUE(Eventually([&] {
      last_status.clear();
      first_delete.clear();
      for (const Audited& a : AuditedRequests(AuditPath(), ns_)) {
        if (a.resource == "runs" && a.subresource == "status" && a.name == run && a.code >= 200 && a.code < 300 &&
            a.completed > last_status) {
          last_status = a.completed;
        }
        if (a.resource == "pods" && a.verb == "delete" && a.name.rfind(run + "-", 0) == 0 &&
            (first_delete.empty() || a.received < first_delete)) {
          first_delete = a.received;
        }
      }
      return !last_status.empty() && !first_delete.empty();
    })) << run << ": no terminal status write or no pod delete in the audit log";
    EXPECT_LT(last_status, first_delete) << run << ": a pod was deleted (" << first_delete
                                         << ") before the terminal status was written (" << last_status << ")";
    EXPECT_EQ(StatusInt(run, "resubmissions"), 0) << run;
    EXPECT_EQ(Phase(run), "Failed") << run;
  }
}

TEST_F(Faults, LeaderFailoverKeepsOneWriterAtATimeAndBooksNothingTwice) {
  controller_->Kill();  // the fixture's controller does not elect
  const std::string since = k8s::FormatRfc3339(k8s::SystemClock().Now());
  std::vector<std::string> le = {"--leader-elect", "--leader-election-namespace=" + ns_,
                                 "--leader-election-lease-duration=5s", "--leader-election-renew-deadline=3s",
                                 "--leader-election-retry-period=500ms"};
  std::vector<std::unique_ptr<ControllerProcess>> procs;
  for (const char* name : {"a", "b"}) {
    procs.push_back(std::make_unique<ControllerProcess>(le, name));
    procs.back()->Start();
  }
  auto nodes = Nodes("fo", 16, "4", "16Gi");
  Fleet("fo", "fo", "  blocks: 4\n  placement: cluster\n");
  auto kubelet = ControllerProcess::KubeletSim();
  kubelet->Start();
  InvariantSampler sampler(client(), ns_, FleetName("fo"), Blocks(nodes, 4));
  sampler.Start();
  std::mt19937 rng(5);
  constexpr int kCount = 240;
  std::thread submitter([&, bodies = Burst("f", kCount, rng)] { CreateAll(bodies); });
  auto leader = [&]() -> ControllerProcess* {
    for (auto& p : procs) {
      if (p->Running() && p->Log().find("became the leader") != std::string::npos) return p.get();
    }
    return nullptr;
  };

  // 1. The leader is killed in the middle of the burst.
  ASSERT_TRUE(Eventually([&] { return CountPhase("Succeeded") >= 30; }, std::chrono::seconds(90)));
  ControllerProcess* first = leader();
  ASSERT_NE(first, nullptr);
  first->Kill();
  procs.push_back(std::make_unique<ControllerProcess>(le, "c"));
  procs.back()->Start();
  ASSERT_TRUE(Eventually([&] { return leader() != nullptr; }, std::chrono::seconds(20)));
  ControllerProcess* second = leader();

  // 2. The new leader is frozen (a long GC pause, a stopped VM) past its lease; a standby takes
  //    over; the frozen one wakes up and must not write.
  ASSERT_TRUE(Eventually([&] { return CountPhase("Succeeded") >= 90; }, std::chrono::seconds(90)));
  second->Pause();
  ASSERT_TRUE(Eventually([&] {
    for (auto& p : procs) {
      if (p.get() != second && p->Running() && p->Log().find("became the leader") != std::string::npos) return true;
    }
    return false;
  }, std::chrono::seconds(30)));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  second->Resume();
  submitter.join();
  // From here on, like a Deployment of two replicas: a controller that exits is replaced. (One
  // that cannot renew its lease within the renew deadline -- 3 s here, easily missed on a loaded
  // machine -- exits without writing, by design; without replacements the test would wait on a
  // cluster with no controller.) Replacements are more writers for the audit check below.
  int replacements = 0;
  auto supervise = [&] {
    int running = 0;
    for (auto& p : procs) running += p->Running();
    for (; running < 2; ++running) {
      procs.push_back(std::make_unique<ControllerProcess>(le, "r" + std::to_string(replacements++)));
      procs.back()->Start();
    }
  };
  EXPECT_TRUE(Eventually([&] {
    supervise();
    return CountPhase("Succeeded") == kCount;
  }, std::chrono::seconds(180))) << CountPhase("Succeeded") << " of " << kCount;
  std::printf("leader failover figures: controllers replaced after exiting=%d\n", replacements);
  sampler.Stop();
  sampler.CheckSettled("Succeeded");
  ExpectNoViolations(sampler, "leader failover");
  std::this_thread::sleep_for(std::chrono::seconds(1));

  // The API server's record: the writers' active spans never overlap.
  auto spans = ControllerWrites(AuditPath(), since);
  ASSERT_GE(spans.size(), 3u) << "three leaders in turn should have written";
  std::vector<std::pair<std::string, WriterSpan>> ordered(spans.begin(), spans.end());
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
  int total = 0;
  for (size_t i = 0; i < ordered.size(); ++i) {
    total += ordered[i].second.writes;
    std::printf("writer %s: %d writes from %s to %s\n", ordered[i].first.c_str(), ordered[i].second.writes,
                ordered[i].second.first.c_str(), ordered[i].second.last.c_str());
    if (i + 1 < ordered.size()) {
      EXPECT_LT(ordered[i].second.last, ordered[i + 1].second.first)
          << ordered[i].first << " wrote after " << ordered[i + 1].first << " had taken over";
    }
  }
  std::printf("leader failover figures: leaders=%zu audited_writes=%d\n", ordered.size(), total);
  for (auto& p : procs) {
    if (p->Running()) {
      EXPECT_EQ(p->Stop(), 0);
    }
  }
  kubelet->Stop();
  controller_ = std::make_unique<ControllerProcess>(controller_args_);
  controller_->Start();
}

}  // namespace
}  // namespace berth::testing
