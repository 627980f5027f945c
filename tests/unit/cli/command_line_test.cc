#include "cli/command_line.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace berth::cli {
namespace {

using ::testing::HasSubstr;
using Args = std::vector<std::string>;

std::string Join(const Args& args) {
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "" : " ") + a;
  return out;
}

struct GoodCase {
  Args args;
  std::function<bool(const CommandLine&)> check;
};

TEST(CommandLineTest, Accepted) {
  const std::vector<GoodCase> cases = {
      {{"apply", "-f", "run.yaml"},
       [](const CommandLine& c) { return c.command == Command::kApply && c.files == Args{"run.yaml"} && !c.queueing; }},
      {{"apply", "-f", "-", "-Q"}, [](const CommandLine& c) { return c.files == Args{"-"} && c.queueing; }},
      {{"apply", "-f-", "--queue"}, [](const CommandLine& c) { return c.files == Args{"-"} && c.queueing; }},
      {{"apply", "--filename=a.yaml", "-f", "b.yaml"}, [](const CommandLine& c) { return c.files == Args{"a.yaml", "b.yaml"}; }},
      {{"apply", "-f", "a.yaml", "--queue=false"}, [](const CommandLine& c) { return !c.queueing; }},
      {{"apply", "-f", "a.yaml", "--dry-run"}, [](const CommandLine& c) { return c.dry_run == "client"; }},
      {{"apply", "-f", "a.yaml", "--dry-run=server"}, [](const CommandLine& c) { return c.dry_run == "server"; }},
      {{"apply", "-f", "a.yaml", "--no-resubmit"}, [](const CommandLine& c) { return c.no_resubmit; }},
      {{"apply", "-f", "a.yaml"}, [](const CommandLine& c) { return !c.no_resubmit; }},
      {{"stop", "train"}, [](const CommandLine& c) { return c.command == Command::kStop && c.positionals == Args{"train"}; }},
      {{"suspend", "train", "-n", "ml"},
       [](const CommandLine& c) { return c.command == Command::kSuspend && c.ns == "ml" && c.positionals == Args{"train"}; }},
      {{"resume", "train"}, [](const CommandLine& c) { return c.command == Command::kResume; }},
      {{"logs", "train"},
       [](const CommandLine& c) { return c.command == Command::kLogs && !c.follow && !c.rank && c.positionals == Args{"train"}; }},
      {{"logs", "train", "-f", "--rank", "1"}, [](const CommandLine& c) { return c.follow && c.rank == 1; }},
      {{"logs", "-f", "train", "--rank=0"},
       [](const CommandLine& c) { return c.follow && c.rank == 0 && c.positionals == Args{"train"}; }},
      {{"-n", "ml", "logs", "train", "--follow"}, [](const CommandLine& c) { return c.follow && c.ns == "ml"; }},
      {{"-n", "ml", "queue"}, [](const CommandLine& c) { return c.command == Command::kQueue && c.ns == "ml"; }},
      {{"queue", "-nml"}, [](const CommandLine& c) { return c.ns == "ml"; }},
      {{"queue", "-n=ml"}, [](const CommandLine& c) { return c.ns == "ml"; }},
      {{"queue", "--namespace", "ml"}, [](const CommandLine& c) { return c.ns == "ml"; }},
      {{"queue", "-A", "-o", "wide"}, [](const CommandLine& c) { return c.all_namespaces && c.output == "wide"; }},
      {{"queue", "--all-namespaces", "-ojson"}, [](const CommandLine& c) { return c.all_namespaces && c.output == "json"; }},
      {{"queue"},
       [](const CommandLine& c) {
         return c.controller_namespace == "berth-system" && c.controller_service == "berth-controller" && c.limit == 0 &&
                c.output.empty() && c.ns.empty();
       }},
      {{"queue", "--controller-namespace=ops", "--controller-service", "berth", "--limit", "20"},
       [](const CommandLine& c) {
         return c.controller_namespace == "ops" && c.controller_service == "berth" && c.limit == 20;
       }},
      {{"priority", "train", "90"},
       [](const CommandLine& c) { return c.command == Command::kPriority && c.positionals == Args{"train", "90"}; }},
      {{"priority", "train", "-5"}, [](const CommandLine& c) { return c.positionals == Args{"train", "-5"}; }},
      {{"priority", "train", "90"}, [](const CommandLine& c) { return c.wait == std::chrono::seconds(3); }},
      {{"priority", "train", "90", "--wait", "1m30s"}, [](const CommandLine& c) { return c.wait == std::chrono::seconds(90); }},
      {{"priority", "--wait=0s", "train", "90"}, [](const CommandLine& c) { return c.wait == std::chrono::seconds(0); }},
      {{"priority", "--", "train", "70"}, [](const CommandLine& c) { return c.positionals == Args{"train", "70"}; }},
      {{"--kubeconfig", "/k", "--context=dev", "fleets", "-o", "wide"},
       [](const CommandLine& c) {
         return c.command == Command::kFleets && c.kubeconfig == "/k" && c.context == "dev" && c.output == "wide";
       }},
      {{"describe", "train", "-n", "ml"},
       [](const CommandLine& c) { return c.command == Command::kDescribe && c.positionals == Args{"train"} && c.ns == "ml"; }},
      {{"get", "train"}, [](const CommandLine& c) { return c.command == Command::kDescribe && c.positionals == Args{"train"}; }},
      {{"help", "describe"}, [](const CommandLine& c) { return c.help && c.help_topic == Command::kDescribe; }},
      {{}, [](const CommandLine& c) { return c.help && c.help_topic == Command::kNone; }},
      {{"--help"}, [](const CommandLine& c) { return c.help && c.help_topic == Command::kNone; }},
      {{"help"}, [](const CommandLine& c) { return c.help && c.help_topic == Command::kNone; }},
      {{"help", "queue"}, [](const CommandLine& c) { return c.help && c.help_topic == Command::kQueue; }},
      {{"queue", "-h"}, [](const CommandLine& c) { return c.help && c.help_topic == Command::kQueue; }},
      // --help wins over what would otherwise be missing.
      {{"priority", "--help"}, [](const CommandLine& c) { return c.help && c.help_topic == Command::kPriority; }},
      {{"apply", "-h"}, [](const CommandLine& c) { return c.help && c.help_topic == Command::kApply; }},
  };
  for (const auto& tc : cases) {
    auto c = ParseCommandLine(tc.args);
    ASSERT_TRUE(c.ok()) << Join(tc.args) << ": " << c.status().message();
    EXPECT_TRUE(tc.check(*c)) << Join(tc.args);
  }
}

