#pragma once
// kubectl-berth's command line: which command, its flags and positional arguments.
//
// kubectl hands a plugin every argument after "berth" unchanged, so flags may come before or after
// the command ("kubectl berth -n ml queue" and "kubectl berth queue -n ml" are the same). Accepted
// spellings: "--flag value", "--flag=value", "-n value", "-n=value", "-nvalue"; boolean flags as
// "-A", "--all-namespaces", "--all-namespaces=true|false". "--" ends the flags. A token that looks
// like a negative number ("-5") is a positional argument, so "priority RUN -5" reaches the priority
// check and gets its sentence instead of "unknown flag". "-f" is apply's --filename and logs'
// --follow: the command named before it decides.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "k8s/result.h"

namespace berth::cli {

enum class Command { kNone, kHelp, kApply, kQueue, kPriority, kFleets, kTeams, kDescribe, kStop, kSuspend, kResume, kLogs, kDashboard, kUsage };

struct CommandLine {
  Command command = Command::kNone;
  // Global.
  std::string kubeconfig;
  std::string context;
  std::string ns;  // empty: the context's namespace
  bool help = false;
  Command help_topic = Command::kNone;  // "kubectl berth help queue"

  // apply
  std::vector<std::string> files;  // "-" is stdin
  bool queueing = false;           // -Q
  bool no_resubmit = false;        // --no-resubmit: apply leaves ended runs ended
  std::string dry_run;             // passed to kubectl apply as --dry-run=VALUE when set

  // queue, fleets
  bool all_namespaces = false;
  std::string output;  // "", "wide" or "json"
  std::string controller_namespace = "berth-system";
  std::string controller_service = "berth-controller";
  int64_t limit = 0;  // 0: every pending run

  // priority: how long to wait for the controller to take the change into account
  std::chrono::milliseconds wait{3000};

  // dashboard: the port on 127.0.0.1 (0: a free one)
  int port = 0;

  // logs
  std::optional<int> rank;  // --rank N: only this rank
  bool follow = false;      // -f/--follow

  // priority: RUN VALUE; describe, stop, suspend, resume, logs: RUN
  std::vector<std::string> positionals;

  // usage (issue 47): the window (a duration, 1h to 90d) and the rows' key
  std::string since = "7d";
  std::string by = "team";  // team, namespace, user or fleet
};

// Parses the arguments after the program name. Errors are one sentence naming the flag or the
// argument that is wrong. With --help (or "help [COMMAND]") the rest is not validated.
k8s::Result<CommandLine> ParseCommandLine(const std::vector<std::string>& args);

// "apply", "queue", ...
const char* CommandName(Command c);

// Help text for one command, or the overview for kNone/kHelp.
std::string Usage(Command c);

}  // namespace berth::cli
