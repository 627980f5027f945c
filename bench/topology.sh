#!/usr/bin/env bash
# Issue 48: berth's topology levels beside Kueue v0.17's Topology-Aware Scheduling on one seeded
# stream of gangs (racks and spines, required and preferred) on kwok nodes, each on a fresh local
# control plane; the table goes to bench/results/topology-kwok.md (see docs/performance.md,
# "Topology levels beside Kueue's TAS"). Extra flags go to the driver (bench/e2e/topology.cc), e.g.
# --spines 2 --racks 4 --rack-nodes 9 --gangs 40 (the documented run on the loaded 2-core machine).
# kwok without node Leases (--kwok-lease 0): no node lifecycle controller runs, and 576 Leases
# renewed every 10 s would load the 2 cores for nothing.
exec "$(dirname "$0")/run-e2e.sh" topology topology --kwok 1 --kwok-lease 0 --kueue 1 "$@"
