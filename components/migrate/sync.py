"""`gpufleet migrate sync`: rsync the data folders and the manifest's source projects to the cluster.

rsync over ssh through the cloud's private path (remote.py). Once to the shared filesystem when the stack has one
(every node mounts it), else to every node. `--partial --append-verify` keeps an interrupted file and appends to it
on the next run, checking the whole file afterwards; `--filter=':- .gitignore'` leaves out what git ignores (the
listing `capture` hashed is made with the same filter); `--info=progress2` shows overall progress.
"""

from __future__ import annotations

import shlex
import subprocess
import tempfile
import time
from pathlib import Path

from .data import GITIGNORE_FILTER
from .manifest import Manifest, write_manifest
from .remote import Nodes, alias

# The connection failed: the SSM agent restarts for a while after boot and drops sessions (skypilot PR #9509
# retries the same way), so the copy is tried again after a pause, resuming what was sent. rsync reports ssh's own
# failure as 255, unless it reads the closed pipe before it reaps ssh (a race a loaded host loses): then as 12.
CONNECTION_FAILED = {255: "ssh could not connect", 12: "the connection closed mid-stream"}
RETRIES = 3
RETRY_PAUSE_S = 5
META_DIR = ".gpufleet-migrate"  # beside the data on the node: manifest.json, requirements.txt, SHA256SUMS
RSYNC_FLAGS = ["-a", "--partial", "--append-verify", "--info=progress2", "--human-readable", GITIGNORE_FILTER]


def sync_targets(nodes: Nodes, shared: bool) -> tuple[str, ...]:
    """The first node only when a shared filesystem carries the copy to every node."""
    return nodes.hosts[:1] if shared else nodes.hosts


def rsync_command(nodes: Nodes, host: str, sources: list[Path], dest: str, bwlimit: int | None = None) -> list[str]:
    flags = [*RSYNC_FLAGS, "-e", nodes.rsync_shell(host), f"--rsync-path=mkdir -p {shlex.quote(dest)} && rsync"]
    if bwlimit:
        flags.append(f"--bwlimit={bwlimit}")
    return ["rsync", *flags, *(str(s) for s in sources), f"{alias(host)}:{dest}/"]


def sync(manifest: Manifest, nodes: Nodes, data: list[Path], dest: str, shared: bool,
         bwlimit: int | None = None, retries: int = RETRIES) -> int:
    """Copies data, sources and the manifest; returns rsync's exit status (0 when every copy succeeded)."""
    sources = [Path(p.path) for p in manifest.sources]
    with tempfile.TemporaryDirectory() as scratch:
        meta = Path(scratch) / META_DIR
        meta.mkdir()
        write_manifest(manifest, meta / "manifest.json")
        (meta / "requirements.txt").write_text(manifest.requirements_txt())
        (meta / "SHA256SUMS").write_text(manifest.sha256sum_lines())
        for host in sync_targets(nodes, shared):
            print(f"sync: {host}:{dest}/ ({'shared filesystem, once' if shared else 'this node'})", flush=True)
            steps = [(data, dest), ([meta], dest)] + ([(sources, f"{dest}/src")] if sources else [])
            for folders, where in steps:
                if not folders:
                    continue
                done = _rsync_with_retries(rsync_command(nodes, host, folders, where, bwlimit), host, retries)
                if done.returncode != 0:
                    print(f"sync: rsync to {host} exited {done.returncode}; run the same command again to resume",
                          flush=True)
                    return done.returncode
    return 0


def _rsync_with_retries(command: list[str], host: str, retries: int) -> subprocess.CompletedProcess:
    for attempt in range(retries + 1):
        done = subprocess.run(command)
        reason = CONNECTION_FAILED.get(done.returncode)
        if reason is None or attempt == retries:
            return done
        pause = RETRY_PAUSE_S * (attempt + 1)
        print(f"sync: ssh to {host} failed ({reason}, rsync exited {done.returncode}); retrying in {pause} s "
              f"({attempt + 1} of {retries})", flush=True)
        time.sleep(pause)
    return done
