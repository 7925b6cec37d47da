"""A pasted report diagnosed: what was read (:mod:`cudadoctor.diagnosis.intake`), the error lines explained
and judged against the machine the text describes (never the machine cudadoctor runs on), and the
causes ranked, root first (``cudadoctor diagnose FILE``, ``cudadoctor.diagnose_text()``, triage).

Ranking: a cause the facts show (a finding, or a cause judged "holds") comes first, in the order
of the errors in the text; then what the surroundings show (a ``docker run`` without ``--gpus``,
a kernel module missing for the running kernel, a macOS or WSL 1 host); then each error's most
likely cause that the facts do not rule out; then the rest. When nothing holds, ``asks`` says what
to paste next.
"""

from __future__ import annotations

import re
from typing import Set, TYPE_CHECKING, Any, Dict, List, Optional, Tuple
from cudadoctor.record import frozen

from cudadoctor.model import Category, Finding, Severity

if TYPE_CHECKING:
    from cudadoctor.diagnosis.intake import Intake
    from cudadoctor.matrix import Matrix
    from cudadoctor.diagnosis.explanation import Explanation

C = Category
# What to ask a reporter for, by the facts that would tell (docs/pasted-reports.md)
ASK_COLLECT_ENV = "the output of `python -m torch.utils.collect_env` (or `cudadoctor report`)"
ASK_SMI = "the output of `nvidia-smi`"
ASK_PACKAGES = "the output of `pip list` (or `conda list`)"
ASK_ERROR = "the complete error output, from the first error line on"
ASK_KERNEL = "the output of `sudo dmesg | grep -iE 'nvrm|xid|nvidia'`"


@frozen
class RankedCause:
    """One cause of the failure the text shows, in rank order."""

    category: Category
    verdict: str  # holds (the facts show it) | likely (the error points to it; nothing rules it out) | possible
    why: str  # the evidence, in words
    line: Optional[int] = None  # the line of the text that shows it
    source: str = ""  # the signature id or finding code it comes from
    label: str = ""  # the category in words ("a driver too old for the build")


@frozen
class PasteDiagnosis:
    """What ``cudadoctor diagnose FILE`` found in a pasted text."""

    name: str  # the file read, or "standard input"
    intake: Intake
    explanation: Explanation
    ranked: Tuple[RankedCause, ...]
    asks: Tuple[str, ...]  # what to paste next, when the facts are not enough

    @property
    def findings(self) -> Tuple[Finding, ...]:
        return self.explanation.findings or ()

    @property
    def top(self) -> Optional[RankedCause]:
        return self.ranked[0] if self.ranked else None

    def categories(self) -> List[str]:
        return [c.category.value for c in self.ranked]

    def text(self, color: bool = False, verbose: bool = False) -> str:
        from cudadoctor.diagnosis.paste_text import paste_text

        return paste_text(self, color, verbose)

    def to_dict(self) -> Dict[str, Any]:
        from cudadoctor.diagnosis.paste_text import paste_document

        return paste_document(self)


def diagnose_paste(name: str, intake: "Intake", explanation: "Explanation", matrix: "Matrix") -> PasteDiagnosis:
    """A pasted text's diagnosis from what was read and its errors explained against the machine it
    describes (:func:`cudadoctor.api.diagnose_text` reads, runs the checks and explains)."""
    ranked = rank(intake, explanation, matrix)
    return PasteDiagnosis(name, intake, explanation, ranked, asks(intake, explanation, ranked))


