"""The objects of text intake: a fact read, a block found, what was read (Intake), and the
collector the readers write to (Found)."""


from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Set, Tuple
from cudadoctor.record import frozen

from cudadoctor.model import Gpu, Snapshot

if TYPE_CHECKING:
    pass

# The kinds of block read, in the words the output uses (docs/pasted-reports.md lists them).
BLOCK_NAMES: Dict[str, str] = {
    "collect_env": "python -m torch.utils.collect_env",
    "nvidia_smi": "nvidia-smi",
    "nvidia_smi_q": "nvidia-smi -q",
    "nvidia_smi_l": "nvidia-smi -L",
    "nvidia_smi_error": "nvidia-smi's failure message",
    "proc_version": "/proc/driver/nvidia/version",
    "pip_list": "pip list",
    "pip_freeze": "pip freeze",
    "conda_list": "conda list",
    "nvcc": "nvcc --version",
    "gcc": "gcc --version",
    "tf_build_info": "tf.sysconfig.get_build_info()",
    "tf_log": "TensorFlow's log",
    "jax_env": "jax.print_environment_info()",
    "cupy_config": "cupy.show_config()",
    "ldd": "ldd",
    "ldconfig": "ldconfig -p",
    "kernel_log": "dmesg / journalctl",
    "lspci": "lspci",
    "modprobe": "modprobe / DKMS / mokutil",
    "docker_run": "docker run",
    "os_release": "/etc/os-release",
    "uname": "uname -a",
    "environment": "environment variables",
    "platform": "paths and prompts",
    "traceback": "a Python traceback",
    "log": "log lines",
    "error": "error lines",
}


# Facts read for context: shown, and weighed when causes are ranked, but not of the facts
# vocabulary of a Snapshot (docs/pasted-reports.md says what each means).
CONTEXT_KEYS = frozenset({
    "rocm", "wsl1", "mig", "gpu_process", "gpu_memory", "nvidia_smi_missing", "jax_devices",
    "cupy_version", "cupy_cuda_build", "missing_library", "xid", "kernel_module_missing", "dkms_failed",
    "docker_gpus", "daemon_reload", "windows_build", "tf_built_with_cuda", "cuda_libraries",
    "pip_install", "exception", "command", "dkms_driver", "l4t_release", "base_image", "crash",
    "pci_display_other",
})


# Of a longer text, the readers that search for words read its first MiB and its last 2 MiB
LOG_ENDS = (1 << 20, 2 << 20)

# Blocks printed by nvidia-smi: a driver version read there is the driver answering
SMI_BLOCKS = frozenset({"nvidia_smi", "nvidia_smi_q", "nvidia_smi_l"})


@frozen
class Fact:
    """One fact read from the text: its key (docs/facts.md), its value, and where it was read."""

    key: str
    value: Any
    line: int  # 1-based line number in the text as given
    text: str  # that line, as it was (renderers escape it)
    block: str  # the kind of block (BLOCK_NAMES)


@frozen
class Block:
    """A block of known output found in the text, first and last line (1-based, inclusive)."""

    kind: str
    start: int
    end: int


