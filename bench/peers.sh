#!/usr/bin/env bash
# berth beside Kueue (issue 32), every scenario in one command, each anchor on a fresh local
# control plane: builds Kueue (hack/build-kube.sh kueue, pinned, cached) with everything else the
# benchmarks need, then runs
#   throughput  2,000 1-GPU jobs on 500 bare nodes (to every Pod bound), and on 500 kwok nodes
#               (to every Pod Running): berth, kube-scheduler, Jobs, Kueue; writes and API server
#               CPU per job
#   gangs       250 jobs of 4 nodes on 1,000 nodes, all-or-nothing sampled: berth and Kueue
#   priority    10,000 pending, one job raised to the top, until it is admitted when a slot frees
#   scale       100,000 pending on 10,000 nodes: RSS, start -> first admission, one decision
#   behaviour   seven small scenarios through both, the table of what each did
# and writes each table to bench/results/*-peers*.md (see docs/performance.md, "Kueue beside
# berth"). About 1.5 hours on the 2-core machine (Kueue's scale part alone: 46 minutes).
# Extra arguments go to every scenario (e.g. --nodes 100 --runs 400 for a quick look; then the
# tables are not the documented ones).
# Issue 45, berth's Job path (--jobs): the same batch/v1 Jobs Kueue gets, labelled berth.dev/queue
# instead, beside Kueue. `bench/peers.sh --jobs-only [flags]` runs only those rows (throughput bare
# and kwok, gangs of 200 Indexed Jobs of 4 on 1,000 nodes, priority at 2,000 pending) into
# bench/results/jobs-*-peers*.md (about 25 minutes); the full run adds the berth Jobs row to each
# table.
set -euo pipefail
BENCH="$(cd "$(dirname "$0")" && pwd)"
run() { "$BENCH/run-e2e.sh" "$@"; }
if [ "${1:-}" = "--jobs-only" ]; then
  shift
  run throughput jobs-throughput-peers --kueue 1 --jobs 2 "$@"
  run throughput jobs-throughput-peers --kueue 1 --jobs 2 --kwok 1 "$@"
  run gangs jobs-gangs-peers --kueue 1 --jobs 2 --runs 200 "$@"  # 800 of 1,000 nodes: see docs/performance.md (issue 45)
  run priority jobs-priority-peers --kueue 1 --jobs 2 --pending 2000 --patches 20 --kueue-patches 5 "$@"
  run behaviour jobs-behaviour-peers --jobs 1 "$@"
  exit 0
fi
run behaviour behaviour-peers --jobs 1 "$@"
run throughput throughput-peers --kueue 1 --jobs 1 "$@"
run throughput throughput-peers --kueue 1 --jobs 1 --kwok 1 "$@"
run gangs gangs-peers --kueue 1 --jobs 1 "$@"
run priority priority-peers --kueue 1 --jobs 1 --kueue-patches 5 "$@"  # Kueue: minutes per admission at 10,000
run scale scale-peers --kueue 1 "$@"
