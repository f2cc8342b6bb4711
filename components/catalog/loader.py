"""Loads the catalog's data files once per process: GPU models, instance types and prices for each cloud.

Files (all under `data/`):
- `gpus.yaml`: per-GPU facts.
- `<cloud>/instances.yaml`: instance types with their GPU, network and NVSwitch facts.
- `<cloud>/prices.csv`: USD per node-hour by region and zone; `<cloud>/prices.yaml`: its sources and dates.

Every row passes the sanity checks in `checks.py` when the catalog is built. `Catalog.instances` and
`Catalog.prices` hold what selection may use; `Catalog.flags` holds what was refused and why, and
`Catalog.raw_prices` the prices as the files give them.
"""

from __future__ import annotations

import csv
import difflib
import pickle
from collections.abc import Iterable
from dataclasses import fields
from datetime import date
from functools import lru_cache
from pathlib import Path

import yaml

from ..cloud_init.content_cache import cached_bytes, module_salt
from .checks import apply_flags, check_instances, check_prices, excluded_flags
from .datadir import CLOUDS, SHIPPED, SHIPPED_DIR, active_data_dir, data_file
from .models import Flag, GpuModel, InstanceType, Price, PriceSource

DATA_DIR = SHIPPED_DIR  # the shipped catalog: read-only, never written by a refresh


class Catalog:
    """Read-only lookups over the loaded rows."""

    def __init__(self, gpus: Iterable[GpuModel], instances: Iterable[InstanceType], prices: Iterable[Price],
                 sources: Iterable[PriceSource], flags: Iterable[Flag] = (), folder: Path = SHIPPED_DIR,
                 origin: str = SHIPPED):
        self.folder, self.origin = folder, origin  # where the data was read, and what chose that folder
        self.gpus = {g.model: g for g in gpus}
        self._gpu_names = {alias.lower(): g.model for g in self.gpus.values() for alias in (g.model, *g.aliases)}
        all_instances = list(instances)
        self.raw_prices = tuple(prices)
        sources = list(sources)
        self.sources = {s.cloud: s for s in sources if not s.key}
        self.price_sources = {(s.cloud, s.key): s for s in sources}
        given = [*flags, *check_instances(self.gpus, all_instances)]
        # Prices are compared with each other only after the rows already refused are set aside.
        checked = [*given, *check_prices(apply_flags(self.raw_prices, given))]
        self.flags = tuple(sorted(set(checked), key=lambda f: (f.cloud, f.instance_type, f.region, f.zone, f.kind)))
        refused = {(f.cloud, f.instance_type) for f in self.flags if f.scope == "row" and not f.region}
        self.flagged_instances = {(i.cloud, i.name): i for i in all_instances if (i.cloud, i.name) in refused}
        self.instances = {(i.cloud, i.name): i for i in all_instances if (i.cloud, i.name) not in refused}
        self.prices = tuple(apply_flags(self.raw_prices, self.flags))
        self._by_type: dict[tuple[str, str], list[Price]] = {}
        for price in self.prices:
            self._by_type.setdefault((price.cloud, price.instance_type), []).append(price)
        self._flags_by_type: dict[tuple[str, str], list[Flag]] = {}  # in `flags` order
        for flag in self.flags:
            self._flags_by_type.setdefault((flag.cloud, flag.instance_type), []).append(flag)

    def gpu(self, name: str) -> GpuModel | None:
        model = self._gpu_names.get(name.lower())
        return self.gpus[model] if model else None

    def gpu_suggestions(self, name: str) -> list[str]:
        """Up to three GPU models whose name or alias is close to `name`, each once (aliases of one model would
        otherwise repeat it: 'RTX-PRO-6000', 'RTX-PRO-6000', ...)."""
        close = difflib.get_close_matches(name.lower(), self._gpu_names, n=len(self._gpu_names), cutoff=0.5)
        return list(dict.fromkeys(self._gpu_names[m] for m in close))[:3]

    def instance(self, cloud: str, name: str) -> InstanceType | None:
        return self.instances.get((cloud, name))

    def instance_suggestions(self, cloud: str, name: str) -> list[str]:
        names = [n for (c, n) in self.instances if c == cloud]
        return difflib.get_close_matches(name, names, n=3, cutoff=0.5)

    def instances_of(self, cloud: str, gpu: str | None = None, gpus: int | None = None) -> list[InstanceType]:
        rows = [i for (c, _), i in self.instances.items() if c == cloud]
        if gpu is not None:
            rows = [i for i in rows if i.gpu == gpu]
        if gpus is not None:
            rows = [i for i in rows if i.gpus == gpus]
        return sorted(rows, key=lambda i: i.name)

    def prices_of(self, cloud: str, instance_type: str, region: str | None = None) -> list[Price]:
        rows = self._by_type.get((cloud, instance_type), [])
        return [p for p in rows if region is None or p.region == region]

    def regions_of(self, cloud: str, instance_type: str) -> list[str]:
        return sorted({p.region for p in self.prices_of(cloud, instance_type)})

    def zones_of(self, cloud: str, instance_type: str, region: str) -> list[str]:
        return sorted({p.zone for p in self.prices_of(cloud, instance_type, region) if p.zone})

    def flags_of(self, cloud: str, instance_type: str, region: str | None = None) -> list[Flag]:
        """Why rows of this type were refused: instance-wide flags, and those of `region` if given."""
        return [f for f in self._flags_by_type.get((cloud, instance_type), ())
                if region is None or f.region in ("", region)]

    def source_of(self, price: Price) -> PriceSource | None:
        """Where a price came from and when."""
        return self.source_of_key(price.cloud, price.source)

    def source_of_key(self, cloud: str, key: str) -> PriceSource | None:
        return self.price_sources.get((cloud, key)) or self.sources.get(cloud)


