// Issue 6: the dashboard, driven in Debian's headless Chromium against a real controller and API
// server (tests/dashboard/drive.mjs), then the API state re-checked from here.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "engine_fixture.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;

const std::string kSource = BERTH_SOURCE_DIR;

class Dashboard : public EngineTest {
 protected:
  Dashboard() {
    port_ = FreePort();
    controller_args_ = {"--metrics-bind-address=127.0.0.1:" + std::to_string(port_)};
  }
  std::string Url(const std::string& path = "") const { return "http://127.0.0.1:" + std::to_string(port_) + "/" + path; }

  void WaitServing() {
    int code = 0;
    ASSERT_TRUE(Eventually([&] {
      HttpGet(Url("api/queue"), &code, cp().AdminToken());
      return code == 200;
    })) << controller_->Log();
  }

  int64_t SpecPriority(const std::string& run) {
    auto d = RunDoc(run);
    const json::Value* v = d.IsObject() ? json::Find(d, {"spec", "priority"}) : nullptr;
    return v != nullptr && v->IsInt64() ? v->GetInt64() : -1;
  }

  // Names of the queued runs of this namespace in the controller's order, e.g. "a,b,c".
  std::string QueueOrder() {
    auto doc = json::Parse(HttpGet(Url("api/queue?namespace=" + ns_), nullptr, cp().AdminToken()));
    if (!doc.ok()) return "?";
    const json::Value* items = json::Find(*doc, {"items"});
    std::string out;
    if (items == nullptr || !items->IsArray()) return "?";
    for (auto& it : items->GetArray()) out += (out.empty() ? "" : ",") + json::GetString(it, "name");
    return out;
  }

  int port_;
};

TEST_F(Dashboard, ServesThePageAndItsFilesWithNothingFromOutside) {
  WaitServing();
  int code = 0;
  std::string index = HttpGet(Url(), &code);
  EXPECT_EQ(code, 200);
  EXPECT_NE(index.find("<script src=\"static/app.js\"></script>"), std::string::npos) << index;
  EXPECT_NE(index.find("href=\"static/style.css\""), std::string::npos) << index;
  for (const char* file : {"app.js", "style.css", "favicon.svg"}) {
    std::string body = HttpGet(Url(std::string("static/") + file), &code);
    EXPECT_EQ(code, 200) << file;
    EXPECT_FALSE(body.empty()) << file;
  }
  // Relative URLs only and no external resource, so the page works under any proxy prefix.
  for (const std::string& body : {index, HttpGet(Url("static/app.js")), HttpGet(Url("static/style.css"))}) {
    for (const char* bad : {"src=\"/", "href=\"/", "src=\"http", "href=\"http", "url(http", "@import", "fetch('/", "fetch(\"/"}) {
      EXPECT_EQ(body.find(bad), std::string::npos) << bad;
    }
  }
  HttpGet(Url("static/nothing.js"), &code);
  EXPECT_EQ(code, 404);
}

TEST_F(Dashboard, QueuePriorityChangesFleetsAndRunDetailInChromium) {
  // The editor may read and patch runs (and read events and logs) in this namespace; the reader (a
  // ServiceAccount) may read the same but patch nothing; the viewer may do nothing.
  Apply(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: run-editor}
rules:
- apiGroups: [berth.dev]
  resources: [runs]
  verbs: [get, list, patch]
- apiGroups: [""]
  resources: [events, pods]
  verbs: [get, list]
- apiGroups: [""]
  resources: [pods/log]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: run-reader}
rules:
- apiGroups: [berth.dev]
  resources: [runs]
  verbs: [get, list]
- apiGroups: [""]
  resources: [events, pods]
  verbs: [get, list]
- apiGroups: [""]
  resources: [pods/log]
  verbs: [get]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: reader}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader-reads-runs}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: run-reader}
