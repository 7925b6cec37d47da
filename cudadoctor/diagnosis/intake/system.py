"""The system around the stack: kernel log lines (NVRM, Xid, nouveau), ``lspci``, ``modprobe`` /
DKMS / ``mokutil``, ``docker run`` and compose lines, ``/etc/os-release``, ``uname -a``,
environment variables, and what paths and prompts tell of the platform."""

from __future__ import annotations

import re

from cudadoctor.diagnosis.intake.model import Found
from cudadoctor.diagnosis.intake.common import os_of_text

_LOADING = re.compile(r"NVRM: loading NVIDIA UNIX (?:Open )?\S* ?Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)")
_API_MISMATCH = re.compile(r"NVRM: API mismatch: the client has the version (\d+\.\d+(?:\.\d+)?), but\s+"
                           r"(?:NVRM: )?this kernel module has the version (\d+\.\d+(?:\.\d+)?)")
_XID = re.compile(r"NVRM: Xid \([^)]*\):\s*(\d+)")
# A display controller in lspci's list, then what follows its class: NVIDIA's ("NVIDIA Corporation
# GA102 [GeForce RTX 3090]") or another vendor's (its name without the ids, revision and prog-if)
_PCI_DISPLAY = re.compile(r"^\s*(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d\s+(?:VGA compatible controller|3D controller|"
                          r"Display controller)(?: \[\w+\])?:\s+(.*)$")
_NVIDIA_DEVICE = re.compile(r"^NVIDIA Corporation\s+(.*)$")
_OTHER_DEVICE = re.compile(r"^(?!NVIDIA)(\S.{0,120}?)(?: \[[0-9a-fA-F]{4}:[0-9a-fA-F]{4}\])?(?: \(rev \w+\))?(?: \(prog-if.*)?\s*$")
_DOCKER = re.compile(r"^\s*`?(?:[\w@:~/.()-]*[$#>]\s*)?(?:sudo\s+(?:-E\s+)?)?(docker|podman|nvidia-docker)\s+"
                     r"(?:container\s+)?run\b")
_GPUS_ASKED = re.compile(r"--gpus\b|--runtime[= ]nvidia|--device[= ]\S*(?:nvidia\.com/gpu|/dev/nvidia)|"
                         r"NVIDIA_VISIBLE_DEVICES=(?!void|none)")
_OS_RELEASE = re.compile(r"^\s*(PRETTY_NAME|NAME|ID)=\"?([^\"]*)\"?\s*$|^\s*(Distributor ID|Description):\s+(\S.*)$")
_UNAME = re.compile(r"^\s*(Linux|Darwin)\s+\S+\s+(\d+\.\d+\.\d+\S*)\s")
_ENV = re.compile(r"^\s*(?:export\s+|set\s+|\$env:)?(CUDA_VISIBLE_DEVICES|LD_LIBRARY_PATH|CUDA_HOME|CUDA_PATH)\s*=\s*"
                  r"[\"']?([^\"'\s]*)[\"']?\s*$")
_MACOS_PATH = re.compile(r"/Users/[^/\s]+/|/opt/homebrew/|/Library/Frameworks/Python\.framework|"
                         r"/Library/Developer/|macosx_\d+_\d+_(?:arm64|x86_64)")
_WINDOWS_PATH = re.compile(r"\b[A-Z]:\\(?:Users|Program Files|Python\d*|ProgramData|Windows|tools|anaconda3|"
                           r"miniconda3)|\\site-packages\\|\bWinError\b|\.dll\b", re.I)
# a CPython extension's file name: its Python, and the OS it was built for
_EXTENSION = re.compile(r"\.cpython-3(\d{1,2})-[\w]+-linux-gnu\.so\b|\.cp3(\d{1,2})-win_amd64\.pyd\b|"
                        r"\.cpython-3(\d{1,2})-darwin\.so\b")
