"""`location_candidates` builds one type's candidates on its own (a plan needs one type): for every type and region it
must list exactly what the full candidate list (`candidates`, which `select` ranks) holds there, in the same order."""

from __future__ import annotations

from gpufleet.catalog.loader import load_catalog
from gpufleet.catalog.offers import candidates, location_candidates


def test_one_types_candidates_are_the_full_lists_own():
    catalog = load_catalog()
    everything = candidates(catalog)
    by_location: dict[tuple[str, str, str], list] = {}
    for candidate in everything:
        by_location.setdefault((candidate.instance.cloud, candidate.instance.name, candidate.region), []).append(
            candidate)
    assert len(by_location) > 100 and any(len(found) > 1 for found in by_location.values())  # zones, not only regions
    for (cloud, name, region), expected in by_location.items():
        assert location_candidates(catalog, cloud, name, region) == expected, (cloud, name, region)
    assert location_candidates(catalog, "aws", "no-such-type", "us-east-1") == []
