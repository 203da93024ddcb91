"""What the TensorRT builder and engine say about themselves, read from their text: which
layers the builder placed on the DLA and which on the GPU (its INFO log), and the engine
inspector's summary. Pure functions on strings, tested on recorded output."""
from __future__ import annotations

import collections
import json
import re
from typing import Any
from collections.abc import Iterable

from .plan import LIST_CAP


_HEADER = re.compile(r"-{3,}\s*Layers\s+Running\s+on\s+(DLA|GPU)\s*:?\s*-*", re.IGNORECASE)
_ENTRY = re.compile(r"^\s*\[(?:Dla|Gpu)Layer\]\s*(.+?)\s*$")


def parse_layer_placement(messages: Iterable[str]) -> dict | None:
    """Which layers the builder put on the DLA and which on the GPU, from its INFO log:
    ``---------- Layers Running on DLA ----------`` followed by ``[DlaLayer] {ForeignNode[..]}``
    lines, then the GPU section with ``[GpuLayer] ...`` lines (TensorRT 8.2+, one message a
    line); older releases print ``--------------- Layers running on DLA:`` and the layers as
    one comma-separated message. None when the log has no such section."""
    found: dict[str, list[str]] = {}
    section: str | None = None
    for msg in messages:
        for line in str(msg).splitlines():
            m = _HEADER.search(line)
            if m:
                section = m.group(1).upper()
                found.setdefault(section, [])
                continue
            if section is None or not line.strip():
                continue
            e = _ENTRY.match(line)
            if e:                                   # 8.2+: one "[DlaLayer] name" a message
                found[section].append(e.group(1))
                continue
            if not found[section] and "," in line:  # older: the whole list in one message
                found[section].extend(x.strip() for x in line.split(",") if x.strip())
            section = None                          # anything else ends the section
    if not found:
        return None
    out: dict[str, Any] = {}
    for dev in ("DLA", "GPU"):
        names = list(dict.fromkeys(found.get(dev, [])))    # a profile may repeat them
        out[dev.lower() + "_layers"] = len(names)
        out[dev.lower()] = names[:LIST_CAP]
    return out


def summarize_engine_information(text: str) -> dict:
    """A short summary of ``EngineInspector.get_engine_information(LayerInformationFormat.JSON)``:
    the engine's layer count and, with ProfilingVerbosity.DETAILED, the count per LayerType."""
    info = json.loads(text)
    layers = info.get("Layers", []) if isinstance(info, dict) else []
    types = collections.Counter(str(layer.get("LayerType", "?")) for layer in layers
                                if isinstance(layer, dict))
    out: dict[str, Any] = {"layers": len(layers)}
    if types:
        out["layer_types"] = dict(types.most_common())
    return out
