"""What kind of location a catalog zone or region is: the one place that parses AWS zone ids and names.

AWS writes zones as AZ ids: `use1-az4` is a regular Availability Zone, `use1-atl2-az1` a Local Zone (the
extra part names the metro) and `usw2-wl1-las-wlz1` a Wavelength Zone. AZ names follow the same shape
(`us-east-1a`, `us-east-1-atl-2a`, `us-west-2-wl1-las-wlz-1`). Azure zones are "1", "2", "3"; GCP zones are
`us-central1-a`. Both are regular zones; neither cloud lists edge zones for GPU machines in the catalog.

Restricted locations need an opt-in a normal account does not have: Local and Wavelength Zones (opt-in per
zone, fewer services, on-demand prices copied from the parent region), AWS GovCloud (`us-gov-*`, a separate
partition and account) and AWS China (`cn-*`, a separate partition run by local operators). Selection leaves
them out unless asked (`--include-restricted`, or a spec whose zone names one).
"""

from __future__ import annotations

import re

ZONE = "zone"
REGION = "region"  # the price or offering covers the whole region
LOCAL_ZONE = "local-zone"
WAVELENGTH = "wavelength-zone"
EDGE_KINDS = (LOCAL_ZONE, WAVELENGTH)
# Ties in price break by this order: a regular zone (or a region-wide price) before an edge location.
KIND_RANK = {ZONE: 0, REGION: 0, LOCAL_ZONE: 1, WAVELENGTH: 2}

AWS_DIRECTIONS = {"north": "n", "south": "s", "east": "e", "west": "w", "central": "c", "northeast": "ne",
                  "southeast": "se", "northwest": "nw", "southwest": "sw"}
# use1-az4 | use1-atl2-az1 | usw2-wl1-las-wlz1 ; us-east-1a | us-east-1-atl-2a | us-west-2-wl1-las-wlz-1
_AWS_ZONE_ID = re.compile(r"^(?P<prefix>[a-z]+\d+)(?P<edge>(-[a-z0-9]+)*?)-(?P<suffix>az\d+|wlz\d+)$")
_AWS_ZONE_NAME = re.compile(r"^(?P<region>[a-z]{2}(-gov)?-[a-z]+-\d+)(?P<edge>(-[a-z0-9]+)*?)([a-z]|-wlz-\d+)$")
_WAVELENGTH = re.compile(r"-wl\d+-")


def aws_zone_id_prefix(region: str) -> str:
    """"us-east-1" -> "use1", the prefix of that region's AZ ids (use1-az4), which are the same in every account."""
    parts = region.split("-")
    if len(parts) == 4 and parts[1] == "gov":  # us-gov-west-1 -> usgw1
        return parts[0] + "g" + AWS_DIRECTIONS.get(parts[2], parts[2]) + parts[3]
    if len(parts) != 3:
        return region
    return parts[0] + AWS_DIRECTIONS.get(parts[1], parts[1]) + parts[2]


def is_aws_zone_id(zone: str) -> bool:
    """An AZ id (use1-az4, use1-atl2-az1), the same in every account, as opposed to an account's AZ name."""
    return bool(_AWS_ZONE_ID.match(zone))


def aws_zone_in_region(zone: str, region: str) -> bool:
    """Whether an AWS AZ id or AZ name (regular, Local or Wavelength Zone) belongs to `region`."""
    by_id = _AWS_ZONE_ID.match(zone)
    if by_id:
        return by_id["prefix"] == aws_zone_id_prefix(region)
    by_name = _AWS_ZONE_NAME.match(zone)
    return bool(by_name) and by_name["region"] == region


def zone_kind(cloud: str, zone: str) -> str:
    """"zone", "region" (no zone), "local-zone" or "wavelength-zone"."""
    if not zone:
        return REGION
    if cloud != "aws":
        return ZONE
    if _WAVELENGTH.search(zone):
        return WAVELENGTH
    match = _AWS_ZONE_ID.match(zone) or _AWS_ZONE_NAME.match(zone)
    if match and not match["edge"]:
        return ZONE
    return LOCAL_ZONE


def is_edge(cloud: str, zone: str) -> bool:
    """Local Zones and Wavelength Zones: fewer services, no EFA placement across them, not for RDMA clusters."""
    return zone_kind(cloud, zone) in EDGE_KINDS


def restricted_reason(cloud: str, region: str, zone: str) -> str | None:
    """Why a location needs an opt-in a normal account lacks, or None for an ordinary region or zone."""
    if cloud == "aws" and region.startswith("us-gov-"):
        return f"{region} is AWS GovCloud (a separate partition and account)"
    if cloud == "aws" and region.startswith("cn-"):
        return f"{region} is AWS China (a separate partition and account)"
    kind = zone_kind(cloud, zone)
    if kind in EDGE_KINDS:
        return f"{zone} is a {kind.replace('-', ' ').replace('zone', 'Zone').title()} (needs opt-in, fewer services)"
    return None


def location_rank(cloud: str, region: str, zone: str) -> int:
    """Tie-break order of a location's kind: regular zones and regions first, then Local, then Wavelength Zones,
    then restricted partitions."""
    partition = 3 if restricted_reason(cloud, region, "") else 0
    return partition + KIND_RANK[zone_kind(cloud, zone)]
