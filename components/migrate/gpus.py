"""Local GPUs from `nvidia-smi --query-gpu=name,memory.total --format=csv`, named as the catalog names them."""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess

from ..catalog.loader import Catalog
from .compat import LOCAL_ONLY_GPUS
from .manifest import Gpu

QUERY = ["--query-gpu=name,memory.total", "--format=csv"]
VENDOR_WORDS = ("NVIDIA", "Tesla", "GeForce", "Quadro")
TIMEOUT_S = 20


def read_gpus(catalog: Catalog, notes: list[str]) -> tuple[tuple[Gpu, ...], str | None]:
    """The GPUs and the driver version; no GPUs (and a note) when nvidia-smi is absent or fails."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        notes.append("nvidia-smi not found: no local GPU recorded")
        return (), None
    try:
        listing = subprocess.run([smi, *QUERY], capture_output=True, text=True, timeout=TIMEOUT_S)
        driver = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                                text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as err:
        notes.append(f"nvidia-smi failed ({err}): no local GPU recorded")
        return (), None
    if listing.returncode != 0:
        notes.append(f"nvidia-smi exited {listing.returncode} ({listing.stderr.strip() or listing.stdout.strip()}): "
                     "no local GPU recorded")
        return (), None
    versions = driver.stdout.split() if driver.returncode == 0 else []
    return parse_gpu_csv(listing.stdout, catalog), (versions[0] if versions else None)


def parse_gpu_csv(text: str, catalog: Catalog) -> tuple[Gpu, ...]:
    """Rows of `name, memory.total [MiB]` (header first, as `--format=csv` prints)."""
    rows = [row for row in csv.reader(io.StringIO(text), skipinitialspace=True) if row]
    gpus = []
    for row in rows:
        if len(row) < 2 or row[0].strip().lower() == "name":
            continue
        match = re.match(r"^\s*(\d+)\s*MiB", row[1])
        if not match:
            continue
        name, memory = row[0].strip(), int(match.group(1))
        model, architecture = catalog_model(name, memory, catalog)
        gpus.append(Gpu(name=name, memory_mib=memory, model=model, architecture=architecture))
    return tuple(gpus)


def catalog_model(name: str, memory_mib: int, catalog: Catalog) -> tuple[str | None, str | None]:
    """The catalog's model for an nvidia-smi name ("NVIDIA A100-SXM4-40GB" -> A100), or None with the architecture
    of a consumer GPU no cloud sells ("NVIDIA GeForce RTX 3090" -> ampere)."""
    words = [w for w in name.split() if w not in VENDOR_WORDS]
    short = " ".join(words)
    for candidate in (short, short.replace(" ", "-")):
        found = catalog.gpu(candidate)
        if found:
            return found.model, found.architecture
    if short in LOCAL_ONLY_GPUS:
        return None, LOCAL_ONLY_GPUS[short][0]
    family = words[0].split("-")[0] if words else ""
    same_family = [g for g in catalog.gpus.values() if g.model == family or g.model.startswith(f"{family}-")]
    if not same_family:
        return None, None
    best = min(same_family, key=lambda g: abs(g.memory_gib * 1024 - memory_mib))
    return best.model, best.architecture
