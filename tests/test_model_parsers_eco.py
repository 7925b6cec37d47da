"""The Jetson and torch-extension parsers (cudadoctor/model/parsers_eco.py): real inputs, and
Hypothesis fuzzing (each parser is total: any text gives a value, never an exception)."""

from __future__ import annotations

import inspect
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from cudadoctor.model import parsers_eco as p

FUZZ = settings(deadline=timedelta(seconds=1), max_examples=150)
any_text = st.text(alphabet=st.characters(blacklist_categories=()), max_size=300)

# Real files, as public reports quote them (tests/machines/jetson-*/README.md names the sources).
ORIN = ("# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 UTC 2025\n"
        "# KERNEL_VARIANT: oot\nTARGET_USERSPACE_LIB_DIR=nvidia\nTARGET_USERSPACE_LIB_DIR_PATH=usr/lib/aarch64-linux-gnu/nvidia\n")
THOR = ("# R38 (release), REVISION: 2.0, GCID: 41844464, BOARD: generic, EABI: aarch64, DATE: Fri Aug 22 00:55:42 UTC 2025\n"
        "# KERNEL_VARIANT: oot\nTARGET_USERSPACE_LIB_DIR=nvidia\nINSTALL_TYPE=\n")
NANO = "# R32 (release), REVISION: 7.1, GCID: 29689809, BOARD: t186ref, EABI: aarch64, DATE: Wed Feb  2 21:33:23 UTC 2022"


def test_nv_tegra_release() -> None:
    assert p.parse_nv_tegra_release(ORIN) == {"l4t": "36.4.3", "board": "generic", "gcid": "38968081"}
    assert p.parse_nv_tegra_release(THOR)["l4t"] == "38.2.0"
    assert p.parse_nv_tegra_release(NANO)["board"] == "t186ref"
    assert p.parse_nv_tegra_release("# R35 (release), REVISION: 4") == {"l4t": "35.4.0"}
    assert p.parse_nv_tegra_release("") == {}
    assert p.parse_nv_tegra_release("R36 release 4.3") == {}


def test_dpkg_query() -> None:
    out = "nvidia-jetpack\t6.2+b77\nnvidia-l4t-core\t36.4.3-20250107174145\n"
    assert p.parse_dpkg_query_w(out) == {"nvidia-jetpack": "6.2+b77", "nvidia-l4t-core": "36.4.3-20250107174145"}
    assert p.parse_dpkg_query_w("nvidia-jetpack\t\nnvidia-l4t-core:arm64\t38.2.0-1\n") == {"nvidia-l4t-core": "38.2.0-1"}
    assert p.parse_dpkg_query_w("dpkg-query: no packages found matching nvidia-jetpack\n") == {}


def test_l4t_package_and_device_tree() -> None:
    assert p.parse_l4t_package_version("36.4.3-20250107174145") == "36.4.3"
    assert p.parse_l4t_package_version("38.2.0") == "38.2.0"
    assert p.parse_l4t_package_version("b77") is None
    assert p.parse_device_tree_strings("nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0") == [
        "nvidia,p3737-0000+p3701-0005", "nvidia,p3701-0005", "nvidia,tegra234"]
    assert p.parse_device_tree_strings("NVIDIA Jetson AGX Orin Developer Kit\0") == ["NVIDIA Jetson AGX Orin Developer Kit"]


def test_flash_attn_local() -> None:
    assert p.parse_flash_attn_local("2.8.3+cu12torch2.8cxx11abiTRUE") == {"cuda_major": "12", "torch": "2.8", "cxx11abi": "true"}
    assert p.parse_flash_attn_local("2.5.8+cu118torch2.3cxx11abiFALSE")["cuda_major"] == "11"
    assert p.parse_flash_attn_local("2.8.3") == {}
    assert p.parse_flash_attn_local("2.8.3+cu12torch2.8") == {}


PUBLIC = {name for name, fn in inspect.getmembers(p, inspect.isfunction)
          if fn.__module__ == p.__name__ and not name.startswith("_")}


def test_every_parser_is_fuzzed() -> None:
    assert PUBLIC == {"parse_nv_tegra_release", "parse_dpkg_query_w", "parse_device_tree_strings",
                      "parse_l4t_package_version", "parse_flash_attn_local"}


near_release = st.builds(
    lambda r, rev, tail: f"# R{r} (release), REVISION: {rev}, {tail}",
    st.text(alphabet="0123456789", min_size=1, max_size=30), st.from_regex(r"[\d.]{0,12}", fullmatch=True), any_text)


@FUZZ
@given(st.one_of(any_text, near_release))
def test_fuzz_nv_tegra_release(text: str) -> None:
    out = p.parse_nv_tegra_release(text)
    assert isinstance(out, dict) and all(isinstance(v, str) for v in out.values())


@FUZZ
@given(st.one_of(any_text, st.lists(st.tuples(any_text, any_text)).map(lambda rows: "\n".join(f"{a}\t{b}" for a, b in rows))))
def test_fuzz_dpkg_query(text: str) -> None:
    out = p.parse_dpkg_query_w(text)
    assert isinstance(out, dict)


@FUZZ
@given(any_text)
def test_fuzz_small_parsers(text: str) -> None:
    assert isinstance(p.parse_device_tree_strings(text), list)
    assert p.parse_l4t_package_version(text) is None or isinstance(p.parse_l4t_package_version(text), str)
    assert isinstance(p.parse_flash_attn_local(text), dict)
    assert isinstance(p.parse_flash_attn_local("2.8.3+" + text), dict)


def test_hostile_inputs_are_fast() -> None:
    import time

    start = time.monotonic()
    for text in ("# R" + "9" * 5000 + " (release), REVISION: " + "1." * 50_000, "\t" * 200_000, "\0" * 200_000,
                 "1+cu" + "1" * 100_000 + "torch2.8cxx11abiTRUE"):
        p.parse_nv_tegra_release(text), p.parse_dpkg_query_w(text), p.parse_device_tree_strings(text)
        p.parse_l4t_package_version(text), p.parse_flash_attn_local(text)
    assert time.monotonic() - start < 10
