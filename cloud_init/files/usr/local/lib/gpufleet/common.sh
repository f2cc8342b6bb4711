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

# Signing keys gpufleet trusts, by primary-key fingerprint (published by each vendor; see cloud_init/README.md).
# Used by the install steps that source this file.
# shellcheck disable=SC2034
declare NVIDIA_CUDA_KEY_FINGERPRINT="EB693B3035CD5710E231E123A4B469963BF863CC" \
  NVIDIA_CONTAINER_KEY_FINGERPRINT="C95B321B61E88C1809C4F759DDCAE044F796ECB0" \
  AWS_EFA_KEY_FINGERPRINT="4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC"

# trusted_key URL FINGERPRINT KEYRING: downloads the key at URL (armored or binary) and writes it to KEYRING as a
# binary OpenPGP keyring only when it holds the primary key FINGERPRINT; a key from a tampered mirror is refused.
trusted_key() {
  local url="$1" expected="$2" keyring="$3" home status=0
  home="$(mktemp -d)"
  if ! curl -fsSL --retry 3 -o "$home/key" "$url"; then
    log "cannot download signing key $url"
    status=1
  elif ! GNUPGHOME="$home" gpg --batch --quiet --import "$home/key" 2>/dev/null ||
      ! GNUPGHOME="$home" gpg --batch --with-colons --fingerprint "$expected" 2>/dev/null |
        awk -F: '$1 == "fpr" {print $10}' | grep -qx "$expected"; then
    log "signing key at $url is not $expected; refused"
    status=1
  else
    GNUPGHOME="$home" gpg --batch --export "$expected" >"$keyring.tmp" && mv "$keyring.tmp" "$keyring" || status=1
  fi
  rm -rf "$home"
  return "$status"
}

# cuda_repo: NVIDIA's CUDA apt repository for this Ubuntu release, signed by the pinned CUDA key (idempotent).
cuda_repo() {
  local distro arch keyring=/usr/share/keyrings/gpufleet-cuda-archive.gpg
  [ -e /etc/apt/sources.list.d/gpufleet-cuda.list ] && return 0
  distro="ubuntu$(. /etc/os-release && printf '%s' "${VERSION_ID//./}")"
  arch="x86_64"
  if [ "${GPUFLEET_ARCH:-x86_64}" != "x86_64" ]; then arch="sbsa"; fi
  local url="https://developer.download.nvidia.com/compute/cuda/repos/${distro}/${arch}"
  trusted_key "$url/3bf863cc.pub" "$NVIDIA_CUDA_KEY_FINGERPRINT" "$keyring" || return 1
  printf 'deb [signed-by=%s] %s/ /\n' "$keyring" "$url" >/etc/apt/sources.list.d/gpufleet-cuda.list
  apt_update
}
