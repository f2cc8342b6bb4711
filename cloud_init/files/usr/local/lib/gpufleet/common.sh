# shellcheck shell=bash
# Shared helpers for gpufleet node scripts. Sourced, never run.
# Every parameter comes from one environment file written by cloud-init (GPUFLEET_ENV_FILE overrides it in tests).

GPUFLEET_ENV_FILE="${GPUFLEET_ENV_FILE:-/etc/gpufleet/node.env}"
if [ -r "$GPUFLEET_ENV_FILE" ]; then
  set -a
  # shellcheck source=/dev/null
  . "$GPUFLEET_ENV_FILE"
  set +a
fi
GPUFLEET_STATE_DIR="${GPUFLEET_STATE_DIR:-/var/lib/gpufleet}"
GPUFLEET_RUN_DIR="${GPUFLEET_RUN_DIR:-/run/gpufleet}"

log() {
  printf '%s gpufleet[%s]: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${0##*/}" "$*" >&2
}

# on NAME: true when the variable NAME is "1".
on() {
  [ "${!1:-0}" = "1" ]
}

# apt at first boot races apt-daily/unattended-upgrades for the dpkg lock: wait for it instead of failing.
apt_update() {
  apt-get -o DPkg::Lock::Timeout=600 update -q
}

apt_install() {
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@"
}

# driver_version: the loaded kernel module's version (e.g. 580.95.05), empty when none is loaded. nvidia-smi prints
# its failure ("NVIDIA-SMI has failed ...") on stdout when no driver is loaded, so only a version number counts.
driver_version() {
  local version=""
  if [ -r /sys/module/nvidia/version ]; then
    version="$(cat /sys/module/nvidia/version)"
  elif command -v nvidia-smi >/dev/null 2>&1; then
    version="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)" || version=""
  fi
  case "$version" in
    [0-9]*.[0-9]*) printf '%s\n' "$version" ;;
  esac
}

# run_steps DIR RECORD: runs each executable in DIR in name order. A failed step is logged and its name is
# appended to RECORD (the acceptance check reads it); the other steps still run.
run_steps() {
  local dir="$1" record="$2" step failed=0
  mkdir -p "$GPUFLEET_STATE_DIR"
  : >"$record"
  for step in "$dir"/*; do
    [ -x "$step" ] || continue
    log "step ${step##*/}: start"
    if "$step"; then
      log "step ${step##*/}: done"
    else
      log "step ${step##*/}: FAILED (exit $?)"
      printf '%s\n' "${step##*/}" >>"$record"
      failed=1
    fi
  done
  return "$failed"
}
