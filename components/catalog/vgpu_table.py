"""The README's table of vGPU slices, generated from the catalog so it cannot drift (a test compares them).

    .venv/bin/python -m gpufleet.catalog.vgpu_table           # prints the table
    .venv/bin/python -m gpufleet.catalog.vgpu_table --write   # replaces it in README.md
"""

from __future__ import annotations

import sys
from pathlib import Path

from .loader import Catalog, load_catalog

BEGIN, END = "<!-- vgpu-table:begin -->", "<!-- vgpu-table:end -->"
HEADER = ("| cloud | type | slice | slice GiB | vCPUs | RAM GiB | cheapest on demand, USD/h (region) | prices from |\n"
          "|---|---|---|---|---|---|---|---|\n")


def vgpu_table(catalog: Catalog | None = None) -> str:
    """Every slice the catalog lists, by cloud, GPU and share, with its cheapest on-demand price and that price's date."""
    catalog = catalog or load_catalog()
    slices = sorted((i for i in catalog.instances.values() if i.is_vgpu_slice),
                    key=lambda i: (i.cloud, i.gpu, i.gpu_fraction, i.memory_gib, i.name))
    lines = []
    for i in slices:
        priced = [p for p in catalog.prices_of(i.cloud, i.name) if p.on_demand]
        best = min(priced, key=lambda p: (p.on_demand, p.region), default=None)
        source = catalog.source_of(best) if best else None
        price = f"{best.on_demand:g} ({best.region})" if best else "-"
        lines.append(f"| {i.cloud} | `{i.name}` | {i.fraction_label} {i.gpu} | {i.gpu_memory_gib} | {i.vcpus} | "
                     f"{i.memory_gib:g} | {price} | {source.date_label if source else '-'} |\n")
    return f"{BEGIN}\n{HEADER}{''.join(lines)}{END}"


def readme_with_table(readme: str, table: str) -> str:
    start, end = readme.index(BEGIN), readme.index(END) + len(END)
    return readme[:start] + table + readme[end:]


if __name__ == "__main__":
    table = vgpu_table()
    if "--write" in sys.argv:
        path = Path(__file__).resolve().parents[2] / "README.md"
        path.write_text(readme_with_table(path.read_text(), table))
    else:
        print(table)
