"""Puts stand-in cloud and Pulumi CLIs (fake_cli.py) first on PATH for a test, and reads back how they were called."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

FAKE_CLI = Path(__file__).with_name("fake_cli.py")
CLIS = ("aws", "gcloud", "az", "pulumi")


@dataclass
class FakeClis:
    bin_dir: Path
    log: Path

    def env(self, replies: dict, clis: tuple[str, ...] = CLIS, base_path: str | None = None) -> dict[str, str]:
        """Environment for a run where only `clis` exist on PATH before `base_path` (default: the system's)."""
        folder = self.bin_dir / "-".join(clis) if clis else self.bin_dir / "none"
        folder.mkdir(parents=True, exist_ok=True)
        for name in clis:
            script = folder / name
            script.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE_CLI} {name} \"$@\"\n")
            script.chmod(0o755)
        return {"PATH": f"{folder}:{base_path if base_path is not None else os.environ['PATH']}",
                "FAKE_CLI_LOG": str(self.log), "FAKE_CLI_REPLIES": json.dumps(replies)}

    def calls(self) -> list[list[str]]:
        return [call["args"] for call in self._records()]

    def folders(self) -> list[str]:
        """The folder each call ran in."""
        return [call["cwd"] for call in self._records()]

    def _records(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []


def fake_clis(folder: Path) -> FakeClis:
    folder.mkdir(parents=True, exist_ok=True)
    return FakeClis(bin_dir=folder / "bin", log=folder / "calls.jsonl")
