"""Turns a spec's accelerator into one catalog instance type, or explains why it cannot.

"8x H100 in us-east-2" becomes the cheapest matching type offered there, for the spec's market. The rules
that need catalog facts live here: unknown GPUs and types, GPU counts, fabrics and zones. Problems are
collected and raised together, before any resource is declared.
"""

from __future__ import annotations

from ..spec.errors import Problem, SpecError
from ..spec.model import ClusterSpec
from ..spec.node_rules import check_node_software
from ..spec.vgpu_rules import check_vgpu_slice
from .cost import NodePrices, hourly_cost
from .loader import Catalog, load_catalog
from .models import GpuModel, InstanceType
from .offers import FABRICS, FRACTION_TOLERANCE, location_candidates, not_sold_on_demand, reservation_missing
from .selection import NodePrice, Selection
from .zones import is_aws_zone_id, is_edge, restricted_reason

# The fabric each cloud's RDMA-capable rows carry, by the spec's `fabric` name (the same table `select` uses).
SPEC_FABRICS = {name: FABRICS[name] for name in ("efa", "infiniband", "gpudirect")}


def select(spec: ClusterSpec, catalog: Catalog | None = None) -> Selection:
    """The instance type, fabric, placement and price for `spec`; raises `SpecError` with every problem."""
    catalog = catalog or load_catalog()
    instance, problems = _pick_instance(spec, catalog)
    if instance is None:
        raise SpecError(problems)
    warnings: list[str] = []
    problems += _market_problems(spec, instance, warnings)
    problems += _zone_problems(spec, catalog, instance, warnings)
    fabric, fabric_problems = _resolve_fabric(spec, instance, warnings)
    if instance.is_vgpu_slice:  # a slice has no fabric: the vGPU rules refuse an RDMA ask with their own message
        fabric, fabric_problems = None, []
    problems += fabric_problems
    if problems:
        raise SpecError(problems)
    price = _node_price(spec, catalog, instance, warnings)
    selection = Selection(spec=spec, instance=instance, gpu=catalog.gpu(instance.gpu), fabric=fabric,
                          placement_group=_placement_group(spec, fabric, instance), price=price, warnings=tuple(warnings))
    vgpu_problems = check_vgpu_slice(selection)
    refused = {p.path for p in vgpu_problems}  # one message per field: the slice's reason, not a generic one
    node_problems = [p for p in check_node_software(selection)
                     if not any(p.path == r or p.path.startswith((f"{r}.", f"{r}[")) for r in refused)]
    if vgpu_problems or node_problems:
        raise SpecError([*vgpu_problems, *node_problems])
    return selection


def _pick_instance(spec: ClusterSpec, catalog: Catalog) -> tuple[InstanceType | None, list[Problem]]:
    acc = spec.accelerator
    if acc.instance_type is not None:
        return _named_instance(spec, catalog)
    gpu = catalog.gpu(acc.gpu)
    if gpu is None:
        return None, [_unknown_gpu(spec, catalog)]
    offered = catalog.instances_of(spec.cloud, gpu.model)
    rows = [i for i in offered if not i.unsupported_driver]
    if offered and not rows:
        names = _names([i.name for i in offered])
        return None, [Problem("accelerator.gpu", acc.gpu, f"{gpu.model} on {spec.cloud} ({names}) "
                              f"{offered[0].unsupported_driver}; choose an NVIDIA GPU")]
    if acc.gpu_fraction is not None:
        return _pick_slice(spec, catalog, gpu, rows)
    slices = sorted({i.gpu_fraction for i in rows if i.is_vgpu_slice})
    rows = [i for i in rows if not i.is_vgpu_slice]  # whole-GPU specs never get a slice
    if not rows and slices:
        return None, [Problem("accelerator.gpu", acc.gpu, f"{gpu.model} is offered on {spec.cloud} only as vGPU slices "
                              f"here; set `accelerator.gpu_fraction` to one of {', '.join(f'{f:g}' for f in slices)}")]
    if not rows:
        return None, [Problem("accelerator.gpu", acc.gpu, f"{gpu.model} is not offered on {spec.cloud}; offered there: "
                              f"{_names(sorted({i.gpu for i in catalog.instances_of(spec.cloud)}))}")]
    counts = sorted({i.gpus for i in rows})
    count = acc.gpus_per_node if acc.gpus_per_node is not None else (counts[0] if len(counts) == 1 else None)
    if count is None:
        return None, [Problem("accelerator.gpus_per_node", None, f"required: {gpu.model} on {spec.cloud} comes with "
                              f"{_names(counts)} GPUs per node")]
    matching = [i for i in rows if i.gpus == count]
    if not matching:
        return None, [Problem("accelerator.gpus_per_node", count, f"{gpu.model} on {spec.cloud} comes with "
                              f"{_names(counts)} GPUs per node")]
    wants_rdma = spec.fabric in SPEC_FABRICS
    if wants_rdma:
        matching = [i for i in matching if i.fabric in SPEC_FABRICS[spec.fabric]] or matching
    # Types the catalog offers in the spec's zone first: a cheaper type elsewhere in the region cannot run there.
    matching = [i for i in matching if spec.zone in catalog.zones_of(spec.cloud, i.name, spec.region)] or matching
    return min(matching, key=lambda i: _rank(spec, catalog, i)), []


