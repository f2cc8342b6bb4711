"""Field notes: the least-trust source of every piece GPUDirect-TCPX(O) needs on a GCP node, each with where it was
read and at which commit. Anything marked UNVERIFIED could not be confirmed from a public source here (no network to
Google's registries); the code does not rely on it silently: the node checks it and fails the step that needs it.

Read for this module (2026-08):
- cluster-toolkit (GoogleCloudPlatform/cluster-toolkit) @ 1047080375afbb44da4b596be314634e7486af4a:
  examples/machine-learning/a3-megagpu-8g/a3mega-slurm-blueprint.yaml (base image
  `ubuntu-os-accelerator-images/ubuntu-accelerator-2404-amd64-with-nvidia-580-v20260522`; `install_dmabuf.yml`
  adds `deb [arch=all trusted=yes] ar+https://us-apt.pkg.dev/projects/gce-ai-infra gpudirect-tcpxo-apt main`,
  `apt-get download dmabuf-import-helper` at `dmabuf_version: "1.1"`, rewrites `MODULE_IMPORT_NS(DMA_BUF)` for
  kernel 6.17 and builds it with DKMS; `aperture_devices.yml` bind-mounts each PCI 1ae0:0084 device under
  /dev/aperture_devices), nccl-tests/run-nccl-tests.sh (NIC names), and
  examples/machine-learning/a3-highgpu-8g/a3high-slurm-blueprint.yaml (the `linux-gcp-tcpx` kernel from
  `private-ppa.launchpadcontent.net/canonical-kernel-gcp-tcpx`, login and password required).
- slurm-gcp (GoogleCloudPlatform/slurm-gcp) @ 13fd92b615c030b9ba62e4a87d610bcc7af72b75:
  tools/prologs-epilogs/receive-data-path-manager-mega (last changed in f10bb0e9, 2026-07-20): the image tags
  below, `modprobe import-helper`, the installer run with `-v /var/lib:/var/lib ... install --install-nccl`, RxDM
  with `--gpus all`, `--privileged`, host network and `/dev/dmabuf_import_helper`, ready at "Buffer manager
  initialization complete".
- google/nccl-plugin-gpudirect-tcpxo @ 04815d1bb89971577c7330f9873b70644b3a5934 ("GPUDirect-TCPXO v1.0.17 ...
  qualified with CUDA 13.2, GPU driver 595.71.05, and NCCL 2.28.7-1"): README.md (RxDM from v1.0.20 takes only
  `--num_hops=2`), tcpxo_scripts/nccl-env-profile.sh (the NCCL settings), tcpxo_scripts/container_entry.sh (the
  installer writes the tuner and guest-config textprotos to /var/lib/tcpxo/lib64).
- google/dmabuf_importer_helper @ b612e1211e87627c6f7f58c37a2019bfae6ff011: the module's source; debian/changelog
  1.1, debian/control `Architecture: all` DKMS source, src/import-helper.c registers the misc device
  `dmabuf_import_helper`, module `import-helper`.
- GoogleCloudPlatform/container-engine-accelerators @ 992db81257553607f1477945f1b3219632991829:
  gpudirect-tcpxo/README.md (release notes: tags only, no digests) and nccl-tcpxo-installer.yaml (GKE's COS nodes
  run `modprobe import-helper` without installing it: COS node images carry the module).
- Artifact Registry's apt signing key: "Artifact Registry Repository Signer
  <artifact-registry-repository-signer@google.com>", rsa2048 of 2021-05-04, fingerprint below, served at
  https://<location>-apt.pkg.dev/doc/repo-signing-key.gpg. Google's own Cloud Batch agent setup imports it from
  us-central1-apt.pkg.dev for its Artifact Registry repository `cloud-batch-deb`; Mozilla publishes the same
  fingerprint for packages.mozilla.org, which Artifact Registry serves; Gentoo's
  sec-keys/openpgp-keys-google-artifact-registry pins it too.
"""

from __future__ import annotations

from dataclasses import dataclass