@frozen
class Intake:
    """What was read from a text: the blocks found, the facts (in the order read), the notes on
    what was ambiguous, and the text the error signatures are matched in (Markdown removed,
    line numbers kept)."""

    blocks: Tuple[Block, ...]
    facts: Tuple[Fact, ...]
    notes: Tuple[str, ...]
    text: str
    gpus: Tuple[Tuple[int, str, Optional[str]], ...] = ()  # (line, name, compute capability) per GPU seen
    errors: Tuple[Fact, ...] = ()  # the error lines the signatures matched, with their line

    def context(self, key: str) -> Any:
        """The value of a context fact (CONTEXT_KEYS), or None when it was not read."""
        fact = self._chosen.get(key)
        return fact.value if fact else None

    def chosen(self) -> Dict[str, Fact]:
        """Each key's fact: the first read, unless a later one says the same more precisely
        ('2.5.1+cu124' after '2.5.1'); pip_packages are gathered in :meth:`facts_document`."""
        return dict(self._chosen)

    @functools.cached_property
    def _chosen(self) -> Dict[str, Fact]:
        out: Dict[str, Fact] = {}
        for f in self.facts:
            if f.key == "pip_packages":
                continue
            old = out.get(f.key)
            if old is None or refines(f.value, old.value):
                out[f.key] = f
        return out

    def facts_document(self) -> Dict[str, Any]:
        """The facts as the flat document of docs/facts.md (what ``diagnose --facts`` reads)."""
        doc: Dict[str, Any] = {k: f.value for k, f in self._chosen.items() if k not in CONTEXT_KEYS}
        packages: Dict[str, str] = {}
        for f in self.facts:
            if f.key == "pip_packages":
                name = f.value.partition("==")[0]
                packages.setdefault(name, f.value)
        if packages:
            doc["pip_packages"] = list(packages.values())
        return doc

    @property
    def usable(self) -> bool:
        """Whether anything was read that a check can judge: a fact or a known error line."""
        return bool(self.facts or self.errors or self.blocks)

    def snapshot(self) -> Snapshot:
        """The partial Snapshot of the machine the text describes (every GPU seen, by name)."""
        from cudadoctor.model.facts import FactsError, snapshot_from_facts

        doc = self.facts_document()
        while True:  # each round leaves out a key, or ends
            try:
                snap = snapshot_from_facts(doc)
                break
            except FactsError as exc:  # a value read that no fact can hold: left out, not a failure
                key = str(exc).split(":", 1)[0].split("[", 1)[0]
                if key not in doc:
                    raise
                del doc[key]
        if self.errors:
            snap = replace(snap, error_message=self.text)
        named = [g for g in self.gpus if not truncated(g[1])]
        if len({g[1] for g in named}) > 1 and "gpu_count" not in doc:
            gpus = tuple(Gpu(index=i, name=name, compute_capability=cc, source="facts")
                         for i, (_, name, cc) in enumerate(named))
            snap = replace(snap, gpus=gpus, gpus_source="facts")
        chosen = self._chosen
        driver = chosen.get("driver_version")
        if snap.driver is not None and driver is not None and driver.block in SMI_BLOCKS:
            # nvidia-smi printed it: the driver answered (what NVML or nvidia-smi would say on the machine)
            snap = replace(snap, driver=replace(snap.driver, source="nvidia-smi",
                                                loaded=True if snap.driver.loaded is None else snap.driver.loaded))
        gpu = chosen.get("gpu_name")
        if snap.gpus and gpu is not None and gpu.block in SMI_BLOCKS:
            snap = replace(snap, gpus=tuple(replace(g, source="nvidia-smi") for g in snap.gpus), gpus_source="nvidia-smi")
        if snap.gpus and (self.context("mig") or self.context("gpu_memory")):
            memory = str(self.context("gpu_memory") or "")
            used, _, total = memory.replace("MiB", "").partition("/")
            first = replace(snap.gpus[0], mig_mode="enabled" if self.context("mig") else None,
                            memory_used_mib=int(used) if used.strip().isdigit() else None,
                            memory_total_mib=int(total) if total.strip().isdigit() else None)
            snap = replace(snap, gpus=(first,) + snap.gpus[1:])
        return snap


def truncated(name: str) -> bool:
    """A GPU name nvidia-smi cut to fit its column: 'NVIDIA GeForce ...'."""
    return name.endswith(("...", "\u2026"))


def refines(new: Any, old: Any) -> bool:
    return (isinstance(new, str) and isinstance(old, str) and len(new) > len(old)
            and new.startswith(old) and not new[len(old)].isdigit())


@dataclass
class Found:
    """What the readers collect while reading (the builder of an :class:`Intake`)."""

    lines: List[str]
    facts: List[Fact] = field(default_factory=list)
    blocks: List[Block] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    gpus: List[Tuple[int, str, Optional[str]]] = field(default_factory=list)
    _joined: Optional[str] = field(default=None, repr=False)
    _starts: List[int] = field(default_factory=list, repr=False)

    def lines_with(self, *words: str, ends: Optional[Tuple[int, int]] = None) -> List[int]:
        """The 0-based numbers of the lines holding any of ``words`` (case-sensitive), in order:
        found with str.find over the whole text, so that a reader of a few kinds of line does not
        look at each of a long log's lines in Python. ``ends`` (head, tail): in a longer text,
        only its first ``head`` and last ``tail`` characters are searched (by default 1 MiB and
        2 MiB: the output people paste sits at a log's start, its error at its end)."""
        if self._joined is None:
            self._joined = "\n".join(self.lines)
            starts, at = [], 0
            for text_line in self.lines:
                starts.append(at)
                at += len(text_line) + 1
            self._starts = starts
        text, starts = self._joined, self._starts
        spans = [(0, len(text))]
        ends = ends or LOG_ENDS
        if len(text) > ends[0] + ends[1]:
            spans = [(0, ends[0]), (len(text) - ends[1], len(text))]
        hits: Set[int] = set()
        for begin, end in spans:
            for word in words:
                at = text.find(word, begin, end)
                while at >= 0:
                    n = bisect.bisect_right(starts, at) - 1
                    hits.add(n)
                    # go on from the next line: one hit a line is enough
                    at = text.find(word, starts[n + 1], end) if n + 1 < len(starts) else -1
        return sorted(hits)

    def fact(self, key: str, value: Any, line: int, block: str) -> None:
        """Record ``key = value`` read at 0-based ``line``."""
        self.facts.append(Fact(key, value, line + 1, self.lines[line] if 0 <= line < len(self.lines) else "", block))

    def block(self, kind: str, start: int, end: int) -> None:
        """Record a block on 0-based lines ``start``..``end`` (inclusive)."""
        self.blocks.append(Block(kind, start + 1, end + 1))

    def gpu(self, name: str, line: int, block: str, cc: Optional[str] = None, count: int = 1) -> None:
        """``count`` GPUs named at ``line`` (a list names each device once: the count follows)."""
        name = " ".join(name.split())
        if name and name not in ("N/A", "No CUDA") and not any(g[:2] == (line + 1, name) for g in self.gpus):
            self.gpus.extend([(line + 1, name, cc)] * max(1, min(count, 256)))
