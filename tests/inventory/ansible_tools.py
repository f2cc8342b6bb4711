"""Running the real Ansible tools from the test venv: the `ansible` 12 bundle (pinned in requirements-dev.txt) with
this checkout's collection on the collection path, nothing downloaded, no user or system config read."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.validators import require_tool

ROOT = Path(__file__).resolve().parents[2]
COLLECTION = ROOT / "ansible"
ANSIBLE_HINT = "install the dev requirements: `pip install -r requirements-dev.txt` (ansible 12, ansible-lint)"


def collections_dir(tmp: Path) -> Path:
    """A collection path holding this checkout's `ansible/` as `gpufleet.day2`, as `gpufleet inventory` writes it."""
    base = tmp / "collections"
    link = base / "ansible_collections" / "gpufleet" / "day2"
    if not link.exists():
        link.parent.mkdir(parents=True)
        link.symlink_to(COLLECTION, target_is_directory=True)
    return base


def ansible_env(tmp: Path, **extra: str) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    config = tmp / "ansible.cfg"
    config.touch()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANSIBLE_", "AWS_"))}
    env.update(HOME=str(home), ANSIBLE_CONFIG=str(config), ANSIBLE_COLLECTIONS_PATH=str(collections_dir(tmp)),
               ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-tmp"), ANSIBLE_NOCOLOR="1",
               **extra)
    return env


def tool(name: str) -> str:
    return require_tool(name, ANSIBLE_HINT)


def inventory_list(inventory: Path, env: dict[str, str]) -> dict:
    """`ansible-inventory -i FILE --list`, parsed; fails with Ansible's own message when the plugin fails."""
    done = subprocess.run([tool("ansible-inventory"), "-i", str(inventory), "--list"], capture_output=True, text=True,
                          env={**env, "ANSIBLE_INVENTORY_UNPARSED_FAILED": "1"}, timeout=180, cwd=inventory.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    return plain(json.loads(done.stdout))


def plain(value):
    """The listing without ansible-core's `{"__ansible_unsafe": value}` markers on templated values."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


# Stores records in an inventory plugin's cache the way the plugin itself would after listing them (Ansible's cache
# plugin API, so the file's key and envelope follow the installed ansible-core).
_SEED_CACHE = """
import json, sys
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader, inventory_loader
init_plugin_loader()
plugin = inventory_loader.get(sys.argv[1])
plugin.loader = DataLoader()
plugin._read_config_data(sys.argv[2])
with open(sys.argv[3]) as records:
    plugin._cache[plugin.get_cache_key(sys.argv[2])] = json.load(records)
plugin.update_cache_if_changed()
"""


def seed_inventory_cache(plugin: str, inventory: Path, records: Path, env: dict[str, str]) -> None:
    done = subprocess.run([str(Path(tool("ansible-inventory")).parent / "python"), "-c", _SEED_CACHE, plugin,
                           str(inventory), str(records)], capture_output=True, text=True, env=env, timeout=120,
                          cwd=inventory.parent)
    assert done.returncode == 0, done.stderr[-3000:]


def group_hosts(listing: dict, group: str) -> set[str]:
    return set(listing.get(group, {}).get("hosts", []))
