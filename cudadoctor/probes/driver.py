"""The NVIDIA driver and the GPUs: NVML first, the kernel module's /proc and /sys files, the
device nodes, and ``nvidia-smi`` as the fallback when NVML cannot answer."""

from __future__ import annotations

import math
import re
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from cudadoctor.host import read_text, try_read_text
from cudadoctor.model import DriverInfo, ErrorKind, Gpu, ProbeError
from cudadoctor.host.nvml import (
    DRIVER_NOT_LOADED,
    LIBRARY_NOT_FOUND,
    NO_PERMISSION,
    NOT_SUPPORTED,
    PYNVML_MISSING,
    NvmlError,
    nvml_error_text,
)
from cudadoctor.model.parsers import (
    cuda_version_from_int,
    parse_smi_cuda_version,
    parse_nvidia_smi_csv,
    parse_proc_driver_version,
)
from cudadoctor.probes.context import ProbeOutput
from cudadoctor.probes.context import Context

# NVML error -> how a probe error is classified.
_NVML_KIND = {
    LIBRARY_NOT_FOUND: ErrorKind.NOT_INSTALLED,
    PYNVML_MISSING: ErrorKind.NOT_INSTALLED,
    DRIVER_NOT_LOADED: ErrorKind.NOT_INSTALLED,
    NO_PERMISSION: ErrorKind.PERMISSION,
    NOT_SUPPORTED: ErrorKind.NOT_SUPPORTED,
    "NVML_ERROR_TIMEOUT": ErrorKind.TIMEOUT,
}
PROC_VERSION = "/proc/driver/nvidia/version"

NVML_TIMEOUT = "NVML_ERROR_TIMEOUT"


def _nvml_init(ctx: Context) -> Optional[NvmlError]:
    """Initialise NVML, bounded: nvmlInit can hang on a wedged GPU or driver. It gets two
    command timeouts (it is slow on many GPUs without persistence mode), which leaves the
    probe time for its nvidia-smi fallback within the probe deadline."""

    def compute() -> Optional[NvmlError]:
        outcome: List[Optional[NvmlError]] = []

        def init() -> None:
            try:
                ctx.host.nvml().init()
                outcome.append(None)
            except NvmlError as exc:
                outcome.append(exc)
            except Exception as exc:  # a broken binding must not look like a hang
                outcome.append(NvmlError("NVML_ERROR_UNKNOWN", f"{type(exc).__name__}: {exc}"))

        limit = 2 * ctx.timeout
        thread = threading.Thread(target=init, name="nvml-init", daemon=True)
        thread.start()
        thread.join(limit)
        if not outcome:
            return NvmlError(NVML_TIMEOUT, f"nvmlInit did not return within {limit:g} s")
        return outcome[0]

    return ctx.once("nvml-init", compute)


def _call(fn: Callable[[], Any]) -> Tuple[Any, Optional[NvmlError]]:
    try:
        return fn(), None
    except NvmlError as exc:
        return None, exc


# ---------------------------------------------------------------------------- driver


