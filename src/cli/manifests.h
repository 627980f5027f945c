#pragma once
// What `kubectl berth apply` hands to `kubectl apply -f -`: the user's documents, re-emitted, with
// queueing turned on for Runs (-Q) and YAML 1.1's "off means false" trap defused.
//
// Re-emitting keeps what kubectl will read: a plain (unquoted) scalar is written back plain and
// verbatim, so kubectl resolves it exactly as it would have resolved the original (1, 0644, true,
// off, null stay what they were); quoted and block scalars are written double-quoted, so they stay
// strings. Comments, anchors and layout are not kept (aliases are expanded).

#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "k8s/result.h"

namespace berth::cli {

// One Run found in the input and what apply does about its queueing.
struct RunQueueing {
  std::string name;
  std::string on_events;  // "no-capacity" or "no-capacity, error": the events after the change
  std::string duration;   // "off", "2h": after the change
  bool queued = false;    // onEvents includes no-capacity, so the run waits for capacity
};

// A Run named in the manifests (metadata.name; metadata.namespace when the document sets it).
struct NamedRun {
  std::string ns;  // empty: the namespace kubectl apply would use (-n, else the context's)
  std::string name;
};

struct PreparedManifests {
  std::string yaml;                // documents separated by "---\n"
  int documents = 0;               // non-empty documents
  std::vector<RunQueueing> runs;   // every Run (berth.dev), in input order; filled only with -Q
  std::vector<NamedRun> named_runs;  // every Run with a metadata.name, in input order (always filled)
};

// Reads every document of `text` (`source` names it in errors: a file name or "stdin") and
// prepares them. Empty documents are dropped; "kind: List" items are handled like documents.
// For Runs: a boolean-false `spec.maxDuration` or `spec.retry.duration` (a bare off/no/false)
// becomes the string "off"; with `queueing`, `spec.retry.onEvents` defaults to [no-capacity] and
// `spec.retry.duration` to "off" where the document does not set them. Errors: invalid YAML
// (with line and column), a document that is not a mapping.
k8s::Result<PreparedManifests> PrepareManifests(std::string_view text, const std::string& source, bool queueing);

// Block-style YAML for one document, following the scalar rule above. Mappings with
// non-scalar keys are an error.
k8s::Result<std::string> EmitYaml(const YAML::Node& doc);

// Whether a plain scalar is YAML 1.1 false to kubectl's YAML reader (go-yaml v2): n, no, off,
// false in their three casings.
bool IsYaml11False(const std::string& plain);

}  // namespace berth::cli
