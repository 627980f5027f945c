#include "controller/admission.h"

#include <gtest/gtest.h>

#include <optional>
#include <utility>
#include <vector>

#include "k8s/config.h"
#include "k8s/json.h"
#include "reconcilers/objects/run_types.h"

namespace berth::controller {
namespace {

namespace json = k8s::json;

std::string Review(const std::string& operation, const std::string& metadata) {
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","operation":")" + operation +
         R"(","object":{"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":)" + metadata + "}}}";
}

// The decoded JSON patch of an answer ("" when it has none).
std::string Patch(const std::string& answer) {
  auto doc = json::Parse(answer);
  EXPECT_TRUE(doc.ok()) << answer;
  EXPECT_EQ(json::GetString(json::Find(*doc, {"response", "uid"})), "u-1");
  EXPECT_TRUE(json::Find(*doc, {"response", "allowed"})->GetBool());
  std::string b64 = json::GetString(json::Find(*doc, {"response", "patch"}));
  if (b64.empty()) return "";
  EXPECT_EQ(json::GetString(json::Find(*doc, {"response", "patchType"})), "JSONPatch");
  return k8s::Base64Decode(b64).value();
}

TEST(AdmissionTest, AddsTheFinalizerToNewRuns) {
  EXPECT_EQ(Patch(ReviewRun(Review("CREATE", R"({"name":"r"})")).value()),
            R"([{"op":"add","path":"/metadata/finalizers","value":["berth.dev/run-cleanup"]}])");
  EXPECT_EQ(Patch(ReviewRun(Review("CREATE", R"({"name":"r","finalizers":["other"]})")).value()),
            R"([{"op":"add","path":"/metadata/finalizers/-","value":"berth.dev/run-cleanup"}])");
  EXPECT_EQ(Patch(ReviewRun(Review("CREATE", R"({"name":"r","finalizers":["berth.dev/run-cleanup"]})")).value()), "");
  EXPECT_EQ(Patch(ReviewRun(Review("UPDATE", R"({"name":"r"})")).value()), "");
}

TEST(AdmissionTest, RefusesWhatIsNotAnAdmissionReview) {
  for (const char* body : {"", "[]", "{}", R"({"request":{}})", "not json"}) {
    EXPECT_FALSE(ReviewRun(body).ok()) << body;
  }
}

// Regression: the webhook parsed any body with RapidJSON's recursive parser; a deep one
// overflowed the stack.
TEST(AdmissionTest, RefusesDeeplyNestedBodiesWithoutCrashing) {
  for (const std::string open : {"[", "{\"request\":"}) {
    std::string deep;
    for (int i = 0; i < 1 << 20; ++i) deep += open;
    auto r = ReviewRun(deep);
    EXPECT_FALSE(r.ok()) << open;
  }
  // A real review nests far less than the cap.
  EXPECT_TRUE(ReviewRun(Review("CREATE", R"({"name":"r","labels":{"a":"b"}})")).ok());
}

// Issue 29, item 1: a Run nested deeper than berth reads (json::kMaxDepth) is refused with a
// reason (allowed: false), not with a 400 that failurePolicy: Ignore would let through.
TEST(AdmissionTest, RefusesARunBerthCouldNotRead) {
  auto nested = [](int levels) {
    std::string v = "1";
    for (int i = 0; i < levels; ++i) v = R"({"x":)" + v + "}";
    return R"({"name":"deep","annotations":{"a":"b"}},"spec":{"template":{"spec":{"containers":[{"name":"c","x":)" +
           v + "}]}}}";
  };
  for (const std::string op : {"CREATE", "UPDATE"}) {
    auto r = ReviewRun(Review(op, nested(200)));
    ASSERT_TRUE(r.ok()) << r.status().message();
    auto doc = json::Parse(*r);
    ASSERT_TRUE(doc.ok());
    EXPECT_FALSE(json::Find(*doc, {"response", "allowed"})->GetBool()) << *r;
    EXPECT_EQ(json::GetString(json::Find(*doc, {"response", "uid"})), "u-1");
    EXPECT_EQ(json::GetInt(*json::Find(*doc, {"response", "status"}), "code"), 422);
    EXPECT_NE(json::GetString(json::Find(*doc, {"response", "status", "message"}))
                  .find("berth cannot read a Run nested deeper than 128 levels"),
              std::string::npos)
        << *r;
  }
  // Deep, but within what berth reads: allowed.
  auto ok = ReviewRun(Review("CREATE", nested(100)));
  ASSERT_TRUE(ok.ok());
  EXPECT_NE(ok->find(R"("allowed":true)"), std::string::npos) << *ok;
}

