"""Which catalog folder a command reads, and where a refresh writes.

The shipped catalog (`gpufleet/catalog/data`, inside the installed package) is read-only: a refresh never writes
it. Refreshed prices go to a user data folder, `$XDG_DATA_HOME/gpufleet` (default `~/.local/share/gpufleet`),
or the folder given with `--data-dir`. Reading, the first of these that applies is used:
1. `--data-dir DIR` (plan, select, catalog), or the `GPUFLEET_DATA_DIR` environment variable (`pulumi up`);
2. the user data folder, when a refresh has written a catalog there;
3. the shipped catalog.
Each file missing from the chosen folder is read from the shipped catalog, so a partial folder still loads.
"""

from __future__ import annotations

import os
from pathlib import Path

SHIPPED_DIR = Path(__file__).parent / "data"
ENV_DATA_DIR = "GPUFLEET_DATA_DIR"
CLOUDS = ("aws", "azure", "gcp")
SHIPPED, USER, GIVEN, ENVIRONMENT = "shipped catalog", "user data folder", "--data-dir", ENV_DATA_DIR

_chosen: Path | None = None


def user_data_dir() -> Path:
    """`$XDG_DATA_HOME/gpufleet`, or `~/.local/share/gpufleet` when XDG_DATA_HOME is unset or not absolute."""
    base = os.environ.get("XDG_DATA_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".local" / "share"
    return root / "gpufleet"


def has_catalog(folder: Path) -> bool:
    """Whether a folder holds a catalog's prices for at least one cloud."""
    return any((folder / cloud / "prices.csv").is_file() for cloud in CLOUDS)


def use_data_dir(folder: Path | None) -> None:
    """Makes `folder` the catalog every later `load_catalog()` in this process reads (`gpufleet plan --data-dir`)."""
    global _chosen
    _chosen = Path(folder) if folder is not None else None


def active_data_dir(given: Path | None = None) -> tuple[Path, str]:
    """The folder to read and what chose it: `given`, `use_data_dir`, the environment, the user folder, or shipped."""
    if given is not None:
        return Path(given), GIVEN
    if _chosen is not None:
        return _chosen, GIVEN
    if os.environ.get(ENV_DATA_DIR):
        return Path(os.environ[ENV_DATA_DIR]), ENVIRONMENT
    user = user_data_dir()
    if has_catalog(user):
        return user, USER
    return SHIPPED_DIR, SHIPPED


def is_shipped(folder: Path) -> bool:
    try:
        return Path(folder).resolve() == SHIPPED_DIR.resolve()
    except OSError:
        return False


def data_file(folder: Path, relative: str) -> Path:
    """`folder/relative` when it exists, else the shipped catalog's copy."""
    own = Path(folder) / relative
    return own if own.is_file() else SHIPPED_DIR / relative
