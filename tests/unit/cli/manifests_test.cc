#include "cli/manifests.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace berth::cli {
namespace {

using ::testing::HasSubstr;

PreparedManifests MustPrepare(const std::string& text, bool queueing) {
  auto p = PrepareManifests(text, "test.yaml", queueing);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? p.value() : PreparedManifests{};
}

// What kubectl would read, approximately: the documents parsed again.
std::vector<YAML::Node> Reparse(const std::string& yaml) { return YAML::LoadAll(yaml); }

const char* kRunHead = "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: train}\nspec:\n";

TEST(ManifestsTest, QueueingFillsOnlyWhatTheDocumentLeavesOut) {
  struct Case {
    std::string name;
    std::string retry;  // spec lines
    std::string want_events, want_duration;
    bool queued;
  };
  const std::vector<Case> cases = {
      {"no retry", "", "no-capacity", "off", true},
      {"empty retry", "  retry: {}\n", "no-capacity", "off", true},
      {"null retry", "  retry:\n", "no-capacity", "off", true},
      {"own duration", "  retry: {duration: 2h}\n", "no-capacity", "2h", true},
      {"own events", "  retry: {onEvents: [error, no-capacity]}\n", "error, no-capacity", "off", true},
      {"own events without no-capacity", "  retry:\n    onEvents: [error]\n", "error", "off", false},
      {"both set", "  retry: {onEvents: [interruption], duration: 30m}\n", "interruption", "30m", false},
      {"null duration", "  retry: {duration: null}\n", "no-capacity", "off", true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    PreparedManifests p = MustPrepare(std::string(kRunHead) + "  priority: 10\n" + c.retry +
                                          "  template: {spec: {containers: [{name: main, image: busybox}]}}\n",
                                      true);
    ASSERT_EQ(p.runs.size(), 1u);
    EXPECT_EQ(p.runs[0].name, "train");
    EXPECT_EQ(p.runs[0].on_events, c.want_events);
    EXPECT_EQ(p.runs[0].duration, c.want_duration);
    EXPECT_EQ(p.runs[0].queued, c.queued);
    auto docs = Reparse(p.yaml);
    ASSERT_EQ(docs.size(), 1u);
    const YAML::Node retry = docs[0]["spec"]["retry"];
    ASSERT_TRUE(retry.IsMap()) << p.yaml;
    std::string events;
    for (const auto& e : retry["onEvents"]) events += (events.empty() ? "" : ", ") + e.Scalar();
    EXPECT_EQ(events, c.want_events) << p.yaml;
    EXPECT_EQ(retry["duration"].Scalar(), c.want_duration) << p.yaml;
    // Written by us: quoted, so YAML 1.1 readers get the string "off", not false.
    if (c.want_duration == "off") {
      EXPECT_THAT(p.yaml, HasSubstr("duration: \"off\"")) << p.yaml;
    }
    EXPECT_EQ(docs[0]["spec"]["priority"].Scalar(), "10");
    EXPECT_EQ(docs[0]["spec"]["template"]["spec"]["containers"][0]["image"].Scalar(), "busybox");
  }
}

TEST(ManifestsTest, WithoutQueueingRunsAreLeftAlone) {
  PreparedManifests p = MustPrepare(std::string(kRunHead) + "  priority: 10\n", false);
  EXPECT_TRUE(p.runs.empty());
  EXPECT_EQ(p.documents, 1);
  EXPECT_EQ(p.yaml,
            "apiVersion: berth.dev/v1alpha1\n"
            "kind: Run\n"
            "metadata:\n"
            "  name: train\n"
            "spec:\n"
            "  priority: 10\n");
}

TEST(ManifestsTest, BareOffBecomesTheStringOff) {
  // YAML 1.1 (kubectl) reads off/no/false as false; the API wants the string "off".
  for (const std::string word : {"off", "Off", "OFF", "no", "false", "n"}) {
    SCOPED_TRACE(word);
    PreparedManifests p = MustPrepare(std::string(kRunHead) + "  maxDuration: " + word +
                                          "\n  retry: {duration: " + word + "}\n",
                                      false);
    EXPECT_THAT(p.yaml, HasSubstr("maxDuration: \"off\"\n"));
    EXPECT_THAT(p.yaml, HasSubstr("duration: \"off\"\n"));
  }
  // Quoted already, or a real duration: untouched.
  PreparedManifests p = MustPrepare(std::string(kRunHead) + "  maxDuration: \"off\"\n  retry: {duration: 90m}\n", false);
  EXPECT_THAT(p.yaml, HasSubstr("maxDuration: \"off\"\n"));
  EXPECT_THAT(p.yaml, HasSubstr("duration: 90m\n"));
  // Only Runs: another kind keeps its bare off.
  PreparedManifests cm = MustPrepare("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nspec: {maxDuration: off}\n", true);
  EXPECT_THAT(cm.yaml, HasSubstr("maxDuration: off\n"));
  EXPECT_TRUE(cm.runs.empty());
}

TEST(ManifestsTest, MultiDocumentWithOtherKindsAndLists) {
  const std::string text = R"(# a comment
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data:
  enabled: "yes"
  mode: "0644"
---
---
apiVersion: berth.dev/v1alpha1
kind: Run
metadata: {name: a}
spec: {priority: 5}
---
apiVersion: v1
kind: List
items:
- apiVersion: berth.dev/v1alpha1
  kind: Run
  metadata: {name: b}
  spec:
    retry: {duration: 2h}
- apiVersion: berth.dev/v1beta1
  kind: Run
  metadata: {generateName: gen-}
- apiVersion: example.com/v1
  kind: Run
  metadata: {name: not-ours}
)";
  PreparedManifests p = MustPrepare(text, true);
  EXPECT_EQ(p.documents, 3);
  ASSERT_EQ(p.runs.size(), 3u);
  EXPECT_EQ(p.runs[0].name, "a");
  EXPECT_EQ(p.runs[1].name, "b");
  EXPECT_EQ(p.runs[1].duration, "2h");
  EXPECT_EQ(p.runs[2].name, "gen-*");
  // The Runs apply may resubmit: named ones, with the document's namespace when it sets one.
  ASSERT_EQ(p.named_runs.size(), 2u);
  EXPECT_EQ(p.named_runs[0].name, "a");
  EXPECT_EQ(p.named_runs[1].name, "b");
  EXPECT_EQ(MustPrepare("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: c, namespace: ml}\n", false)
                .named_runs.at(0).ns,
            "ml");
  auto docs = Reparse(p.yaml);
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[0]["data"]["enabled"].Tag(), "!");  // still a quoted string
  EXPECT_EQ(docs[0]["data"]["mode"].Tag(), "!");
  EXPECT_EQ(docs[1]["spec"]["retry"]["duration"].Scalar(), "off");
  EXPECT_EQ(docs[2]["items"][0]["spec"]["retry"]["duration"].Scalar(), "2h");
  EXPECT_EQ(docs[2]["items"][1]["spec"]["retry"]["onEvents"][0].Scalar(), "no-capacity");
  EXPECT_FALSE(docs[2]["items"][2]["spec"].IsDefined());
}

