"""What explain adds to a matched message: who holds the memory on out of memory (from the
message and the machine's facts), the pip package that ships a library that cannot be loaded
(compat_data/sonames.json), and a container's "no GPUs passed in" ranked before "no driver"."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import cudadoctor
from cudadoctor.diagnosis import memory
from cudadoctor.diagnosis.causes import in_context
from cudadoctor.matrix import Matrix
from cudadoctor.model import Category as C
from cudadoctor.model import Gpu, HostInfo, Snapshot

DATA = Path(__file__).resolve().parents[1] / "compat_data"

# torch >= 2.1 wording, https://github.com/pytorch/pytorch/issues/59778 and the caching allocator's text
NEW = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
       "23.65 GiB of which 7.06 MiB is free. Process 1234 has 7.20 GiB memory in use. Process 5678 has 16.38 GiB "
       "memory in use. Including non-PyTorch memory, this process has 16.38 GiB memory in use. Of the allocated "
       "memory 15.81 GiB is allocated by PyTorch, and 123.45 MiB is reserved by PyTorch but unallocated.")
# torch < 2.1 wording
OLD = ("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 10.76 GiB total capacity; 5.64 GiB "
       "already allocated; 12.44 MiB free; 9.79 GiB reserved in total by PyTorch)")


def notes_of(text: str, snapshot: Snapshot | None = None) -> tuple[str, ...]:
    e = cudadoctor.explain(text, check=False, snapshot=snapshot) if snapshot else cudadoctor.explain(text, check=False)
    return e.matches[0].notes


def test_the_processes_the_message_lists_and_what_others_hold() -> None:
    said = " ".join(notes_of(NEW))
    assert "process 1234 7.20 GiB" in said and "process 5678 16.38 GiB" in said
    assert "About 7.26 GiB of the GPU's 23.65 GiB is held outside this process" in said
    assert "Fragmentation: 123.45 MiB is reserved by PyTorch but unallocated" in said


def test_the_old_wording_shows_fragmentation() -> None:
    f = memory.parse(OLD)
    assert (f.requested, f.reserved_unallocated) == (2 << 30, int(9.79 * (1 << 30)) - int(5.64 * (1 << 30)))
    assert any(n.startswith("Fragmentation: 4.15 GiB") for n in notes_of(OLD))


def test_the_workload_itself_when_nothing_else_holds_memory() -> None:
    text = ("CUDA out of memory. Tried to allocate 1.70 GiB. GPU 0 has a total capacity of 6.00 GiB of which 0 bytes "
            "is free. Including non-PyTorch memory, this process has 5.80 GiB memory in use.")
    said = notes_of(text)
    assert said == ("This process holds 5.80 GiB of the GPU's 6 GiB and asked for 1.70 GiB more: the workload itself "
                    "(model, batch, sequence length) fills the memory.",)


def test_a_bare_message_names_the_command_that_tells() -> None:
    assert notes_of("RuntimeError: CUDA error: out of memory") == (
        f"The message does not say who holds the memory. Run: {memory.COMMAND}",)


def test_the_facts_add_a_mig_slice_and_memory_in_use() -> None:
    gpus = (Gpu(index=0, name="NVIDIA A100-SXM4-80GB", memory_total_mib=81920, memory_used_mib=40000, mig_mode="enabled"),)
    snap = Snapshot(gpus=gpus)
    text = "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 9.50 GiB of which 1.00 GiB is free."
    said = " ".join(notes_of(text, snap))
    assert "MIG is enabled on GPU 0: a process gets one MIG slice's memory" in said
    assert "(the message's total, 9.50 GiB, is the slice's)" in said
    assert "When checked, GPU 0 had 40000 MiB of 81920 MiB in use" in said


def test_a_total_well_below_the_gpus_memory_is_a_slice_or_a_limit() -> None:
    snap = Snapshot(gpus=(Gpu(index=0, memory_total_mib=81920, mig_mode="disabled"),))
    text = "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 19.50 GiB of which 1.00 GiB is free."
    assert any("well below the GPU's 80 GiB" in n for n in notes_of(text, snap))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=400))
def test_any_text_is_parsed_without_an_exception(text: str) -> None:
    memory.notes("CUDA out of memory. " + text)
    memory.parse(text)


def test_a_library_that_cannot_be_loaded_names_its_package() -> None:
    said = notes_of("ImportError: libcudart.so.12: cannot open shared object file: No such file or directory")
    assert said == ("libcudart.so.12 is shipped by the pip package nvidia-cuda-runtime-cu12 (CUDA 12): "
                    "pip list | grep nvidia-cuda-runtime-cu12",)
    both = notes_of("OSError: libcurand.so.10: cannot open shared object file: No such file or directory")
    assert both == ("libcurand.so.10 is shipped by the pip package nvidia-curand-cu12 (CUDA 12); nvidia-curand "
                    "(CUDA 13): pip list | grep nvidia-curand-cu12",)
    assert notes_of("ImportError: libcudart.so.9.0: cannot open shared object file") == ()  # not in the data


def test_the_soname_table_is_sorted_and_sourced() -> None:
    data = Matrix(str(DATA)).signatures
    assert data.shipped_by("C:\\x\\cudnn64_9.dll")[0].pip == "nvidia-cudnn-cu12"
    assert [s.pip for s in data.shipped_by("libcudnn.so.9")] == ["nvidia-cudnn-cu12", "nvidia-cudnn-cu13"]
    assert all(s.source and s.confidence == "primary" for s in data.sonames)


def test_in_a_container_no_gpus_passed_in_comes_before_no_driver() -> None:
    cats = (C.NO_DRIVER, C.CONTAINER_NO_GPU, C.NO_GPU)
    inside = Snapshot(host=HostInfo(container="docker"))
    assert in_context(cats, inside) == [C.CONTAINER_NO_GPU, C.NO_DRIVER, C.NO_GPU]
    assert in_context(cats, replace(inside, host=HostInfo(container="none"))) == list(cats)
    assert in_context(cats, None) == list(cats)
    e = cudadoctor.explain("bash: nvidia-smi: command not found", check=False, snapshot=inside)
    assert e.matches[0].causes[0].category is C.CONTAINER_NO_GPU
