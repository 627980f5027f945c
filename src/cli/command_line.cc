#include "cli/command_line.h"

#include <charconv>
#include <functional>
#include <set>
#include <string>
#include <string_view>

#include "k8s/duration.h"

namespace berth::cli {
namespace {

using k8s::Status;

struct FlagSpec {
  std::string long_name;       // without "--"
  char short_name = 0;         // 0: none
  bool takes_value = true;
  std::set<Command> commands;  // empty: every command (global)
  std::function<Status(CommandLine&, const std::string& value)> set;
};

Status SetBool(bool& out, const std::string& flag, const std::string& value) {
  if (value == "true") {
    out = true;
  } else if (value == "false") {
    out = false;
  } else {
    return Status::Error("flag --" + flag + " takes true or false, not \"" + value + "\"");
  }
  return Status();
}

// Flags of every command.
void AddGlobalFlags(std::vector<FlagSpec>& flags) {
  flags.insert(flags.end(), {
    {"kubeconfig", 0, true, {}, [](CommandLine& c, const std::string& v) { c.kubeconfig = v; return Status(); }},
    {"context", 0, true, {}, [](CommandLine& c, const std::string& v) { c.context = v; return Status(); }},
    {"namespace", 'n', true, {}, [](CommandLine& c, const std::string& v) {
       if (v.empty()) return Status::Error("flag -n/--namespace needs a namespace name");
       c.ns = v;
       return Status();
     }},
    {"help", 'h', false, {}, [](CommandLine& c, const std::string& v) { return SetBool(c.help, "help", v); }},
  });
}

// Flags of apply.
void AddApplyFlags(std::vector<FlagSpec>& flags) {
  flags.insert(flags.end(), {
    {"filename", 'f', true, {Command::kApply}, [](CommandLine& c, const std::string& v) {
       if (v.empty()) return Status::Error("flag -f/--filename needs a file name or - for stdin");
       c.files.push_back(v);
       return Status();
     }},
    {"queue", 'Q', false, {Command::kApply}, [](CommandLine& c, const std::string& v) {
       return SetBool(c.queueing, "queue", v);
     }},
    {"no-resubmit", 0, false, {Command::kApply}, [](CommandLine& c, const std::string& v) {
       return SetBool(c.no_resubmit, "no-resubmit", v);
     }},
    {"dry-run", 0, true, {Command::kApply}, [](CommandLine& c, const std::string& v) {
       if (v != "none" && v != "client" && v != "server") {
         return Status::Error("flag --dry-run takes none, client or server, not \"" + v + "\"");
       }
       c.dry_run = v;
       return Status();
     }},
  });
}

// Flags of queue (and -o of fleets).
void AddQueueFlags(std::vector<FlagSpec>& flags) {
  flags.insert(flags.end(), {
    {"all-namespaces", 'A', false, {Command::kQueue}, [](CommandLine& c, const std::string& v) {
       return SetBool(c.all_namespaces, "all-namespaces", v);
     }},
    {"output", 'o', true, {Command::kQueue, Command::kFleets, Command::kUsage}, [](CommandLine& c, const std::string& v) {
       if (v != "wide" && v != "json") return Status::Error("flag -o/--output takes wide or json, not \"" + v + "\"");
       c.output = v;
       return Status();
     }},
    {"controller-namespace", 0, true, {Command::kQueue}, [](CommandLine& c, const std::string& v) {
       if (v.empty()) return Status::Error("flag --controller-namespace needs a namespace name");
       c.controller_namespace = v;
       return Status();
     }},
    {"controller-service", 0, true, {Command::kQueue}, [](CommandLine& c, const std::string& v) {
       if (v.empty()) return Status::Error("flag --controller-service needs a Service name");
       c.controller_service = v;
       return Status();
     }},
    {"limit", 0, true, {Command::kQueue}, [](CommandLine& c, const std::string& v) {
       int64_t n = 0;
       auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
       if (ec != std::errc() || ptr != v.data() + v.size() || n < 0) {
         return Status::Error("flag --limit takes a whole number >= 0 (0: no limit), not \"" + v + "\"");
       }
       c.limit = n;
       return Status();
     }},
    {"since", 0, true, {Command::kUsage}, [](CommandLine& c, const std::string& v) {
       auto d = k8s::ParseDurationStrict(v);
       if (!d.ok() || *d < std::chrono::hours(1) || *d > std::chrono::hours(24 * 90)) {
         return Status::Error("flag --since takes a duration from 1h to 90d (the usage history berth keeps), not \"" + v + "\"");
       }
       c.since = v;
       return Status();
     }},
    {"by", 0, true, {Command::kUsage}, [](CommandLine& c, const std::string& v) {
       if (v != "team" && v != "namespace" && v != "user" && v != "fleet") {
         return Status::Error("flag --by takes team, namespace, user or fleet, not \"" + v + "\"");
       }
       c.by = v;
       return Status();
     }},
  });
}

// Flags of logs (and priority's --wait).
void AddLogsFlags(std::vector<FlagSpec>& flags) {
  flags.insert(flags.end(), {
    {"wait", 0, true, {Command::kPriority}, [](CommandLine& c, const std::string& v) {
       auto d = k8s::ParseDurationStrict(v);
       if (!d.ok() || d->count() < 0 || *d > std::chrono::hours(1)) {
         return Status::Error("flag --wait takes a duration from 0s to 1h (e.g. 30s), not \"" + v + "\"");
       }
       c.wait = *d;
       return Status();
     }},
    {"follow", 'f', false, {Command::kLogs}, [](CommandLine& c, const std::string& v) {
       return SetBool(c.follow, "follow", v);
     }},
    {"port", 0, true, {Command::kDashboard}, [](CommandLine& c, const std::string& v) {
       int n = 0;
       auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
       if (v.empty() || ec != std::errc() || ptr != v.data() + v.size() || n < 0 || n > 65535) {
         return Status::Error("flag --port takes a port from 0 to 65535 (0: a free one), not \"" + v + "\"");
       }
       c.port = n;
       return Status();
     }},
    {"rank", 0, true, {Command::kLogs}, [](CommandLine& c, const std::string& v) {
       int n = 0;
       auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
       if (v.empty() || ec != std::errc() || ptr != v.data() + v.size() || n < 0) {
         return Status::Error("flag --rank takes a rank, a whole number >= 0, not \"" + v + "\"");
       }
       c.rank = n;
       return Status();
     }},
  });
}

const std::vector<FlagSpec>& Flags() {
  static const std::vector<FlagSpec> flags = [] {
    std::vector<FlagSpec> all;
    AddGlobalFlags(all);
    AddApplyFlags(all);
    AddQueueFlags(all);
    AddLogsFlags(all);
    return all;
  }();
  return flags;
}

// Flags whose value is optional ("--dry-run" alone means client, as in kubectl).
std::string DefaultValue(const FlagSpec& f) { return f.long_name == "dry-run" ? "client" : "true"; }

bool LooksLikeNumber(const std::string& a) {
  return a.size() >= 2 && a[0] == '-' && a[1] >= '0' && a[1] <= '9';
}

Command ParseCommandName(const std::string& s) {
  if (s == "apply") return Command::kApply;
  if (s == "queue") return Command::kQueue;
  if (s == "priority") return Command::kPriority;
  if (s == "fleets") return Command::kFleets;
  if (s == "teams") return Command::kTeams;
  if (s == "describe" || s == "get") return Command::kDescribe;
  if (s == "stop") return Command::kStop;
  if (s == "suspend") return Command::kSuspend;
  if (s == "resume") return Command::kResume;
  if (s == "logs") return Command::kLogs;
  if (s == "dashboard") return Command::kDashboard;
  if (s == "usage") return Command::kUsage;
  if (s == "help") return Command::kHelp;
  return Command::kNone;
}

struct Occurrence {
  const FlagSpec* spec;
  std::string spelled;  // as the user wrote it, for messages
  std::string value;
};

}  // namespace

const char* CommandName(Command c) {
  switch (c) {
    case Command::kApply: return "apply";
    case Command::kQueue: return "queue";
    case Command::kPriority: return "priority";
    case Command::kFleets: return "fleets";
    case Command::kTeams: return "teams";
    case Command::kDescribe: return "describe";
    case Command::kStop: return "stop";
    case Command::kSuspend: return "suspend";
    case Command::kResume: return "resume";
    case Command::kLogs: return "logs";
    case Command::kDashboard: return "dashboard";
    case Command::kUsage: return "usage";
    case Command::kHelp: return "help";
    case Command::kNone: break;
  }
  return "";
}

namespace {

// The flag of a long option ("--name"), or nullptr.
const FlagSpec* FindLongFlag(const std::string& name) {
  const FlagSpec* spec = nullptr;
  for (const auto& f : Flags()) {
    if (f.long_name == name) spec = &f;
  }
  return spec;
}

// The flag of a letter: one letter may mean different flags of different commands (-f): the
// command named so far picks; without one, the first flag with the letter.
const FlagSpec* FindShortFlag(char c, Command so_far) {
  const FlagSpec* spec = nullptr;
  for (const auto& f : Flags()) {
    if (f.short_name == 0 || f.short_name != c) continue;
    if (spec == nullptr || f.commands.count(so_far) > 0) spec = &f;
  }
  return spec;
}

// Reads the flag at args[i] (and its value, advancing i when it is the next argument).
Status ReadFlag(const std::vector<std::string>& args, size_t& i, const std::vector<std::string>& words,
                std::vector<Occurrence>& seen) {
  const std::string& a = args[i];
  const FlagSpec* spec = nullptr;
  std::string value;
  bool has_value = false;
  std::string spelled;
  if (a.rfind("--", 0) == 0) {
    std::string name = a.substr(2);
    auto eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      has_value = true;
      name = name.substr(0, eq);
    }
    spelled = "--" + name;
    spec = FindLongFlag(name);
  } else {
    char c = a[1];
    spelled = std::string("-") + c;
    spec = FindShortFlag(c, words.empty() ? Command::kNone : ParseCommandName(words.front()));
    if (a.size() > 2) {
      value = a.substr(a[2] == '=' ? 3 : 2);
      has_value = true;
    }
  }
  if (spec == nullptr) return Status::Error("unknown flag " + spelled + " (see kubectl berth --help)");
  if (!has_value) {
    if (spec->takes_value && spec->long_name != "dry-run") {
      if (i + 1 >= args.size()) return Status::Error("flag " + spelled + " needs a value");
      value = args[++i];
    } else {
      value = DefaultValue(*spec);
    }
  }
  seen.push_back({spec, spelled, value});
  return Status();
}

// Splits the arguments into words (the command and positionals, in order) and flags.
Status SplitArguments(const std::vector<std::string>& args, std::vector<std::string>& words,
                      std::vector<Occurrence>& seen) {
  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (flags_done || a == "-" || a.empty() || a[0] != '-' || LooksLikeNumber(a)) {
      words.push_back(a);
    } else if (a == "--") {
      flags_done = true;
    } else if (Status s = ReadFlag(args, i, words, seen); !s.ok()) {
      return s;
    }
  }
  return Status();
}