def _pick_slice(spec: ClusterSpec, catalog: Catalog, gpu: GpuModel,
                rows: list[InstanceType]) -> tuple[InstanceType | None, list[Problem]]:
    """The cheapest vGPU slice of `gpu` with the share `accelerator.gpu_fraction` asks for."""
    acc = spec.accelerator
    slices = [i for i in rows if i.is_vgpu_slice]
    matching = [i for i in slices if abs(i.gpu_fraction - acc.gpu_fraction) < FRACTION_TOLERANCE]
    if not matching:
        offered = sorted({i.gpu_fraction for i in slices})
        expected = (f"{gpu.model} on {spec.cloud} comes in slices of {', '.join(f'{f:g}' for f in offered)}" if offered
                    else f"{spec.cloud} offers no vGPU slice of {gpu.model}; slices there: "
                    f"{_names(sorted({i.gpu for i in catalog.instances_of(spec.cloud) if i.is_vgpu_slice}))}")
        return None, [Problem("accelerator.gpu_fraction", acc.gpu_fraction, expected)]
    if acc.gpus_per_node not in (None, 1):
        return None, [Problem("accelerator.gpus_per_node", acc.gpus_per_node, "a vGPU slice is one share of one GPU "
                              "per node: drop `gpus_per_node` or set it to 1")]
    matching = [i for i in matching if spec.zone in catalog.zones_of(spec.cloud, i.name, spec.region)] or matching
    return min(matching, key=lambda i: _rank(spec, catalog, i)), []


def _named_instance(spec: ClusterSpec, catalog: Catalog) -> tuple[InstanceType | None, list[Problem]]:
    acc = spec.accelerator
    instance = catalog.instance(spec.cloud, acc.instance_type)
    if instance is None and (spec.cloud, acc.instance_type) in catalog.flagged_instances:
        reasons = "; ".join(f.reason for f in catalog.flags_of(spec.cloud, acc.instance_type) if f.scope == "row")
        return None, [Problem("accelerator.instance_type", acc.instance_type,
                              f"refused by the catalog's sanity checks: {reasons}")]
    if instance is None:
        hint = catalog.instance_suggestions(spec.cloud, acc.instance_type)
        offered = _names([i.name for i in catalog.instances_of(spec.cloud)])
        expected = f"did you mean {_names(hint)}?" if hint else f"expected a {spec.cloud} GPU instance type: {offered}"
        return None, [Problem("accelerator.instance_type", acc.instance_type, expected)]
    problems = []
    if acc.gpu is not None and (catalog.gpu(acc.gpu) is None or catalog.gpu(acc.gpu).model != instance.gpu):
        problems.append(Problem("accelerator.gpu", acc.gpu, f"{instance.name} carries {instance.gpu}; "
                                "drop `gpu` or make it match"))
    if acc.gpu_fraction is not None and abs(acc.gpu_fraction - instance.gpu_fraction) >= FRACTION_TOLERANCE:
        share = f"is a {instance.fraction_label} slice of" if instance.is_vgpu_slice else "carries whole"
        problems.append(Problem("accelerator.gpu_fraction", acc.gpu_fraction, f"{instance.name} {share} "
                                f"{instance.gpu}; drop `gpu_fraction` or make it match"))
    if acc.gpus_per_node is not None and acc.gpus_per_node != instance.gpus:
        problems.append(Problem("accelerator.gpus_per_node", acc.gpus_per_node,
                                f"{instance.name} has {instance.gpus} GPUs; drop `gpus_per_node` or make it match"))
    return (None if problems else instance), problems