// Issue 29, item 6: a template over reconcilers::kMaxTemplateBytes is refused when it is created
// or changed; an update that leaves it as it was (the finalizer's removal) goes through.
TEST(AdmissionTest, RefusesATemplateOverTheBound) {
  auto run = [](size_t pad) {
    return R"({"name":"big"},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"i","env":[{"name":"P","value":")" +
           std::string(pad, 'x') + R"("}]}]}}})";
  };
  auto refusal = [](const std::string& answer) {
    auto doc = json::Parse(answer);
    if (!doc.ok() || json::Find(*doc, {"response", "allowed"})->GetBool()) return std::string("allowed");
    return std::to_string(json::GetInt(*json::Find(*doc, {"response", "status"}), "code")) + " " +
           json::GetString(json::Find(*doc, {"response", "status", "message"}));
  };
  const std::string big = run(reconcilers::kMaxTemplateBytes);
  auto created = ReviewRun(Review("CREATE", big));
  ASSERT_TRUE(created.ok());
  const std::string sentence = "422 spec.template is 262226 bytes as JSON; berth takes templates of at most 262144 bytes "
                               "(256 KiB): put large data in a ConfigMap";
  EXPECT_EQ(refusal(*created).substr(0, sentence.size()), sentence);
  EXPECT_EQ(refusal(ReviewRun(Review("CREATE", run(1000))).value()), "allowed");
  // An update: refused when it makes the template too large, allowed when the template stays.
  const std::string request = Review("UPDATE", big);
  const std::string with_old = request.substr(0, request.size() - 2) + R"(,"oldObject":{"metadata":)" + big + "}}}";
  EXPECT_EQ(refusal(ReviewRun(with_old).value()), "allowed");
  EXPECT_EQ(refusal(ReviewRun(Review("UPDATE", big)).value()).substr(0, sentence.size()), sentence);
}

TEST(AdmissionTest, Base64RoundTrips) {
  for (const std::string s : {"", "a", "ab", "abc", "abcd", "hello, berth\n"}) {
    EXPECT_EQ(k8s::Base64Decode(k8s::Base64Encode(s)).value(), s);
  }
  EXPECT_EQ(k8s::Base64Encode("abcd"), "YWJjZA==");
}

// Issue 17: berth.dev/max-priority. `spec` and `old_spec` are the Run's spec JSON.
std::string PriorityReview(const std::string& operation, const std::string& spec, const std::string& old_spec = {}) {
  std::string r = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","namespace":"ml","operation":")" +
                  operation + R"(","object":{"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":"r","namespace":"ml"},"spec":)" +
                  spec + "}";
  if (!old_spec.empty()) r += R"(,"oldObject":{"metadata":{"name":"r"},"spec":)" + old_spec + "}";
  return r + "}}";
}

struct Answer {
  bool allowed = true;
  int code = 0;
  std::string message;
};
Answer Decide(const std::string& review, std::optional<reconcilers::PriorityCap> cap) {
  auto answer = ReviewRun(review, [&](const std::string& ns) {
    EXPECT_EQ(ns, "ml");
    return cap;
  });
  EXPECT_TRUE(answer.ok());
  auto doc = json::Parse(answer.value());
  EXPECT_TRUE(doc.ok());
  Answer a;
  a.allowed = json::Find(*doc, {"response", "allowed"})->GetBool();
  const json::Value* code = json::Find(*doc, {"response", "status", "code"});
  a.code = code != nullptr && code->IsInt() ? code->GetInt() : 0;
  a.message = json::GetString(json::Find(*doc, {"response", "status", "message"}));
  return a;
}

TEST(AdmissionTest, RefusesPrioritiesAboveTheNamespaceCap) {
  const auto cap = reconcilers::ParsePriorityCap({{"berth.dev/max-priority", "70"}});
  ASSERT_TRUE(cap);
  Answer a = Decide(PriorityReview("CREATE", R"({"priority":80})"), cap);
  EXPECT_FALSE(a.allowed);
  EXPECT_EQ(a.code, 403);
  EXPECT_EQ(a.message,
            "spec.priority 80 is above 70, the highest priority runs in namespace ml may have (namespace label "
            "berth.dev/max-priority: \"70\")");
  EXPECT_TRUE(Decide(PriorityReview("CREATE", R"({"priority":70})"), cap).allowed);
  EXPECT_TRUE(Decide(PriorityReview("CREATE", R"({"priority":80})"), std::nullopt).allowed);
  // No priority: the CRD's default, 50.
  EXPECT_FALSE(Decide(PriorityReview("CREATE", "{}"), reconcilers::ParsePriorityCap({{"berth.dev/max-priority", "40"}})).allowed);
  // Updates: refused only when they change the priority to a value above the cap.
  EXPECT_FALSE(Decide(PriorityReview("UPDATE", R"({"priority":90})", R"({"priority":60})"), cap).allowed);
  EXPECT_TRUE(Decide(PriorityReview("UPDATE", R"({"priority":90,"stop":true})", R"({"priority":90})"), cap).allowed);
  EXPECT_TRUE(Decide(PriorityReview("UPDATE", R"({"priority":60})", R"({"priority":90})"), cap).allowed);
  EXPECT_TRUE(Decide(PriorityReview("DELETE", R"({"priority":90})"), cap).allowed);
}