TEST(ManifestsTest, EmitKeepsWhatKubectlWouldRead) {
  const std::string text = R"(a: 1
b: 0644
c: true
d: off
e: null
f: ~
g:
h: "quoted: with # marks"
i: 'single'
j: |
  line one
  line two
k: [x, "y", {z: 1}]
l: {}
m: []
n:
- - 1
  - 2
- {p: q, r: [s]}
- []
o: !!str 5
"key with: colon": v
p: plain text with spaces
q: "tab\there"
)";
  auto in = YAML::Load(text);
  auto emitted = EmitYaml(in);
  ASSERT_TRUE(emitted.ok()) << emitted.status().message();
  EXPECT_EQ(*emitted,
            "a: 1\n"
            "b: 0644\n"
            "c: true\n"
            "d: off\n"
            "e: null\n"
            "f: null\n"
            "g: null\n"
            "h: \"quoted: with # marks\"\n"
            "i: single\n"
            "j: \"line one\\nline two\\n\"\n"
            "k:\n"
            "  - x\n"
            "  - \"y\"\n"
            "  - z: 1\n"
            "l: {}\n"
            "m: []\n"
            "n:\n"
            "  - - 1\n"
            "    - 2\n"
            "  - p: q\n"
            "    r:\n"
            "      - s\n"
            "  - []\n"
            "o: !!str 5\n"
            "\"key with: colon\": v\n"
            "p: plain text with spaces\n"
            "q: \"tab\\there\"\n");
  // And it reads back to the same values, with the same plain/quoted kinds.
  auto back = YAML::Load(*emitted);
  EXPECT_EQ(back["b"].Scalar(), "0644");
  EXPECT_EQ(back["b"].Tag(), "?");
  EXPECT_EQ(back["h"].Scalar(), "quoted: with # marks");
  EXPECT_EQ(back["h"].Tag(), "!");
  EXPECT_EQ(back["k"][1].Tag(), "!");  // "y" is a YAML 1.1 boolean word: stays quoted
  EXPECT_EQ(back["j"].Scalar(), "line one\nline two\n");
  EXPECT_EQ(back["n"][0][1].Scalar(), "2");
  EXPECT_EQ(back["n"][1]["r"][0].Scalar(), "s");
  EXPECT_EQ(back["o"].Tag(), "tag:yaml.org,2002:str");
  EXPECT_EQ(back["key with: colon"].Scalar(), "v");
  EXPECT_EQ(back["q"].Scalar(), "tab\there");
}

TEST(ManifestsTest, Errors) {
  auto bad = PrepareManifests("a: [1, 2\n", "run.yaml", true);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("run.yaml: line "));
  EXPECT_THAT(bad.status().message(), HasSubstr("invalid YAML"));

  auto scalar = PrepareManifests("just text\n", "stdin", true);
  ASSERT_FALSE(scalar.ok());
  EXPECT_THAT(scalar.status().message(), HasSubstr("stdin: document 1 is not a mapping"));

  auto complex_key = PrepareManifests("? [a, b]\n: c\n", "f", false);
  ASSERT_FALSE(complex_key.ok());
  EXPECT_THAT(complex_key.status().message(), HasSubstr("keys that are not scalars"));

  PreparedManifests empty = MustPrepare("# nothing\n---\n---\n", true);
  EXPECT_EQ(empty.documents, 0);
  EXPECT_EQ(empty.yaml, "");
}

TEST(ManifestsTest, Yaml11False) {
  for (const char* f : {"n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE"}) {
    EXPECT_TRUE(IsYaml11False(f)) << f;
  }
  for (const char* s : {"", "0", "oFF", "nO", "none", "true", "on", "yes", "2h", "\"off\""}) {
    EXPECT_FALSE(IsYaml11False(s)) << s;
  }
}

}  // namespace
}  // namespace berth::cli
