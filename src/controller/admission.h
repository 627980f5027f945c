#pragma once
// A mutating admission webhook for Runs: adds berth's finalizer when a Run is created, so that
// admitting it later needs no separate metadata write (the finalizer cannot ride on the /status
// write that records the admission). Optional: without it the controller adds the finalizer
// itself at admission.

#include <cstddef>
#include <string>

#include "k8s/result.h"

namespace berth::controller {

// Answers an admission.k8s.io/v1 AdmissionReview request (the POST body) with the
// AdmissionReview response to send back: always allowed; a JSON patch adding the finalizer when
// the Run does not carry it yet. A malformed request is an error (HTTP 400).
// The largest AdmissionReview body the webhook reads (413 above it): a Run is at most 1.5 MiB in
// etcd, and a review carries the object (and, on updates, the old object) plus a small envelope.
inline constexpr size_t kMaxAdmissionReviewBytes = 4 * 1024 * 1024;

k8s::Result<std::string> ReviewRun(const std::string& request_body);

}  // namespace berth::controller