// Issue 29 (9): a review's namespace goes into an API path (the cap's lookup) only when it is a
// namespace name; anything else is refused before any lookup.
TEST(AdmissionTest, ANamespaceThatIsNotANameIsRefusedBeforeItsLookup) {
  for (const std::string& ns : std::vector<std::string>{"../../../api/v1/secrets", "ml/../kube-system", "ML", "a%2Fb",
                                                         std::string(64, 'a')}) {
    std::string review = PriorityReview("CREATE", R"({"priority":80})");
    const std::string from = R"("namespace":"ml")";
    review.replace(review.find(from), from.size(), "\"namespace\":" + json::Quote(ns));
    bool looked_up = false;
    auto answer = ReviewRun(review, [&](const std::string&) {
      looked_up = true;
      return std::optional<reconcilers::PriorityCap>{};
    });
    EXPECT_FALSE(answer.ok()) << ns;
    EXPECT_NE(answer.status().message().find("is not a namespace name"), std::string::npos) << answer.status().message();
    EXPECT_FALSE(looked_up) << ns;
  }
  EXPECT_TRUE(Decide(PriorityReview("CREATE", R"({"priority":80})"), std::nullopt).allowed);  // "ml" is one
}

TEST(AdmissionTest, AMalformedCapCountsAsZero) {
  for (const char* v : {"", "high", "-1", "101", "7.5", " 70", "0x10", "1000"}) {
    auto cap = reconcilers::ParsePriorityCap({{"berth.dev/max-priority", v}});
    ASSERT_TRUE(cap) << v;
    EXPECT_TRUE(cap->malformed) << v;
    EXPECT_EQ(cap->cap, 0) << v;
  }
  for (auto [v, n] : std::vector<std::pair<const char*, int>>{{"0", 0}, {"070", 70}, {"100", 100}}) {
    auto cap = reconcilers::ParsePriorityCap({{"berth.dev/max-priority", v}});
    ASSERT_TRUE(cap) << v;
    EXPECT_FALSE(cap->malformed) << v;
    EXPECT_EQ(cap->cap, n) << v;
  }
  EXPECT_FALSE(reconcilers::ParsePriorityCap({{"other", "1"}}));
  Answer a = Decide(PriorityReview("CREATE", R"({"priority":1})"), reconcilers::ParsePriorityCap({{"berth.dev/max-priority", "high"}}));
  EXPECT_FALSE(a.allowed);
  EXPECT_NE(a.message.find("its label berth.dev/max-priority: \"high\" is not a whole number from 0 to 100, so berth counts it as 0"),
            std::string::npos)
      << a.message;
}

// Issue 44 (7): a namespace without the label is capped at --default-max-priority (below 100).
TEST(AdmissionTest, NamespacesWithoutTheLabelAreCappedAtTheDefault) {
  EXPECT_FALSE(reconcilers::ParsePriorityCap({}, 100));
  const auto cap = reconcilers::ParsePriorityCap({{"other", "1"}}, 60);
  ASSERT_TRUE(cap);
  EXPECT_TRUE(cap->by_default);
  EXPECT_EQ(cap->cap, 60);
  Answer a = Decide(PriorityReview("CREATE", R"({"priority":90})"), cap);
  EXPECT_FALSE(a.allowed);
  EXPECT_EQ(a.code, 403);
  EXPECT_EQ(a.message,
            "spec.priority 90 is above 60, the highest priority runs in namespace ml may have (no namespace label "
            "berth.dev/max-priority: berth's default cap, defaultMaxPriority)");
  EXPECT_TRUE(Decide(PriorityReview("CREATE", R"({"priority":60})"), cap).allowed);
  // The namespace's own label wins over the default, either way.
  const auto labelled = reconcilers::ParsePriorityCap({{"berth.dev/max-priority", "95"}}, 60);
  ASSERT_TRUE(labelled);
  EXPECT_FALSE(labelled->by_default);
  EXPECT_TRUE(Decide(PriorityReview("CREATE", R"({"priority":90})"), labelled).allowed);
  EXPECT_EQ(reconcilers::PriorityCapNote("ml", 90, *cap),
            "priority capped at 60 by namespace ml (no label berth.dev/max-priority: berth's default cap, "
            "defaultMaxPriority); spec.priority is 90");
}

