// Topology levels (issue 48) through the real API server: Fleet.spec.topology and
// Run.spec.topology are refused by the CRD schema with the messages docs/api.md quotes (levels
// unique, at most 8, keys label keys; required and preferred exclusive), and a Fleet and a Run
// that use them are stored as written.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness.h"
#include "k8s/json.h"

namespace berth::testing {
namespace {

using k8s::resources::kFleets;
using k8s::resources::kRuns;

const std::string kTemplate = R"("template":{"spec":{"containers":[{"name":"main","image":"busybox"}]}})";

class TopologyValidation : public IntegrationTest {
 protected:
  // Creates the object; empty when it was stored (then deleted), else the API server's message.
  std::string Refusal(bool run, const std::string& spec) {
    const std::string name = run ? "topo" : "topo-" + ns_;
    const std::string body = R"({"apiVersion":"berth.dev/v1alpha1","kind":")" + std::string(run ? "Run" : "Fleet") +
                             R"(","metadata":{"name":")" + name + R"("},"spec":)" + spec + "}";
    auto created = client()->Create(run ? kRuns.Path(ns_) : kFleets.Path(), body);
    if (created.ok()) {
      (void)client()->Delete(run ? kRuns.Path(ns_, name) : kFleets.Path("", name));
      return "";
    }
    EXPECT_EQ(created.status().code(), 422) << created.status().ToString();
    return created.status().message();
  }
  static std::string Fleet(const std::string& levels) {
    return R"({"nodeSelector":{"pool":"gpu"},"placement":"cluster","topology":)" + levels + "}";
  }
  static std::string Run(const std::string& topology) {
    return R"({"nodes":2,"topology":)" + topology + "," + kTemplate + "}";
  }
};

TEST_F(TopologyValidation, AFleetsLevelsAreUniqueAtMostEightAndLabelKeys) {
  EXPECT_EQ(Refusal(false, Fleet(R"([{"key":"example.com/spine"},{"key":"example.com/rack"}])")), "");
  const std::string duplicate = Refusal(false, Fleet(R"([{"key":"example.com/rack"},{"key":"example.com/rack"}])"));
  EXPECT_NE(duplicate.find(R"(spec.topology[1]: Duplicate value: {"key":"example.com/rack"})"),
            std::string::npos)
      << duplicate;
  std::string nine = "[";
  for (int i = 0; i < 9; ++i) nine += std::string(i ? "," : "") + R"({"key":"example.com/l)" + std::to_string(i) + "\"}";
  const std::string many = Refusal(false, Fleet(nine + "]"));
  EXPECT_NE(many.find("spec.topology: Too many: 9: must have at most 8 items"), std::string::npos) << many;
  const std::string bad = Refusal(false, Fleet(R"([{"key":"my rack"}])"));
  EXPECT_NE(bad.find("spec.topology[0].key: Invalid value: \"my rack\": spec.topology[0].key in body should match"),
            std::string::npos)
      << bad;
  const std::string missing = Refusal(false, Fleet(R"([{}])"));
  EXPECT_NE(missing.find("spec.topology[0].key: Required value"), std::string::npos) << missing;
}

TEST_F(TopologyValidation, ARunsTopologyIsRequiredOrPreferredNotBoth) {
  EXPECT_EQ(Refusal(true, Run(R"({"required":"example.com/rack"})")), "");
  EXPECT_EQ(Refusal(true, Run(R"({"preferred":"example.com/rack"})")), "");
  const std::string both = Refusal(true, Run(R"({"required":"example.com/rack","preferred":"example.com/spine"})"));
  EXPECT_NE(both.find("spec.topology: Invalid value: spec.topology takes one of required and preferred, not both"),
            std::string::npos)
      << both;
  const std::string bad = Refusal(true, Run(R"({"required":"my rack"})"));
  EXPECT_NE(bad.find("spec.topology.required: Invalid value: \"my rack\": spec.topology.required in body should match"),
            std::string::npos)
      << bad;
}

}  // namespace
}  // namespace berth::testing
