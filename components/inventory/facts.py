"""What an inventory needs to know about a stack: read from its stack file and, for names the cloud chooses at deploy
time (the SSM transfer bucket, Azure's resource group and scale sets), from the stack's outputs.

Everything offline comes through the one checking pipeline (`gpufleet.pipeline.plan_node_groups`), so a stack that
`gpufleet plan` refuses is refused here too, with the same message. A stack with `node_groups` also gives each
group's planned shape (`ClusterFacts.groups`), which puts its nodes in a group of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..naming import cluster_hash
from ..pipeline import plan_node_groups
from ..program import COMPONENT_NAME
from ..spec.errors import Problem, SpecError
from ..spec.parse import parse_cluster_spec
from .errors import ROOT

GCP_PROJECT_KEY = "gcp:project"


@dataclass(frozen=True)
class GroupFacts:
    """One named node group's planned shape: its name (the `gpufleet-node-group` tag or label its nodes carry),
    instance type and resolved fabric."""

    name: str
    instance_type: str
    fabric: str


@dataclass(frozen=True)
class ClusterFacts:
    """The stack's identity and the planned node shape; `outputs` holds `pulumi stack output --json` when given."""

    project: str
    stack: str
    cloud: str
    region: str
    zone: str | None
    instance_type: str
    fabric: str
    """The resolved fabric (`efa`, `infiniband`, `gpudirect`..., or `tcp`)."""
    component: str = COMPONENT_NAME
    outputs: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    """The stack file's `config:` values (provider settings such as `gcp:project`)."""
    existing_resource_group: str | None = None
    groups: tuple[GroupFacts, ...] = ()
    """The spec's `node_groups`, in the pipeline's (name) order; empty for a spec without them, whose one group's
    shape is `instance_type` and `fabric` (with groups, those are the default group's)."""

    @property
    def cluster_id(self) -> str:
        """`naming.cluster_hash`: what the AWS `gpufleet-cluster` tag and the GCP instance names carry."""
        return cluster_hash(self.component, self.project, self.stack)

    def output(self, key: str, needed_for: str) -> Any:
        """A stack output the inventory cannot work without; `SpecError` (exit 2) naming how to provide it."""
        value = self.outputs.get(key)
        if value in (None, "", []):
            raise SpecError([Problem(f"outputs.{key}", "(missing)", f"needed for {needed_for}; pass the deployed "
                                     f"stack's outputs: `pulumi stack output --json -s {self.stack} > outputs.json` "
                                     "then `--outputs outputs.json`")], root=ROOT)
        return value


def cluster_facts(project: str, stack: str, config: dict[str, Any], outputs: dict[str, Any]) -> ClusterFacts:
    """Plans the stack's `gpufleet:cluster` value offline; raises `SpecError` with every problem."""
    from ..plan.stackfile import CLUSTER_KEY

    raw = config.get(CLUSTER_KEY)
    if not isinstance(raw, dict):
        raise SpecError([Problem(CLUSTER_KEY, "(missing)" if raw is None else type(raw).__name__,
                                 "expected the stack file's `gpufleet:cluster` mapping")], root=ROOT)
    spec = parse_cluster_spec(raw)
    plans = plan_node_groups(spec, name=COMPONENT_NAME)
    selection = plans.first
    groups = tuple(GroupFacts(plan.group, plan.instance.name, plan.fabric or "tcp")
                   for plan in plans.groups if plan.group is not None)
    return ClusterFacts(project=project, stack=stack, cloud=spec.cloud, region=spec.region, zone=spec.zone,
                        instance_type=selection.instance.name, fabric=selection.fabric or "tcp", outputs=dict(outputs),
                        config=dict(config), existing_resource_group=spec.network.existing_resource_group,
                        groups=groups)