// Issue 44 (2): a placed run's template does not change; a pending run's may.
TEST(AdmissionTest, APlacedRunsTemplateDoesNotChange) {
  auto review = [](const std::string& phase, const std::string& image, const std::string& old_image) {
    const std::string spec = R"({"template":{"spec":{"containers":[{"name":"c","image":")";
    return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","namespace":"ml","operation":"UPDATE",)"
           R"("object":{"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":"r","namespace":"ml"},"spec":)" +
           spec + image + R"("}]}}},"status":{"phase":")" + phase + R"("}},"oldObject":{"apiVersion":"berth.dev/v1alpha1",)"
           R"("kind":"Run","metadata":{"name":"r","namespace":"ml"},"spec":)" + spec + old_image +
           R"("}]}}},"status":{"phase":")" + phase + R"("}}}})";
  };
  for (const char* phase : {"Scheduled", "Running"}) {
    Answer a = Decide(review(phase, "evil", "busybox"), std::nullopt);
    EXPECT_FALSE(a.allowed) << phase;
    EXPECT_EQ(a.code, 422) << phase;
    EXPECT_EQ(a.message, "spec.template cannot change while the run is placed (phase " + std::string(phase) +
                             "): its Pods were made from it; stop the run (kubectl berth stop) and submit a new one");
    EXPECT_TRUE(Decide(review(phase, "busybox", "busybox"), std::nullopt).allowed) << phase;
  }
  for (const char* phase : {"Pending", "Succeeded", "Failed"}) {
    EXPECT_TRUE(Decide(review(phase, "evil", "busybox"), std::nullopt).allowed) << phase;
  }
}

// Issue 45 (2): the 1.35 webhook for Jobs. `spec` is the Job's spec JSON.
std::string JobReview(const std::string& operation, const std::string& spec) {
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","namespace":"ml","operation":")" +
         operation + R"(","object":{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"train","namespace":"ml",)" +
         R"("labels":{"berth.dev/queue":"true"}},"spec":)" + spec + "}}}";
}

// The same patch as the chart's MutatingAdmissionPolicy <fullname>-jobs: suspend, and the gate in
// the Pod template, after the Job's own gates and never twice.
TEST(AdmissionTest, HoldsAJobBeingCreatedSuspendedWithTheGateInItsTemplate) {
  const std::string containers = R"("containers":[{"name":"main","image":"busybox"}])";
  EXPECT_EQ(Patch(ReviewJob(JobReview("CREATE", R"({"suspend":false,"template":{"spec":{)" + containers + "}}}")).value()),
            R"([{"op":"add","path":"/spec/suspend","value":true},)"
            R"({"op":"add","path":"/spec/template/spec/schedulingGates","value":[{"name":"berth.dev/admission"}]}])");
  EXPECT_EQ(Patch(ReviewJob(JobReview("CREATE", R"({"template":{"spec":{"schedulingGates":[{"name":"mine"}],)" + containers +
                                                    "}}}")).value()),
            R"([{"op":"add","path":"/spec/suspend","value":true},)"
            R"({"op":"add","path":"/spec/template/spec/schedulingGates/-","value":{"name":"berth.dev/admission"}}])");
  // Already gated (the second of the two webhook entries, for a labelled Job of a queue-all
  // namespace): suspend only.
  EXPECT_EQ(Patch(ReviewJob(JobReview("CREATE", R"({"template":{"spec":{"schedulingGates":[{"name":"berth.dev/admission"}],)" +
                                                    containers + "}}}")).value()),
            R"([{"op":"add","path":"/spec/suspend","value":true}])");
  // schedulingGates that is not a list (no API server sends one): replaced by the list of the gate.
  EXPECT_EQ(Patch(ReviewJob(JobReview("CREATE", R"({"template":{"spec":{"schedulingGates":null}}})")).value()),
            R"([{"op":"add","path":"/spec/suspend","value":true},)"
            R"({"op":"add","path":"/spec/template/spec/schedulingGates","value":[{"name":"berth.dev/admission"}]}])");
  // Only creation is held: an update or a delete is allowed unchanged.
  EXPECT_EQ(Patch(ReviewJob(JobReview("UPDATE", R"({"suspend":false,"template":{"spec":{}}})")).value()), "");
  EXPECT_EQ(Patch(ReviewJob(R"({"request":{"uid":"u-1","operation":"DELETE"}})").value()), "");
}

