"""The one resolver of GPU names as people write them, for facts, pasted text and ``--gpu``:
NVML's name ('NVIDIA GeForce RTX 5090'), without vendor or brand words ('RTX 5090'), short forms
('5090', 'rtx5090'), with memory, form factor or laptop words ('A100 80GB', 'Tesla V100-SXM2-16GB',
'RTX 4090 Laptop GPU', 'GTX 1080 Max-Q') and PCI device ids ('0x2684', '10de:2684'). Part of
:mod:`.gpus` (``GpuData.resolve``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterator, List, Optional, Tuple

from cudadoctor.matrix._gpus_normalize import normalize_pci_id

if TYPE_CHECKING:
    from cudadoctor.matrix.gpus import GpuData, GpuModel

# Words that tell parts of one model apart but not their architecture: memory size, form factor,
# power, laptop parts. Left out when the full name does not match.
_NOISE = re.compile(r"\b(\d+\s?[gt]b|pcie|sxm\d?|nvl\d*|hbm\d?e?|\d+\s?w|with|max-?q|design|laptop|mobile|"
                    r"notebook|gpu|graphics|edition|max[- ]?q)\b", re.IGNORECASE)
# A PCI device id as people write one: '0x2684', '10de:2684', or hex with a letter ('26b1'); four
# decimal digits ('5090', '1080') are a model number.
_PCI_ID = re.compile(r"0x[0-9a-fA-F]{4}|[0-9a-fA-F]{4}:[0-9a-fA-F]{4}|(?=[0-9]*[a-fA-F])[0-9a-fA-F]{4}")
_BRANDS = ("", "NVIDIA ", "NVIDIA GeForce ", "GeForce ", "Tesla ", "Quadro ", "NVIDIA RTX ")
_MAX_LENGTH = 200


def resolve(data: "GpuData", name: str) -> "Tuple[Optional[GpuModel], Tuple[GpuModel, ...]]":
    """(the GPU ``name`` stands for, ()) or (None, the GPUs it could be: several of different
    compute capability, or none)."""
    if not isinstance(name, str) or not name.strip() or len(name) > _MAX_LENGTH:
        return None, ()
    if _PCI_ID.fullmatch(name.strip()) and normalize_pci_id(name) is not None:
        by_id = data.by_pci_id(name, include_unconfirmed=True)
        if by_id is not None:  # else it may be a name that looks like hex ('A100')
            return by_id, ()
    for variant in _variants(name):
        found = data.by_name(variant)
        if found is not None:
            return found, ()
    runs = [w for w in (_words(_plain(name)), _words(_plain(name, spaced=False))) if w]
    if not runs:
        return None, ()
    hits = [g for g in data.models
            if any(_contains(_words(n), words) for n in (g.name, *g.aliases) for words in runs)]
    if len({g.compute_capability for g in hits}) == 1:
        return hits[0], ()
    return None, tuple(hits)


def _variants(name: str) -> Iterator[str]:
    text = " ".join(name.split())
    spaced = _spaced(text)
    for form in dict.fromkeys((text, spaced, " ".join(_plain(text).split()))):
        for brand in _BRANDS:
            yield brand + form


def _spaced(text: str) -> str:
    """'rtx5090' -> 'rtx 5090', 'RTX4090' -> 'RTX 4090' (letters then digits), 'V100-SXM2' as is."""
    return re.sub(r"(?<=[A-Za-z]{2})(?=\d)", " ", text)


def _plain(text: str, spaced: bool = True) -> str:
    """The name without the words of :data:`_NOISE`; ``spaced``: letters and digits apart."""
    text = _spaced(text) if spaced else text
    return _NOISE.sub(" ", _NOISE.sub(" ", text).replace("-", " "))


def _words(text: str) -> List[str]:
    return [w for w in re.split(r"[\s\-_/()]+", text.casefold()) if w and w != "nvidia"]


def _contains(words: List[str], run: List[str]) -> bool:
    return any(words[i:i + len(run)] == run for i in range(len(words) - len(run) + 1))
