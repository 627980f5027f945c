#!/usr/bin/env bash
# One end-to-end benchmark on a real local control plane; see docs/performance.md.
exec "$(dirname "$0")/run-e2e.sh" scale scale "$@"