def probe_driver(ctx: Context) -> ProbeOutput:
    """Reads NVML's driver, CUDA and NVML versions; /proc/driver/nvidia/version and
    /sys/module/nvidia/version for the kernel module; /sys/module/nouveau; the /dev/nvidia*
    nodes. When NVML fails, its exact error is kept and nvidia-smi is asked instead."""
    host = ctx.host
    errors: List[ProbeError] = []
    try:
        proc_text: Optional[str] = read_text(host, PROC_VERSION)
    except PermissionError:  # hardened /proc, or a container that masks it
        proc_text = None
        errors.append(ProbeError("driver", ErrorKind.PERMISSION, f"{PROC_VERSION}: permission denied"))
    except (OSError, ValueError):  # absent: no NVIDIA kernel module loaded
        proc_text = None
    module_version, flavor = parse_proc_driver_version(proc_text or "")
    if module_version is None:
        sys_version = (try_read_text(host, "/sys/module/nvidia/version") or "").strip()
        module_version = sys_version if re.fullmatch(r"\d+\.\d+(\.\d+)?", sys_version) else None
    nouveau = host.is_dir("/sys/module/nouveau") if host.is_dir("/sys/module") else None
    nodes = tuple(f"/dev/{n}" for n in ctx.list_dir("/dev") if n.startswith("nvidia") or n == "dxg")

    driver_version = cuda_version = nvml_version = None
    source: Optional[str] = None
    init_error = _nvml_init(ctx)
    nvml_error = init_error.name if init_error else None
    if init_error is None:
        nvml = host.nvml()
        driver_version, err = _call(lambda: nvml.system("nvmlSystemGetDriverVersion"))
        _note(errors, "driver", "driver version", err)
        raw_cuda, err = _call(lambda: nvml.system("nvmlSystemGetCudaDriverVersion_v2"))
        if err is not None:
            raw_cuda, err = _call(lambda: nvml.system("nvmlSystemGetCudaDriverVersion"))
        _note(errors, "driver", "CUDA driver version", err)
        cuda_version = cuda_version_from_int(raw_cuda)
        nvml_version, err = _call(lambda: nvml.system("nvmlSystemGetNVMLVersion"))
        _note(errors, "driver", "NVML version", err)
        source = "nvml"
    else:
        text = init_error.detail if init_error.name == NVML_TIMEOUT else nvml_error_text(init_error.name)
        errors.append(ProbeError("driver", _NVML_KIND.get(init_error.name, ErrorKind.ERROR), f"NVML: {text}"))
        smi = _smi_summary(ctx)
        if smi.get("driver_version"):
            driver_version, cuda_version, source = smi.get("driver_version"), smi.get("cuda"), "nvidia-smi"
        elif smi.get("error"):
            errors.append(ProbeError("driver", smi["kind"], smi["error"]))
        if source is None and module_version:
            source = "proc"

    if init_error is None:
        loaded: Optional[bool] = True
    elif module_version is not None:
        loaded = True  # the module answers even when user space is broken (mismatch)
    elif nvml_error in (DRIVER_NOT_LOADED, LIBRARY_NOT_FOUND, PYNVML_MISSING) and not nodes and source is None:
        loaded = False
    else:
        loaded = None
    info = DriverInfo(
        loaded=loaded,
        driver_version=_str(driver_version),
        cuda_driver_version=cuda_version,
        nvml_version=_str(nvml_version),
        nvml_error=nvml_error,
        kernel_module_version=module_version,
        kernel_module_flavor=flavor,
        nouveau_loaded=nouveau,
        device_nodes=nodes,
        source=source,
    )
    return ProbeOutput({"driver": info}, errors)


def _str(value: Any) -> Optional[str]:
    return str(value).strip() or None if value is not None else None


def _note(errors: List[ProbeError], probe: str, what: str, err: Optional[NvmlError]) -> None:
    if err is not None:
        errors.append(ProbeError(probe, _NVML_KIND.get(err.name, ErrorKind.ERROR), f"{what}: {err.name}"))


# ---------------------------------------------------------------------------- nvidia-smi

SMI_FIELDS = (
    "index", "name", "uuid", "serial", "pci.bus_id", "pci.device_id", "compute_cap",
    "memory.total", "memory.used", "mig.mode.current", "ecc.mode.current",
    "ecc.errors.uncorrected.volatile.total", "ecc.errors.uncorrected.aggregate.total",
    "retired_pages.pending", "pcie.link.gen.current", "pcie.link.gen.max",
    "pcie.link.width.current", "pcie.link.width.max", "persistence_mode", "temperature.gpu",
    "enforced.power.limit", "driver_version",
)
# Every driver since R3xx knows these; used when an old nvidia-smi rejects a newer field.
SMI_BASIC_FIELDS = ("index", "name", "uuid", "pci.bus_id", "memory.total", "memory.used", "driver_version")