// A Job without a Pod template is refused with a sentence (422); what is not an AdmissionReview,
// or a CREATE without its object, is an error (HTTP 400): with failurePolicy Fail, neither lets a
// Job in unheld. Nothing escapes as an exception, whatever the body.
TEST(AdmissionTest, AJobBerthCannotHoldIsRefusedAndHostileBodiesAreErrors) {
  for (const std::string spec : {"{}", "[]", "1", R"({"template":{}})", R"({"template":{"spec":[]}})", R"({"template":"x"})"}) {
    auto r = ReviewJob(JobReview("CREATE", spec));
    ASSERT_TRUE(r.ok()) << spec;
    auto doc = json::Parse(*r);
    ASSERT_TRUE(doc.ok());
    EXPECT_FALSE(json::Find(*doc, {"response", "allowed"})->GetBool()) << spec;
    EXPECT_EQ(json::GetInt(*json::Find(*doc, {"response", "status"}), "code"), 422);
    EXPECT_EQ(json::GetString(json::Find(*doc, {"response", "status", "message"})),
              "berth cannot hold a Job without spec.template.spec: there is no Pod template to gate");
  }
  for (const std::string& body : std::vector<std::string>{"", "[]", "{}", "not json", R"({"request":{}})", R"({"request":{"uid":"u-1","operation":"CREATE"}})",
                                 R"({"request":{"uid":"u-1","operation":"CREATE","object":null}})", std::string(1 << 20, '{'),
                                 std::string(1 << 20, '[')}) {
    auto r = ReviewJob(body);
    if (r.ok()) {
      // Only an object that is null may get this far: refused, never allowed unheld.
      EXPECT_EQ(r->find(R"("allowed":true)"), std::string::npos) << body.substr(0, 80) << ": " << *r;
    }
  }
  EXPECT_FALSE(ReviewJob(R"({"request":{"uid":"u-1","operation":"CREATE"}})").ok());
  // A large Job (many containers, a long gate list): held, its own gates kept.
  std::string gates;
  for (int i = 0; i < 2000; ++i) gates += std::string(i ? "," : "") + R"({"name":"g)" + std::to_string(i) + R"("})";
  std::string big = R"({"template":{"spec":{"schedulingGates":[)" + gates + R"(],"containers":[{"name":"c","image":")" +
                    std::string(1 << 20, 'x') + R"("}]}}})";
  EXPECT_EQ(Patch(ReviewJob(JobReview("CREATE", big)).value()),
            R"([{"op":"add","path":"/spec/suspend","value":true},)"
            R"({"op":"add","path":"/spec/template/spec/schedulingGates/-","value":{"name":"berth.dev/admission"}}])");
}

// Issue 45 (2): the 1.35 webhook for JobSets. `spec` is the JobSet's spec JSON.
std::string JobSetReview(const std::string& operation, const std::string& spec) {
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","namespace":"ml","operation":")" +
         operation + R"(","object":{"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","metadata":{"name":"js",)" +
         R"("namespace":"ml","labels":{"berth.dev/queue":"true"}},"spec":)" + spec + "}}}";
}

// A replicated Job whose Pod template's spec is `pod_spec`.
std::string ReplicatedJob(const std::string& name, const std::string& pod_spec) {
  return R"({"name":")" + name + R"(","replicas":2,"template":{"spec":{"template":{"spec":)" + pod_spec + "}}}}";
}

// The same as the chart's MutatingAdmissionPolicy <fullname>-jobsets: suspend, and the gate in
// every replicated Job's Pod template, after its own gates and never twice.
TEST(AdmissionTest, HoldsAJobSetBeingCreatedSuspendedWithTheGateInEveryReplicatedJob) {
  const std::string c = R"("containers":[{"name":"main","image":"busybox"}])";
  EXPECT_EQ(Patch(ReviewJobSet(JobSetReview("CREATE", R"({"suspend":false,"replicatedJobs":[)" + ReplicatedJob("driver", "{" + c + "}") +
                                                          "," + ReplicatedJob("workers", R"({"schedulingGates":[{"name":"mine"}],)" + c + "}") +
                                                          "," + ReplicatedJob("held", R"({"schedulingGates":[{"name":"berth.dev/admission"}],)" + c + "}") +
                                                          "]}")).value()),
            R"([{"op":"add","path":"/spec/suspend","value":true},)"
            R"({"op":"add","path":"/spec/replicatedJobs/0/template/spec/template/spec/schedulingGates","value":[{"name":"berth.dev/admission"}]},)"
            R"({"op":"add","path":"/spec/replicatedJobs/1/template/spec/template/spec/schedulingGates/-","value":{"name":"berth.dev/admission"}}])");
  // No replicated Jobs (the API server refuses such a JobSet): suspended only, as the policy does.
  EXPECT_EQ(Patch(ReviewJobSet(JobSetReview("CREATE", "{}")).value()), R"([{"op":"add","path":"/spec/suspend","value":true}])");
  // Only creation is held.
  EXPECT_EQ(Patch(ReviewJobSet(JobSetReview("UPDATE", R"({"suspend":false,"replicatedJobs":[]})")).value()), "");
  EXPECT_EQ(Patch(ReviewJobSet(R"({"request":{"uid":"u-1","operation":"DELETE"}})").value()), "");
}