struct BadCase {
  Args args;
  std::string error;  // a part of the sentence
};

TEST(CommandLineTest, Refused) {
  const std::vector<BadCase> cases = {
      {{"launch"}, "unknown command \"launch\""},
      {{"queue", "--bogus"}, "unknown flag --bogus"},
      {{"queue", "-x"}, "unknown flag -x"},
      {{"queue", "-n"}, "flag -n needs a value"},
      {{"queue", "-o", "yaml"}, "-o/--output takes wide or json, not \"yaml\""},
      {{"queue", "-A", "-n", "ml"}, "-A and -n cannot be used together"},
      {{"queue", "extra"}, "takes no arguments"},
      {{"queue", "-Q"}, "flag -Q is not a flag of \"kubectl berth queue\""},
      {{"queue", "--limit", "-3"}, "--limit takes a whole number"},
      {{"queue", "--limit", "ten"}, "--limit takes a whole number"},
      {{"priority", "a", "1", "--wait", "soon"}, "flag --wait takes a duration from 0s to 1h (e.g. 30s), not \"soon\""},
      {{"priority", "a", "1", "--wait", "2h"}, "--wait takes a duration from 0s to 1h"},
      {{"priority", "a", "1", "--wait", "off"}, "--wait takes a duration from 0s to 1h"},
      {{"priority", "a", "1", "--wait=-5s"}, "--wait takes a duration from 0s to 1h"},
      {{"queue", "--wait", "5s"}, "flag --wait is not a flag of \"kubectl berth queue\""},
      {{"apply"}, "needs -f FILE"},
      {{"apply", "-f"}, "flag -f needs a value"},
      {{"apply", "-f", "a.yaml", "b.yaml"}, "takes no arguments, got \"b.yaml\""},
      {{"apply", "-f", "a.yaml", "--dry-run=maybe"}, "--dry-run takes none, client or server"},
      {{"queue", "--no-resubmit"}, "flag --no-resubmit is not a flag of \"kubectl berth queue\""},
      {{"apply", "-f", "a.yaml", "-A"}, "flag -A is not a flag of \"kubectl berth apply\""},
      {{"apply", "-f", "a.yaml", "--queue=yes"}, "--queue takes true or false"},
      {{"priority", "train"}, "needs exactly two arguments, RUN and VALUE, got 1"},
      {{"priority", "train", "50", "60"}, "got 3"},
      {{"priority", "train", "50", "-o", "wide"}, "flag -o is not a flag of \"kubectl berth priority\""},
      {{"fleets", "-o", "json"}, "supports -o wide only"},
      {{"fleets", "a100"}, "takes no arguments"},
      {{"help", "bogus"}, "no help for \"bogus\""},
      {{"describe"}, "kubectl berth describe needs exactly one argument, RUN, got 0"},
      {{"get", "a", "b"}, "needs exactly one argument, RUN, got 2"},
      {{"describe", "train", "-A"}, "flag -A is not a flag of \"kubectl berth describe\""},
      {{"describe", "train", "-o", "wide"}, "flag -o is not a flag of \"kubectl berth describe\""},
      {{"stop"}, "kubectl berth stop needs exactly one argument, RUN, got 0"},
      {{"suspend", "a", "b"}, "kubectl berth suspend needs exactly one argument, RUN, got 2"},
      {{"resume"}, "kubectl berth resume needs exactly one argument, RUN, got 0"},
      {{"stop", "train", "-f", "x.yaml"}, "flag -f is not a flag of \"kubectl berth stop\""},
      {{"logs"}, "kubectl berth logs needs exactly one argument, RUN, got 0"},
      {{"logs", "train", "--rank"}, "flag --rank needs a value"},
      {{"logs", "train", "--rank", "one"}, "flag --rank takes a rank, a whole number >= 0, not \"one\""},
      {{"logs", "train", "--rank", "-1"}, "flag --rank takes a rank"},
      {{"logs", "train", "--rank", "1.5"}, "flag --rank takes a rank"},
      {{"logs", "train", "--follow=maybe"}, "--follow takes true or false"},
      {{"queue", "--rank", "1"}, "flag --rank is not a flag of \"kubectl berth queue\""},
  };
  for (const auto& tc : cases) {
    auto c = ParseCommandLine(tc.args);
    ASSERT_FALSE(c.ok()) << Join(tc.args) << " was accepted";
    EXPECT_THAT(c.status().message(), HasSubstr(tc.error)) << Join(tc.args);
  }
}