def _smi_query(ctx: Context) -> Tuple[List[Dict[str, Optional[str]]], Optional[Tuple[ErrorKind, str]]]:
    def compute() -> Tuple[List[Dict[str, Optional[str]]], Optional[Tuple[ErrorKind, str]]]:
        failure: Optional[Tuple[ErrorKind, str]] = None
        for fields in (SMI_FIELDS, SMI_BASIC_FIELDS):
            result = ctx.run("nvidia-smi", "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits")
            if result.ok:
                rows = parse_nvidia_smi_csv(result.stdout, fields)
                if rows or not result.stdout.strip():
                    return rows, None
                failure = (ErrorKind.BAD_OUTPUT, f"nvidia-smi printed output that could not be parsed: {result.stdout.strip()[:120]!r}")
                continue
            failure = (_command_kind(result.error), result.describe())
            if result.error is not None:
                break  # missing or hung: a second query will not fare better
        return [], failure

    return ctx.once("smi-query", compute)


def _command_kind(error: Optional[str]) -> ErrorKind:
    return {
        "not_found": ErrorKind.NOT_INSTALLED,
        "timeout": ErrorKind.TIMEOUT,
        "permission": ErrorKind.PERMISSION,
    }.get(error or "", ErrorKind.ERROR)


def _smi_summary(ctx: Context) -> Dict[str, Any]:
    rows, failure = _smi_query(ctx)
    if failure is not None:
        return {"error": failure[1], "kind": failure[0]}
    out: Dict[str, Any] = {"driver_version": rows[0].get("driver_version") if rows else None}
    header = ctx.run("nvidia-smi")
    out["cuda"] = parse_smi_cuda_version(header.stdout) if header.ok else None
    return out


# ---------------------------------------------------------------------------- gpus

# nvmlClocksEventReasons bits (nvml.h, "Clocks Event Reasons"; formerly throttle reasons).
CLOCK_EVENT_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}

# NVML argument constants (nvml.h): nvmlMemoryErrorType_t, nvmlEccCounterType_t,
# nvmlPageRetirementCause_t, nvmlTemperatureSensors_t.
UNCORRECTED, VOLATILE, AGGREGATE = 1, 0, 1
RETIRE_SINGLE_BIT, RETIRE_DOUBLE_BIT = 0, 1
TEMPERATURE_GPU = 0


def probe_gpus(ctx: Context) -> ProbeOutput:
    """Every GPU NVML sees, field by field; a field NVML does not support on this GPU stays
    unknown without an error. Falls back to nvidia-smi's CSV query when NVML is unavailable."""
    init_error = _nvml_init(ctx)
    if init_error is None:
        return _gpus_from_nvml(ctx)
    rows, failure = _smi_query(ctx)
    if failure is None:
        return ProbeOutput(
            {"gpus": tuple(_gpu_from_smi(i, row) for i, row in enumerate(rows)), "gpus_source": "nvidia-smi"}
        )
    pci = _gpus_from_pci(ctx)
    if pci is not None:
        return ProbeOutput({"gpus": pci, "gpus_source": "pci"})
    # The driver probe already records why neither NVML nor nvidia-smi answered.
    kind = _NVML_KIND.get(init_error.name, ErrorKind.ERROR)
    return ProbeOutput({}, [ProbeError("gpus", kind, "neither NVML, nvidia-smi nor /sys/bus/pci could list GPUs")])


PCI_DEVICES = "/sys/bus/pci/devices"
NVIDIA_VENDOR = "0x10de"


def _gpus_from_pci(ctx: Context) -> Optional[Tuple[Gpu, ...]]:
    """NVIDIA display and 3D controllers (PCI class 0x03xxxx) on the PCI bus, which the kernel
    lists whether or not a driver is bound: this is how "a GPU but no driver" is told apart
    from "no GPU". ``None`` when the bus cannot be read (not Linux, or hidden by a sandbox)."""
    if not ctx.host.is_dir(PCI_DEVICES):
        return None
    gpus: List[Gpu] = []
    for address in ctx.list_dir(PCI_DEVICES):
        base = f"{PCI_DEVICES}/{address}"
        vendor = (try_read_text(ctx.host, f"{base}/vendor", 64) or "").strip().lower()
        klass = (try_read_text(ctx.host, f"{base}/class", 64) or "").strip().lower()
        if vendor != NVIDIA_VENDOR or not klass.startswith("0x03"):
            continue
        device = (try_read_text(ctx.host, f"{base}/device", 64) or "").strip().lower()
        gpus.append(
            Gpu(
                index=len(gpus),
                pci_bus_id=address,
                pci_device_id=device if re.fullmatch(r"0x[0-9a-f]{4}", device) else None,
                source="pci",
            )
        )
    return tuple(gpus)


