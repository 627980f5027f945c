// The typed views of core objects (k8s/core_types.h): what berth reads of Pods, Events, Leases,
// ResourceQuotas and reviews, and the bodies it writes.

#include "k8s/core_types.h"

#include <gtest/gtest.h>

#include "k8s/config.h"

namespace berth::k8s {
namespace {

json::Document MustParse(const std::string& text) {
  auto d = json::Parse(text);
  EXPECT_TRUE(d.ok()) << text;
  return d.ok() ? std::move(d.value()) : json::Document();
}

TEST(CoreTypesTest, APodShowsItsPhaseContainersAndTheirStates) {
  auto doc = MustParse(R"({"metadata":{"name":"train-0","labels":{"berth.dev/rank":"0"},"deletionTimestamp":"2026-01-01T00:00:00Z",
    "ownerReferences":[{"uid":"u1","controller":true}]},
    "spec":{"containers":[{"name":"main"},{"name":"side"}]},
    "status":{"phase":"Failed","reason":"OutOfcpu","containerStatuses":[
      {"name":"main","state":{"terminated":{"exitCode":3}}},
      {"name":"side","state":{"waiting":{"reason":"ErrImagePull","message":"no such image"}}},
      {"name":"other","state":{"running":{}}}]}})");
  const PodView p = DecodePodView(doc);
  EXPECT_EQ(p.meta.name, "train-0");
  EXPECT_TRUE(p.meta.deleting);
  EXPECT_EQ(p.meta.Label("berth.dev/rank"), "0");
  ASSERT_EQ(p.meta.owners.size(), 1u);
  EXPECT_EQ(p.phase, "Failed");
  EXPECT_EQ(p.reason, "OutOfcpu");
  EXPECT_EQ(p.containers, (std::vector<std::string>{"main", "side"}));
  ASSERT_EQ(p.statuses.size(), 3u);
  EXPECT_TRUE(p.statuses[0].terminated);
  EXPECT_EQ(p.statuses[0].exit_code, 3);
  EXPECT_TRUE(p.statuses[1].waiting);
  EXPECT_EQ(p.statuses[1].waiting_reason, "ErrImagePull");
  EXPECT_EQ(p.statuses[1].waiting_message, "no such image");
  EXPECT_TRUE(p.statuses[2].running);
  EXPECT_FALSE(ParsePodView("{").ok());
  EXPECT_EQ(ParsePodView(R"({"metadata":{"name":"x"}})")->meta.name, "x");
}

TEST(CoreTypesTest, ListsGiveTheirItems) {
  auto list = MustParse(R"({"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})");
  EXPECT_EQ(ListItems(list).size(), 2u);
  EXPECT_EQ(DecodePodViews(list)[1].meta.name, "b");
  EXPECT_EQ(ListItemsJson(list), R"([{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}])");
  auto none = MustParse(R"({"kind":"List"})");
  EXPECT_TRUE(ListItems(none).empty());
  EXPECT_EQ(ListItemsJson(none), "[]");
}

TEST(CoreTypesTest, AnEventsTimeIsItsLastTimeElseTheNextOneSet) {
  auto list = MustParse(R"({"items":[
    {"metadata":{"name":"e1"},"type":"Warning","reason":"Resubmitted","message":"m","count":2,
     "firstTimestamp":"2026-01-01T00:00:00Z","lastTimestamp":"2026-01-01T00:05:00Z"},
    {"metadata":{"name":"e2","creationTimestamp":"2026-01-01T00:07:00Z"},"eventTime":"2026-01-01T00:06:00.000000Z"},
    {"metadata":{"name":"e3","creationTimestamp":"2026-01-01T00:08:00Z"}}]})");
  const auto events = DecodeEventViews(list);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].time, "2026-01-01T00:05:00Z");
  EXPECT_EQ(events[0].count, 2);
  EXPECT_EQ(events[0].reason, "Resubmitted");
  EXPECT_EQ(events[1].time, "2026-01-01T00:06:00.000000Z");
  EXPECT_EQ(events[1].count, 1);  // absent: once
  EXPECT_EQ(events[2].time, "2026-01-01T00:08:00Z");
}

TEST(CoreTypesTest, ALeaseReadsBackAsWritten) {
  Lease l{"berth", "berth-system", "", "me_1", 15, "2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:10.000000Z", 2};
  auto doc = MustParse(EncodeLease(l));
  const Lease back = DecodeLease(doc);
  EXPECT_EQ(back.name, "berth");
  EXPECT_EQ(back.ns, "berth-system");
  EXPECT_EQ(back.resource_version, "");
  EXPECT_EQ(back.holder, "me_1");
  EXPECT_EQ(back.duration_seconds, std::optional<int64_t>(15));
  EXPECT_EQ(back.acquire_time, l.acquire_time);
  EXPECT_EQ(back.renew_time, l.renew_time);
  EXPECT_EQ(back.transitions, 2);
  l.resource_version = "7";
  EXPECT_EQ(DecodeLease(MustParse(EncodeLease(l))).resource_version, "7");
  // No leaseDurationSeconds: unknown (the caller takes its own).
  EXPECT_FALSE(DecodeLease(MustParse(R"({"spec":{"holderIdentity":"x"}})")).duration_seconds.has_value());
  EXPECT_EQ(LeaseReleasePatch("9", "t"),
            R"({"metadata":{"resourceVersion":"9"},"spec":{"holderIdentity":"","leaseDurationSeconds":1,"renewTime":"t"}})");
}

