"""Who holds the GPU's memory when an allocation fails: what the out-of-memory message itself
says (PyTorch's caching allocator prints the GPU's total and free memory, the processes using the
GPU, this process's share and what it reserved but left unallocated) and what the machine's facts
add (a MIG slice, the memory in use when checked).

Pure: the message text and an optional Snapshot in, sentences out. A number the message does not
give is left out, never guessed; with nothing to go on the notes name the command that would tell.
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import List, Optional, Tuple
from cudadoctor.record import frozen

from cudadoctor.model import Snapshot

_UNITS = {"b": 1, "bytes": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
          "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40}
_SIZE = r"(\d+(?:\.\d+)?)\s*(bytes|[KMGT]i?B|B)\b"
_FLAGS = re.IGNORECASE | re.ASCII
# PyTorch >= 2.1: "Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 7.06 MiB is free.
# Process 1234 has 23.63 GiB memory in use. Including non-PyTorch memory, this process has 16.38 GiB memory in use.
# Of the allocated memory 15.81 GiB is allocated by PyTorch, and 123.45 MiB is reserved by PyTorch but unallocated."
_REQUESTED = re.compile(r"Tried to allocate " + _SIZE, _FLAGS)
_TOTAL_NEW = re.compile(r"has a total capac?it?y of " + _SIZE + r" of which " + _SIZE + r" (?:is )?free", _FLAGS)
_PROCESS = re.compile(r"Process (\d+) has " + _SIZE + r" memory in use", _FLAGS)
_THIS = re.compile(r"this process has " + _SIZE + r" memory in use", _FLAGS)
_UNALLOCATED = re.compile(r"and " + _SIZE + r" is reserved by PyTorch but unallocated", _FLAGS)
# PyTorch < 2.1: "(GPU 0; 10.76 GiB total capacity; 9.64 GiB already allocated; 12.44 MiB free; 9.79 GiB reserved
# in total by PyTorch)"
_OLD = re.compile(r"\(GPU \d+; " + _SIZE + r" total capacity; " + _SIZE + r" already allocated; " + _SIZE
                  + r" free; " + _SIZE + r" reserved in total by PyTorch", _FLAGS)
_MIG = re.compile(r"\bMIG-[0-9a-f]{8}-[0-9a-f-]{27}\b|\bMIG \d+g\.\d+gb\b", _FLAGS)
_MAX_TEXT = 1 << 20  # the allocator's message sits near the error: a longer text is cut to its last MiB

COMMAND = "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"


@frozen
class OomFacts:
    """What an out-of-memory message says, in bytes (None: not said)."""

    requested: Optional[int] = None
    total: Optional[int] = None
    free: Optional[int] = None
    this_process: Optional[int] = None
    reserved_unallocated: Optional[int] = None
    processes: Tuple[Tuple[str, int], ...] = field(default_factory=tuple)  # (pid, bytes)
    mig: bool = False  # the text names a MIG device


def _bytes(number: str, unit: str) -> int:
    return int(float(number) * _UNITS[unit.lower()])


def parse(text: str) -> OomFacts:
    """The numbers of an out-of-memory message; any text is accepted."""
    if not isinstance(text, str):
        return OomFacts()
    text = text[-_MAX_TEXT:]
    requested = total = free = this = unallocated = None
    m = _REQUESTED.search(text)
    if m:
        requested = _bytes(m.group(1), m.group(2))
    m = _TOTAL_NEW.search(text)
    if m:
        total, free = _bytes(m.group(1), m.group(2)), _bytes(m.group(3), m.group(4))
    m = _THIS.search(text)
    if m:
        this = _bytes(m.group(1), m.group(2))
    m = _UNALLOCATED.search(text)
    if m:
        unallocated = _bytes(m.group(1), m.group(2))
    m = _OLD.search(text)
    if m:
        total, allocated = _bytes(m.group(1), m.group(2)), _bytes(m.group(3), m.group(4))
        free, reserved = _bytes(m.group(5), m.group(6)), _bytes(m.group(7), m.group(8))
        unallocated = max(reserved - allocated, 0)
        this = reserved
    processes: List[Tuple[str, int]] = []
    for p in _PROCESS.finditer(text):
        if all(pid != p.group(1) for pid, _ in processes):
            processes.append((p.group(1), _bytes(p.group(2), p.group(3))))
    return OomFacts(requested, total, free, this, unallocated, tuple(processes), bool(_MIG.search(text)))


def size(n: int) -> str:
    """1.5 GiB, 300 MiB."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}".replace(".00 ", " ")
    return f"{n} bytes"


