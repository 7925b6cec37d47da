"""What redaction looks for (docs/reports.md): secret-looking names and token shapes, URL
credentials, UUIDs, addresses, home folders, the names too generic to replace, and the
:class:`Identity` of whoever writes the report. :mod:`cudadoctor.reports.redact` applies them."""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Mapping, Optional, Tuple

SECRET_WORDS = "TOKEN|KEY|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION"
# Shorter words that are secret only as a whole part of a name: DB_PASS, FTP_PWD, GITLAB_PAT,
# AWS_CREDS, but not PATH, COMPASS, PWD (the current folder) or OLDPWD.
SECRET_PARTS = r"_(?:PASS|PWD|PAT)(?![A-Za-z0-9])|(?<![A-Za-z0-9])CRED|_CRED"
SECRET_NAME = re.compile(rf"{SECRET_WORDS}|{SECRET_PARTS}", re.IGNORECASE)  # a variable (or key) whose value is secret
# A whole name (a run of [A-Za-z0-9_]) holding a secret word, taken at once: the lookahead finds the
# run and the back-reference consumes it, so that no other split of the run is tried (linear time:
# a long run such as TOKEN_TOKEN_..._TOKEN is read once, not once per split).
SECRET_VARIABLE = rf"[A-Za-z0-9_]*(?:{SECRET_WORDS}|{SECRET_PARTS})[A-Za-z0-9_]*"
# (The secret word is looked for in a name's first 128 characters: no variable's name is longer.)
_WHOLE_SECRET_VARIABLE = rf"(?=(?P<{{0}}>[A-Za-z0-9_]{{{{0,128}}}}?(?:{SECRET_WORDS}|{SECRET_PARTS})[A-Za-z0-9_]*))(?P={{0}})"
# NAME=value, NAME: value, --name value, "name": "value" in any text (the value up to a space or quote)
ASSIGNMENT = re.compile(rf"(?i)(?<![A-Za-z0-9_])(--{_WHOLE_SECRET_VARIABLE.format('option')}(?:=|\s+)"
                        rf"|{_WHOLE_SECRET_VARIABLE.format('name')}['\"]?\s*(?:=|:\s)\s*)"
                        r"(?!<redacted>|(?:bearer|basic|token)\s)(?P<quote>['\"]?)(?P<value>[^\s'\";,]+)")
# Secret values too common to replace wherever they appear ("1" or "true" in another variable is no leak).
TRIVIAL_SECRETS = frozenset({"true", "false", "none", "null", "unset", "auto", "never", "always", "default",
                             "enabled", "disabled", "empty", "changeme", "redacted"})
MIN_SECRET = 4  # a secret value this long or longer is replaced wherever it stands as a word
MIN_SECRET_ANYWHERE = 8  # and this long or longer, inside other words too


def is_secret_name(name: str) -> bool:
    """True when a variable or mapping key of this name holds a secret: it contains ``TOKEN``,
    ``KEY``, ``SECRET``, ``PASSWORD``, ``PASSWD``, ``PASSPHRASE``, ``CREDENTIAL``, ``AUTH``,
    ``COOKIE`` or ``SESSION``, starts with ``CRED`` or has a part ``_CRED...``, or has a part
    ``_PASS``, ``_PWD`` or ``_PAT`` (any case)."""
    return bool(SECRET_NAME.search(name))


AUTH_HEADER = re.compile(r"(?i)(authorization\s*[:=]\s*(?:bearer|basic|token)?\s*)(?!<redacted>)[^\s'\",;]+")
TOKEN_SHAPES = re.compile(
    r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}"
    r"|hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|A[KS]IA[0-9A-Z]{16})(?![A-Za-z0-9])")
# The userinfo runs to the LAST @ before the host's end (RFC 3986 wants @ in a password encoded,
# people do not): https://u:p@ss@host/ must lose "p@ss" whole.
# (A scheme starts where a run of scheme characters starts: "-a-a-a…" is tried once, not at every "a".)
URL_CREDENTIALS = re.compile(r"(?i)(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*://)(?!<redacted>@)[^/\s'\"<>]+@")
# A conda channel token: https://conda.anaconda.org/t/<token>/channel/... (any host serving one, any
# case of /t/, with or without the scheme). Read word by word (cudadoctor.reports.redact): in a word
# (a run without blanks, quotes or = , ;), /t/ and the token after a "://", or after a host name
# that starts the word or one of its ":"-separated parts (conda.anaconda.org/t/<token>/...).
URL_WORD = re.compile(r"[^\s'\"<>=,;]+")
CONDA_TOKEN = re.compile(r"(?i)/t/(?!<redacted>(?:/|$))([^/]+)")
CONDA_HOST = re.compile(r"(?<![\w.-])[\w-]+(?:\.[\w-]+)+(?=/)")