TEST(CommandLineTest, EveryCommandHasHelpWithGlobalFlags) {
  for (Command c : {Command::kNone, Command::kApply, Command::kQueue, Command::kPriority, Command::kFleets,
                    Command::kDescribe, Command::kStop, Command::kSuspend, Command::kResume, Command::kLogs}) {
    const std::string u = Usage(c);
    EXPECT_THAT(u, HasSubstr("Usage: kubectl berth")) << CommandName(c);
    EXPECT_THAT(u, HasSubstr("--kubeconfig")) << CommandName(c);
    EXPECT_THAT(u, HasSubstr("--context")) << CommandName(c);
    EXPECT_THAT(u, HasSubstr("-n, --namespace")) << CommandName(c);
  }
  EXPECT_THAT(Usage(Command::kApply), HasSubstr("-Q, --queue"));
  EXPECT_THAT(Usage(Command::kQueue), HasSubstr("-A, --all-namespaces"));
  EXPECT_THAT(Usage(Command::kPriority), HasSubstr("kubectl berth priority RUN VALUE"));
  EXPECT_THAT(Usage(Command::kFleets), HasSubstr("-o, --output wide"));
  EXPECT_THAT(Usage(Command::kDescribe), HasSubstr("kubectl berth describe RUN"));
  EXPECT_THAT(Usage(Command::kNone), HasSubstr("describe RUN"));
  EXPECT_THAT(Usage(Command::kLogs), HasSubstr("-f, --follow"));
  for (const char* c : {"stop RUN", "suspend RUN", "resume RUN", "logs RUN [--rank N] [-f]"}) {
    EXPECT_THAT(Usage(Command::kNone), HasSubstr(c));
  }
}

}  // namespace
}  // namespace berth::cli