def load_catalog(data_dir: Path | None = None) -> Catalog:
    """The catalog of `data_dir`, or of the active folder (see `datadir.py`). Cached per folder."""
    folder, origin = active_data_dir(data_dir)
    return _load(Path(folder), origin)


@lru_cache(maxsize=8)
def _load(data_dir: Path, origin: str = SHIPPED) -> Catalog:
    """The catalog built once per content of its files and kept by `content_cache`: building it (parsing the YAML
    and CSV, the sanity checks over every price) is about 35 ms of CPU, reading it back about 6 ms, in every plan and
    `select`. The key is every file the build reads (the path it was found at and its bytes), the folder and origin
    the catalog records; the salt, the source of the modules that build it and PyYAML's version. The entry is a
    pickle: like every entry of that folder, it is trusted as the user's own (the cache's user data is run on the
    nodes), and a damaged one fails its checksum and is rebuilt."""
    parts = [str(data_dir).encode(), origin.encode()]
    for path in (data_file(data_dir, name) for name in _FILES):
        parts += [str(path).encode(), b"+" + path.read_bytes() if path.is_file() else b"-"]  # present, or not
    key = b"".join(b"%d:%b" % (len(part), part) for part in parts)  # lengths first: no two lists give one key
    stored = cached_bytes("catalog", _salt(), key, lambda: pickle.dumps(_read(data_dir, origin), protocol=5))
    return pickle.loads(stored)


_FILES = ("gpus.yaml", *(f"{cloud}/{name}" for cloud in CLOUDS for name in ("instances.yaml", "prices.csv",
                                                                            "prices.yaml")))


def _salt() -> str | None:
    salts = [module_salt(name) for name in (__name__, f"{__package__}.checks", f"{__package__}.models")]
    return None if None in salts else " ".join([f"PyYAML {yaml.__version__} pickle 5", *map(str, salts)])


def _read(data_dir: Path, origin: str = SHIPPED) -> Catalog:
    gpus = [_build(GpuModel, row) for row in _yaml(data_file(data_dir, "gpus.yaml"))["gpus"]]
    instances, prices, sources, flags = [], [], [], []
    for cloud in CLOUDS:
        if data_file(data_dir, f"{cloud}/instances.yaml").exists():
            doc = _yaml(data_file(data_dir, f"{cloud}/instances.yaml"))
            instances += [_build(InstanceType, {"cloud": cloud, "source": doc.get("source", ""), **row})
                          for row in doc["instances"]]
        prices_file, meta_file = data_file(data_dir, f"{cloud}/prices.csv"), data_file(data_dir, f"{cloud}/prices.yaml")
        if prices_file.exists():
            prices += _read_prices(cloud, prices_file)
            meta = _yaml(meta_file)
            sources += read_sources(cloud, meta)
            flags += excluded_flags(cloud, meta.get("excluded") or ())
    return Catalog(gpus, instances, prices, sources, flags, folder=data_dir, origin=origin)


def read_catalog(data_dir: Path | None = None) -> Catalog:
    """The catalog of `data_dir` (or the active folder), read afresh: for a refresh and for timing it."""
    folder, origin = active_data_dir(data_dir)
    return _read(Path(folder), origin)


def read_sources(cloud: str, meta: dict) -> list[PriceSource]:
    """The file's default source, then each named source that rows refer to in their `source` column."""
    excluded = tuple(e if isinstance(e, str) else f"{e['instance_type']} {e.get('region', '')}: {e.get('reason', '')}"
                     for e in meta.get("excluded") or ())
    default = PriceSource(cloud=cloud, source=meta["source"], snapshot_date=_date(meta["snapshot_date"]),
                          notes=tuple(meta.get("notes") or ()), excluded=excluded,
                          not_before=_date(meta.get("snapshot_not_before")))
    named = [PriceSource(cloud=cloud, key=key, source=value["source"], snapshot_date=_date(value["snapshot_date"]),
                         notes=tuple(value.get("notes") or ()), not_before=_date(value.get("snapshot_not_before")))
             for key, value in sorted((meta.get("sources") or {}).items())]
    return [default, *named]


def _read_prices(cloud: str, path: Path) -> list[Price]:
    with path.open(newline="") as handle:
        return [
            Price(cloud=cloud, instance_type=row["instance_type"], region=row["region"], zone=row["zone"],
                  on_demand=_money(row["on_demand"]), spot=_money(row["spot"]),
                  reserved_1y=_money(row.get("reserved_1y", "")), reserved_3y=_money(row.get("reserved_3y", "")),
                  source=row.get("source") or "")
            for row in csv.DictReader(handle)
        ]


def _build(cls, row: dict):
    known = {f.name for f in fields(cls)}
    values = {k: (tuple(v) if isinstance(v, list) else v) for k, v in row.items() if k in known}
    values_extra = {k: v for k, v in row.items() if k not in known}
    if values_extra and "extra" in known:
        values["extra"] = values_extra
    elif values_extra:
        raise ValueError(f"{cls.__name__} row has unknown keys {sorted(values_extra)}: {row}")
    return cls(**values)


def _money(text: str | None) -> float | None:
    return float(text) if text not in (None, "") else None


def _date(value) -> date | None:
    """A YAML date; None (`null`) where the source records none."""
    if value is None:
        return None
    return value if isinstance(value, date) else date.fromisoformat(str(value))


def _yaml(path: Path) -> dict:
    with path.open() as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # C parser when built