def _unknown_gpu(spec: ClusterSpec, catalog: Catalog) -> Problem:
    hint = catalog.gpu_suggestions(spec.accelerator.gpu)
    known = _names(sorted({i.gpu for i in catalog.instances_of(spec.cloud)}))
    expected = f"did you mean {_names(hint)}? " if hint else ""
    return Problem("accelerator.gpu", spec.accelerator.gpu, f"{expected}expected a GPU offered on {spec.cloud}: {known}")


def _rank(spec: ClusterSpec, catalog: Catalog, instance: InstanceType) -> tuple:
    """Cheapest at what the cluster would pay (its zone's prices, its market and node count, the same arithmetic
    `gpufleet select` ranks by) first; unpriced last; then by name."""
    price = _node_price(spec, catalog, instance, [])
    value = hourly_cost(spec.market.type, spec.nodes, NodePrices(on_demand=price.on_demand, spot=price.spot),
                        spec.market.on_demand_base)
    unbuyable = _needs_missing_reservation(spec, instance)
    return (unbuyable, 0, value, instance.name) if value is not None else (unbuyable, 1, 0.0, instance.name)


def _needs_missing_reservation(spec: ClusterSpec, instance: InstanceType) -> bool:
    market = spec.market
    return reservation_missing(instance, market.type, market.on_demand_base, market.capacity_reservation_id is not None)


def _market_problems(spec: ClusterSpec, instance: InstanceType, warnings: list[str]) -> list[Problem]:
    """A reservation-only type runs on demand only inside the reservation the spec names; there it is billed at the
    reservation's rate, which the catalog does not know."""
    if _needs_missing_reservation(spec, instance):
        return [Problem("market.type", spec.market.type, f"{not_sold_on_demand(instance)}; use `market.type: spot`, "
                        "or name the reservation in `market.capacity_reservation_id`")]
    if instance.on_demand_needs_reservation and spec.market.capacity_reservation_id is not None:
        warnings.append(f"{instance.name} runs reservation-bound in {spec.market.capacity_reservation_id!r}: it is "
                        "billed at the reservation's own rate, not at the on-demand list price the cost table shows")
    return []


ZONE_LOOKUP = {
    "aws": "List them with `aws ec2 describe-instance-type-offerings --region {region} --location-type "
           "availability-zone-id --filters Name=instance-type,Values={type}`",
    "gcp": "List them with `gcloud compute machine-types list --filter=\"name={type} AND zone~^{region}-\"`",
}