// "kubectl berth help [COMMAND]".
Status SetHelpTopic(CommandLine& cl) {
  cl.help = true;
  if (cl.positionals.empty()) return Status();
  cl.help_topic = ParseCommandName(cl.positionals.front());
  if (cl.help_topic == Command::kNone || cl.help_topic == Command::kHelp) {
    return Status::Error("no help for \"" + cl.positionals.front() + "\": commands are apply, queue, priority, fleets, teams, describe, stop, suspend, resume, logs, dashboard");
  }
  return Status();
}

// Sets the flags of the command, refusing those of other commands.
Status ApplyFlags(const std::vector<Occurrence>& seen, CommandLine& cl) {
  const std::string cmd = CommandName(cl.command);
  for (const auto& o : seen) {
    if (!o.spec->commands.empty() && o.spec->commands.count(cl.command) == 0) {
      return Status::Error("flag " + o.spelled + " is not a flag of \"kubectl berth " + cmd + "\" (see kubectl berth " +
                           cmd + " --help)");
    }
    Status s = o.spec->set(cl, o.value);
    if (!s.ok()) return s;
  }
  return Status();
}

Status NoArguments(const CommandLine& cl, const std::string& what) {
  if (cl.positionals.empty()) return Status();
  return Status::Error(std::string("kubectl berth ") + CommandName(cl.command) + " takes no arguments, got \"" +
                       cl.positionals.front() + "\"" + what);
}