_SITE_PYTHON = re.compile(r"[/\\]python(3\.\d{1,2})[/\\](?:site|dist)-packages\b")
_WINDOWS_VERSION = re.compile(r"Microsoft Windows \[Version (\d+)\.(\d+)\.(\d+)(?:\.\d+)?\]")
_POWERSHELL = re.compile(r"^\s*(?:PS [A-Z]:\\[^>]*>|ParsedHtml\s+:\s+System\.__ComObject|RawContentLength\s+:\s+\d+)")
_PIP_INSTALL = re.compile(r"^\s*(?:\(\S+\)\s*)?(?:PS [A-Za-z]:[^>]{0,200}>\s*|[\w@:~/.\\-]*[$#>]\s*)?(?:python[\d.]*\s+-m\s+)?(?:pip3?|uv\s+pip)\s+"
                          r"install\s+(.+)$")
_DOCKER_PROMPT = re.compile(r"^\s*(?:\(\S+\)\s*)?root@[0-9a-f]{12}:[^#]*#")


# A line this reader reads holds one of these
WORDS = ("NVRM", "nouveau", "nvidia", "NVIDIA", "Nvidia", "Kernel driver in use", "modprobe", "DKMS", "dkms",
         "SecureBoot", "Key was rejected", "daemon-reload", "docker", "podman", "capabilities: [gpu]", "runtime:",
         "NAME=", "ID=", "Description:", "Linux ", "Darwin ", "Microsoft Windows [Version", "install", "CUDA_",
         "LD_LIBRARY_PATH", "controller")
# and of the paths and prompts it weighs
HINTS = ("/Users/", "homebrew", "/Library/", "macosx_", "\\", "WinError", ".dll", "root@", "-packages", "PS ",
         "ComObject", "RawContentLength", "Microsoft", "/usr/lib/wsl/lib", "microsoft-standard-WSL2", ".cpython-3",
         ".cp3")


def read(found: Found) -> None:
    for i in found.lines_with(*WORDS):
        line = found.lines[i]
        if "NVRM" in line or "nouveau" in line or "nvidia" in line or "NVIDIA" in line or "Nvidia" in line:
            _kernel(found, i, line)
        if "controller" in line or "Kernel driver in use" in line:
            _lspci(found, i, line)
        if "modprobe" in line or "DKMS" in line or "dkms" in line or "SecureBoot" in line or "Key was rejected" in line:
            _modules(found, i, line)
        if "daemon-reload" in line and re.search(r"systemctl\s+(?:--\S+\s+)*daemon-reload", line):
            found.block("platform", i, i)
            found.fact("daemon_reload", True, i, "platform")
        if ("docker" in line or "podman" in line) and _DOCKER.search(line):
            _docker(found, i, line)
        elif "capabilities: [gpu]" in line or ("runtime:" in line and re.search(r"^\s*runtime:\s*nvidia\s*$", line)):
            found.block("docker_run", i, i)
            found.fact("docker_gpus", True, i, "docker_run")
        os_line = _OS_RELEASE.match(line) if ("NAME=" in line or "ID=" in line or "Description:" in line) else None
        if os_line:
            _os_release(found, i, os_line)
        uname = _UNAME.match(line) if ("Linux " in line or "Darwin " in line) else None
        if uname:
            _uname(found, i, line, uname.group(1))
        if "Microsoft Windows [Version" in line:
            win = _WINDOWS_VERSION.search(line)
            if win:
                found.block("platform", i, i)
                found.fact("windows_build", int(win.group(3)), i, "platform")
        if "install" in line:
            _pip_install(found, i, line)
        env = _ENV.match(line) if ("CUDA_" in line or "LD_LIBRARY_PATH" in line) else None
        if env:
            key = {"CUDA_VISIBLE_DEVICES": "cuda_visible_devices", "LD_LIBRARY_PATH": "ld_library_path",
                   "CUDA_HOME": "cuda_home", "CUDA_PATH": "cuda_home"}[env.group(1)]
            found.block("environment", i, i)
            found.fact(key, env.group(2), i, "environment")
    _platform(found)


