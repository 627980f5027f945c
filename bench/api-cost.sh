#!/usr/bin/env bash
# Writes per run as the API server counts them (apiserver_request_total), on the throughput
# scenario (berth only), with the admission webhook on (the Helm chart's default) and off.
# See docs/performance.md.
"$(dirname "$0")/run-e2e.sh" throughput api-cost --compare 0 --webhook 1 "$@"
exec "$(dirname "$0")/run-e2e.sh" throughput api-cost-no-webhook --compare 0 --webhook 0 "$@"