// A JobSet berth cannot hold is refused with a sentence; hostile bodies are errors or refusals,
// never an unheld JobSet, never an exception.
TEST(AdmissionTest, AJobSetBerthCannotHoldIsRefusedAndHostileBodiesAreErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[]", "berth cannot hold a JobSet without a spec object"},
      {"1", "berth cannot hold a JobSet without a spec object"},
      {R"({"replicatedJobs":{}})", "berth cannot hold a JobSet whose spec.replicatedJobs is not a list"},
      {R"({"replicatedJobs":[1]})",
       "berth cannot hold a JobSet whose spec.replicatedJobs[0] has no template.spec.template.spec: there is no Pod template to gate"},
      {R"({"replicatedJobs":[)" + ReplicatedJob("a", "{}") + R"(,{"name":"b","template":{"spec":{}}}]})",
       "berth cannot hold a JobSet whose spec.replicatedJobs[1] has no template.spec.template.spec: there is no Pod template to gate"},
      {R"({"replicatedJobs":[)" + ReplicatedJob("a", "[]") + "]}",
       "berth cannot hold a JobSet whose spec.replicatedJobs[0] has no template.spec.template.spec: there is no Pod template to gate"},
  };
  for (const auto& [spec, message] : cases) {
    auto r = ReviewJobSet(JobSetReview("CREATE", spec));
    ASSERT_TRUE(r.ok()) << spec;
    auto doc = json::Parse(*r);
    ASSERT_TRUE(doc.ok());
    EXPECT_FALSE(json::Find(*doc, {"response", "allowed"})->GetBool()) << spec;
    EXPECT_EQ(json::GetInt(*json::Find(*doc, {"response", "status"}), "code"), 422);
    EXPECT_EQ(json::GetString(json::Find(*doc, {"response", "status", "message"})), message);
  }
  for (const std::string& body : std::vector<std::string>{"", "[]", "{}", "not json", R"({"request":{}})",
                                 R"({"request":{"uid":"u-1","operation":"CREATE","object":null}})", std::string(1 << 20, '{'),
                                 std::string(1 << 20, '[')}) {
    auto r = ReviewJobSet(body);
    if (r.ok()) {
      EXPECT_EQ(r->find(R"("allowed":true)"), std::string::npos) << body.substr(0, 80) << ": " << *r;
    }
  }
  EXPECT_FALSE(ReviewJobSet(R"({"request":{"uid":"u-1","operation":"CREATE"}})").ok());
  // Many replicated Jobs with a large image: each is gated.
  std::string jobs;
  for (int i = 0; i < 500; ++i) {
    jobs += std::string(i ? "," : "") + ReplicatedJob("r" + std::to_string(i), R"({"containers":[{"name":"c","image":")" + std::string(2000, 'x') + R"("}]})");
  }
  const std::string patch = Patch(ReviewJobSet(JobSetReview("CREATE", R"({"replicatedJobs":[)" + jobs + "]}")).value());
  EXPECT_NE(patch.find(R"("path":"/spec/replicatedJobs/499/template/spec/template/spec/schedulingGates")"), std::string::npos);
  EXPECT_EQ(json::Parse(patch)->Size(), 501u);
}

// Issue 45 (3): the 1.35 webhook for Pods. `metadata` is the Pod's metadata JSON, `spec` its spec.
std::string PodReview(const std::string& operation, const std::string& metadata, const std::string& spec) {
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","namespace":"ml","operation":")" +
         operation + R"(","object":{"apiVersion":"v1","kind":"Pod","metadata":)" + metadata + R"(,"spec":)" + spec + "}}}";
}

