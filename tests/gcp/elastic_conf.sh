#!/usr/bin/env bash
# Runs Debian's slurmctld on loopback with an elastic cluster's rendered slurm.conf (no slurmd: every node is a
# CLOUD node, powered down until a job asks for it), in a private mount namespace:
#   unshare -m bash elastic_conf.sh DIR
# Prints the configuration slurmctld runs with and its nodes, between markers.
set -euo pipefail
# shellcheck source=tests/scheduler/loopback-setup.sh
. "$(dirname "$0")/../scheduler/loopback-setup.sh"
scontrol ping >/dev/null
echo "== config"; scontrol show config
for _ in $(seq 25); do [ -n "$(sinfo -h -N -o '%N' 2>/dev/null)" ] && break; sleep 0.2; done
echo "== sinfo"; sinfo -h -N -o '%N %t %P'