def _gpus_from_nvml(ctx: Context) -> ProbeOutput:
    nvml = ctx.host.nvml()
    count, err = _call(nvml.device_count)
    if err is not None:
        return ProbeOutput({}, [ProbeError("gpus", _NVML_KIND.get(err.name, ErrorKind.ERROR), f"device count: {err.name}")])
    gpus: List[Gpu] = []
    errors: List[ProbeError] = []
    for index in range(int(count)):
        gpu, lost = _gpu_from_nvml(nvml, index)
        gpus.append(gpu)
        if lost is not None:
            errors.append(ProbeError("gpus", ErrorKind.ERROR, f"GPU {index}: {lost}"))
    return ProbeOutput({"gpus": tuple(gpus), "gpus_source": "nvml"}, errors)


def _gpu_from_nvml(nvml: Any, index: int) -> Tuple[Gpu, Optional[str]]:
    lost: List[str] = []

    def get(fn: str, *args: int) -> Any:
        try:
            return nvml.device(index, fn, *args)
        except NvmlError as exc:
            if exc.name not in (NOT_SUPPORTED, "NVML_ERROR_FUNCTION_NOT_FOUND") and not lost:
                lost.append(f"{fn}: {exc.name}")
            return None

    pci = get("nvmlDeviceGetPciInfo") or {}
    cc = get("nvmlDeviceGetCudaComputeCapability")
    memory = get("nvmlDeviceGetMemoryInfo") or {}
    mig = get("nvmlDeviceGetMigMode")
    ecc = get("nvmlDeviceGetEccMode")
    retired = [get("nvmlDeviceGetRetiredPages", cause) for cause in (RETIRE_SINGLE_BIT, RETIRE_DOUBLE_BIT)]
    remap = get("nvmlDeviceGetRemappedRows")
    power = get("nvmlDeviceGetEnforcedPowerLimit")
    reasons = get("nvmlDeviceGetCurrentClocksEventReasons")
    if reasons is None:
        reasons = get("nvmlDeviceGetCurrentClocksThrottleReasons")
    pending = get("nvmlDeviceGetRetiredPagesPendingStatus")
    gpu = Gpu(
        index=index,
        name=_str(get("nvmlDeviceGetName")),
        uuid=_str(get("nvmlDeviceGetUUID")),
        serial=_str(get("nvmlDeviceGetSerial")),
        pci_bus_id=_bus_id(pci.get("busId") if isinstance(pci, dict) else None),
        pci_device_id=_device_id(pci.get("pciDeviceId") if isinstance(pci, dict) else None),
        compute_capability=f"{cc[0]}.{cc[1]}" if isinstance(cc, (list, tuple)) and len(cc) == 2 else None,
        memory_total_mib=_mib(memory.get("total") if isinstance(memory, dict) else None),
        memory_used_mib=_mib(memory.get("used") if isinstance(memory, dict) else None),
        mig_mode=_mode(mig[0] if isinstance(mig, (list, tuple)) and mig else None),
        ecc_mode=_mode(ecc[0] if isinstance(ecc, (list, tuple)) and ecc else None),
        ecc_uncorrected_volatile=_int(get("nvmlDeviceGetTotalEccErrors", UNCORRECTED, VOLATILE)),
        ecc_uncorrected_aggregate=_int(get("nvmlDeviceGetTotalEccErrors", UNCORRECTED, AGGREGATE)),
        retired_pages=sum(len(r) for r in retired if isinstance(r, list)) if any(isinstance(r, list) for r in retired) else None,
        retired_pages_pending=bool(pending) if isinstance(pending, int) else None,
        remapped_rows_uncorrectable=_int(remap[1]) if isinstance(remap, (list, tuple)) and len(remap) == 4 else None,
        remapped_rows_pending=bool(remap[2]) if isinstance(remap, (list, tuple)) and len(remap) == 4 else None,
        remapped_rows_failure=bool(remap[3]) if isinstance(remap, (list, tuple)) and len(remap) == 4 else None,
        pcie_gen_current=_int(get("nvmlDeviceGetCurrPcieLinkGeneration")),
        pcie_gen_max=_int(get("nvmlDeviceGetMaxPcieLinkGeneration")),
        pcie_width_current=_int(get("nvmlDeviceGetCurrPcieLinkWidth")),
        pcie_width_max=_int(get("nvmlDeviceGetMaxPcieLinkWidth")),
        persistence_mode=_mode(get("nvmlDeviceGetPersistenceMode")),
        temperature_c=_int(get("nvmlDeviceGetTemperature", TEMPERATURE_GPU)),
        power_limit_w=round(power / 1000.0, 1) if isinstance(power, (int, float)) and not isinstance(power, bool) else None,
        clocks_event_reasons=decode_clock_reasons(reasons),
        source="nvml",
    )
    return gpu, (lost[0] if lost else None)


