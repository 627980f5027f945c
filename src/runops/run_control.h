#pragma once
// `kubectl berth stop | suspend | resume RUN`: check that the change applies to the run as it is,
// write spec.stop / spec.suspend with one merge patch guarded by the run's resourceVersion (with
// the caller's own credentials), and tell when berth-controller has carried it out. Shared by
// kubectl berth and the dashboard (berth-controller), so both decide alike.

#include <cstdint>
#include <string>

#include "api/v1alpha1/run.h"
#include "k8s/client.h"
#include "k8s/json.h"
#include "k8s/result.h"

namespace berth::runops {

enum class Control { kStop, kSuspend, kResume };

// "stop", "suspend", "resume".
const char* ControlVerb(Control c);

// Whether `c` applies to the run as it is; else one sentence naming the run and why not:
// an ended run (Succeeded or Failed) cannot be stopped, suspended or resumed; a run being deleted
// or already stopping neither; a suspended run is not suspended again, and only a suspended run
// (spec.suspend true) is resumed. The error carries 409 Conflict (the run's state conflicts with
// the change), so an HTTP caller can answer with it.
k8s::Status CheckControl(Control c, const api::v1alpha1::Run& run);
k8s::Status CheckControl(Control c, const k8s::json::Value& run);

// {"metadata":{"resourceVersion":rv},"spec":{"stop":true}} (or suspend true/false): the codec's
// StopPatch / SuspendPatch.
std::string ControlPatch(Control c, const std::string& resource_version);

struct ControlChange {
  int64_t generation = 0;  // metadata.generation after the patch
  std::string phase;       // status.phase before it ("" when the run had no status yet)
  int conflicts = 0;
};

// Reads the run, checks it (CheckControl) and patches it; on 409 Conflict reads again and retries,
// at most `attempts` patches in all. Errors are sentences (RunErrorSentence for API errors) with
// the API's code (0 when the API server did not answer). With the client's own credentials (the
// plugin's and kubectl berth dashboard's: the user's kubeconfig).
k8s::Result<ControlChange> ApplyControl(k8s::Client& client, const std::string& ns, const std::string& name, Control c,
                                        int attempts = 5);

// Whether the run's status shows the change carried out for `generation`: stopped (or ended
// anyway), suspended (Pending, Suspended; or ended anyway), resumed (no longer Suspended).
bool ControlDone(Control c, const api::v1alpha1::Run& run, int64_t generation);
bool ControlDone(Control c, const k8s::json::Value& run, int64_t generation);

// The run's status as one line: "Failed (Stopped): stopped (spec.stop) while running; ...".
std::string StatusLine(const api::v1alpha1::Run& run);
std::string StatusLine(const k8s::json::Value& run);

// Whether the run's status reflects `generation` (status.observedGeneration >= generation).
bool Observed(const api::v1alpha1::Run& run, int64_t generation);
bool Observed(const k8s::json::Value& run, int64_t generation);

// The overloads on JSON decode the run with api::v1alpha1::DecodeRunLeniently first.

// A failed API call as a sentence: Forbidden/other API errors carry the server's message; 404 on
// the run names it and its namespace.
std::string RunErrorSentence(const k8s::Status& s, const std::string& ns, const std::string& name);

}  // namespace berth::runops
