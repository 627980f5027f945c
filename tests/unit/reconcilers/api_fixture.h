#pragma once
// What the engine components' unit tests share: an in-memory API (tests/fakes/fake_api.h) on a
// fake clock, a client without retries (a fault is seen once), an event recorder, and Runs made
// and read as the API has them.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "fakes/fake_api.h"
#include "k8s/client.h"
#include "k8s/events.h"
#include "reconcilers/objects/run_types.h"

namespace berth::reconcilers {

class ApiFixture : public ::testing::Test {
 protected:
  ApiFixture()
      : api_(std::make_shared<testing::FakeApi>(clock_)),
        client_(std::make_shared<k8s::Client>(k8s::ClientConfig{}, api_)),
        events_(client_, clock_, "test") {
    client_->SetMaxRetries(0);
  }

  // Creates Run `name` in namespace "ns": `spec` are extra members of its spec (JSON, each with a
  // trailing comma); `status`, when given, is then written as berth would (a status subresource:
  // status on create is dropped).
  std::shared_ptr<const reconcilers::Run> CreateRun(const std::string& name, const std::string& spec = "",
                                       const std::string& status = "") {
    const auto& runs = k8s::resources::kRuns;
    auto r = client_->Create(runs.Path("ns"), R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":")" +
                                                  name + R"("},"spec":{)" + spec +
                                                  R"("template":{"spec":{"containers":[{"name":"m","image":"x"}]}}}})");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!status.empty()) {
      auto w = client_->MergePatch(runs.Path("ns", name, "status"), R"({"status":)" + status + "}");
      EXPECT_TRUE(w.ok()) << w.status().ToString();
    }
    return GetRun(name);
  }
  // Run `name` of namespace "ns" as the API has it now (nullptr when gone).
  std::shared_ptr<const reconcilers::Run> GetRun(const std::string& name) {
    auto got = client_->Get(k8s::resources::kRuns.Path("ns", name));
    return got.ok() ? DecodeRun(*got) : nullptr;
  }

  base::FakeClock clock_;
  std::shared_ptr<testing::FakeApi> api_;
  k8s::ClientPtr client_;
  k8s::EventRecorder events_;
};

}  // namespace berth::reconcilers