def rank(intake: Intake, e: Explanation, matrix: Optional[Matrix] = None) -> Tuple[RankedCause, ...]:
    from cudadoctor.diagnosis.causes import MESSAGE_CODES as CODES
    from cudadoctor.diagnosis.causes import label

    out: List[RankedCause] = []

    def add(category: Category, verdict: str, why: str, line: Optional[int], source: str, name: str = "") -> None:
        if all(c.category is not category for c in out):
            out.append(RankedCause(category, verdict, why, line, source, name or LABELS.get(source) or label(category)))

    findings = e.findings or ()
    for context in _context(intake, e, matrix):
        add(*context)
    for x in e.matches:
        for cause in x.causes:
            if cause.verdict == "holds":
                add(cause.category, "holds", cause.reason, x.line_number, x.signature, cause.label)
    for f in findings:
        if f.severity is Severity.ERROR and f.code not in CODES:
            add(f.category, "holds", f.title, _line_of(intake, f), f.code)
    unlikely = _unlikely(intake.chosen())
    for x in e.matches:
        open_causes = [c for c in x.causes if c.verdict != "ruled_out" and c.category not in unlikely]
        if open_causes:
            add(open_causes[0].category, "likely", f"the error on line {x.line_number} ({x.signature}) points "
                f"to it first; {open_causes[0].reason}", x.line_number, x.signature, open_causes[0].label)
    for x in e.matches:
        for cause in x.causes:
            if cause.verdict != "ruled_out":
                add(cause.category, "possible", cause.reason, x.line_number, x.signature, cause.label)
    for f in findings:
        if f.severity is Severity.WARNING and f.code not in CODES:
            add(f.category, "possible", f.title, _line_of(intake, f), f.code)
    if not out and not e.matches:
        out.extend(_program_failure(intake))
    return tuple(out)


# Words of the GPU stack: an error naming one of them is not judged the program's without a signature
_STACK_WORDS = re.compile(r"cuda|cudnn|cublas|nccl|nvidia|nvml|gpu|driver|libcu|nvrtc|ptx|sm_\d|triton|xla|tensorrt",
                          re.IGNORECASE)


# Device and type names a program error quotes without being about the stack ("torch.cuda.FloatTensor", "cuda:0")
_DEVICE_NAMES = re.compile(r"torch\.cuda\.\w+Tensor|\bcuda:\d+|device=?'?cuda'?|\.cuda\(\)|is_cuda")


def _program_failure(intake: Intake) -> List[RankedCause]:
    """A text whose error names nothing of the GPU stack and matches no signature: the failure
    looks like the program's (or a library's) own; said as possible, never as what holds."""
    chosen = intake.chosen()
    exception, crash = chosen.get("exception"), chosen.get("crash")
    if exception is None and crash is not None:
        return [RankedCause(C.OTHER, "possible", f"the process crashed ({crash.value}) and no known GPU error is in the "
                            "text: a native crash in the program or one of its extensions (its data, a bad pointer), "
                            "or in a library; `python -X faulthandler` (or gdb's `bt`) shows where",
                            crash.line, "program-crash", "the program's own crash")]
    if exception is None:
        return []
    said = _DEVICE_NAMES.sub("", f"{exception.value} {exception.text}")
    if _STACK_WORDS.search(said):
        return []
    return [RankedCause(C.OTHER, "possible", f"the text ends in {str(exception.value)[:160]!r}, which names nothing of "
                        "the GPU stack and no known GPU error is in the text: it looks like the program's (or a "
                        "library's) own error", exception.line, "program-exception", "the program's own error")]


# What a context rule's 'other' stands for (by its source)
LABELS = {"windows-preview-build": "a preview (Insider) build of Windows"}


def _unlikely(chosen: Dict[str, Any]) -> Set[Category]:
    """Causes the surroundings make unlikely, though no fact rules them out: they stay possible,
    never the likely one. On Linux every framework has CUDA builds (a platform cause is left to an
    aarch64 or Jetson build), and pip's torch there is a CUDA build unless a CPU one is asked for;
    under WSL 2 no NVIDIA kernel module loads (nouveau and Secure Boot do not come into it);
    TensorFlow up to 2.10 had CUDA builds for native Windows too."""
    os = chosen.get("os")
    tf = chosen.get("tensorflow_version")
    if tf is not None and not _at_least(str(tf.value), (2, 11)) and (os is None or os.value != "macos"):
        return {C.PLATFORM_UNSUPPORTED}  # TensorFlow had CUDA builds for native Windows up to 2.10
    if os is None or os.value != "linux":
        return set()
    out = {C.PLATFORM_UNSUPPORTED}
    if chosen.get("wsl") is not None:  # WSL 2 has no NVIDIA kernel module: the Windows driver serves the GPU
        out.add(C.KERNEL_MODULE_BLOCKED)
    asked = chosen.get("pip_install")
    if asked is not None and "torch" in str(asked.value).split() and "cpu" not in asked.text.lower():
        out.add(C.CPU_ONLY_BUILD)
    return out