// The same Pods as the chart's MutatingAdmissionPolicy <fullname>-pod-groups: a queued Pod and a
// Pod group's Pod get the gate (after their own, never twice); berth's own Pods and a Job's Pods
// are allowed unchanged, whatever their labels.
TEST(AdmissionTest, GatesAQueuedPodOrAPodGroupsPodButNotAJobsOrBerthsOwn) {
  const std::string c = R"({"containers":[{"name":"main","image":"busybox"}]})";
  const std::string gate = R"([{"op":"add","path":"/spec/schedulingGates","value":[{"name":"berth.dev/admission"}]}])";
  EXPECT_EQ(Patch(ReviewPod(PodReview("CREATE", R"({"name":"p","labels":{"berth.dev/queue":"true"}})", c)).value()), gate);
  EXPECT_EQ(Patch(ReviewPod(PodReview("CREATE", R"({"generateName":"p-","labels":{"berth.dev/pod-group":"g"}})", c)).value()), gate);
  EXPECT_EQ(Patch(ReviewPod(PodReview("CREATE", R"({"name":"p","labels":{"berth.dev/queue":"true"}})",
                                      R"({"schedulingGates":[{"name":"mine"}],"containers":[]})")).value()),
            R"([{"op":"add","path":"/spec/schedulingGates/-","value":{"name":"berth.dev/admission"}}])");
  EXPECT_EQ(Patch(ReviewPod(PodReview("CREATE", R"({"name":"p","labels":{"berth.dev/queue":"true"}})",
                                      R"({"schedulingGates":[{"name":"berth.dev/admission"}]})")).value()), "");
  // Not held: berth's own Pod; a Job's Pod (controller batch/v1 Job); a Pod the selectors should not
  // have sent (label "false", no labels).
  const std::string job_owner = R"("ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":"j","uid":"x","controller":true}])";
  for (const std::string& metadata : std::vector<std::string>{R"({"name":"p","labels":{"berth.dev/queue":"true","berth.dev/run":"r"}})",
                                     R"({"name":"p","labels":{"berth.dev/pod-group":"g","berth.dev/run":"r"}})",
                                     R"({"name":"p","labels":{"berth.dev/queue":"true"},)" + job_owner + "}",
                                     R"({"name":"p","labels":{"berth.dev/pod-group":"g"},)" + job_owner + "}",
                                     std::string(R"({"name":"p","labels":{"berth.dev/queue":"false"}})"), std::string(R"({"name":"p"})")}) {
    EXPECT_EQ(Patch(ReviewPod(PodReview("CREATE", metadata, c)).value()), "") << metadata;
  }
  // A Job that owns it without being its controller, or a controller of another kind: held.
  for (const std::string owner : {R"({"apiVersion":"batch/v1","kind":"Job","name":"j","uid":"x"})",
                                  R"({"apiVersion":"batch/v1","kind":"Job","name":"j","uid":"x","controller":false})",
                                  R"({"apiVersion":"apps/v1","kind":"ReplicaSet","name":"j","uid":"x","controller":true})",
                                  R"({"apiVersion":"example.com/v1","kind":"Job","name":"j","uid":"x","controller":true})"}) {
    EXPECT_EQ(Patch(ReviewPod(PodReview("CREATE", R"({"name":"p","labels":{"berth.dev/queue":"true"},"ownerReferences":[)" + owner + "]}", c))
                        .value()),
              gate)
        << owner;
  }
  EXPECT_EQ(Patch(ReviewPod(PodReview("UPDATE", R"({"name":"p","labels":{"berth.dev/queue":"true"}})", c)).value()), "");
  EXPECT_EQ(Patch(ReviewPod(R"({"request":{"uid":"u-1","operation":"DELETE"}})").value()), "");
}

// Hostile bodies are errors or refusals, never an exception; a held Pod without a spec object is
// refused with a sentence.
TEST(AdmissionTest, APodBerthCannotGateIsRefusedAndHostileBodiesAreErrors) {
  for (const std::string spec : {"[]", "1", "null", R"("x")"}) {
    auto r = ReviewPod(PodReview("CREATE", R"({"name":"p","labels":{"berth.dev/queue":"true"}})", spec));
    ASSERT_TRUE(r.ok()) << spec;
    auto doc = json::Parse(*r);
    ASSERT_TRUE(doc.ok());
    EXPECT_FALSE(json::Find(*doc, {"response", "allowed"})->GetBool()) << spec;
    EXPECT_EQ(json::GetString(json::Find(*doc, {"response", "status", "message"})), "berth cannot hold a Pod without a spec object");
  }
  for (const std::string metadata : {"[]", "1", R"({"labels":[]})", R"({"labels":{"berth.dev/queue":1}})",
                                     R"({"labels":{"berth.dev/queue":"true"},"ownerReferences":{}})",
                                     R"({"labels":{"berth.dev/queue":"true"},"ownerReferences":[1,null,{"controller":"yes"}]})"}) {
    auto r = ReviewPod(PodReview("CREATE", metadata, R"({"containers":[]})"));
    EXPECT_TRUE(r.ok()) << metadata;
  }
  for (const std::string& body : std::vector<std::string>{"", "[]", "{}", "not json", R"({"request":{}})",
                                 R"({"request":{"uid":"u-1","operation":"CREATE","object":null}})", std::string(1 << 20, '{'),
                                 std::string(1 << 20, '[')}) {
    (void)ReviewPod(body);
  }
  EXPECT_FALSE(ReviewPod(R"({"request":{"uid":"u-1","operation":"CREATE"}})").ok());
}

