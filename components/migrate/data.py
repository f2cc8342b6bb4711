"""Data folders for the manifest: the files `sync` will copy (rsync's own view, .gitignore honoured), their sizes
and SHA-256 digests, which `verify` checks on the node with `sha256sum -c`."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..spec.errors import Problem, SpecError
from .manifest import ROOT, DataFolder

GITIGNORE_FILTER = "--filter=:- .gitignore"  # per-directory merge of .gitignore files, as `sync` passes it
CHUNK = 1 << 20


def scan_folder(path: Path) -> DataFolder:
    if not path.is_dir():
        raise SpecError([Problem("--data", str(path), "expected an existing folder")], root=ROOT)
    folder = path.resolve()
    files, gitignore = synced_files(folder)
    digests = {rel: file_sha256(folder / rel) for rel in files}
    return DataFolder(name=folder.name, path=str(folder), files=len(files),
                      bytes=sum((folder / rel).stat().st_size for rel in files), gitignore=gitignore, sha256=digests)


def synced_files(folder: Path) -> tuple[list[str], bool]:
    """Regular files rsync would copy (a dry run into an empty folder); every file when rsync is not installed."""
    rsync = shutil.which("rsync")
    if rsync is None:
        return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and not p.is_symlink()), False
    with tempfile.TemporaryDirectory() as empty:
        listing = subprocess.run([rsync, "-an", "--out-format=%i %n", GITIGNORE_FILTER, f"{folder}/", f"{empty}/"],
                                 capture_output=True, text=True, check=True)
    names = [line.split(" ", 1)[1] for line in listing.stdout.splitlines() if line.startswith(">f")]
    return sorted(names), True


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()
