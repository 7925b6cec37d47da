"""Reading a text: every reader in turn, then the GPU facts, the error lines and the notes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Tuple

from cudadoctor.diagnosis.intake.model import Block, Fact, Found, Intake, refines, truncated

if TYPE_CHECKING:
    from cudadoctor.matrix import Matrix


LOGGED_HEAD = 1 << 20  # where lines with a logger's prefix are looked for when nothing else was read
MAX_LOGGED = 1000


def read_text(text: str, matrix: "Matrix") -> Intake:
    """Read every known block of ``text`` into facts (see the module's docs). Never raises."""
    from cudadoctor.diagnosis.intake.clean import lines_of, logged_lines
    from cudadoctor.diagnosis.intake.readers import READERS

    lines = lines_of(text)
    found = Found(lines)
    for reader in READERS:
        reader(found)
    if not found.blocks:  # lines a logger wrote (its prefix made plain above) are a log
        for i in logged_lines(text[:LOGGED_HEAD], lines)[:MAX_LOGGED]:
            found.block("log", i, i)
    _gpu_facts(found, matrix)
    joined = "\n".join(lines)
    errors = _error_lines(found, matrix, joined)
    notes = list(found.notes) + _conflicts(found.facts)
    blocks = _merged(found.blocks + [Block("error", e.line, e.line) for e in errors])
    return Intake(tuple(blocks), tuple(found.facts), tuple(dict.fromkeys(notes)), joined,
                  tuple(found.gpus), tuple(errors))


def _gpu_facts(found: Found, matrix: "Matrix") -> None:
    """The GPU facts: the first name the data knows (a truncated 'NVIDIA GeForce ...' is passed
    over), its count when one list gives several; a name the data cannot place is a note."""
    seen: Dict[str, Tuple[int, Optional[str]]] = {}
    where_cc: Dict[str, int] = {}  # the line that gave a name's compute capability
    for line, name, cc in sorted(found.gpus, key=lambda g: g[0]):
        if truncated(name):
            continue
        first = seen.setdefault(name, (line, cc))
        if cc and name not in where_cc:
            where_cc[name] = line
            seen[name] = (first[0], cc)
    unknown = []
    for name in seen:
        model, _ = matrix.gpus.resolve(name)
        if model is None and seen[name][1] is None:
            unknown.append(name)
    if unknown:
        found.notes.append("GPU named but not in the data (its compute capability is not known): "
                           + ", ".join(repr(n) for n in unknown[:3]))
    names = list(seen)
    if names:
        line, cc = seen[names[0]]
        found.fact("gpu_name", names[0], line - 1, _block_at(found, line))
        if cc:
            at = where_cc.get(names[0], line)
            found.fact("compute_capability", cc, at - 1, _block_at(found, at))
    # one GPU entry per device in each list; the biggest list gives the count
    by_block: Dict[str, int] = {}
    for line, _, _ in found.gpus:
        kind = _block_at(found, line)
        by_block[kind] = by_block.get(kind, 0) + 1
    if len(found.gpus) > 1 and len(set(n for _, n, _ in found.gpus if not n.endswith("..."))) == 1:
        count = max(by_block.values())
        if count > 1:
            found.fact("gpu_count", count, found.gpus[0][0] - 1, _block_at(found, found.gpus[0][0]))


def _block_at(found: Found, line: int) -> str:
    for b in found.blocks:
        if b.start <= line <= b.end:
            return b.kind
    return "platform"


def _error_lines(found: Found, matrix: "Matrix", joined: str) -> List[Fact]:
    out = []
    from cudadoctor.diagnosis.matching import match

    for m in match(joined, matrix, clean=False):
        n = m.line_number
        text = found.lines[n - 1] if 0 < n <= len(found.lines) else m.line
        out.append(Fact("error", m.signature.id, n, text, "error"))
    return out


def _conflicts(facts: Iterable[Fact]) -> List[str]:
    """'driver_version: 535.104.05 (line 12) or 550.54.15 (line 80)' for a key read with two values."""
    first: Dict[str, Fact] = {}
    out = []
    for f in facts:
        if f.key in ("pip_packages", "gpu_name", "gpu_count"):
            continue
        old = first.get(f.key)
        if old is None:
            first[f.key] = f
        elif old.value != f.value and not refines(f.value, old.value) and not refines(old.value, f.value):
            out.append(f"{f.key}: {old.value!s:.40} (line {old.line}) or {f.value!s:.40} (line {f.line}); "
                       f"the first is used")
    return out


def _merged(blocks: List[Block]) -> List[Block]:
    """Blocks in line order, neighbours of one kind joined."""
    out: List[Block] = []
    for b in sorted(blocks, key=lambda b: (b.start, b.end)):
        if out and out[-1].kind == b.kind and b.start <= out[-1].end + 2:
            out[-1] = Block(b.kind, out[-1].start, max(out[-1].end, b.end))
        else:
            out.append(b)
    return out