CLUSTER_TOOLKIT = "GoogleCloudPlatform/cluster-toolkit @ 1047080"
SLURM_GCP = "GoogleCloudPlatform/slurm-gcp @ 13fd92b (tools/prologs-epilogs/receive-data-path-manager-mega)"
TCPXO_REPO = "google/nccl-plugin-gpudirect-tcpxo @ 04815d1 (v1.0.17)"
HELPER_REPO = "google/dmabuf_importer_helper @ b612e12"

# The image. No Google image family carries the import helper and the aperture devices for a node that runs
# cloud-init and apt: COS node images carry the module (GKE's installer only modprobes it) but are not Ubuntu;
# Google's Deep Learning VM families for A3 are Debian-based and ignore `user-data` (image.py); slurm-gcp publishes
# no public image family for A3 Mega (its blueprint builds a private `slurm-a3mega` family with Packer from the
# Ubuntu accelerator image). So the node boots the Ubuntu accelerator family pinned at `pulumi up`, as every GCP
# node does, and builds the module itself. UNVERIFIED: whether Compute Engine's own A3 Mega guide
# (compute/docs/gpus/gpudirect) names an image that ships the module; only its opening could be read here.
IMAGE_SOURCE = (f"no Google image carries the module for an Ubuntu node ({CLUSTER_TOOLKIT} builds its own from the "
                "Ubuntu accelerator image); the node boots that image, pinned at `pulumi up`")

# The apt repository. Artifact Registry signs every apt repository's Release file with its repository key; the
# node fetches the key, accepts it only with this primary-key fingerprint and names it in `signed-by`, so apt
# refuses an unsigned or wrongly signed repository. UNVERIFIED here (no network to us-apt.pkg.dev): that
# gpudirect-tcpxo-apt's InRelease carries that signature (cluster-toolkit adds the repository with `trusted=yes`);
# if it does not, the install step fails and says so, and nothing unverified is installed.
ARTIFACT_REGISTRY_KEY_FINGERPRINT = "35BAA0B33E9EB396F59CA838C0BA5CE6DC6315A3"
ARTIFACT_REGISTRY_KEY_URL = "https://us-apt.pkg.dev/doc/repo-signing-key.gpg"
TCPXO_APT_URL = "https://us-apt.pkg.dev/projects/gce-ai-infra"
TCPXO_APT_SUITE = "gpudirect-tcpxo-apt"
# The package's Debian version: debian/changelog of the published source and cluster-toolkit's `dmabuf_version`.
# UNVERIFIED: that the repository's package carries exactly "1.1" (not e.g. "1.1-1"); apt refuses another version.
IMPORT_HELPER_PACKAGE = "dmabuf-import-helper"
IMPORT_HELPER_VERSION = "1.1"
IMPORT_HELPER_MODULE = "import-helper"
IMPORT_HELPER_DEVICE = "/dev/dmabuf_import_helper"

# Containers: Google publishes tags only (release notes, blueprint, prolog), so each is pinned at `pulumi up` by the
# digest its tag names then (`gpudirect.trust_google_images`), or by the digest the user gives.
# UNVERIFIED: that us-docker.pkg.dev/gce-ai-infra answers anonymous pulls; the node logs in with its own token.
TCPXO_PLUGIN_IMAGE = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.17"
TCPXO_RXDM_IMAGE = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.23"
TCPXO_RXDM_ARGS = ("--num_hops=2",)  # TCPXO_REPO README: the only flag from v1.0.20 on
TCPXO_LIB_DIR = "/var/lib/tcpxo/lib64"
APERTURE_VENDOR, APERTURE_DEVICE = "0x1ae0", "0x0084"
APERTURE_DIR = "/dev/aperture_devices"


@dataclass(frozen=True)
class Piece:
    """One thing the transport needs on the node: where gpufleet takes it from, and what the user trusts."""

    name: str
    source: str
    trusted: str


