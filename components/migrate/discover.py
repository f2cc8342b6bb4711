"""The running nodes of a stack, for `sync` and `verify` without `--host`: asked of the same cloud CLI the tunnel
needs (aws, gcloud, az), never guessed.

Names come from the stack's outputs when the Pulumi CLI can read them (`pulumi stack output --json`: the AWS
Auto Scaling group, the GCP managed instance group and zone, the Azure resource group and scale sets). Without them
the nodes are matched the way the components tag them, through the components' own functions (AWS: the node tags of
`aws.tagging.tagger`, with the `naming.cluster_hash` of this project and stack; GCP: the node labels of
`gcp.labels.labeler` and the `gcp.nodes.base_instance_name` prefix; Azure: the scale sets' `azure.tagging.tagger`
tags). Every failure is one message that says what to do, ending with `--host` (exit 2).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..naming import cluster_hash
from ..plan.project import find_project
from ..plan.stackfile import stack_name
from ..program import COMPONENT_NAME
from ..spec.errors import MISSING, Problem, SpecError
from ..spec.model import ClusterSpec
from .manifest import ROOT

CLI_TIMEOUT_S = 120
RUNNING = {"aws": "running", "gcp": "RUNNING", "azure": "PowerState/running"}
SIGN_IN = {"aws": "aws configure sso", "gcloud": "gcloud auth login", "az": "az login"}
INSTALL = {"aws": "the AWS CLI v2", "gcloud": "the Google Cloud CLI", "az": "the Azure CLI"}
HOST_HINT = "or name the nodes with `--host`"


@dataclass(frozen=True)
class FoundNodes:
    hosts: tuple[str, ...]
    zone: str | None
    """GCP: the nodes' zone (IAP tunnels need it): `--zone`, else the stack outputs', else the spec's."""
    how: str
    """The command that found them, shown to the user."""


def find_nodes(stack: str, spec: ClusterSpec, zone: str | None = None) -> FoundNodes:
    """The stack's running nodes, or `SpecError` naming what to do. `zone` (GCP, `--zone`) wins over the stack's."""
    name = stack_name(stack)
    project = _project(stack)
    outputs = stack_outputs(name, project[0]) if project else None
    project_name = project[1] if project else None
    if spec.cloud == "aws":
        found = _aws(spec, name, project_name, outputs)
    elif spec.cloud == "gcp":
        found = _gcp(spec, name, project_name, outputs, zone)
    else:
        found = _azure(spec, name, outputs)
    if not found.hosts:
        raise SpecError([Problem("--host", MISSING, f"no running node of stack `{name}` found by `{found.how}`: is "
                                 f"the cluster up (`pulumi up -s {name}`) and in this account? {HOST_HINT}")],
                        root=ROOT)
    return found


def _project(stack: str) -> tuple[Path, str] | None:
    """The Pulumi project around the stack file (or the current folder for a stack name): where `pulumi` runs and
    whose name goes into `naming.cluster_hash`. None for a stack file outside any project: then neither is known."""
    path = Path(stack)
    start = path.resolve().parent if path.suffix in (".yaml", ".yml") and path.is_file() else None
    try:
        found = find_project(start)
    except SpecError:
        return None
    return found.root, found.name


def stack_outputs(stack: str, project_root: Path) -> dict[str, Any] | None:
    """`pulumi stack output --json` of the stack, run in its project (a stack is named within one), or None when the
    Pulumi CLI is not here or cannot read it (a note says why; the nodes are then found by gpufleet's tags)."""
    if shutil.which("pulumi") is None:
        return None
    done = _run(["pulumi", "stack", "output", "--json", "--non-interactive", "--stack", stack], cwd=project_root,
                check=False)
    try:
        outputs = json.loads(done.stdout) if done.returncode == 0 else None
    except json.JSONDecodeError:
        outputs = None
    if not isinstance(outputs, dict):
        reason = _last_line(done.stderr) or "no JSON object"
        print(f"note: `pulumi stack output --stack {stack}` gave no outputs ({reason}); finding the nodes by "
              "gpufleet's tags", file=sys.stderr)
        return None
    return outputs


def _aws(spec: ClusterSpec, stack: str, project: str | None, outputs: dict | None) -> FoundNodes:
    from ..aws.tagging import CLUSTER_TAG, tagger

    fleet = _text(outputs, "fleet_name")
    if fleet:
        tags = {"aws:autoscaling:groupName": fleet}
    else:
        cluster_id = cluster_hash(COMPONENT_NAME, project, stack) if project else ""
        node_tags = tagger(stack, COMPONENT_NAME, {}, cluster_id)("node")
        tags = {key: value for key, value in node_tags.items() if key != "Name" and (project or key != CLUSTER_TAG)}
    filters = [f"Name=tag:{key},Values={value}" for key, value in tags.items()]
    command = ["aws", "ec2", "describe-instances", "--region", spec.region, "--filters", *filters,
               f"Name=instance-state-name,Values={RUNNING['aws']}", "--output", "json"]
    reply = _json(command)
    instances = [instance for reservation in _list(reply, "Reservations")
                 for instance in _list(reservation, "Instances")]
    hosts = sorted(i["InstanceId"] for i in instances
                   if _is_text(i.get("InstanceId")) and _field(i, "State", "Name", RUNNING["aws"]) == RUNNING["aws"])
    return FoundNodes(tuple(hosts), None, _shown(command))


