#!/usr/bin/env bash
# Runs Debian's slurmctld and one dynamic slurmd on loopback with the configuration gpufleet renders, in a private
# mount namespace (so munged's default socket, which slurmd uses before it has fetched its config, is our own):
#   unshare -m bash loopback.sh DIR
# DIR holds the rendered slurm.conf, cgroup.conf and gres.conf. Only what cannot hold on a test machine is changed:
# host name, ports, paths under DIR, SlurmUser root, no GPUs (the node registers without Gres), IgnoreSystemd in a
# container. Prints the evidence the test asserts on, between markers.
set -euo pipefail
# shellcheck source=tests/scheduler/loopback-setup.sh
. "$(dirname "$0")/loopback-setup.sh"
echo "== ping"; scontrol ping
echo "== config"; scontrol show config
echo "== slurmd -C"; slurmd -C
# A dynamic node fetches its configuration from slurmctld (configless) and registers itself.
slurmd -Z --conf-server "127.0.0.1:${CTLD_PORT:-16817}" --conf "${NODE_CONF:-Gres=gpu:8 Feature=loopback}" -N loopback1
for _ in $(seq 75); do sinfo -h -N -o '%N %t' 2>/dev/null | grep -q 'loopback1 idle' && break; sleep 0.2; done
echo "== sinfo"; sinfo -N -o '%N %t %P %f %G'
# The controller's Slurm metrics (cloud_init/controller/gpufleet-slurm-metrics): once with the node idle, once
# with one job running on all its GPUs and a second one pending behind it.
if [ -n "${METRICS_SCRIPT:-}" ]; then
  bash "$METRICS_SCRIPT" "$dir/idle.prom"
  running=$(sbatch --parsable -N1 -t 1 --gpus="${GPUS:-8}" -o /dev/null --wrap 'sleep 30')
  pending=$(sbatch --parsable -N1 -t 1 --gpus="${GPUS:-8}" -o /dev/null --wrap 'sleep 30')
  for _ in $(seq 100); do [ "$(squeue -h -j "$running" -o %T)" = RUNNING ] && break; sleep 0.2; done
  bash "$METRICS_SCRIPT" "$dir/busy.prom"
  scancel "$running" "$pending"
  for _ in $(seq 100); do [ -z "$(squeue -h -o %i)" ] && sinfo -h -N -o '%t' | grep -qx idle && break; sleep 0.2; done
fi
echo "== fetched"; ls "$dir/spool/conf-cache" 2>/dev/null || true
echo "== srun"
# shellcheck disable=SC2016 # expanded by the job step's shell
timeout 30 srun -N1 -t 1 --gpus=2 sh -c 'echo task-env GPUFLEET_TEST_VAR=${GPUFLEET_TEST_VAR:-unset} CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}; env | sort; for f in "$GPU_JOBS"/*; do echo "gpu-job $(basename "$f") $(cat "$f") job $SLURM_JOB_ID"; done'
# The Epilog runs once the job has ended, shortly after srun returns.
for _ in $(seq 50); do [ -z "$(find "$GPU_JOBS" -maxdepth 1 -type f ! -name '.*' 2>/dev/null)" ] && break; sleep 0.2; done
echo "== gpu-jobs after"; find "$GPU_JOBS" -maxdepth 1 -type f ! -name '.*' 2>/dev/null | wc -l
echo "== jobs"
# The example job scripts' #SBATCH lines, read by the real sbatch and checked against this cluster by slurmctld
# (sized down to the one loopback node).
for script in ${JOB_SCRIPTS:-}; do
  echo "-- $(basename "$script")"
  sbatch --test-only --nodes=1 --ntasks-per-node=1 --gpus-per-node=2 --time=1 "$script" train.py 2>&1
done
echo "== node"; scontrol show node loopback1
echo "== drain"
# A spot notice on the node while a requeueable batch job runs there: the node's drain hook's Slurm step.
job=$(sbatch --parsable --requeue -N1 -t 2 -o "$dir/job-%j.out" --wrap 'sleep 3')
for _ in $(seq 100); do [ "$(squeue -h -j "$job" -o %T)" = RUNNING ] && break; sleep 0.2; done
echo "before $(squeue -h -j "$job" -o %T)"
GPUFLEET_SLURM_NODE_NAME=loopback1 GPUFLEET_NOTICE_KIND=spot GPUFLEET_NOTICE_DETAIL=instance-action \
  GPUFLEET_SLURM_DRAIN_WAIT=20 GPUFLEET_NODE_ENV=/dev/null sh "${DRAIN_SCRIPT:?}"
echo "after $(squeue -h -j "$job" -o %T)"
echo "nodes $(sinfo -h -N -o %N | grep -c loopback1 || true)"
echo "== second boot"
# The node's next boot: slurmd registers again under the same name and the requeued job runs to its end there.
kill "$(cat "$dir/run/slurmd.pid")"; sleep 1
slurmd -Z --conf-server "127.0.0.1:${CTLD_PORT:-16817}" --conf "${NODE_CONF:-Gres=gpu:8 Feature=loopback}" -N loopback1
for _ in $(seq 100); do sinfo -h -N -o '%N %t' 2>/dev/null | grep -q 'loopback1 \(idle\|mix\|alloc\)' && break; sleep 0.2; done
sinfo -h -N -o '%N %t'
# Slurm holds a requeued job back for a while (BeginTime); the test does not wait for that.
scontrol update jobid="$job" StartTime=now
for _ in $(seq 300); do [ -z "$(squeue -h -j "$job" -o %T 2>/dev/null)" ] && break; sleep 0.2; done
scontrol show job "$job" 2>/dev/null | grep -o 'JobState=[A-Z]*\|Restarts=[0-9]*' | tr '\n' ' '; echo
echo "== end"
