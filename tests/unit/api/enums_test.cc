// The one table of phases, reasons and condition types (api/v1alpha1/enums.h): every value
// round-trips through its API spelling, and the spellings are the documented ones (the CRD's
// phase enum, docs/concepts.md's "A run's life").

#include "api/v1alpha1/enums.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace berth::api::v1alpha1 {
namespace {

std::string ReadSource(const std::string& path) {
  std::ifstream in(std::string(BERTH_SOURCE_DIR) + "/" + path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The `Backticked` capitalized words of `text` (API spellings, not field names).
std::set<std::string> Backticked(const std::string& text) {
  std::set<std::string> out;
  static const std::regex kWord("`([A-Z][A-Za-z]*)`");
  for (std::sregex_iterator it(text.begin(), text.end(), kWord), end; it != end; ++it) out.insert((*it)[1]);
  return out;
}

// The line of `text` that starts with `prefix`.
std::string LineStartingWith(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  ADD_FAILURE() << "no line starts with " << prefix;
  return {};
}

TEST(RunPhaseTable, EveryValueRoundTrips) {
  for (const auto& [phase, name] : kPhaseNames) {
    EXPECT_EQ(ToApi(phase), name);
    EXPECT_EQ(ParsePhase(name), phase) << name;
    EXPECT_TRUE(IsPhase(name, phase));
  }
  for (const auto& [reason, name] : kReasonNames) {
    EXPECT_EQ(ToApi(reason), name);
    EXPECT_EQ(ParseReason(name), reason) << name;
    EXPECT_TRUE(IsReason(name, reason));
  }
  for (const auto& [phase, name] : kPodPhaseNames) {
    EXPECT_EQ(ParsePodPhase(name), phase) << name;
    EXPECT_TRUE(IsPodPhase(name, phase));
  }
  for (const auto& [type, name] : kConditionTypeNames) {
    EXPECT_EQ(ParseConditionType(name), type) << name;
    EXPECT_TRUE(IsConditionType(name, type));
  }
}

TEST(RunPhaseTable, EventTypesAreCoreV1s) {
  EXPECT_EQ(ToApi(EventType::kNormal), "Normal");
  EXPECT_EQ(ToApi(EventType::kWarning), "Warning");
}

TEST(RunPhaseTable, SpellingsAreDistinct) {
  std::set<std::string_view> reasons;
  for (const auto& [reason, name] : kReasonNames) EXPECT_TRUE(reasons.insert(name).second) << name;
  std::set<std::string_view> phases;
  for (const auto& [phase, name] : kPhaseNames) EXPECT_TRUE(phases.insert(name).second) << name;
}

TEST(RunPhaseTable, UnknownSpellingsAreNone) {
  for (const char* s : {"", "pending", "Unknown", "Completed", " Running"}) {
    EXPECT_EQ(ParsePhase(s), std::nullopt) << s;
  }
  EXPECT_EQ(ParseReason(""), std::nullopt);
  EXPECT_EQ(ParseReason("nocapacity"), std::nullopt);
  EXPECT_EQ(ParsePodPhase(""), std::nullopt);
  EXPECT_FALSE(IsTerminalPhase(""));
  EXPECT_FALSE(IsTerminalPhase("Running"));
  EXPECT_TRUE(IsTerminalPhase("Succeeded"));
  EXPECT_TRUE(IsTerminalPhase("Failed"));
}

TEST(RunPhaseTable, PhasesAreTheCrdEnum) {
  const std::string crd = ReadSource("deploy/crds/berth.dev_runs.yaml");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(crd, m, std::regex(R"(phase: \{type: string, enum: \[([^\]]*)\]\})")));
  std::set<std::string> in_crd;
  std::string list = m[1];
  static const std::regex kItem("[A-Za-z]+");
  for (std::sregex_iterator it(list.begin(), list.end(), kItem), end; it != end; ++it) in_crd.insert(it->str());
  std::set<std::string> in_table;
  for (const auto& [phase, name] : kPhaseNames) in_table.insert(std::string(name));
  EXPECT_EQ(in_table, in_crd);
}

TEST(RunPhaseTable, ReasonsAreTheDocumentedOnes) {
  const std::string concepts = ReadSource("docs/concepts.md");
  // Every reason a Run's status, conditions or Events show is documented in docs/concepts.md.
  const std::set<std::string> documented = Backticked(concepts);
  for (const auto& [reason, name] : kReasonNames) {
    if (reason >= Reason::kInstancesReady) break;  // a Fleet's conditions (docs/api.md describes them)
    EXPECT_TRUE(documented.count(std::string(name))) << name << " is not in docs/concepts.md";
  }
  // And every reason the documentation lists is in the table: the Pending and Failed rows of "A
  // run's life", and the Events.
  for (const std::string prefix : {"| `Pending` |", "| `Failed` |"}) {
    const std::string line = LineStartingWith(concepts, prefix);
    for (const std::string& word : Backticked(line)) {
      if (ParsePhase(word)) continue;  // the row's own phase
      EXPECT_TRUE(ParseReason(word)) << word << " (" << prefix << ") is not in the table";
    }
  }
  // The condition types.
  const std::string conditions = LineStartingWith(concepts, "Conditions: ");
  std::set<std::string> types = Backticked(conditions.substr(0, conditions.find("each with")));
  std::set<std::string> in_table;
  for (const auto& [type, name] : kConditionTypeNames) {
    if (type != ConditionType::kConflict) in_table.insert(std::string(name));  // Conflict: a Fleet's
  }
  EXPECT_EQ(types, in_table);
  // The Events sentence continues on the next lines.
  const size_t events = concepts.find("Events (`kubectl");
  ASSERT_NE(events, std::string::npos);
  const std::string sentence = concepts.substr(events, concepts.find("(Normal)", events) - events);
  for (const std::string& word : Backticked(sentence)) {
    if (word == "kubectl") continue;
    EXPECT_TRUE(ParseReason(word)) << word << " (an Event reason) is not in the table";
  }
}

}  // namespace
}  // namespace berth::api::v1alpha1