def notes(text: str, snapshot: Optional[Snapshot] = None) -> Tuple[str, ...]:
    """Sentences on who holds the memory: other processes, a MIG slice, fragmentation, the
    workload itself; the command that would tell when nothing in the text or the facts does."""
    f = parse(text)
    out: List[str] = []
    if f.processes:
        listed = ", ".join(f"process {pid} {size(n)}" for pid, n in f.processes)
        out.append(f"The message lists the processes using the GPU: {listed}"
                   + (f"; this process has {size(f.this_process)} of it." if f.this_process is not None else "."))
    if f.total is not None and f.free is not None and f.this_process is not None:
        others = f.total - f.free - f.this_process
        if others >= max(1 << 30, f.total // 10):
            out.append(f"About {size(others)} of the GPU's {size(f.total)} is held outside this process "
                       f"(total {size(f.total)} - free {size(f.free)} - this process {size(f.this_process)}): other "
                       f"processes (or leftover ones), or the CUDA contexts of other libraries. Run: {COMMAND}")
        elif f.requested is not None:
            out.append(f"This process holds {size(f.this_process)} of the GPU's {size(f.total)} and asked for "
                       f"{size(f.requested)} more: the workload itself (model, batch, sequence length) fills the memory.")
    if f.reserved_unallocated is not None and f.requested is not None and f.reserved_unallocated >= f.requested:
        out.append(f"Fragmentation: {size(f.reserved_unallocated)} is reserved by PyTorch but unallocated, more than "
                   f"the {size(f.requested)} asked for, yet no block of that size is free. "
                   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets the allocator grow segments instead.")
    out.extend(_machine_notes(f, snapshot))
    if not out:
        out.append(f"The message does not say who holds the memory. Run: {COMMAND}")
    return tuple(out)


def _machine_notes(f: OomFacts, snapshot: Optional[Snapshot]) -> List[str]:
    out: List[str] = []
    gpus = snapshot.gpus if snapshot is not None and snapshot.gpus else ()
    mig = [g for g in gpus if g.mig_mode == "enabled"]
    if mig or f.mig:
        where = ", ".join(f"GPU {g.index}" for g in mig) or "the GPU named in the text"
        slice_ = f" (the message's total, {size(f.total)}, is the slice's)" if f.total is not None else ""
        out.append(f"MIG is enabled on {where}: a process gets one MIG slice's memory, not the whole GPU's{slice_}. "
                   "A larger slice profile (nvidia-smi mig -lgip) or a GPU without MIG gives more.")
    elif f.total is not None:
        sizes = [g.memory_total_mib * (1 << 20) for g in gpus if g.memory_total_mib]
        if sizes and len(sizes) == len(gpus) and min(sizes) > 1.5 * f.total:
            out.append(f"The message's total ({size(f.total)}) is well below the GPU's {size(min(sizes))}: "
                       "the process runs in a slice of it (MIG or vGPU) or under a memory limit.")
    busy = [g for g in gpus if g.memory_used_mib is not None and g.memory_total_mib
            and g.memory_used_mib * 10 >= g.memory_total_mib]
    for g in busy:
        out.append(f"When checked, GPU {g.index} had {g.memory_used_mib} MiB of {g.memory_total_mib} MiB in use. "
                   f"Run: {COMMAND}")
    return out
