"""What kind of location a catalog zone is. Edge locations cannot host a multi-node RDMA cluster.

AWS writes zones as AZ ids: `use1-az4` is a regular Availability Zone, `use1-atl2-az1` a Local Zone (the
extra part names the metro) and `usw2-wl1-las-wlz1` a Wavelength Zone. AZ names follow the same shape
(`us-east-1a`, `us-east-1-atl-2a`, `us-west-2-wl1-las-wlz-1`). Azure zones are "1", "2", "3"; GCP zones are
`us-central1-a`. Both are regular zones; neither cloud lists edge zones for GPU machines in the catalog.
"""

from __future__ import annotations

import re

ZONE = "zone"
REGION = "region"  # the price or offering covers the whole region
LOCAL_ZONE = "local-zone"
WAVELENGTH = "wavelength-zone"
EDGE_KINDS = (LOCAL_ZONE, WAVELENGTH)

_AWS_AZ_ID = re.compile(r"^[a-z]+\d+-az\d+$")
_AWS_AZ_NAME = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-\d+[a-z]$")
_AWS_WAVELENGTH = re.compile(r"-wl\d+-")


def zone_kind(cloud: str, zone: str) -> str:
    """"zone", "region" (no zone), "local-zone" or "wavelength-zone"."""
    if not zone:
        return REGION
    if cloud != "aws":
        return ZONE
    if _AWS_WAVELENGTH.search(zone):
        return WAVELENGTH
    if _AWS_AZ_ID.match(zone) or _AWS_AZ_NAME.match(zone):
        return ZONE
    return LOCAL_ZONE


def is_edge(cloud: str, zone: str) -> bool:
    """Local Zones and Wavelength Zones: fewer services, no EFA placement across them, not for RDMA clusters."""
    return zone_kind(cloud, zone) in EDGE_KINDS
