"""Spec fields that govern a cluster over its life: roll-outs, capacity windows and capacity waits.

They are separate from the cluster's shape because they decide *when* nodes change, not *what* they are: a
training fleet must never lose a running job to `pulumi up`, so every field here defaults to "leave running nodes
alone".
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Annotated

from pydantic import AfterValidator, Field

from .strict import StrictModel

UTC_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?Z$")
# Go durations as the Auto Scaling group's `wait_for_capacity_timeout` takes them ("0" turns the wait off).
CAPACITY_WAIT = re.compile(r"^(0|([1-9]\d{0,3}(s|m|h))+)$")


def _utc_timestamp(text: str) -> str:
    """Normalises "2026-12-10T08:00Z" to "2026-12-10T08:00:00Z", the form Auto Scaling schedules take."""
    if not UTC_TIMESTAMP.match(text):
        raise ValueError("expected a UTC time like '2026-12-10T11:30:00Z' (quote it in YAML)")
    try:
        moment = datetime.strptime(text.replace("Z", ""), "%Y-%m-%dT%H:%M:%S" if text.count(":") == 2 else
                                   "%Y-%m-%dT%H:%M")
    except ValueError:
        raise ValueError("expected a real UTC time like '2026-12-10T11:30:00Z'") from None
    return moment.replace(tzinfo=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _capacity_wait(text: str) -> str:
    if not CAPACITY_WAIT.match(text):
        raise ValueError("expected \"0\" (do not wait) or a duration like \"10m\" or \"1h30m\"")
    return text


UtcTimestamp = Annotated[str, AfterValidator(_utc_timestamp)]
CapacityWait = Annotated[str, AfterValidator(_capacity_wait)]


def parse_utc(text: str) -> datetime:
    """A normalised `UtcTimestamp` as an aware datetime."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


class Rollout(StrictModel):
    """Deliberate roll-outs of a changed image or node configuration onto running nodes."""

    enabled: bool = False
    """Replace running nodes when the image or the user data changes (AWS instance refresh, Azure rolling upgrade, GCP proactive update). Default: false: running nodes keep what they booted with until they are replaced for another reason, so `pulumi up` never stops a running job."""
    max_unavailable: int = Field(1, ge=1, le=4096)
    """Nodes replaced at a time during a roll-out. Default: 1."""
