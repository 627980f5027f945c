#!/usr/bin/env bash
# One end-to-end benchmark on a real local control plane; see docs/performance.md#memory-per-run.
exec "$(dirname "$0")/run-e2e.sh" run-size run-size "$@"
