#!/usr/bin/env bash
# Sourced by loopback.sh and partitions.sh: Debian's slurmctld on loopback with the configuration gpufleet renders
# in DIR ($1), in the caller's private mount namespace. Only what cannot hold on a test machine is changed: host
# name, ports, paths under DIR, SlurmUser root, no GPUs (character devices stand in), IgnoreSystemd in a container.
# Leaves slurmctld running and stops it (and every slurmd it started, by pid file) on exit.
# shellcheck shell=bash
dir=$(cd "$1" && pwd)
conf=$dir/etc
mkdir -p "$conf" "$dir"/{state,spool,log,run,munge}
host=$(hostname -s)
sed -e "s/^SlurmctldHost=.*/SlurmctldHost=$host(127.0.0.1)/" -e "s#^StateSaveLocation=.*#StateSaveLocation=$dir/state#" \
  -e "s#^SlurmdSpoolDir=.*#SlurmdSpoolDir=$dir/spool#" -e "s#^Slurmctld\(Log\|Pid\)File=.*#&#" \
  -e "s#^SlurmctldLogFile=.*#SlurmctldLogFile=$dir/log/slurmctld.log#" -e "s#^SlurmdLogFile=.*#SlurmdLogFile=$dir/log/slurmd.log#" \
  -e "s#^SlurmctldPidFile=.*#SlurmctldPidFile=$dir/run/slurmctld.pid#" -e "s#^SlurmdPidFile=.*#SlurmdPidFile=$dir/run/slurmd.pid#" \
  -e "s/^SlurmUser=.*/SlurmUser=root/" -e "s/^SlurmctldPort=.*/SlurmctldPort=${CTLD_PORT:-16817}/" \
  -e "s/^SlurmdPort=.*/SlurmdPort=${SLURMD_PORT:-16818}/" -e "s#^TaskProlog=.*#TaskProlog=$dir/task-prolog#" \
  -e "s#^HealthCheckProgram=.*#HealthCheckProgram=/bin/true#" -e "s#^Prolog=.*#Prolog=$dir/prolog#" \
  -e "s#^Epilog=.*#Epilog=$dir/epilog#" "$dir/slurm.conf" > "$conf/slurm.conf"
# GPUs: character devices with the NVIDIA driver's major number (195), at a path under DIR.
mkdir -p "$dir/dev"
for i in $(seq 0 $((${GPUS:-8} - 1))); do mknod "$dir/dev/nvidia$i" c 195 "$i"; done
sed "s#/dev/nvidia#$dir/dev/nvidia#" "$dir/gres.conf" > "$conf/gres.conf"
{ cat "$dir/cgroup.conf"; echo "IgnoreSystemd=yes"; } > "$conf/cgroup.conf"
if [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ]; then
  # A host on cgroup v1 cannot run the v2 plugins a node runs: track processes without cgroups here.
  sed -i -e "s#^ProctrackType=.*#ProctrackType=proctrack/linuxproc#" -e "s#^TaskPlugin=.*#TaskPlugin=task/affinity#" \
    -e "s#^JobAcctGatherType=.*#JobAcctGatherType=jobacct_gather/linux#" "$conf/slurm.conf"
  sed -i -e "s#^CgroupPlugin=.*#CgroupPlugin=cgroup/v1#" -e "/^IgnoreSystemd/d" "$conf/cgroup.conf"
fi
# Debian makes /run/munge through systemd-tmpfiles at boot: a container that installed munge may not have it.
mkdir -p /run/munge
mount --bind "$dir/munge" /run/munge
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 0600 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/log" \
  --seed-file="$dir/munge/seed"
export SLURM_CONF=$conf/slurm.conf
export GPU_JOBS=$dir/run-gpufleet/gpu-jobs
cleanup() {
  for pid in "$dir"/run/slurmd*.pid "$dir"/run/slurmctld.pid "$dir"/munge/munged.pid; do
    if [ -s "$pid" ]; then kill "$(cat "$pid")" 2>/dev/null || true; fi
  done
}
trap cleanup EXIT
slurmctld -i -f "$conf/slurm.conf"
for _ in $(seq 50); do scontrol ping >/dev/null 2>&1 && break; sleep 0.2; done