def _kernel(found: Found, i: int, line: str) -> None:
    m = _LOADING.search(line)
    if m:
        found.block("kernel_log", i, i)
        found.fact("kernel_module_version", m.group(1), i, "kernel_log")
        return
    m = _API_MISMATCH.search(line)
    if m:
        found.block("kernel_log", i, i)
        found.fact("driver_version", m.group(1), i, "kernel_log")
        found.fact("kernel_module_version", m.group(2), i, "kernel_log")
        return
    x = _XID.search(line)
    if x:
        found.block("kernel_log", i, i)
        found.fact("xid", x.group(1), i, "kernel_log")
        return
    if re.search(r"\bnouveau\b.*(?:\d{4}:\d{2}:\d{2}\.\d|Initialized|NVIDIA [A-Z]{2}\d{3}|DRM|fb)|"
                 r"Kernel driver in use:\s*nouveau", line):
        found.block("kernel_log", i, i)
        found.fact("nouveau_loaded", True, i, "kernel_log")
    elif "NVRM:" in line:
        found.block("kernel_log", i, i)


def _lspci(found: Found, i: int, line: str) -> None:
    display = _PCI_DISPLAY.match(line)
    m = _NVIDIA_DEVICE.match(display.group(1)) if display else None
    other = _OTHER_DEVICE.match(display.group(1)) if display and not m else None
    if other:
        found.block("lspci", i, i)
        found.fact("pci_display_other", other.group(1), i, "lspci")
        return
    if m:
        found.block("lspci", i, i)
        rest = m.group(1)
        bracket = re.findall(r"\[([^\]]+)\]", rest)
        ids = [b for b in bracket if re.fullmatch(r"10de:[0-9a-fA-F]{4}", b)]
        names = [b for b in bracket if b not in ids]
        device = re.match(r"^Device ([0-9a-fA-F]{4})\b", rest)
        if names:
            found.gpu(names[0], i, "lspci")
        elif ids:
            found.gpu(ids[0], i, "lspci")
        elif device:
            found.gpu(f"10de:{device.group(1)}", i, "lspci")
        return
    driver = re.match(r"^\s*Kernel driver in use:\s*(\S+)", line)
    if driver:
        found.block("lspci", i, i)
        if driver.group(1) == "nouveau":
            found.fact("nouveau_loaded", True, i, "lspci")
        elif driver.group(1) in ("nvidia", "nvidia-open"):
            found.fact("driver_loaded", True, i, "lspci")


def _modules(found: Found, i: int, line: str) -> None:
    low = line.lower()
    if re.search(r"modprobe: fatal: module nvidia\S* not found", low):
        found.block("modprobe", i, i)
        found.fact("driver_loaded", False, i, "modprobe")
        found.fact("kernel_module_missing", True, i, "modprobe")
    elif "key was rejected by service" in low or "required key not available" in low:
        found.block("modprobe", i, i)
        found.fact("secure_boot", True, i, "modprobe")
    elif re.search(r"secureboot (enabled|disabled)", low):
        found.block("modprobe", i, i)
        found.fact("secure_boot", "enabled" in low, i, "modprobe")
    elif "dkms" in low and re.search(r"bad return status|bad exit status|build failed|error!", low):
        found.block("modprobe", i, i)
        found.fact("dkms_failed", True, i, "modprobe")


def _docker(found: Found, i: int, line: str) -> None:
    m = _DOCKER.search(line)
    assert m is not None
    found.block("docker_run", i, i)
    runtime = "podman" if m.group(1) == "podman" else "docker"
    found.fact("container", runtime, i, "docker_run")
    asked = bool(_GPUS_ASKED.search(line)) or m.group(1) == "nvidia-docker"
    j = i
    while not asked and found.lines[j].rstrip().endswith("\\") and j + 1 < len(found.lines) and j - i < 40:
        j += 1  # a command continued over lines
        asked = bool(_GPUS_ASKED.search(found.lines[j]))
    found.fact("docker_gpus", asked, i, "docker_run")
    if not any(f.key == "container" for f in found.facts):  # what follows ran in that container
        found.fact("container", "docker", i, "docker_run")