# An image name that says it is made for NVIDIA GPUs (the word in its repository or its tag)
# A word of the docker line that names a GPU image (any word holding one of these: what the words
# around it are does not matter, and matching them would cost a scan of the word per position).
_GPU_IMAGE = re.compile(r"cuda|gpu|nvidia|nvcr\.io|pytorch|tensorflow|jax|vllm|tritonserver|ollama|"
                        r"text-generation-inference|cudnn", re.IGNORECASE)
_GPU_ACCESS = {C.NO_DRIVER, C.NO_GPU, C.NVML_UNAVAILABLE, C.CONTAINER_NO_GPU, C.DRIVER_LIBRARY_MISMATCH}


def _context(intake: Intake, e: Explanation, matrix: Optional[Matrix] = None
             ) -> List[Tuple[Category, str, str, Optional[int], str]]:
    """Causes that the surroundings of the errors show, not the errors themselves."""
    chosen = intake.chosen()
    out: List[Tuple[Category, str, str, Optional[int], str]] = []
    access = any(set(x.categories) & _GPU_ACCESS for x in e.matches) or "nvidia_smi_missing" in chosen
    docker = chosen.get("docker_gpus")
    nvml = chosen.get("nvml_error")
    # NVML denied access: the device nodes are there (the runtime hook or a default runtime gave
    # them), so a docker run line without --gpus does not show a container without the GPU
    denied = nvml is not None and nvml.value == "NVML_ERROR_NO_PERMISSION"
    if docker is not None and docker.value is False:
        unasked = "(no --gpus, --runtime=nvidia or CDI device on its docker run line)"
        if access and not denied:
            out.append((C.CONTAINER_NO_GPU, "holds", f"the container was started without GPUs {unasked}",
                        docker.line, "docker-run"))
        elif not e.matches and _GPU_IMAGE.search(docker.text):
            out.append((C.CONTAINER_NO_GPU, "likely", f"the container of an image made for GPUs was started without "
                        f"them {unasked}", docker.line, "docker-run"))
    reload = chosen.get("daemon_reload")
    if reload is not None and (access or (nvml is not None and nvml.value == "NVML_ERROR_UNKNOWN")):
        out.append((C.CONTAINER_NO_GPU, "holds", "`systemctl daemon-reload` on a host whose containers use the "
                    "systemd cgroup driver takes their GPU device access away: running containers then fail with "
                    "NVML 'Unknown Error' until restarted (NVIDIA container toolkit: use CDI or the 'nvidia-ctk "
                    "system create-dev-char-symlinks' fix)", reload.line, "daemon-reload"))
    os = chosen.get("os")
    if os is not None and os.value == "macos" and bool(e.matches):
        out.append((C.PLATFORM_UNSUPPORTED, "holds", "the host is macOS, for which no framework ships CUDA "
                    "builds (Apple GPUs use MPS/Metal)", os.line, "macos-host"))
    wsl1 = chosen.get("wsl1")
    if wsl1 is not None and (access or bool(e.matches)):
        out.append((C.PLATFORM_UNSUPPORTED, "holds", "WSL 1 has no GPU support; only WSL 2 passes the GPU "
                    "through (wsl --set-version <distro> 2)", wsl1.line, "wsl1"))
    missing = chosen.get("kernel_module_missing") or chosen.get("dkms_failed")
    if missing is not None:
        secure = chosen.get("secure_boot")
        if secure is not None and secure.value is True:
            out.append((C.KERNEL_MODULE_BLOCKED, "holds", "Secure Boot rejects the unsigned NVIDIA kernel module",
                        secure.line, "secure-boot"))
        out.append((C.KERNEL_MODULE_BLOCKED, "holds", "the NVIDIA kernel module is not built for the running "
                    "kernel (after a kernel update DKMS must rebuild it; a driver branch too old for the kernel "
                    "no longer compiles)", missing.line, "kernel-module-missing"))
        out.append((C.NO_DRIVER, "possible", "without its kernel module no NVIDIA driver is loaded",
                    missing.line, "kernel-module-missing"))
    out.extend(_versions_in_errors(e))
    build = chosen.get("windows_build")
    if build is not None and isinstance(build.value, int) and build.value < WSL_GPU_BUILD and (
            access or "nvml_error" in chosen or chosen.get("wsl") is not None):
        out.append((C.PLATFORM_UNSUPPORTED, "holds", f"Windows build {build.value} is older than the first with GPU "
                    f"support in WSL (Windows 10 21H2, build {WSL_GPU_BUILD}, or Windows 11): update Windows, then "
                    "the NVIDIA Windows driver", build.line, "windows-build"))
    if build is not None and isinstance(build.value, int) and _preview_build(build.value) and (
            access or "nvml_error" in chosen or chosen.get("wsl") is not None):
        out.append((C.OTHER, "likely", f"Windows build {build.value} is a preview (Insider) build, not a released "
                    "one, and GPU support in WSL 2 has broken in such builds: move to the newest preview or a "
                    "released build, then update the NVIDIA Windows driver", build.line, "windows-preview-build"))
    tf_cuda = chosen.get("tf_built_with_cuda")
    tf_version = chosen.get("tensorflow_version")
    on_windows = os is not None and os.value == "windows" and chosen.get("wsl") is None
    if tf_cuda is not None and tf_cuda.value is False and on_windows:
        out.append((C.PLATFORM_UNSUPPORTED, "holds", "TensorFlow on native Windows is built without CUDA since 2.11 "
                    "(tf.test.is_built_with_cuda() is False): use WSL 2, or TensorFlow 2.10 with CUDA 11.2",
                    tf_cuda.line, "tensorflow-windows"))
    elif tf_version is not None and on_windows and _at_least(str(tf_version.value), (2, 11)) and any(
            "tensorflow" in x.match.signature.frameworks for x in e.matches):
        out.append((C.PLATFORM_UNSUPPORTED, "holds", f"TensorFlow {tf_version.value} on native Windows: 2.10 was the "
                    "last release with GPU support there; use WSL 2, or TensorFlow 2.10 with CUDA 11.2",
                    tf_version.line, "tensorflow-windows"))
    out.extend(_old_host_compiler(intake, chosen))
    out.extend(_soname_majors(chosen))
    out.extend(_required_majors(chosen, e))
    if matrix is not None and os is not None and os.value in ("windows", "macos") and chosen.get("wsl") is None:
        out.extend(_linux_only(intake, chosen, matrix, os.value))
    nouveau, smi_missing = chosen.get("nouveau_loaded"), chosen.get("nvidia_smi_missing")
    if nouveau is not None and nouveau.value is True and smi_missing is not None:
        out.append((C.NO_DRIVER, "holds", "the NVIDIA driver is not installed: nvidia-smi is missing and the open-source "
                    "nouveau driver runs the GPU (installing NVIDIA's driver blacklists nouveau)", smi_missing.line,
                    "nouveau-without-nvidia-driver"))
    other_display = chosen.get("pci_display_other")
    if other_display is not None and "gpu_name" not in chosen and "gpu_count" not in chosen:
        out.append((C.NO_GPU, "likely", f"lspci lists a display controller that is not NVIDIA's ({other_display.value}) "
                    "and no NVIDIA one (a datacenter GPU shows as '3D controller': `lspci | grep -i nvidia` tells)",
                    other_display.line, "pci-no-nvidia"))
    xid = chosen.get("xid")
    if xid is not None:
        out.append((C.HARDWARE_FAULT, "holds", f"the kernel log shows Xid {xid.value}", xid.line, "xid"))
    return out