def _gcp(spec: ClusterSpec, stack: str, project: str | None, outputs: dict | None, zone: str | None) -> FoundNodes:
    fleet, zone = _text(outputs, "fleet_name"), zone or _text(outputs, "zone") or spec.zone
    if fleet and zone:
        command = ["gcloud", "compute", "instance-groups", "managed", "list-instances", fleet, "--zone", zone,
                   "--format=json"]
        rows = _json(command)
        hosts = sorted(_basename(row["instance"]) for row in _rows(rows)
                       if _is_text(row.get("instance")) and row.get("instanceStatus") == RUNNING["gcp"])
        return FoundNodes(tuple(hosts), zone, _shown(command))
    from ..gcp.labels import labeler
    from ..gcp.nodes import base_instance_name

    terms = [f"labels.{key}={value}" for key, value in labeler(stack, {})("node").items()]
    if project:
        terms.append(f"name ~ ^{base_instance_name(stack, COMPONENT_NAME, cluster_hash(COMPONENT_NAME, project, stack))}-")
    terms.append(f"status={RUNNING['gcp']}")
    command = ["gcloud", "compute", "instances", "list", *([f"--zones={zone}"] if zone else []),
               f"--filter={' AND '.join(terms)}", "--format=json"]
    rows = _json(command)
    hosts = sorted(row["name"] for row in _rows(rows)
                   if _is_text(row.get("name")) and row.get("status", RUNNING["gcp"]) == RUNNING["gcp"])
    return FoundNodes(tuple(hosts), zone, _shown(command))


def _azure(spec: ClusterSpec, stack: str, outputs: dict | None) -> FoundNodes:
    group = _text(outputs, "resource_group")
    listed = (outputs or {}).get("scale_sets")
    named = [name for name in listed if _is_text(name)] if isinstance(listed, list) else []
    if group and named:
        scale_sets = [(group, name) for name in named]
        how = "pulumi stack output"
    else:
        scale_sets, how = _tagged_scale_sets(spec, stack)
    hosts: list[str] = []
    for resource_group, name in scale_sets:
        command = ["az", "vmss", "list-instances", "--resource-group", resource_group, "--name", name,
                   "--expand", "instanceView", "--output", "json"]
        how = _shown(command)
        rows = _json(command)
        hosts += [row["id"] for row in _rows(rows) if _is_text(row.get("id")) and _azure_running(row)]
    return FoundNodes(tuple(sorted(hosts)), None, how)


def _tagged_scale_sets(spec: ClusterSpec, stack: str) -> tuple[list[tuple[str, str]], str]:
    """The scale sets carrying the stack's provenance tags (the nodes are the only scale sets gpufleet makes)."""
    from ..azure.tagging import tagger

    wanted = {key: value for key, value in tagger(stack, {})("nodes").items() if key != "gpufleet-role"}
    group = spec.network.existing_resource_group
    command = ["az", "vmss", "list", *(["--resource-group", group] if group else []), "--output", "json"]
    rows = _json(command)
    found = [(row["resourceGroup"], row["name"]) for row in _rows(rows)
             if _is_text(row.get("name")) and _is_text(row.get("resourceGroup")) and isinstance(row.get("tags"), dict)
             and all(row["tags"].get(key) == value for key, value in wanted.items())]
    return sorted(found), _shown(command)


def _azure_running(row: dict) -> bool:
    view = row.get("instanceView")
    statuses = view.get("statuses") if isinstance(view, dict) else None
    if not isinstance(statuses, list):
        return True  # no instance view in the reply: the listing itself is the best knowledge
    return any(isinstance(s, dict) and s.get("code") == RUNNING["azure"] for s in statuses)


def _json(command: list[str]) -> Any:
    done = _run(command, cwd=None, check=True)
    try:
        return json.loads(done.stdout or "null")
    except json.JSONDecodeError:
        raise SpecError([Problem(command[0], _shown(command), f"did not answer JSON ({_last_line(done.stdout)}); "
                                 f"{HOST_HINT}")], root=ROOT) from None


def _run(command: list[str], cwd: Path | None, check: bool) -> subprocess.CompletedProcess:
    tool = command[0]
    if shutil.which(tool) is None:
        raise SpecError([Problem(tool, MISSING, f"`{tool}` is not installed here, and it is needed to list the "
                                 f"stack's nodes: install {INSTALL.get(tool, tool)} and sign in (`{SIGN_IN.get(tool, tool)}`), "
                                 f"{HOST_HINT}")], root=ROOT)
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)  # a CLI that wants to prompt fails instead of waiting
    except subprocess.TimeoutExpired:
        raise SpecError([Problem(tool, _shown(command), f"no answer in {CLI_TIMEOUT_S} s; check the network, "
                                 f"{HOST_HINT}")], root=ROOT) from None
    if check and done.returncode != 0:
        raise SpecError([Problem(tool, _shown(command), f"failed (exit {done.returncode}: "
                                 f"{_last_line(done.stderr) or 'no message'}); check you are signed in "
                                 f"(`{SIGN_IN.get(tool, tool)}`) to the stack's account, "
                                 f"{HOST_HINT}")], root=ROOT)
    return done


def _list(value: Any, key: str) -> list:
    found = value.get(key) if isinstance(value, dict) else None
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []


def _rows(reply: Any) -> list[dict]:
    """The objects of a JSON list reply (anything else: none)."""
    return [row for row in reply if isinstance(row, dict)] if isinstance(reply, list) else []


def _field(row: dict, key: str, inner: str, default: str) -> Any:
    value = row.get(key)
    return value.get(inner, default) if isinstance(value, dict) else default


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _text(outputs: dict | None, key: str) -> str | None:
    value = (outputs or {}).get(key)
    return value if isinstance(value, str) and value and value != "[secret]" else None


def _basename(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1]


def _last_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _shown(command: list[str]) -> str:
    import shlex

    return shlex.join(command)