def _zone_problems(spec: ClusterSpec, catalog: Catalog, instance: InstanceType, warnings: list[str]) -> list[Problem]:
    regions = catalog.regions_of(spec.cloud, instance.name)
    if not regions:
        warnings.append(f"the catalog has no prices for {instance.name}; region and zone offerings are not checked")
        return []
    if spec.region not in regions:
        return [Problem("region", spec.region, f"{instance.name} is not offered there in the catalog; offered in "
                        f"{_names(regions)}")]
    zones = catalog.zones_of(spec.cloud, instance.name, spec.region)
    if spec.zone is not None and not zones and spec.cloud != "azure":
        lookup = ZONE_LOOKUP[spec.cloud].format(type=instance.name, region=spec.region)
        warnings.append(f"the catalog prices {instance.name} in {spec.region} for the region as a whole and lists no "
                        f"zones there: zone {spec.zone!r} is not checked. {lookup}")
    if spec.zone is None or not zones or spec.cloud == "azure":
        return []
    regular = [z for z in zones if not is_edge(spec.cloud, z)]
    if spec.nodes > 1 and spec.fabric != "tcp" and instance.fabric and is_edge(spec.cloud, spec.zone):
        return [Problem("zone", spec.zone, "is a Local Zone or Wavelength Zone; a multi-node RDMA cluster needs a "
                        f"regular Availability Zone: {_names(regular)}")]
    restricted = restricted_reason(spec.cloud, spec.region, spec.zone)
    if restricted:
        warnings.append(f"{restricted}: the spec names it, so it is used; check that your account has opted in")
    if spec.cloud == "aws" and not is_aws_zone_id(spec.zone):
        warnings.append(f"zone {spec.zone!r} is an AZ name, which maps to a different AZ id in each account; "
                        f"{instance.name} is offered in {', '.join(regular)} of {spec.region}. Use the AZ id for an "
                        "exact check and spot price")
        return []
    if spec.zone not in zones:
        return [Problem("zone", spec.zone, f"{instance.name} is not offered in that zone; offered in {_names(regular)}")]
    return []


def _resolve_fabric(spec: ClusterSpec, instance: InstanceType, warnings: list[str]) -> tuple[str | None, list[Problem]]:
    if spec.fabric == "tcp":
        return None, []
    if spec.fabric == "auto":
        if instance.fabric is None and spec.nodes > 1:
            warnings.append(f"{instance.name} has no RDMA fabric: {spec.nodes} nodes will talk over TCP "
                            f"({instance.network_gbps:g} Gbps); pick an RDMA-capable type for multi-node training")
        # The fabric follows the instance type, not the node count: a single node is already built for it, so
        # growing the cluster changes only the fleet's size, never the nodes' network or software.
        return instance.fabric, []
    if instance.fabric not in SPEC_FABRICS[spec.fabric]:
        return None, [Problem("fabric", spec.fabric, f"{instance.name} has no {spec.fabric.upper()} support; use "
                              f"`fabric: auto` or `tcp`, or an instance type with {spec.fabric.upper()}")]
    return instance.fabric, []


def _placement_group(spec: ClusterSpec, fabric: str | None, instance: InstanceType) -> bool:
    """Default: on for multi-node clusters and for any cluster on an RDMA fabric (so growing it replaces nothing),
    off inside a Capacity Block, which fixes placement itself, and off in an AWS On-Demand Capacity Reservation,
    whose instances cannot join a group the stack creates (unless `placement_group_name` names the reservation's)."""
    if spec.placement_group is not None:
        return spec.placement_group
    if instance.is_vgpu_slice:  # slices share hosts with other tenants; vgpu_rules refuses asking for a group
        return False
    if spec.placement_group_name is not None:
        return True
    in_aws_reservation = spec.cloud == "aws" and spec.market.capacity_reservation_id is not None
    return (spec.nodes > 1 or fabric is not None) and not spec.market.capacity_block and not in_aws_reservation


def _node_price(spec: ClusterSpec, catalog: Catalog, instance: InstanceType, warnings: list[str]) -> NodePrice:
    """The offer engine's prices for the spec's zone (or region); where the catalog has no spot price for that zone,
    the region's highest spot price, with a warning."""
    located = location_candidates(catalog, spec.cloud, instance.name, spec.region)
    here = [c for c in located if c.zone in ("", spec.zone)]
    on_demand = max((c.prices.on_demand for c in located if c.prices.on_demand is not None), default=None)
    spot = max((c.prices.spot for c in here if c.prices.spot is not None), default=None)
    if spot is None:
        spot = max((c.prices.spot for c in located if c.prices.spot is not None), default=None)
        if spot is not None and spec.market.type != "on-demand":
            warnings.append(f"spot price is the highest in {spec.region} (${spot:.2f}/h); the catalog has none for "
                            f"zone {spec.zone!r}")
    return NodePrice(on_demand=on_demand, spot=spot)


def _names(values) -> str:
    return ", ".join(repr(v) if isinstance(v, str) else str(v) for v in values) or "none"
