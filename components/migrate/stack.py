"""What `sync` and `verify` read from a stack file: the cluster spec, the manifest it was matched from, and where
the workload goes (the shared filesystem when the stack has one, else each node's home)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..plan.stackfile import CLUSTER_KEY, read_stack_config
from ..spec.errors import MISSING, Problem, SpecError
from ..spec.model import ClusterSpec
from ..spec.parse import parse_cluster_spec
from .manifest import ROOT, Manifest, read_manifest
from .match import MIGRATION_KEY

WORKLOAD_DIR = "workload"


@dataclass(frozen=True)
class MigrationStack:
    spec: ClusterSpec
    manifest: Manifest
    manifest_path: Path

    @property
    def shared_mount(self) -> str | None:
        shared = self.spec.storage.shared
        return shared.mount_path if shared else None

    def destination(self, to: str | None) -> str:
        """`--to`, else <shared mount>/workload, else ~/workload on each node."""
        if to:
            return to
        return f"{self.shared_mount}/{WORKLOAD_DIR}" if self.shared_mount else WORKLOAD_DIR


def read_migration_stack(stack: str, manifest: Path | None) -> MigrationStack:
    config = read_stack_config(stack)
    spec = parse_cluster_spec(config.get(CLUSTER_KEY))
    if manifest is None:
        recorded = (config.get(MIGRATION_KEY) or {}).get("manifest") if isinstance(config.get(MIGRATION_KEY),
                                                                                   dict) else None
        if not recorded:
            raise SpecError([Problem("--manifest", MISSING, f"required: {stack} has no `{MIGRATION_KEY}.manifest` "
                                     "(it was not written by `gpufleet migrate match`)")], root=ROOT)
        manifest = Path(recorded)
    return MigrationStack(spec=spec, manifest=read_manifest(manifest), manifest_path=manifest)