Status Arguments(const CommandLine& cl, size_t count, const std::string& names) {
  if (cl.positionals.size() == count) return Status();
  return Status::Error(std::string("kubectl berth ") + CommandName(cl.command) + " needs exactly " +
                       (count == 1 ? "one argument, " : "two arguments, ") + names + ", got " +
                       std::to_string(cl.positionals.size()));
}

// The arguments and flag combinations each command accepts.
Status CheckArguments(const CommandLine& cl) {
  switch (cl.command) {
    case Command::kApply:
      if (cl.files.empty()) return Status::Error("kubectl berth apply needs -f FILE (or -f - for stdin)");
      return NoArguments(cl, " (files go after -f)");
    case Command::kQueue:
      if (cl.all_namespaces && !cl.ns.empty()) return Status::Error("-A and -n cannot be used together");
      return NoArguments(cl, "");
    case Command::kPriority:
      return Arguments(cl, 2, "RUN and VALUE");
    case Command::kFleets:
      if (cl.output == "json") return Status::Error("kubectl berth fleets supports -o wide only");
      return NoArguments(cl, "");
    case Command::kUsage:
      if (cl.output == "wide") return Status::Error("kubectl berth usage supports -o json only");
      return NoArguments(cl, "");
    case Command::kTeams:
    case Command::kDashboard:
      return NoArguments(cl, "");
    case Command::kDescribe:
    case Command::kStop:
    case Command::kSuspend:
    case Command::kResume:
    case Command::kLogs:
      return Arguments(cl, 1, "RUN");
    default:
      return Status();
  }
}

}  // namespace