WSL_GPU_BUILD = 19044  # Windows 10 21H2: the first general release with GPU compute in WSL 2 (Microsoft's CUDA on WSL guide)
# Released Windows builds from 19041 on (Windows 10 2004-22H2, Server 2022, Windows 11 21H2-25H2, Server 23H2
# and 2025), from Microsoft's release health pages: learn.microsoft.com/windows/release-health/release-information,
# .../windows11-release-information and .../windows-server-release-info. A build between them is a preview
# (Insider) build; one above the newest is not judged (a release this list does not know yet).
WINDOWS_RELEASES = frozenset({19041, 19042, 19043, 19044, 19045, 20348, 22000, 22621, 22631, 25398, 26100, 26200})


def _preview_build(build: int) -> bool:
    return WSL_GPU_BUILD <= build < max(WINDOWS_RELEASES) and build not in WINDOWS_RELEASES


def _at_least(version: str, floor: Tuple[int, ...]) -> bool:
    parts = re.findall(r"\d+", version)[:len(floor)]
    return len(parts) == len(floor) and tuple(int(p) for p in parts) >= floor


# GCC 5 is the first with C++14, which the Thrust and CUB of CUDA 11 and later, and the extensions of
# PyTorch, CuPy and the other frameworks need (CUDA 11.0 release notes: C++11 deprecated for Thrust/CUB;
# gcc.gnu.org/projects/cxx-status.html#cxx14).
CXX14_GCC = 5
_BUILD_FAILED = re.compile(r"Command errored out with exit status [1-9]|Failed building wheel for|"
                           r"error: subprocess-exited-with-error|Failed to build installable wheels|"
                           r"error: command '[^'\n]*(?:nvcc|gcc|g\+\+|cc1plus)' failed")