TEST(CoreTypesTest, AResourceQuotaKeepsItsAmountsAsWritten) {
  auto doc = MustParse(R"({"metadata":{"name":"q","namespace":"ml"},"spec":{"hard":{"cpu":"10","pods":5}},
    "status":{"hard":{"cpu":"10"},"used":{"cpu":"500m"}}})");
  const ResourceQuotaView q = DecodeResourceQuotaView(doc);
  EXPECT_EQ(q.meta.ns, "ml");
  EXPECT_FALSE(q.scoped);
  EXPECT_EQ(q.spec_hard.at("cpu"), "10");
  EXPECT_EQ(q.spec_hard.count("pods"), 0u);  // not a string: not a quantity the API server wrote
  EXPECT_EQ(q.status_used.at("cpu"), "500m");
  EXPECT_TRUE(DecodeResourceQuotaView(MustParse(R"({"spec":{"scopes":["BestEffort"]}})")).scoped);
  EXPECT_TRUE(DecodeResourceQuotaView(MustParse(R"({"spec":{"scopeSelector":{}}})")).scoped);
  EXPECT_FALSE(DecodeResourceQuotaView(MustParse(R"({"spec":{"scopes":[]}})")).scoped);
}

TEST(CoreTypesTest, AnAccessReviewAsksAndIsAnswered) {
  EXPECT_EQ(SelfSubjectAccessReviewBody("berth.dev", "runs", "list", "ml"),
            R"({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":)"
            R"({"group":"berth.dev","resource":"runs","verb":"list","namespace":"ml"}}})");
  EXPECT_EQ(SelfSubjectAccessReviewBody("berth.dev", "runs", "list", "").find("namespace"), std::string::npos);
  EXPECT_TRUE(AccessReviewAllowed(MustParse(R"({"status":{"allowed":true}})")));
  EXPECT_FALSE(AccessReviewAllowed(MustParse(R"({"status":{"allowed":"true"}})")));
  EXPECT_FALSE(AccessReviewAllowed(MustParse(R"({})")));
}

TEST(CoreTypesTest, AnAdmissionReviewIsReadAndAnswered) {
  auto review = ParseAdmissionReview(R"({"request":{"uid":"u","operation":"CREATE","namespace":"ml",
    "object":{"metadata":{"name":"r"}}}})", json::kMaxDepth);
  ASSERT_TRUE(review.ok());
  const AdmissionRequest& r = (*review)->request;
  EXPECT_EQ(r.uid, "u");
  EXPECT_EQ(r.operation, "CREATE");
  EXPECT_EQ(r.ns, "ml");
  ASSERT_NE(r.object, nullptr);
  EXPECT_EQ(DecodeMeta(*r.object).name, "r");
  EXPECT_EQ(r.old_object, nullptr);
  EXPECT_FALSE(r.object_too_deep);
  EXPECT_EQ(ParseAdmissionReview("nope", json::kMaxDepth).status().message(), "the body is not an AdmissionReview");
  EXPECT_EQ(ParseAdmissionReview("[]", json::kMaxDepth).status().message(), "the body is not an AdmissionReview");
  EXPECT_EQ(ParseAdmissionReview("{}", json::kMaxDepth).status().message(), "the AdmissionReview has no request");
  EXPECT_EQ(ParseAdmissionReview(R"({"request":{}})", json::kMaxDepth).status().message(),
            "the AdmissionReview request has no uid");
  std::string deep = R"({"request":{"uid":"u","object":)" + std::string(200, '[') + std::string(200, ']') + "}}";
  auto deep_review = ParseAdmissionReview(deep, 32 * json::kMaxDepth);
  ASSERT_TRUE(deep_review.ok());
  EXPECT_TRUE((*deep_review)->request.object_too_deep);

  EXPECT_EQ(AdmissionAllowed("u", ""),
            R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true}})");
  EXPECT_EQ(AdmissionAllowed("u", "[]"),
            R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true,)"
            R"("patchType":"JSONPatch","patch":")" + Base64Encode("[]") + R"("}})");
  EXPECT_EQ(AdmissionRefused("u", 403, "Forbidden", "no \"x\""),
            R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":false,)"
            R"("status":{"code":403,"reason":"Forbidden","message":"no \"x\""}}})");
}

TEST(CoreTypesTest, AHeadlessServiceSelectsItsLabel) {
  auto doc = MustParse(HeadlessServiceJson("train", "ml", "berth.dev/run", "train",
                                           OwnerRef{"berth.dev/v1alpha1", "Run", "train", "u1", true}));
  EXPECT_EQ(json::GetString(*json::Find(doc, {"spec"}), "clusterIP"), "None");
  EXPECT_EQ(json::GetString(json::Find(doc, {"spec", "selector", "berth.dev/run"})), "train");
  EXPECT_EQ(json::GetString(json::Find(doc, {"metadata", "labels", "berth.dev/run"})), "train");
  const ObjectMeta meta = DecodeMeta(doc);
  EXPECT_EQ(meta.ns, "ml");
  ASSERT_NE(meta.ControllerRef(), nullptr);
  EXPECT_EQ(meta.ControllerRef()->uid, "u1");
}

TEST(CoreTypesTest, AnObjectIsShownWithoutBulkMetadata) {
  auto doc = MustParse(R"({"metadata":{"name":"r","annotations":{"a":"b"},"managedFields":[{}]},"spec":{"x":1}})");
  EXPECT_EQ(JsonWithoutBulkMetadata(doc), R"({"metadata":{"name":"r"},"spec":{"x":1}})");
}

}  // namespace
}  // namespace berth::k8s