k8s::Result<CommandLine> ParseCommandLine(const std::vector<std::string>& args) {
  CommandLine cl;
  std::vector<Occurrence> seen;
  std::vector<std::string> words;  // the command and positionals, in order
  if (Status s = SplitArguments(args, words, seen); !s.ok()) return s;
  if (!words.empty()) {
    cl.command = ParseCommandName(words.front());
    if (cl.command == Command::kNone) {
      return Status::Error("unknown command \"" + words.front() +
                           "\" for \"kubectl berth\" (commands: apply, queue, priority, fleets, teams, describe, stop, suspend, resume, logs, dashboard)");
    }
    cl.positionals.assign(words.begin() + 1, words.end());
  }
  if (cl.command == Command::kHelp) {
    if (Status s = SetHelpTopic(cl); !s.ok()) return s;
    return cl;
  }
  for (const auto& o : seen) {
    if (o.spec->long_name == "help") {
      Status s = o.spec->set(cl, o.value);
      if (!s.ok()) return s;
    }
  }
  if (cl.help || cl.command == Command::kNone) {
    cl.help = true;
    cl.help_topic = cl.command;
    return cl;
  }
  if (Status s = ApplyFlags(seen, cl); !s.ok()) return s;
  if (Status s = CheckArguments(cl); !s.ok()) return s;
  return cl;
}

namespace {

// The help of each command (Usage).
constexpr std::string_view kGlobalFlagsHelp = R"(
Global flags:
      --kubeconfig PATH   kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)
      --context NAME      kubeconfig context (default: current-context)
  -n, --namespace NS      namespace (default: the context's namespace)
  -h, --help              help for the command
)";

constexpr std::string_view kApplyHelp = R"(Apply manifests like kubectl apply; with -Q, Runs queue for capacity instead of failing.

Usage: kubectl berth apply -f FILE|- [-Q] [-n NS] [--no-resubmit] [--dry-run=client|server]

Every document of the file(s) is applied with kubectl apply (Runs, ConfigMaps, anything). With -Q
each Run gets spec.retry.onEvents [no-capacity] and spec.retry.duration "off" (wait for capacity
forever), except for the fields the document sets itself: "retry: {duration: 2h}" keeps 2h.
A bare off in maxDuration or retry.duration (YAML 1.1 reads it as false) is sent as "off".
A Run that has ended (Succeeded or Failed) is submitted again: the ended run is deleted (its
status and Events go with it) and created anew from the file, at the back of its priority group.
--no-resubmit leaves ended runs as they are.

Examples:
  kubectl berth apply -f train.yaml -Q
  cat runs.yaml | kubectl berth apply -f - -Q -n ml

Flags:
  -f, --filename FILE     manifest file, directory of .yaml/.yml/.json files, or - for stdin (repeatable)
  -Q, --queue             turn on queueing for every Run that does not set its own retry fields
      --no-resubmit       do not submit ended runs again (kubectl apply then only changes their spec)
      --dry-run MODE      client or server: passed to kubectl apply
)";