// A review of `kind` by `user` (no userInfo when empty) with `metadata` and `spec`.
std::string ReviewBy(const std::string& user, const std::string& operation, const std::string& kind, const std::string& metadata,
                     const std::string& spec) {
  const std::string user_info = user.empty() ? "" : R"(,"userInfo":{"username":)" + json::Quote(user) + R"(,"groups":["g"]})";
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","operation":")" + operation +
         R"(")" + user_info + R"(,"object":{"kind":")" + kind + R"(","metadata":)" + metadata + R"(,"spec":)" + spec + "}}}";
}

// Issue 47: a Run created records its creator in berth.dev/submitted-by (with the finalizer, one
// patch); one that names a submitter keeps it (the chart's policy decides whether it may); an
// update, or a review without a user, records nothing.
TEST(AdmissionTest, NewRunsRecordWhoSubmittedThem) {
  const std::string spec = R"({"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}})";
  EXPECT_EQ(Patch(ReviewRun(ReviewBy("alice", "CREATE", "Run", R"({"name":"r"})", spec)).value()),
            R"([{"op":"add","path":"/metadata/finalizers","value":["berth.dev/run-cleanup"]},)"
            R"({"op":"add","path":"/metadata/annotations","value":{"berth.dev/submitted-by":"alice"}}])");
  EXPECT_EQ(Patch(ReviewRun(ReviewBy("o\"dd/user~1", "CREATE", "Run",
                                     R"({"name":"r","finalizers":["berth.dev/run-cleanup"],"annotations":{"a":"b"}})", spec))
                      .value()),
            R"([{"op":"add","path":"/metadata/annotations/berth.dev~1submitted-by","value":"o\"dd/user~1"}])");
  EXPECT_EQ(Patch(ReviewRun(ReviewBy("system:serviceaccount:ci:argo", "CREATE", "Run",
                                     R"({"name":"r","finalizers":["berth.dev/run-cleanup"],"annotations":{"berth.dev/submitted-by":"bob"}})",
                                     spec))
                      .value()),
            "");
  EXPECT_EQ(Patch(ReviewRun(ReviewBy("alice", "UPDATE", "Run", R"({"name":"r"})", spec)).value()), "");
  EXPECT_EQ(Patch(ReviewRun(ReviewBy("", "CREATE", "Run", R"({"name":"r","finalizers":["berth.dev/run-cleanup"]})", spec)).value()),
            "");
}

// Issue 47: a queued Job, JobSet or Pod held at creation records its creator too (its ticket's
// submitter), in the same patch as its hold.
TEST(AdmissionTest, HeldWorkloadsRecordWhoCreatedThem) {
  const std::string record = R"({"op":"add","path":"/metadata/annotations","value":{"berth.dev/submitted-by":"carol"}})";
  auto job = Patch(ReviewJob(ReviewBy("carol", "CREATE", "Job", R"({"name":"j"})", R"({"template":{"spec":{}}})")).value());
  EXPECT_NE(job.find(R"("path":"/spec/suspend")"), std::string::npos) << job;
  EXPECT_NE(job.find(record), std::string::npos) << job;
  auto jobset = Patch(ReviewJobSet(ReviewBy("carol", "CREATE", "JobSet", R"({"name":"s"})", "{}")).value());
  EXPECT_EQ(jobset, R"([{"op":"add","path":"/spec/suspend","value":true},)" + record + "]");
  auto pod = Patch(ReviewPod(ReviewBy("carol", "CREATE", "Pod", R"({"name":"p","labels":{"berth.dev/queue":"true"}})",
                                      R"({"containers":[]})"))
                       .value());
  EXPECT_NE(pod.find(record), std::string::npos) << pod;
  auto named = Patch(ReviewJob(ReviewBy("carol", "CREATE", "Job", R"({"name":"j","annotations":{"berth.dev/submitted-by":"x"}})",
                                        R"({"template":{"spec":{}}})"))
                         .value());
  EXPECT_EQ(named.find("submitted-by"), std::string::npos) << named;
}

}  // namespace
}  // namespace berth::controller
