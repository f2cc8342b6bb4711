"""Where the gpufleet Ansible collection (`gpufleet.day2`) lies: inside the installed package (`gpufleet/ansible`),
or, in a checkout installed in editable mode, the project's top-level `ansible/` folder."""

from __future__ import annotations

from pathlib import Path

import gpufleet

NAMESPACE, NAME = "gpufleet", "day2"


def collection_path() -> Path:
    package = Path(gpufleet.__file__).resolve().parent
    for candidate in (package / "ansible", package.parent / "ansible"):
        if (candidate / "galaxy.yml").is_file():
            return candidate
    raise FileNotFoundError(f"the gpufleet Ansible collection is missing beside {package} (a broken installation)")