def decode_clock_reasons(mask: Any) -> Tuple[str, ...]:
    if not isinstance(mask, int) or isinstance(mask, bool) or mask < 0:
        return ()
    return tuple(name for bit, name in CLOCK_EVENT_BITS.items() if mask & bit)


def _int(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        try:
            return int(value.strip())
        except ValueError:  # isdigit() accepts '²', int() does not
            return None
    return None


def _mib(value: Any) -> Optional[int]:
    return value // (1024 * 1024) if isinstance(value, int) and not isinstance(value, bool) else None


def _mode(value: Any) -> Optional[str]:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return "enabled" if value == 1 else "disabled" if value == 0 else None
    text = str(value).strip().lower()
    return text if text in ("enabled", "disabled") else None


def _bus_id(value: Any) -> Optional[str]:
    return str(value).strip() or None if value else None


def _device_id(value: Any) -> Optional[str]:
    """NVML's pciDeviceId packs the device id in the upper 16 bits, the vendor in the lower."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return f"0x{(value >> 16) & 0xFFFF:04x}"
    if isinstance(value, str):  # nvidia-smi prints 0x233510DE
        m = re.fullmatch(r"0x([0-9a-fA-F]{4})([0-9a-fA-F]{4})", value.strip())
        if m:
            return f"0x{m.group(1).lower()}"
    return None


def _float(value: Optional[str]) -> Optional[float]:
    try:
        number = float(value) if value is not None else None
    except ValueError:
        return None
    return number if number is not None and math.isfinite(number) else None  # 'inf' crashed int()


def _gpu_from_smi(position: int, row: Dict[str, Optional[str]]) -> Gpu:
    index = _int(row.get("index"))
    cc = row.get("compute_cap")
    total = _float(row.get("memory.total"))
    used = _float(row.get("memory.used"))
    return Gpu(
        index=index if index is not None else position,
        name=row.get("name"),
        uuid=row.get("uuid"),
        serial=row.get("serial"),
        pci_bus_id=row.get("pci.bus_id"),
        pci_device_id=_device_id(row.get("pci.device_id")),
        compute_capability=cc if cc and re.fullmatch(r"\d+\.\d+", cc) else None,
        memory_total_mib=int(total) if total is not None else None,
        memory_used_mib=int(used) if used is not None else None,
        mig_mode=_mode(row.get("mig.mode.current")),
        ecc_mode=_mode(row.get("ecc.mode.current")),
        ecc_uncorrected_volatile=_int(row.get("ecc.errors.uncorrected.volatile.total")),
        ecc_uncorrected_aggregate=_int(row.get("ecc.errors.uncorrected.aggregate.total")),
        retired_pages_pending=_yes_no(row.get("retired_pages.pending")),
        pcie_gen_current=_int(row.get("pcie.link.gen.current")),
        pcie_gen_max=_int(row.get("pcie.link.gen.max")),
        pcie_width_current=_int(row.get("pcie.link.width.current")),
        pcie_width_max=_int(row.get("pcie.link.width.max")),
        persistence_mode=_mode(row.get("persistence_mode")),
        temperature_c=_int(row.get("temperature.gpu")),
        power_limit_w=_float(row.get("enforced.power.limit")),
        source="nvidia-smi",
    )


def _yes_no(value: Optional[str]) -> Optional[bool]:
    if value is None:
        return None
    return {"yes": True, "no": False}.get(value.strip().lower())