constexpr std::string_view kQueueHelp = R"(Show pending runs in the controller's queue order.

Usage: kubectl berth queue [-n NS | -A] [-o wide|json] [--limit N]

Positions are the controller's own (global, 1-based: with -n, gaps are runs of other namespaces).
The queue is read through the API server from berth's queue API (/apis/queue.berth.dev/v1alpha1)
with your kubeconfig's own credentials, which go to the API server only: berth learns who you are
from the API server and shows the runs of the namespaces you may list runs in. Without the queue
API (no APIService) the queue is read from the runs' status instead, with a note.

Examples:
  kubectl berth queue
  kubectl berth queue -A -o wide

Flags:
  -A, --all-namespaces           pending runs of every namespace
  -o, --output wide|json         wide adds FLEETS and SUBMITTED; json prints the queue items
      --limit N                  at most N runs (default 0: all)
      --controller-namespace NS  no longer used (accepted for old scripts)
      --controller-service NAME  no longer used (accepted for old scripts)
)";

constexpr std::string_view kDashboardHelp = R"(Serve berth's dashboard on this machine, with your own kubeconfig.

Usage: kubectl berth dashboard [--port N]

Listens on 127.0.0.1 only (a free port unless --port says one) and prints the address to open.
Every read and change the page makes is sent to the API server with your kubeconfig's own
credentials: the queue, fleets and teams through berth's queue API (berth learns who you are from
the API server, never your credential), a run's details, logs and changes as Kubernetes requests.
Requests that do not name this address as their Host are refused (no other site can reach it
through a DNS name it controls). Runs until interrupted (Ctrl-C).

Flags:
      --port N     the port on 127.0.0.1 (default 0: a free one)
)";

constexpr std::string_view kPriorityHelp = R"(Change a run's priority (0 lowest .. 100 highest) and show its new place in the queue.

Usage: kubectl berth priority RUN VALUE [-n NS] [--wait DURATION]
       kubectl berth priority KIND/NAME VALUE [-n NS] [--wait DURATION]
         KIND job, jobset, pod: a queued workload's label berth.dev/priority;
         podgroup: the label on every Pod of the group (berth.dev/pod-group=NAME)

The change is one merge patch guarded by the run's resourceVersion (re-read and retried on a
conflict). The command then waits up to --wait (default 3s) for the controller to take it into
account and prints the run's queue position; after that it says the controller has not yet.

Flags:
      --wait DURATION   how long to wait for the new place (0s to 1h; default 3s; 0s: do not wait)

Example:
  kubectl berth priority train 90 -n ml
)";

constexpr std::string_view kFleetsHelp = R"(Show every Fleet and its instances: blocks in use, runs started, expiry, state.

Usage: kubectl berth fleets [-o wide]

Examples:
  kubectl berth fleets
  kubectl berth fleets -o wide

Flags:
  -o, --output wide   also show each instance's message
)";

constexpr std::string_view kTeamsHelp = R"(Show every Team: per fleet its shares name, the nominal share, what it uses, borrows and lends,
and its decayed past usage (the fair-share order among borrowers).

Usage: kubectl berth teams

Example:
  kubectl berth teams
)";

constexpr std::string_view kUsageHelp = R"(Show the recorded usage of a window per team, namespace, user or fleet: GPU-hours (weighted by
the fleets' costWeight beside them where that differs), the share of every Team's GPU-hours, CPU-
and memory-hours. Whole UTC days: those the window overlaps. Per user: your own row, every user's
if you may get configmaps in berth's namespace.

Usage: kubectl berth usage [--since 7d] [--by team|namespace|user|fleet] [-o json]

Examples:
  kubectl berth usage
  kubectl berth usage --since 30d --by user -o json

Flags:
      --since DURATION   the window, 1h to 90d (default 7d)
      --by KEY           team, namespace, user or fleet (default team)
  -o, --output json      the queue API's answer as it is (per row a series per day)
)";

constexpr std::string_view kDescribeHelp = R"(Show one run on one screen: priority, phase, reason and message, its place in the queue, what
it asks for, when it was submitted, started and finished, its attempts, each rank's node and Pod
state, its conditions and its Events (oldest first).

Usage: kubectl berth describe RUN [-n NS]      (kubectl berth get RUN is the same)

Example:
  kubectl berth describe train -n ml
)";