UUID_TEXT = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
GPU_UUID = re.compile(rf"(?<![A-Za-z0-9])(?:GPU|MIG)-{UUID_TEXT}(?![A-Za-z0-9])")
GPU_PREFIX = re.compile(r"(?<![A-Za-z0-9])((?:GPU|MIG)-[0-9a-fA-F]{4}[0-9a-fA-F-]*)(?![A-Za-z0-9-])")
BARE_UUID = re.compile(rf"(?<![A-Za-z0-9-]){UUID_TEXT}(?![A-Za-z0-9-])")
MAC = re.compile(r"(?<![\w:.-])[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(?:\1[0-9A-Fa-f]{2}){4}(?![\w:-])")
IPV4 = re.compile(r"(?<![\w.-])(?<![<>=!~]=)(?:\d{1,3}\.){3}\d{1,3}(?![\w-]|\.\w)")
# A range of addresses, 10.0.0.1-10.0.0.9: IPV4 refuses an address next to "-" (cuda-12.4.1.2
# is no address), so ranges are found as a whole.
IPV4_RANGE = re.compile(r"(?<![\w.-])((?:\d{1,3}\.){3}\d{1,3})-((?:\d{1,3}\.){3}\d{1,3})(?![\w-]|\.\w)")
IPV6 = re.compile(r"(?<![\w:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?:%[\w.]+)?(?![\w:])")
HOME_DIR = re.compile(r"(/home/|/Users/|[A-Za-z]:[\\/]Users[\\/]|\\Users\\)([^/\\\s:;,'\"<>|*?]+)")
# Names that say nothing about anyone, and words a free-text replacement would damage.
GENERIC = frozenset({
    "root", "user", "users", "admin", "administrator", "ubuntu", "debian", "fedora", "centos", "rocky", "alma",
    "jovyan", "runner", "vagrant", "docker", "nvidia", "cuda", "conda", "python", "builder", "build", "ec2-user",
    "localhost", "linux", "host", "node", "main", "master", "server", "desktop", "laptop", "workstation", "gpu",
    "shared", "public", "default", "all users", "linuxbrew", "guest", "redacted", "hostname", "serial", "home",
    "none", "null", "unknown", "test", "tests", "local", "container", "runneradmin", "codespace",
    # words of every path and report: a user named "dev" or "torch" must not turn /dev/nvidia0
    # into /<user>/nvidia0 (user names are now learned from the writer's environment too)
    "dev", "bin", "sbin", "lib", "lib64", "usr", "etc", "opt", "var", "tmp", "sys", "proc", "run", "mnt", "media",
    "srv", "snap", "boot", "src", "include", "share", "data", "work", "scratch", "torch", "pytorch", "jax",
    "tensorflow", "cupy", "pip", "venv", "env", "envs", "nccl", "cudnn", "driver", "smoke", "report",
})
# HOME values that are no one's (a service account's, a sandbox's): replacing them would hide
# system paths every report shares.
SYSTEM_HOMES = frozenset({"/", "/root", "/tmp", "/var/tmp", "/nonexistent", "/var/empty", "/dev/null", "/home",
                          "/Users", "/var/lib", "/usr", "/opt", "/srv", "/var", "/run"})
# Fields that hold our own vocabulary (codes, categories, statuses), never facts of the machine.
IDENTIFIER_FIELDS = frozenset({
    "code", "caused_by", "evidence", "source", "confidence", "severity", "category", "status", "suite",
    "probe", "kind", "tier", "shell", "version_source", "schema_version", "redaction",
})
# Fields whose values are versions: never read as IP addresses (cuBLAS 12.4.5.8 is no address).
VERSION_FIELDS = ("version", "cuda", "cudnn", "nccl", "glibc", "kernel")
# In free text (the lines triage quotes), what stands before a dotted quad that is a version, not an
# address: a version word or operator ("cuDNN version: 8.9.7.29", "==8.9.2.26"), or a package's
# name in a list's first column ("nvidia-cudnn-cu12   8.9.2.26"), unless that word names an address.
VERSION_BEFORE = re.compile(
    r"(?i)(?:version|release|build|==|>=|<=|~=|!=|(?<![A-Za-z0-9])v)\s*(?:[:=]\s*)?$"
    r"|^\s*(?!(?:inet6?|ip|addr|address|host|server|peer|from|to|via|nameserver|gateway)\s)[A-Za-z][\w.+-]*\s+$")



@dataclasses.dataclass(frozen=True)
class Identity:
    """Who writes the report: user names and home directories to redact besides those the
    snapshot holds. The env probe keeps only GPU-related variables, so a ``HOME`` outside
    ``/home`` (``/scratch/maya``, ``/u/maya``) is known only to the process writing the report."""

    users: Tuple[str, ...] = ()
    homes: Tuple[str, ...] = ()


def local_identity(environ: Optional[Mapping[str, str]] = None) -> Identity:
    """The :class:`Identity` of this process: ``USER``, ``LOGNAME``, ``USERNAME``, ``SUDO_USER``,
    ``HOME`` and ``USERPROFILE`` of ``environ`` (default: ``os.environ``), and the user name and
    home directory of the passwd entry of the real user (they differ under ``sudo`` or ``su``)."""
    env = os.environ if environ is None else environ
    users = [env.get(k, "") for k in USER_VARIABLES]
    homes = [env.get(k, "") for k in HOME_VARIABLES]
    try:
        import pwd  # not on Windows

        entry = pwd.getpwuid(os.getuid())
        users.append(entry.pw_name)
        homes.append(entry.pw_dir)
    except (ImportError, KeyError, AttributeError):  # no pwd module, or a uid without an entry (containers)
        pass
    return Identity(tuple(dict.fromkeys(u for u in users if u)), tuple(dict.fromkeys(h for h in homes if h)))


USER_VARIABLES = ("USER", "LOGNAME", "USERNAME", "SUDO_USER")
HOME_VARIABLES = ("HOME", "USERPROFILE")