def _pip_install(found: Found, i: int, line: str) -> None:
    """'pip install -U "jax[cuda12]" torch==2.5.1': the packages asked for (not proof they installed)."""
    m = _PIP_INSTALL.match(line)
    if m is None:
        return
    names = []
    for word in m.group(1).split():
        word = word.strip("'\"")
        if not word or word.startswith(("-", "http", ".", "/")) or "://" in word:
            continue
        name = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)", word)
        if name:
            names.append(name.group(1).lower().replace("_", "-"))
    if names:
        found.block("platform", i, i)
        found.fact("pip_install", " ".join(names[:40]), i, "platform")


def _os_release(found: Found, i: int, m: "re.Match[str]") -> None:
    value = m.group(2) if m.group(1) else m.group(4)
    os = os_of_text(value or "")
    if os == "linux":
        found.block("os_release", i, i)
        found.fact("os", os, i, "os_release")


def _uname(found: Found, i: int, line: str, system: str) -> None:
    found.block("uname", i, i)
    if system == "Darwin":
        found.fact("os", "macos", i, "uname")
        return
    found.fact("os", "linux", i, "uname")
    low = line.lower()
    if "microsoft" in low:
        found.fact("wsl", True, i, "uname")
        if "wsl2" not in low and "microsoft-standard" not in low:
            found.fact("wsl1", True, i, "uname")


def _platform(found: Found) -> None:
    """Paths and prompts: weak hints, used only where no output named the OS or the container."""
    have = {f.key for f in found.facts}
    for i in found.lines_with(*HINTS):
        line = found.lines[i]
        if "os" not in have and ("/Users/" in line or "homebrew" in line or "/Library/" in line or "macosx_" in line) \
                and _MACOS_PATH.search(line):
            found.block("platform", i, i)
            found.fact("os", "macos", i, "platform")
            have.add("os")
        elif "os" not in have and ("\\" in line or "WinError" in line or ".dll" in line) and _WINDOWS_PATH.search(line):
            found.block("platform", i, i)
            found.fact("os", "windows", i, "platform")
            have.add("os")
        if "container" not in have and "root@" in line and _DOCKER_PROMPT.match(line):
            found.block("platform", i, i)
            found.fact("container", "docker", i, "platform")
            have.add("container")
        site = _SITE_PYTHON.search(line) if "python" not in have and "-packages" in line else None
        if site:
            found.block("platform", i, i)
            found.fact("python", site.group(1), i, "platform")
            have.add("python")
        ext = _EXTENSION.search(line) if (".cpython-3" in line or ".cp3" in line) else None
        if ext:
            linux, windows, macos = ext.groups()
            if "python" not in have:
                found.block("platform", i, i)
                found.fact("python", f"3.{linux or windows or macos}", i, "platform")
                have.add("python")
            if "os" not in have:
                found.block("platform", i, i)
                found.fact("os", "linux" if linux else "windows" if windows else "macos", i, "platform")
                have.add("os")
        if "os" not in have and ("PS " in line or "ComObject" in line or "RawContentLength" in line) \
                and _POWERSHELL.match(line):
            found.block("platform", i, i)
            found.fact("os", "windows", i, "platform")
            have.add("os")
        if "wsl1" not in have and "Microsoft" in line and re.search(r"\b\d+\.\d+\.\d+-\d+-Microsoft\b", line):
            found.block("platform", i, i)
            found.fact("wsl", True, i, "platform")
            found.fact("wsl1", True, i, "platform")
            have.update(("wsl", "wsl1"))
        if "wsl" not in have and ("/usr/lib/wsl/lib" in line or "microsoft-standard-WSL2" in line):
            found.block("platform", i, i)
            found.fact("wsl", True, i, "platform")
            have.add("wsl")
