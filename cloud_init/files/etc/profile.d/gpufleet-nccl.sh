# shellcheck shell=sh
# gpufleet: NCCL environment for login shells (the same values are in /etc/nccl.conf for every process).
if [ -r /etc/gpufleet/nccl.env ]; then
  set -a
  # shellcheck source=/dev/null
  . /etc/gpufleet/nccl.env
  set +a
fi
# GCP GPUDirect plugins ship their own environment scripts.
for gpufleet_nccl_profile in /var/lib/tcpxo/lib64/nccl-env-profile.sh /usr/local/gib/scripts/set_nccl_env.sh; do
  # shellcheck source=/dev/null
  [ -r "$gpufleet_nccl_profile" ] && . "$gpufleet_nccl_profile"
done
unset gpufleet_nccl_profile
if [ -n "${GPUFLEET_NCCL_LIBRARY_PATH:-}" ]; then
  LD_LIBRARY_PATH="$GPUFLEET_NCCL_LIBRARY_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LD_LIBRARY_PATH
fi
