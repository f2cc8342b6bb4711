"""Zone kinds: AWS Local and Wavelength Zones (ids and names) are edge locations; other clouds' zones are not."""

import pytest

from gpufleet.catalog.zones import is_edge, zone_kind


@pytest.mark.parametrize("cloud, zone, kind", [
    ("aws", "use1-az4", "zone"), ("aws", "us-east-1a", "zone"), ("aws", "us-gov-west-1b", "zone"),
    ("aws", "use1-atl2-az1", "local-zone"), ("aws", "us-east-1-atl-2a", "local-zone"),
    ("aws", "usw2-wl1-las-wlz1", "wavelength-zone"), ("aws", "us-west-2-wl1-las-wlz-1", "wavelength-zone"),
    ("aws", "", "region"), ("azure", "1", "zone"), ("azure", "", "region"), ("gcp", "us-central1-a", "zone")])
def test_zone_kind(cloud, zone, kind):
    assert zone_kind(cloud, zone) == kind
    assert is_edge(cloud, zone) == (kind in ("local-zone", "wavelength-zone"))
