# shellcheck shell=sh
# gpufleet: the job environment (NCCL for this node's fabric, plugin libraries, MPS pipe) for login shells and
# gpufleet-run. The NCCL variables are also in /etc/nccl.conf, which NCCL reads in every process.
if [ -r /etc/gpufleet/job.env ]; then
  set -a
  # shellcheck source=/dev/null
  . /etc/gpufleet/job.env
  set +a
fi
# GCP GPUDirect plugins ship their own environment scripts.
for gpufleet_profile in /var/lib/tcpxo/lib64/nccl-env-profile.sh /usr/local/gib/scripts/set_nccl_env.sh; do
  # shellcheck source=/dev/null
  if [ -r "$gpufleet_profile" ]; then . "$gpufleet_profile"; fi
done
unset gpufleet_profile
if [ -n "${GPUFLEET_NCCL_LIBRARY_PATH:-}" ]; then
  case ":${LD_LIBRARY_PATH:-}:" in
    *":$GPUFLEET_NCCL_LIBRARY_PATH:"*) ;;
    *) LD_LIBRARY_PATH="$GPUFLEET_NCCL_LIBRARY_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
  esac
  export LD_LIBRARY_PATH
fi
