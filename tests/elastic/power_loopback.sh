#!/usr/bin/env bash
# Debian's slurmctld with power saving on, driving gpufleet's real power programs against the test's fake Compute
# Engine (tests/elastic/fake_gce.py, on loopback, run by the test), in a private mount namespace:
#   SETUP=tests/scheduler/loopback-setup.sh unshare -m bash power_loopback.sh DIR
# DIR holds slurm.conf (rendered by gpufleet.scheduler: conf.py plus power.py's lines, the programs under DIR/bin),
# cgroup.conf, gres.conf, the job scripts' stand-ins, and the power configs: power.json, power-retry.json (retry at
# once) and power-min.json (the `keep` group's min_nodes 1); slurm.conf's SlurmdTimeout is short, so a killed slurmd
# is "Not responding" within seconds. Slurm runs as loopback-setup.sh starts it. The fake
# writes DIR/spawn/NAME when it creates instance NAME and DIR/kill/NAME when it deletes it; this script plays the
# instance: it starts `slurmd -N NAME` (a CLOUD node, configless) for a spawned name (except names in $DEAD, which
# never come up) and stops it when killed. One slurmd at a time: they would share a port. Prints the evidence
# between markers.
set -euo pipefail
dir=$(cd "$1" && pwd)
port=${CTLD_PORT:-16817}
mkdir -p "$dir"/{spawn,kill,bin}
# slurm.conf names these; slurmctld starts them with SLURM_CONF as their only environment.
for name in resume suspend resume-fail; do
  cat > "$dir/bin/gpufleet-slurm-$name" <<EOF
#!/bin/sh
exec env GPUFLEET_POWER_CONFIG=$dir/power.json GPUFLEET_POWER_LIB=$POWER_LIB $PYTHON $POWER_ENTRY $name "\$@"
EOF
  chmod 0755 "$dir/bin/gpufleet-slurm-$name"
done
# shellcheck source=tests/scheduler/loopback-setup.sh
. "${SETUP:?}"
stop_instances() { if [ -n "${instances:-}" ]; then kill "$instances" 2>/dev/null || true; fi; cleanup; }
trap stop_instances EXIT
trap 'exit 143' TERM INT  # the EXIT trap then stops the daemons

