#!/usr/bin/env bash
# API requests per admitted run, from the controller's own berth_api_requests_total, on the
# throughput scenario (berth only). See docs/performance.md.
exec "$(dirname "$0")/run-e2e.sh" throughput api-cost --compare 0 "$@"
