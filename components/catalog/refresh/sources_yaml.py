"""Records a refreshed source and its date under `sources:` in prices.yaml, keeping the file's comments."""

from __future__ import annotations

from datetime import date


def set_source(text: str, key: str, description: str, day: date) -> str:
    block = [f"  {key}:", f"    source: \"{description}\"", f"    snapshot_date: {day.isoformat()}"]
    lines = text.rstrip("\n").split("\n")
    if "sources:" not in lines:
        return "\n".join([*lines, "sources:", *block]) + "\n"
    start = lines.index("sources:") + 1
    end = start
    while end < len(lines) and (lines[end].startswith("  ") or not lines[end].strip()):
        end += 1
    entries = lines[start:end]
    if f"  {key}:" in entries:
        first = entries.index(f"  {key}:")
        last = first + 1
        while last < len(entries) and entries[last].startswith("    "):
            last += 1
        entries[first:last] = block
    else:
        entries += block
    return "\n".join([*lines[:start], *entries, *lines[end:]]) + "\n"
