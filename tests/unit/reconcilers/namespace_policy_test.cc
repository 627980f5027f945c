#include "reconcilers/objects/namespace_policy.h"

#include <gtest/gtest.h>

#include "k8s/json.h"

namespace berth::reconcilers {
namespace {

namespace json = k8s::json;

std::shared_ptr<const ResourceQuotaInfo> Quota(const std::string& text) {
  auto doc = json::Parse(text);
  EXPECT_TRUE(doc.ok()) << text;
  return DecodeResourceQuota(*doc);
}

TEST(NamespacePolicy, ResourceQuotasAreReadInBerthsUnits) {
  auto q = Quota(R"({"metadata":{"name":"q","namespace":"ml"},"spec":{"hard":{"cpu":"100"}},
    "status":{"hard":{"requests.cpu":"8","memory":"64Gi","requests.nvidia.com/gpu":"32","count/pods":"10","limits.cpu":"9",
                      "services":"3"},
              "used":{"requests.cpu":"1500m","memory":"16Gi","requests.nvidia.com/gpu":"24","count/pods":"3"}}})");
  ASSERT_TRUE(q);
  EXPECT_FALSE(q->scoped);
  // status.hard wins over spec.hard; limits.* and objects berth does not create are not read.
  EXPECT_EQ(q->hard, (std::map<std::string, int64_t>{{"pods", 10},
                                                     {"requests.cpu", 8000},
                                                     {"requests.memory", int64_t{64} << 30},
                                                     {"requests.nvidia.com/gpu", 32}}));
  EXPECT_EQ(q->used.at("requests.cpu"), 1500);
  // Without status (no quota controller yet), spec.hard with nothing used.
  auto fresh = Quota(R"({"metadata":{"name":"q","namespace":"ml"},"spec":{"hard":{"pods":"4"}}})");
  EXPECT_EQ(fresh->hard.at("pods"), 4);
  EXPECT_TRUE(fresh->used.empty());
  EXPECT_TRUE(Quota(R"({"metadata":{"name":"q","namespace":"ml"},"spec":{"scopes":["BestEffort"],"hard":{"pods":"4"}}})")->scoped);
}

TEST(NamespacePolicy, TheTightestQuotaPerResourceBinds) {
  auto a = Quota(R"({"metadata":{"name":"a","namespace":"ml"},"status":{"hard":{"requests.nvidia.com/gpu":"32","pods":"100"},
                   "used":{"requests.nvidia.com/gpu":"24"}}})");
  auto b = Quota(R"({"metadata":{"name":"b","namespace":"ml"},"status":{"hard":{"requests.nvidia.com/gpu":"16"},
                   "used":{"requests.nvidia.com/gpu":"4"}}})");
  auto scoped = Quota(R"({"metadata":{"name":"s","namespace":"ml"},"spec":{"scopes":["Terminating"]},
                        "status":{"hard":{"pods":"0"}}})");
  auto other = Quota(R"({"metadata":{"name":"c","namespace":"cv"},"status":{"hard":{"pods":"1"}}})");
  auto limits = QuotaLimits({b, other, scoped, a});
  ASSERT_EQ(limits.size(), 2u);
  EXPECT_EQ(limits[0].ns, "cv");
  EXPECT_EQ(limits[1].ns, "ml");
  const auto& gpu = limits[1].limits.at("requests.nvidia.com/gpu");
  EXPECT_EQ(gpu.quota, "a");  // 8 left, b has 12 left
  EXPECT_EQ(gpu.used, 24);
  EXPECT_EQ(gpu.hard, 32);
  EXPECT_EQ(limits[1].limits.at("pods").hard, 100);  // the scoped quota is not read
}

TEST(NamespacePolicy, CapSentences) {
  auto cap = ParsePriorityCap({{kMaxPriorityLabel, "70"}});
  ASSERT_TRUE(cap);
  EXPECT_EQ(PriorityCapNote("ml", 80, *cap),
            "priority capped at 70 by namespace ml (label berth.dev/max-priority: \"70\"); spec.priority is 80");
}

}  // namespace
}  // namespace berth::reconcilers