def _old_host_compiler(intake: Intake, chosen: Dict[str, Any]) -> List[Tuple[Category, str, str, Optional[int], str]]:
    """A source build that failed, with a gcc too old for C++14."""
    gcc = chosen.get("gcc_version")
    head = _major(str(gcc.value)) if gcc is not None else None
    if gcc is None or head is None or head >= CXX14_GCC:
        return []
    failed = _BUILD_FAILED.search(intake.text)
    if failed is None:
        return []
    line = intake.text.count("\n", 0, failed.start()) + 1
    return [(C.HOST_COMPILER_UNSUPPORTED, "likely", f"a source build failed (line {line}) with gcc {gcc.value}, "
             f"older than gcc {CXX14_GCC}, the first with C++14, which CUDA 11+'s Thrust and CUB and framework "
             "extensions need: build with a newer gcc (devtoolset or conda's gxx), or install a binary wheel",
             gcc.line, "host-compiler-too-old")]


def _versions_in_errors(e: Explanation) -> List[Tuple[Category, str, str, Optional[int], str]]:
    """What the versions an error names show: a driver library (DSO) newer than the kernel module is
    a CUDA user space (a container image's forward-compatibility libcuda) the host driver is too old
    for; an older one is a user space left behind by a driver upgrade."""
    out: List[Tuple[Category, str, str, Optional[int], str]] = []
    for x in e.matches:
        groups = dict(x.match.groups)
        kernel, dso = _major(groups.get("kernel")), _major(groups.get("dso"))
        if kernel is None or dso is None or kernel == dso:
            continue
        if dso > kernel:
            out.append((C.DRIVER_TOO_OLD, "holds", f"the CUDA driver library in use (DSO {dso}) is newer than the "
                        f"kernel driver ({kernel}): a container image's CUDA needs a newer host driver than {kernel}",
                        x.line_number, x.signature))
        else:
            out.append((C.DRIVER_LIBRARY_MISMATCH, "holds", f"the kernel driver ({kernel}) is newer than the driver "
                        f"library in use (DSO {dso}): user-space libraries left from before a driver upgrade",
                        x.line_number, x.signature))
    return out


def _major(version: Optional[str]) -> Optional[int]:
    head = (version or "").split(".")[0]
    return int(head) if head.isdigit() and len(head) <= 4 else None


def _soname_majors(chosen: Dict[str, Any]) -> List[Tuple[Category, str, str, Optional[int], str]]:
    """A library missing in one major version while the machine has another: the build was made for
    the other CUDA (or cuDNN) major."""
    missing = chosen.get("missing_library")
    if missing is None:
        return []
    name = str(missing.value)
    m = re.match(r"^lib(cudnn|cu\w+|nv\w+)\w*\.so\.(\d+)", name) or re.match(r"^(cudnn|cu\w+?|nv\w+?)\w*64_(\d+)\.dll$", name)
    if m is None:
        return []
    family = "cudnn" if m.group(1).startswith("cudnn") else "cuda"
    wanted = int(m.group(2))
    if wanted > 40:
        return []
    said = f"the build loads {name} ({_FAMILIES[family][1]} {wanted})"
    return _other_major(chosen, family, wanted, said, missing.line, "soname-major")


# A library family: the category of a build made for another major of it, and its name
_FAMILIES = {"cudnn": (C.CUDNN_MISMATCH, "cuDNN"), "cuda": (C.WRONG_PACKAGE_VARIANT, "CUDA")}