TCPXO_PIECES = (
    Piece("image", IMAGE_SOURCE, "Canonical's signed Ubuntu accelerator image (as every GCP node)"),
    Piece("dmabuf import helper",
          f"`{IMPORT_HELPER_PACKAGE}={IMPORT_HELPER_VERSION}` from Artifact Registry's `{TCPXO_APT_SUITE}` "
          f"({HELPER_REPO} is its source), built by DKMS on the node",
          f"Artifact Registry's signing key {ARTIFACT_REGISTRY_KEY_FINGERPRINT} (pinned by fingerprint), and an "
          "unsigned module: Secure Boot off (`gpudirect.allow_secure_boot_off`)"),
    Piece("aperture devices", f"gpufleet's own boot step: each PCI {APERTURE_VENDOR}:{APERTURE_DEVICE} device bound "
          f"under {APERTURE_DIR} ({CLUSTER_TOOLKIT} aperture_devices.yml is the recipe)", "nothing more"),
    Piece("RxDM", f"{TCPXO_RXDM_IMAGE} ({SLURM_GCP}), a service for the node's life",
          "the digest its tag names at `pulumi up` (`gpudirect.trust_google_images`)"),
    Piece("NCCL plugin", f"{TCPXO_PLUGIN_IMAGE} ({SLURM_GCP}; {TCPXO_REPO}), installed to {TCPXO_LIB_DIR}",
          "the digest its tag names at `pulumi up` (`gpudirect.trust_google_images`)"),
    Piece("NCCL settings", f"{TCPXO_REPO} tcpxo_scripts/nccl-env-profile.sh, NIC names from {CLUSTER_TOOLKIT} "
          "a3-megagpu-8g/nccl-tests/run-nccl-tests.sh", "nothing more"),
)

# GPUDirect-TCPX (A3 High) cannot be delivered with the least trust, checked again for issue 45:
# - It needs a TCPX-patched guest kernel. Its only source for Ubuntu is the Canonical PPA `canonical-kernel-gcp-tcpx`,
#   whose login, password and signing key a user must ask Google for: cluster-toolkit @ 061f7c5
#   examples/machine-learning/a3-highgpu-8g/README.md ("submit a request to your Google Cloud representative for access
#   credentials to install the linux-gcp-tcpx kernel"; `tcpx_kernel_login`, `tcpx_kernel_password`,
#   `keyserver_ubuntu_key`). No public key or fingerprint exists to pin, and gpufleet cannot hold such credentials for
#   its users, so no opt-in field could make the node verify it.
# - The only image Google publishes with TCPX support is Container-Optimized OS (dstackai/dstack @ 6f6b421
#   examples/clusters/a3high/README.md: "relying on the COS image used now"; its gcp/features/tcpx.py boots
#   cos-cloud `cos-105-17412-535-78`). COS has no apt or DKMS and a read-only root: gpufleet's node stack (driver
#   matched to CUDA, DCGM, exporters, Slurm, the install.d steps) cannot run there, and `image.id` images are not
#   checked for it.
# - The same README says the GPU-to-NIC map RxDM reads (/opt/tcpdirect_benchmark/gpu_rxq_configuration.textproto)
#   "is built into the image" cluster-toolkit builds from that kernel.
# RxDM and the plugin would come as for TCPXO (slurm-gcp receive-data-path-manager: tcpgpudmarxd-dev:v2.0.12,
# nccl-plugin-gpudirecttcpx-dev:v3.1.9-2.19.4-12.0), but without the kernel they cannot run, so `fabric: gpudirect`
# stays refused on A3 High, and `fabric: auto` runs NCCL over TCP on its five gVNIC NICs.
TCPX_README = "GoogleCloudPlatform/cluster-toolkit @ 061f7c5 examples/machine-learning/a3-highgpu-8g/README.md"
DSTACK_A3HIGH = "dstackai/dstack @ 6f6b421 examples/clusters/a3high/README.md"
TCPX_PIECES = (
    "the TCPX-patched kernel `linux-gcp-tcpx`, published for Ubuntu only in a Canonical PPA whose login and password "
    f"Google hands out on request ({TCPX_README}; {CLUSTER_TOOLKIT} a3high-slurm-blueprint.yaml): no public key "
    "to pin, so no node can verify it",
    "the RxDM receive-datapath manager `gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.12` and the TCPX NCCL "
    f"plugin `nccl-plugin-gpudirecttcpx-dev:v3.1.9-2.19.4-12.0` ({SLURM_GCP.replace('-mega)', ')')}), which need it; "
    f"the one public image with TCPX is Container-Optimized OS ({DSTACK_A3HIGH}), which has no apt or DKMS for "
    "gpufleet's node stack",
)
