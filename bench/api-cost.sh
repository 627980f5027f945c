#!/usr/bin/env bash
# Writes per run as the API server counts them (apiserver_request_total), on the throughput
# scenario (berth only), with the chart's admission policies (its default on Kubernetes 1.36+),
# with the admission webhook (its default before 1.36) and with neither. See docs/performance.md.
"$(dirname "$0")/run-e2e.sh" throughput api-cost-policies --compare 0 --webhook 2 "$@"
"$(dirname "$0")/run-e2e.sh" throughput api-cost --compare 0 --webhook 1 "$@"
exec "$(dirname "$0")/run-e2e.sh" throughput api-cost-no-webhook --compare 0 --webhook 0 "$@"