constexpr std::string_view kStopHelp = R"(End a run and keep its record: it is Failed with reason Stopped and never resubmitted by retry.

Usage: kubectl berth stop RUN [-n NS]

A pending run leaves the queue. A scheduled or running run's Pods are stopped with their grace
period; its blocks are free once they are gone. Writes spec.stop: true (one merge patch guarded by
the run's resourceVersion, with your credentials), then waits up to 5 s for berth-controller to
show the run stopped. An ended run cannot be stopped (kubectl berth apply -f FILE runs it again).

Example:
  kubectl berth stop train -n ml
)";

constexpr std::string_view kSuspendHelp = R"(Suspend a run (spec.suspend: true, a Job's field and meaning).

Usage: kubectl berth suspend RUN [-n NS]

A pending run leaves the queue (Pending, reason Suspended, no position). A scheduled or running
run's Pods are stopped with their grace period and it waits suspended; its blocks are free once its
Pods are gone. kubectl berth resume RUN queues it again at its first submission time. An ended run
cannot be suspended.

Example:
  kubectl berth suspend train -n ml
)";

constexpr std::string_view kResumeHelp = R"(Resume a suspended run (spec.suspend: false): it queues again at its first submission time.

Usage: kubectl berth resume RUN [-n NS]

If the suspension stopped its Pods, it queues once they are gone (the new Pods take their names).

Example:
  kubectl berth resume train -n ml
)";

constexpr std::string_view kLogsHelp = R"(Print the logs of every rank of a run, each line prefixed by "[rank N] ".

Usage: kubectl berth logs RUN [--rank N] [-f] [-n NS]

Reads the Pods of the run's current attempt (or, while a retry waits for its Pods, the latest
attempt that has Pods) through the API server (pods/log), the first container of each. Without -f
the ranks are printed one after the other; with -f they are followed together, lines as they come,
until every rank's container has ended (a rank whose container has not started yet is waited for).

Examples:
  kubectl berth logs train
  kubectl berth logs train --rank 1 -f

Flags:
      --rank N     only rank N (0 to nodes-1)
  -f, --follow     follow the logs until every rank's container has ended
)";

constexpr std::string_view kCommandsHelp = R"(kubectl berth: queue Runs, see the queue, change priorities, look at fleets, read logs, stop or suspend runs.

Usage: kubectl berth COMMAND [flags]

Commands:
  apply -f FILE [-Q]        apply manifests; -Q turns on queueing (retry on no-capacity, duration off)
  queue [-n NS | -A]        pending runs in queue order with priority, wait and why they wait
  priority RUN VALUE        change a run's priority (0..100)
  fleets                    fleets and their instances: blocks, runs started, expiry, state
  teams                     teams: per fleet nominal, used, borrowed, lent; past usage
  usage [--since D --by K]  GPU-hours per team, namespace, user or fleet, and their share
  describe RUN              one run: phase and why, queue position, ranks and their Pods, Events
  logs RUN [--rank N] [-f]  every rank's logs, each line prefixed by its rank; -f follows
  stop RUN                  end a run (Failed, Stopped), its Pods stopped with their grace period
  suspend RUN               take a run out of the queue, stopping its Pods, until it is resumed
  resume RUN                queue a suspended run again at its first submission time
  dashboard [--port N]      serve the dashboard on 127.0.0.1 with your own kubeconfig
  help [COMMAND]            help for a command (or: kubectl berth COMMAND --help)
)";

std::string_view CommandHelp(Command c) {
  switch (c) {
    case Command::kApply: return kApplyHelp;
    case Command::kQueue: return kQueueHelp;
    case Command::kPriority: return kPriorityHelp;
    case Command::kFleets: return kFleetsHelp;
    case Command::kTeams: return kTeamsHelp;
    case Command::kDescribe: return kDescribeHelp;
    case Command::kStop: return kStopHelp;
    case Command::kSuspend: return kSuspendHelp;
    case Command::kResume: return kResumeHelp;
    case Command::kLogs: return kLogsHelp;
    case Command::kDashboard: return kDashboardHelp;
    case Command::kUsage: return kUsageHelp;
    case Command::kNone:
    case Command::kHelp:
      break;
  }
  return kCommandsHelp;
}

}  // namespace

std::string Usage(Command c) {
  std::string out(CommandHelp(c));
  out += kGlobalFlagsHelp;
  return out;
}

}  // namespace berth::cli
