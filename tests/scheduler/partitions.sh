#!/usr/bin/env bash
# Debian's slurmctld with the slurm.conf of a cluster of node groups (a NodeSet and a partition per group), and one
# dynamic slurmd per group, one after the other (one host runs one slurmd): each registers with its group's line and
# must land in its group's partition, where `srun -p` runs on it.
#   NODES='name=conf;name=conf' unshare -m bash partitions.sh DIR     (conf: the group's `slurmd -Z --conf` line)
set -euo pipefail
# shellcheck source=tests/scheduler/loopback-setup.sh
. "$(dirname "$0")/loopback-setup.sh"
IFS=';' read -r -a nodes <<< "${NODES:?}"
for entry in "${nodes[@]}"; do
  name=${entry%%=*}
  node_conf=${entry#*=}
  if [ -s "$dir/run/slurmd.pid" ]; then kill "$(cat "$dir/run/slurmd.pid")"; sleep 1; fi
  slurmd -Z --conf-server "127.0.0.1:${CTLD_PORT:-16817}" --conf "$node_conf" -N "$name"
  for _ in $(seq 75); do sinfo -h -N -o '%N %t' 2>/dev/null | grep -q "^$name idle" && break; sleep 0.2; done
  echo "== node $name"
  sinfo -h -N -n "$name" -o '%N %t %R %f %G'
  partition=$(sinfo -h -N -n "$name" -o '%R')
  # shellcheck disable=SC2016 # expanded by the job step's shell
  timeout 30 srun -p "$partition" -t 1 -N1 sh -c 'echo "ran-on $SLURMD_NODENAME in $SLURM_JOB_PARTITION"'
done
echo "== partitions"; scontrol show partition -o | sed 's/^PartitionName=\([^ ]*\).* Default=\([A-Z]*\) .* Nodes=\([^ ]*\).*/\1 \2 \3/'
