"""Normalisation of the ways tools write a GPU's identity: PCI device and subsystem ids (NVML's
combined hex, lspci's 'vendor:device', bare hex), compute capabilities ('9.0', 'sm_90a', '120')
and the names NVML reports. Part of :mod:`.gpus`, which re-exports the public functions.
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

NVIDIA_VENDOR = "10de"

_HEX4 = re.compile(r"[0-9a-f]{4}")
_HEX8 = re.compile(r"[0-9a-f]{8}")
_SPACES = re.compile(r"\s+")
_CC_DOTTED = re.compile(r"(\d{1,2})\.(\d)")
_CC_SM = re.compile(r"(?:sm|compute|arch=compute)_?(\d{2,3})[a-z]?")
_CC_BARE = re.compile(r"(\d{2,3})")


def normalize_pci_id(value: object) -> Optional[str]:
    """A PCI device id as '0x2330', from '0x2330', '2330', NVML's combined '0x233010DE'
    (device << 16 | vendor) or lspci's '10de:2330'. None for anything else."""
    parts = _pci_parts(value)
    if parts is None:
        return None
    vendor, text = parts
    if vendor is not None:
        return "0x" + text if vendor == NVIDIA_VENDOR and _HEX4.fullmatch(text) else None
    if _HEX4.fullmatch(text):
        return "0x" + text
    if _HEX8.fullmatch(text):
        high, low = text[:4], text[4:]
        if low == NVIDIA_VENDOR:
            return "0x" + high
        if high == NVIDIA_VENDOR:
            return "0x" + low
    return None


def normalize_subsystem_id(value: object) -> Optional[Tuple[str, str]]:
    """(subsystem vendor, subsystem device) from NVML's pciSubSystemId '0x16C010DE'
    (device << 16 | vendor) or lspci's 'vendor:device' '10de:16c0'."""
    parts = _pci_parts(value)
    if parts is None:
        return None
    vendor, text = parts
    if vendor is not None:
        return ("0x" + vendor, "0x" + text) if _HEX4.fullmatch(vendor) and _HEX4.fullmatch(text) else None
    if _HEX8.fullmatch(text):
        return ("0x" + text[4:], "0x" + text[:4])
    return None


def normalize_compute_capability(value: object) -> Optional[str]:
    """'9.0' from '9.0', '9.0a', 'sm_90', 'sm_90a', 'compute_90', '90'; '12.0' from 'sm_120'."""
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    m = _CC_DOTTED.fullmatch(text.rstrip("af"))
    if m:
        return f"{int(m.group(1))}.{m.group(2)}"
    m = _CC_SM.fullmatch(text) or _CC_BARE.fullmatch(text)
    if m:
        digits = m.group(1)
        return f"{int(digits[:-1])}.{digits[-1]}"
    return None


def normalize_name(name: str) -> str:
    return _SPACES.sub(" ", name.strip()).casefold()


def without_prefix(key: str) -> str:
    """A normalised name without NVML's 'nvidia ' prefix."""
    return key[len("nvidia "):] if key.startswith("nvidia ") else key


def _strip0x(text: str) -> str:
    return text[2:] if text.startswith("0x") else text


def _pci_parts(value: object) -> Optional[Tuple[Optional[str], str]]:
    """A PCI id in lower case without brackets or '0x', split at lspci's ':' into (vendor, device),
    else (None, the id). None for what is not a string."""
    if not isinstance(value, str):
        return None
    text = value.strip().strip("[]").lower()
    if ":" in text:
        vendor, _, device = text.partition(":")
        return _strip0x(vendor), _strip0x(device)
    return None, _strip0x(text)