subjects: [{kind: ServiceAccount, name: reader}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: editor-edits-runs}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: run-editor}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: editor}]
)");

  // Tools first (Debian chromium, playwright-core from the npm registry), while the scene is set.
  CommandResult setup = RunCommand({"bash", kSource + "/tests/dashboard/setup.sh"});
  ASSERT_EQ(setup.exit_code, 0) << setup.out << setup.err;
  std::string modules = setup.out;
  while (!modules.empty() && (modules.back() == '\n' || modules.back() == ' ')) modules.pop_back();

  // One fleet with one slot, held by a running blocker; a, b, c queue behind it with the same priority.
  std::string node = Nodes("slot", 1, "2", "4Gi").front();
  Fleet("slot", "slot");
  Run("blocker");
  ASSERT_TRUE(WaitPhase("blocker", "Scheduled"));
  StartRun("blocker");
  const std::string queued = "  priority: 50\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n";
  for (const char* name : {"a", "b", "c"}) {
    Run(name, queued);
    ASSERT_TRUE(Eventually([&] { return Reason(name) == "NoCapacity"; })) << name << ": " << Message(name);
  }
  WaitServing();
  ASSERT_TRUE(Eventually([&] { return QueueOrder() == "a,b,c"; })) << QueueOrder();

  CommandResult reader = Kubectl({"create", "token", "reader"});
  ASSERT_EQ(reader.exit_code, 0) << reader.err;
  const std::string reader_token_file = cp().dir() + "/reader-" + ns_ + ".token";
  {
    std::ofstream f(reader_token_file);
    f << reader.out;
  }

  const char* artifacts_env = std::getenv("BERTH_TEST_ARTIFACTS");
  std::string artifacts = artifacts_env != nullptr && *artifacts_env ? artifacts_env : kSource + "/build/test-artifacts/dashboard";
  std::vector<std::string> argv = {"node",
                                   kSource + "/tests/dashboard/drive.mjs",
                                   "--modules=" + modules,
                                   "--url=" + Url(),
                                   "--namespace=" + ns_,
                                   "--fleet=" + FleetName("slot"),
                                   "--node=" + node,
                                   "--editor-token-file=" + cp().dir() + "/editor.token",
                                   "--viewer-token-file=" + cp().dir() + "/viewer.token",
                                   "--reader-token-file=" + reader_token_file,
                                   "--artifacts=" + artifacts};
  if (const char* docs = std::getenv("BERTH_UPDATE_DOCS_IMAGES"); docs != nullptr && std::string(docs) == "1") {
    argv.push_back("--docs-images=" + kSource + "/docs/images");
  }
  CommandResult drive = RunCommand(argv);
  std::printf("---- tests/dashboard/drive.mjs ----\n%s%s", drive.out.c_str(), drive.err.c_str());
  ASSERT_EQ(drive.exit_code, 0) << "the browser checks failed; screenshots in " << artifacts;

  // The API agrees with what the page showed: only the editor's changes happened. The blocker
  // was stopped (by the editor; the reader was refused), b suspended and resumed keeping its place,
  // and c, first in the queue, got the freed slot.
  EXPECT_EQ(SpecPriority("c"), 90);
  EXPECT_EQ(SpecPriority("a"), 50);
  EXPECT_EQ(SpecPriority("b"), 50);
  EXPECT_EQ(Phase("blocker"), "Failed");
  EXPECT_EQ(Reason("blocker"), "Stopped");
  EXPECT_TRUE(WaitPhase("c", "Scheduled")) << Phase("c") << ": " << Message("c");
  EXPECT_TRUE(Eventually([&] { return QueueOrder() == "a,b"; })) << QueueOrder();
  for (const char* name : {"a", "b"}) EXPECT_EQ(Phase(name), "Pending") << name;
  const json::Value* suspend = json::Find(RunDoc("b"), {"spec", "suspend"});
  EXPECT_TRUE(suspend != nullptr && suspend->IsBool() && !suspend->GetBool()) << "b was resumed";
  std::string log = controller_->Log();
  EXPECT_NE(log.find("priority of run " + ns_ + "/c set to 90"), std::string::npos) << log;
  EXPECT_EQ(log.find("priority of run " + ns_ + "/a set to"), std::string::npos) << log;
  EXPECT_NE(log.find("stop of run " + ns_ + "/blocker requested with the viewer's token"), std::string::npos) << log;
  EXPECT_NE(log.find("suspend of run " + ns_ + "/b requested"), std::string::npos) << log;
  EXPECT_NE(log.find("resume of run " + ns_ + "/b requested"), std::string::npos) << log;
  for (const std::string& token_file : {cp().dir() + "/editor.token", reader_token_file}) {
    std::ifstream f(token_file);
    std::string token((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    while (!token.empty() && (token.back() == '\n' || token.back() == ' ')) token.pop_back();
    ASSERT_FALSE(token.empty());
    EXPECT_EQ(log.find(token), std::string::npos) << "a viewer's token is in the controller's log";
  }
}

}  // namespace
}  // namespace berth::testing