def _other_major(chosen: Dict[str, Any], family: str, wanted: int, said: str, line: Optional[int], source: str
                 ) -> List[Tuple[Category, str, str, Optional[int], str]]:
    """What the text shows a build wants (``said``: major ``wanted`` of ``family``), against the
    major of it that the machine's facts show: a cause that holds when they differ."""
    category, what = _FAMILIES[family]
    have = chosen.get("cudnn_system") if family == "cudnn" else (
        chosen.get("cuda_libraries") or chosen.get("nvcc_version"))
    major = _major(str(have.value)) if have is not None else None
    if have is None or major is None or major == wanted:
        return []
    return [(category, "holds", f"{said}; this machine has {what} {major} (line {have.line}): install the build "
             f"for {what} {major}, or {what} {wanted}'s libraries beside it", line, source)]


def _required_majors(chosen: Dict[str, Any], e: Explanation) -> List[Tuple[Category, str, str, Optional[int], str]]:
    """A build that names the cuDNN and CUDA majors it needs (ONNX Runtime's "Require cuDNN 8.* and
    CUDA 12.*"), on a machine whose facts show another."""
    out: List[Tuple[Category, str, str, Optional[int], str]] = []
    for x in e.matches:
        groups = dict(x.match.groups)
        for family, (_, what) in _FAMILIES.items():
            wanted = _major(groups.get(family))
            if wanted is not None:
                out += _other_major(chosen, family, wanted, f"the build needs {what} {wanted} (line {x.line_number})",
                                    x.line_number, x.signature)
    return out


def _linux_only(intake: Intake, chosen: Dict[str, Any], matrix: Matrix, os: str
                ) -> List[Tuple[Category, str, str, Optional[int], str]]:
    """A package that supports Linux only, asked for or installed on Windows or macOS."""
    platforms = matrix.addons.vllm_platforms
    if platforms is None or platforms.value != "linux":
        return []
    asked = chosen.get("pip_install")
    where: Optional[int] = None
    if asked is not None and "vllm" in str(asked.value).split():
        where = asked.line
    for f in intake.facts:
        if where is None and f.key == "pip_packages" and str(f.value).startswith("vllm=="):
            where = f.line
    if where is None:
        return []
    name = {"windows": "Windows", "macos": "macOS"}[os]
    return [(C.PLATFORM_UNSUPPORTED, "holds", f"vLLM supports Linux only ({platforms.source}); on {name} use WSL 2 "
             "or a Linux machine or container", where, "vllm-platform")]


def _line_of(intake: Intake, finding: Finding) -> Optional[int]:
    """The line of the text holding the fact a finding quotes first (its evidence)."""
    keys = {"driver.driver_version": "driver_version", "driver.cuda_driver_version": "driver_cuda_version",
            "gpus": "gpu_name", "frameworks": "torch_version", "python.version": "python",
            "toolkits": "nvcc_version", "libraries": "cudnn_system", "compilers": "gcc_version"}
    chosen = intake.chosen()
    for evidence in finding.evidence:
        for prefix, key in keys.items():
            if evidence.startswith(prefix) and key in chosen:
                return chosen[key].line
    return None


def asks(intake: Intake, e: Explanation, ranked: Tuple[RankedCause, ...]) -> Tuple[str, ...]:
    """What to paste next: nothing when a cause holds; else the outputs that would tell."""
    if ranked and ranked[0].verdict == "holds":
        return ()
    have = {f.block for f in intake.facts}
    out = []
    if not e.matches:
        out.append(ASK_ERROR)
    if "collect_env" not in have and not (have & {"pip_list", "pip_freeze", "conda_list"}):
        out.append(ASK_COLLECT_ENV)
    if not have & {"nvidia_smi", "nvidia_smi_q", "collect_env", "nvidia_smi_error"}:
        out.append(ASK_SMI)
    if ranked and ranked[0].category is C.HARDWARE_FAULT and "kernel_log" not in have:
        out.append(ASK_KERNEL)
    if ranked and ranked[0].category in (C.COMPANION_VERSION_MISMATCH, C.WRONG_PACKAGE_VARIANT,
                                         C.LIBRARY_VERSION_CONFLICT) and not have & {"pip_list", "pip_freeze",
                                                                                     "conda_list", "collect_env"}:
        out.append(ASK_PACKAGES)
    return tuple(dict.fromkeys(out))
