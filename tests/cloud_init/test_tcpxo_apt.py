"""install.d/63-gcp-tcpxo against a local apt repository laid out as Artifact Registry serves one (dists/<suite>/
InRelease, main/binary-<arch>/Packages, the .deb), served on loopback, with apt's own tools (apt-get, gpgv) and keys
made here by gpg. The step trusts the repository only through the key it accepted by fingerprint (`signed-by`):
a repository signed by that key passes and the pinned DKMS source is built; a repository signed by another key, an
unsigned one, or a .deb that is not the one the signed index names fails the step before anything is built."""

from __future__ import annotations

import email.utils
import functools
import hashlib
import shutil
import subprocess
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import pytest

from tests.fake_http import LoopbackServer
from tests.gpg_keys import gpg, new_signing_key, stop_agent

from .conftest import FILES

STEP = FILES.parent / "gpudirect" / "usr/local/lib/gpufleet/install.d/63-gcp-tcpxo"
SUITE, PACKAGE, VERSION = "gpudirect-tcpxo-apt", "dmabuf-import-helper", "1.1"
KERNEL = "6.17.0-1004-gcp"  # 6.13 on: MODULE_IMPORT_NS takes a string literal
FAKE_DKMS = """#!/bin/bash
echo "$*" >> "$FAKE_DKMS_LOG"
exit 0
"""


@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> Iterator[dict[str, tuple[Path, str]]]:
    """Two signing keys (GNUPGHOME, fingerprint): `pinned`, the one the node accepts, and `other`."""
    for tool in ("gpg", "gpgv", "apt-get", "dpkg-deb"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (`apt-get install -y gnupg gpgv apt dpkg`)")
    made = {}
    for name in ("pinned", "other"):
        home = tmp_path_factory.mktemp(f"gnupg-{name}")
        made[name] = home, new_signing_key(home, f"{name} repository signer <{name}@example.com>")
    yield made
    for home, _ in made.values():
        stop_agent(home)


def build_deb(folder: Path, version: str) -> Path:
    """The DKMS source package as Google's packaging lays it out (debian/control `Architecture: all`)."""
    root = folder / "pkg"
    source = root / f"usr/src/{PACKAGE}-{VERSION}"
    source.mkdir(parents=True)
    (source / "dkms.conf").write_text(f'PACKAGE_NAME="{PACKAGE}"\nPACKAGE_VERSION="{VERSION}"\n'
                                      'BUILT_MODULE_NAME[0]="import-helper"\nAUTOINSTALL="yes"\n')
    (source / "import-helper.c").write_text('#include <linux/module.h>\nMODULE_IMPORT_NS(DMA_BUF);\n'
                                            'MODULE_LICENSE("GPL");\n')
    (root / "DEBIAN").mkdir()
    (root / "DEBIAN/control").write_text(f"Package: {PACKAGE}\nVersion: {version}\nArchitecture: all\n"
                                         "Maintainer: test <t@example.com>\nDepends: dkms\n"
                                         "Description: dmabuf import helper (test copy)\n")
    deb = folder / "pool" / f"{PACKAGE}_{version}_all.deb"
    deb.parent.mkdir()
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(root), str(deb)], check=True,
                   capture_output=True, timeout=60)
    return deb


def build_repo(folder: Path, keys, signer: str | None, version: str = VERSION, tamper: bool = False) -> Path:
    """A served tree: the repository (signed by `signer`, or unsigned when None) and the pinned key at /key.asc."""
    deb = build_deb(folder, version)
    arch = subprocess.run(["dpkg", "--print-architecture"], check=True, capture_output=True, text=True).stdout.strip()
    control = (folder / "pkg/DEBIAN/control").read_text()
    data = deb.read_bytes()
    packages = (f"{control.rstrip()}\nFilename: pool/{deb.name}\nSize: {len(data)}\n"
                f"SHA256: {hashlib.sha256(data).hexdigest()}\n\n")
    if tamper:  # the signed index names these bytes; the server then hands out others
        deb.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # same size: only the SHA-256 tells
    dist = folder / "dists" / SUITE
    (dist / f"main/binary-{arch}").mkdir(parents=True)
    (dist / f"main/binary-{arch}/Packages").write_text(packages)
    index = packages.encode()
    (dist / "Release").write_text(
        f"Origin: test\nLabel: {SUITE}\nSuite: {SUITE}\nCodename: {SUITE}\n"
        f"Date: {email.utils.formatdate(usegmt=True)}\nArchitectures: {arch} all\nComponents: main\n"
        f"SHA256:\n {hashlib.sha256(index).hexdigest()} {len(index)} main/binary-{arch}/Packages\n")
    if signer is not None:
        gpg(keys[signer][0], "--armor", "--local-user", keys[signer][1], "--output", str(dist / "InRelease"),
            "--clearsign", str(dist / "Release"))
    (folder / "key.asc").write_bytes(gpg(keys["pinned"][0], "--armor", "--export", keys["pinned"][1]).stdout)
    return folder


class QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def run_step(tmp_path: Path, keys, repo: Path) -> tuple[subprocess.CompletedProcess, Path, str]:
    """Runs the step as the node would, against `repo`; returns its result, the source root and the dkms calls."""
    server = LoopbackServer(functools.partial(QuietFiles, directory=str(repo))).start()
    apt = tmp_path / "apt"
    for folder in ("state/lists/partial", "cache/archives/partial", "etc/sources.list.d", "etc/apt.conf.d",
                   "etc/preferences.d", "etc/trusted.gpg.d", "log", "keyrings", "src", f"modules/{KERNEL}/build"):
        (apt / folder).mkdir(parents=True, exist_ok=True)
    (apt / "status").write_text("")
    sources = apt / "etc/sources.list.d"
    config = apt / "apt.conf"
    # Only this test's apt state, sources and keys; nothing from the host's /etc/apt.
    config.write_text("\n".join([
        f'Dir::State "{apt}/state";', f'Dir::State::status "{apt}/status";', f'Dir::Cache "{apt}/cache";',
        f'Dir::Etc "{apt}/etc";', f'Dir::Etc::sourcelist "{sources}/gpufleet-gpudirect-tcpxo.list";',
        f'Dir::Etc::sourceparts "{apt}/etc/none";', f'Dir::Etc::parts "{apt}/etc/apt.conf.d";',
        f'Dir::Etc::preferencesparts "{apt}/etc/preferences.d";', f'Dir::Etc::trusted "{apt}/etc/trusted.gpg";',
        f'Dir::Etc::trustedparts "{apt}/etc/trusted.gpg.d";', f'Dir::Log "{apt}/log";',
        'APT::Sandbox::User "root";', 'Acquire::Languages "none";', 'Acquire::http::Proxy "DIRECT";', ""]))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dkms").write_text(FAKE_DKMS)
    (bin_dir / "dkms").chmod(0o755)
    dkms_log = tmp_path / "dkms.log"
    env = {"PATH": f"{bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(tmp_path), "APT_CONFIG": str(config),
           "GPUFLEET_LIB": str(FILES / "usr/local/lib/gpufleet"), "GPUFLEET_ENV_FILE": "/nonexistent",
           "GPUFLEET_APT_SOURCES_DIR": str(sources), "GPUFLEET_KEYRING_DIR": str(apt / "keyrings"),
           "GPUFLEET_APT_AUTH_DIR": str(apt / "auth"), "GPUFLEET_SRC_ROOT": str(apt / "src"),
           "GPUFLEET_MODULES_ROOT": str(apt / "modules"), "GPUFLEET_KERNEL_RELEASE": KERNEL,
           "GPUFLEET_METADATA_URL": "http://127.0.0.1:9", "FAKE_DKMS_LOG": str(dkms_log),
           "GPUFLEET_TCPXO_PACKAGE": PACKAGE, "GPUFLEET_TCPXO_PACKAGE_VERSION": VERSION,
           "GPUFLEET_TCPXO_KEY_URL": f"{server.url}/key.asc", "GPUFLEET_TCPXO_KEY_FINGERPRINT": keys["pinned"][1],
           "GPUFLEET_TCPXO_APT_URL": server.url, "GPUFLEET_TCPXO_APT_SUITE": SUITE,
           "GPUFLEET_TCPXO_MODULE": "import-helper"}
    try:
        done = subprocess.run(["bash", str(STEP)], env=env, capture_output=True, text=True, timeout=120)
    finally:
        server.close()
    return done, apt / "src", dkms_log.read_text() if dkms_log.exists() else ""


def test_a_repository_signed_by_the_pinned_key_installs_and_builds_the_pinned_source(keys, tmp_path):
    done, src, dkms = run_step(tmp_path, keys, build_repo(tmp_path / "repo", keys, signer="pinned"))
    assert done.returncode == 0, done.stderr
    listed = (tmp_path / "apt/etc/sources.list.d/gpufleet-gpudirect-tcpxo.list").read_text()
    assert listed.startswith(f"deb [signed-by={tmp_path}/apt/keyrings/gpufleet-artifact-registry.gpg] ")
    assert "trusted=yes" not in listed
    source = (src / f"{PACKAGE}-{VERSION}/import-helper.c").read_text()
    assert 'MODULE_IMPORT_NS("DMA_BUF")' in source and "MODULE_IMPORT_NS(DMA_BUF)" not in source
    assert f"build -m {PACKAGE} -v {VERSION} -k {KERNEL}" in dkms
    assert f"install -m {PACKAGE} -v {VERSION} -k {KERNEL}" in dkms


# case -> (who signs the repository, .deb changed after signing, the version it carries, what apt says)
REFUSED = {
    "signed by another key": ("other", False, VERSION, "NO_PUBKEY"),
    "unsigned": (None, False, VERSION, "Release' is not signed"),
    "a .deb that is not the signed index's": ("pinned", True, VERSION, "Hashes of expected file"),
    "another version than the pinned one": ("pinned", False, "1.2", f"Version '{VERSION}' for '{PACKAGE}' was not found"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_the_step_fails_before_building_anything_apt_could_not_verify(keys, tmp_path, case):
    signer, tamper, version, apt_says = REFUSED[case]
    done, src, dkms = run_step(tmp_path, keys, build_repo(tmp_path / "repo", keys, signer, version, tamper))
    assert done.returncode != 0, (case, done.stderr)
    assert apt_says in done.stderr, (case, done.stderr)  # apt's own verdict
    assert list(src.iterdir()) == [] and "build" not in dkms and "add" not in dkms, case
    if signer != "pinned":  # the repository's index is refused: nothing is downloaded from it
        assert "nothing installed" in done.stderr and SUITE in done.stderr, done.stderr
        assert not list((tmp_path / "apt/cache/archives").glob("*.deb"))