# The instances: slurmd -N NAME for each instance the fake cloud creates, stopped when it deletes it.
play_instances() {
  while sleep 0.2; do
    for spawned in "$dir"/spawn/*; do
      [ -e "$spawned" ] || continue
      name=$(basename "$spawned"); rm -f "$spawned"
      case " ${DEAD:-} " in *" $name "*) echo "$name never boots" >> "$dir/instances.log"; continue ;; esac
      # A booted instance: its boot time after the resume request (slurmctld waits for a node whose boot time is
      # older, as for one that never rebooted), so slurmd runs in a time namespace whose uptime starts at zero.
      sleep 1
      unshare -T --boottime "-$(cut -d. -f1 /proc/uptime)" slurmd -N "$name" --conf-server "127.0.0.1:$port" \
        && echo "$name booted" >> "$dir/instances.log"
    done
    for killed in "$dir"/kill/*; do
      [ -e "$killed" ] || continue
      name=$(basename "$killed"); rm -f "$killed"
      if [ -s "$dir/run/slurmd.pid" ] && grep -q "^$name booted" "$dir/instances.log"; then
        kill "$(cat "$dir/run/slurmd.pid")" 2>/dev/null || true
        rm -f "$dir/run/slurmd.pid"
      fi
      echo "$name deleted" >> "$dir/instances.log"
    done
  done
}
play_instances &
instances=$!

# state NODE: the node's state as sinfo shows it (lower case, flags as suffixes: idle~ is powered down).
state() { sinfo -h -N -n "$1" -o '%t' | head -1; }
wait_for() {  # wait_for SECONDS COMMAND...: until COMMAND succeeds
  local rounds=$(($1 * 5)); shift
  for _ in $(seq "$rounds"); do "$@" && return 0; sleep 0.2; done
  return 1
}
node_is() { [ "$(state "$1")" = "$2" ]; }
job_is() { [ "$(squeue -h -j "$1" -o %T 2>/dev/null)" = "$2" ]; }
job_gone() { [ -z "$(squeue -h -j "$1" -o %T 2>/dev/null)" ]; }
reason() { sinfo -h -N -n "$1" -o '%E' | head -1; }
sync_power() { env GPUFLEET_POWER_CONFIG="$1" GPUFLEET_POWER_LIB="$POWER_LIB" "$PYTHON" "$POWER_ENTRY" sync; }
deleted() { grep -c "^$1 deleted" "$dir/instances.log" || true; }  # deleted NODE: how often its instance went
# repaired NODE DELETED_BEFORE: one sync repairs NODE (DOWN with the repair reason, its instance deleted), the next
# returns it to service.
repaired() {
  sync_power "$dir/power.json"
  wait_for 20 node_is "$1" 'down~' || true
  echo "$1 $(state "$1") $(reason "$1")"
  wait_for 10 test "$(deleted "$1")" -gt "$2" && echo "$1 instance deleted"
  sync_power "$dir/power.json"
  echo "$1 $(state "$1")"
}

echo "== config"; scontrol show config | grep -E '^(SuspendTime|SuspendTimeout|ResumeTimeout|SuspendProgram|ResumeProgram|ResumeFailProgram|SuspendExcNodes|SlurmctldParameters|PrivateData) '
echo "== powered down"; sinfo -h -N -o '%N %t %P %f' | sort -u

echo "== fallback"  # zone a has no capacity for burst-1; zone b has
# shellcheck disable=SC2016 # expanded by the job's shell
job=$(sbatch --parsable -p burst -w burst-1 -t 2 -o "$dir/job-%j.out" --wrap 'echo ran on $SLURMD_NODENAME')
wait_for 40 job_gone "$job" || true
scontrol show job "$job" 2>/dev/null | grep -o 'JobState=[A-Z]*' || true
cat "$dir/job-$job.out" 2>/dev/null || echo "no output"
echo "== suspend"  # idle for SuspendTime: SuspendProgram deletes the instance, the node is powered down again
wait_for 40 node_is burst-1 'idle~' && echo "burst-1 $(state burst-1)"

echo "== short"  # burst-2 and burst-3: zone a without capacity, zone b without quota
short=$(sbatch --parsable -p burst -N 2 -w 'burst-[2-3]' -t 2 -o /dev/null --wrap 'true')
wait_for 30 node_is burst-2 'down~' || true
wait_for 10 node_is burst-3 'down~' || true
echo "burst-2 $(state burst-2) $(reason burst-2)"
echo "burst-3 $(state burst-3) $(reason burst-3)"
echo "job $(squeue -h -j "$short" -o %T)"
cp "$dir/metrics.prom" "$dir/short.prom" 2>/dev/null || true
scancel "$short"

echo "== retry"  # sync after the retry time: the nodes return to service, powered down, and resume again
sync_power "$dir/power-retry.json"
echo "burst-2 $(state burst-2)"
echo "burst-3 $(state burst-3)"
cp "$dir/metrics.prom" "$dir/retry.prom" 2>/dev/null || true
# shellcheck disable=SC2016 # expanded by the job's shell
again=$(sbatch --parsable -p burst -w burst-3 -t 2 -o "$dir/job-%j.out" --wrap 'echo ran on $SLURMD_NODENAME')
wait_for 40 job_gone "$again" || true
cat "$dir/job-$again.out" 2>/dev/null || echo "no output"

echo "== timeout"  # burst-2's instance is created but never boots: ResumeTimeout, then ResumeFailProgram
late=$(sbatch --parsable -p burst -w burst-2 -t 2 -o /dev/null --wrap 'true')
wait_for 60 node_is burst-2 'down~' || true
wait_for 20 grep -q '^burst-2 deleted' "$dir/instances.log" || true
echo "burst-2 $(state burst-2) $(reason burst-2)"
echo "job $(squeue -h -j "$late" -o %T)"
scancel "$late"

echo "== unhealthy"  # burst-1's health check drains it during a job: once idle, sync releases it for a fresh one
wait_for 40 node_is burst-3 'idle~' || true  # one slurmd at a time
before=$(deleted burst-1)
# shellcheck disable=SC2016 # expanded by the job's shell
sick=$(sbatch --parsable -p burst -w burst-1 -t 2 -o /dev/null \
  --wrap 'scontrol update nodename=$SLURMD_NODENAME state=DRAIN reason="gpufleet: unhealthy: test"; sleep 1')
wait_for 40 job_gone "$sick" || true
repaired burst-1 "$before"
cp "$dir/metrics.prom" "$dir/repair.prom" 2>/dev/null || true

echo "== not responding"  # burst-1's instance dies during a job, without a notice: DOWN, then released by sync
hung=$(sbatch --parsable -p burst -w burst-1 -t 2 -o /dev/null --wrap 'exec sleep 120')
wait_for 40 job_is "$hung" RUNNING || true
before=$(deleted burst-1)
kill -KILL "$(cat "$dir/run/slurmd.pid")" 2>/dev/null || true
rm -f "$dir/run/slurmd.pid"
# The job's slurmstepd outlives its slurmd, as on a hung instance; it goes with the instance here (this test's
# only: its configless slurm.conf is under DIR).
for pid in $(pgrep -f "^slurmstepd: \[$hung\." || true); do
  if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "SLURM_CONF=$dir/.*"; then
    pkill -KILL -P "$pid" || true
    kill -KILL "$pid" || true
  fi
done
wait_for 40 node_is burst-1 'down*' || true
echo "burst-1 $(state burst-1) $(reason burst-1)"
echo "job $(squeue -h -j "$hung" -o %T)"
repaired burst-1 "$before"
scancel "$hung"
wait_for 40 node_is burst-1 'idle~' || true

echo "== min"  # the keep group keeps one node up: sync powers it up, SuspendExcNodes keeps it past SuspendTime
wait_for 40 node_is burst-3 'idle~' || true
sync_power "$dir/power-min.json"
wait_for 40 node_is keep-1 idle || true
echo "keep-1 $(state keep-1)"
sleep "${SUSPEND_TIME:-4}"; sleep 4
echo "keep-1 $(state keep-1)"
echo "== instances"; cat "$dir/instances.log"
echo "== end"
