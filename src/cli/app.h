#pragma once
// kubectl-berth's entry point: parses the command line, runs the command against the cluster the
// kubeconfig names, prints results to `out` and one-sentence errors ("error: ...") to `err`.

#include <iosfwd>
#include <string>
#include <vector>

namespace berth::cli {

// Runs one invocation (`args` without the program name). Returns the process exit code: 0 on
// success, 1 on any error; for apply, kubectl's own exit code when kubectl apply fails.
int Main(const std::vector<std::string>& args, std::istream& in, std::ostream& out, std::ostream& err);

// Runs `argv` (looked up on PATH) with `input` on its stdin and this process's stdout/stderr.
// Returns its exit code, or -1 with `error` set when it could not be started.
int RunPassThrough(const std::vector<std::string>& argv, const std::string& input, std::string* error);

}  // namespace berth::cli
