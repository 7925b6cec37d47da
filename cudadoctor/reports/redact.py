"""Redaction: a Report made safe to paste into a public bug tracker (docs/reports.md).

:func:`redact` is a pure function, ``Report -> (Report, RedactionSummary)``. It walks every
dataclass of the report generically (each string field, dict keys and values, tuples), so a field
added to the model later is covered without touching this module. It replaces:

- the username and home directories: ``/home/maya``, ``/Users/maya``, ``C:\\Users\\maya`` (any
  user's), and the username wherever it stands as a word: ``<user>`` (another user's name:
  ``<user-2>``, ...); a ``HOME`` elsewhere: ``<home>``. User names and homes are learned from the
  snapshot (``host.username``, ``USER``, ``LOGNAME``, ``USERNAME``, ``SUDO_USER``, ``HOME``,
  ``USERPROFILE``) and from the ``Identity`` of the process writing the report (its environment
  and passwd entry, :mod:`cudadoctor.reports.redact_rules`: the env probe does not keep ``HOME``);
- the hostname (``host.hostname``, and wherever it stands as a word): ``<hostname>``;
- GPU UUIDs: ``GPU-a``, ``GPU-b``, ... in GPU index order (``MIG-a`` for MIG devices; a prefix
  of a UUID, as ``CUDA_VISIBLE_DEVICES`` allows, becomes the same pseudonym, or
  ``GPU-unmatched-1`` when it names no GPU); other UUIDs:
  ``<uuid-1>``; GPU serials: ``<serial-a>``;
- IPv4 and IPv6 addresses (loopback excepted), also both ends of a range ``a.b.c.d-a.b.c.e``:
  ``<ip-1>``; MAC addresses: ``<mac-1>``;
- values of dict entries whose key looks secret (``is_secret_name``), wherever those values
  appear (a value of 4 characters or more, not a common word such as ``true``: where it stands as
  a word; 8 or more: inside any word too), ``NAME=value`` assignments of such names in text,
  ``Authorization:`` headers and well-known token shapes: ``<redacted>``;
- credentials in URLs: ``https://user:pass@host/`` becomes ``https://<redacted>@host/`` (the
  userinfo runs to the last ``@`` before the host, so a password may hold ``@``); conda channel
  tokens ``/t/<token>/``: ``/t/<redacted>/``;
- every match of the caller's extra patterns (``--redact PATTERN``): ``<redacted>``.

Pseudonyms are stable within one report: the same value always gets the same placeholder, so
"GPU-a" is the same GPU in the facts, the findings and the JSON, and equal paths stay equal (which
keeps the diagnosis of a redacted snapshot the same as of the original). Identifier fields (finding
codes, categories, evidence, sources, statuses) are never touched.

For other modules (``cudadoctor diff`` among them): :data:`REDACTED`, :data:`PLACEHOLDER` (a regex
matching every placeholder this module writes), :func:`is_redacted` and :class:`Pseudonyms`;
:func:`redact_texts` applies the same rules to texts outside a report (what triage quotes).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import ipaddress
import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Pattern, Sequence, Set, Tuple

from cudadoctor.model import Report, Snapshot
from cudadoctor.reports.redact_rules import (
    ASSIGNMENT, AUTH_HEADER, BARE_UUID, CONDA_HOST, CONDA_TOKEN, GENERIC, GPU_PREFIX, GPU_UUID, HOME_DIR, HOME_VARIABLES,
    IDENTIFIER_FIELDS, IPV4, IPV4_RANGE, IPV6, Identity, MAC, MIN_SECRET, MIN_SECRET_ANYWHERE, SYSTEM_HOMES,
    TOKEN_SHAPES, TRIVIAL_SECRETS, URL_CREDENTIALS, URL_WORD, USER_VARIABLES, VERSION_BEFORE, VERSION_FIELDS, is_secret_name,
)

REDACTED = "<redacted>"
USER = "<user>"
HOSTNAME = "<hostname>"
# Every placeholder redact() writes: <redacted>, <user>, <user-2>, <hostname>, <ip-1>, <mac-1>,
# <uuid-1>, <serial-a>, and the GPU-a / MIG-a pseudonyms of GPU UUIDs.
PLACEHOLDER = re.compile(r"<(?:redacted|user(?:-\d+)?|hostname|home|(?:ip|mac|uuid)-\d+|serial-[a-z]+)>"
                         r"|(?<![A-Za-z0-9])(?:GPU|MIG)-(?:[a-y]|z+[a-y]|unmatched-\d+)(?![A-Za-z0-9])")


def is_redacted(value: str) -> bool:
    """True when ``value`` carries a placeholder of this module (the real value is unknown)."""
    return bool(PLACEHOLDER.search(value))


def letters(n: int) -> str:
    """0 -> a, ..., 24 -> y, 25 -> za, 26 -> zb, ...: no label is a prefix of another, so a prefix
    match between pseudonyms means what it meant between the UUIDs."""
    return "z" * (n // 25) + "abcdefghijklmnopqrstuvwxy"[n % 25]


LABELS: Dict[str, Callable[[int], str]] = {
    "username": lambda n: USER if n == 0 else f"<user-{n + 1}>",
    "hostname": lambda n: HOSTNAME,
    "gpu_serial": lambda n: f"<serial-{letters(n)}>",
    "uuid": lambda n: f"<uuid-{n + 1}>",
    "ip": lambda n: f"<ip-{n + 1}>",
    "mac": lambda n: f"<mac-{n + 1}>",
}


class Pseudonyms:
    """Stable placeholders: ``name(kind, value)`` gives the same label for the same value, numbered
    per kind in the order values are first seen. Kinds: those of :data:`LABELS`; ``gpu_uuid``,
    whose value is ``GPU-<uuid>`` or ``MIG-<uuid>`` (label ``GPU-a``, ``MIG-b``, ...); and
    ``gpu_unmatched``, a UUID prefix that names no GPU (``GPU-unmatched-1``)."""

    def __init__(self) -> None:
        self._names: Dict[Tuple[str, str], str] = {}
        self._seen: Dict[str, int] = {}

    def name(self, kind: str, value: str) -> str:
        key = (kind, value.lower() if kind in ("gpu_uuid", "gpu_unmatched", "uuid", "mac", "hostname") else value)
        label = self._names.get(key)
        if label is None:
            n = self._seen.get(kind, 0)
            self._seen[kind] = n + 1
            if kind in ("gpu_uuid", "gpu_unmatched"):  # GPU-a, MIG-b; GPU-unmatched-1
                label = f"{value[:3].upper()}-{letters(n) if kind == 'gpu_uuid' else f'unmatched-{n + 1}'}"
            else:
                label = LABELS[kind](n)
            self._names[key] = label
        return label

    def known(self, kind: str) -> List[Tuple[str, str]]:
        """(value, label) of every value of ``kind`` named so far."""
        return [(value, label) for (k, value), label in self._names.items() if k == kind]

    def count(self, kind: str) -> int:
        return self._seen.get(kind, 0)


@dataclasses.dataclass(frozen=True)
class RedactionSummary:
    """What was redacted: distinct values replaced, per kind (see :data:`KIND_WORDS`)."""

    counts: Dict[str, int]
    patterns: Tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def describe(self) -> str:
        """'1 username, 1 hostname, 2 GPU UUIDs', or 'nothing private found'."""
        parts = []
        for kind, (one, many) in KIND_WORDS.items():
            n = self.counts.get(kind, 0)
            if n:
                parts.append(f"{n} {one if n == 1 else many}")
        return ", ".join(parts) or "nothing private found"


KIND_WORDS: Dict[str, Tuple[str, str]] = {
    "username": ("username", "usernames"),
    "home": ("home directory", "home directories"),
    "hostname": ("hostname", "hostnames"),
    "gpu_uuid": ("GPU UUID", "GPU UUIDs"),
    "gpu_serial": ("GPU serial", "GPU serials"),
    "uuid": ("other UUID", "other UUIDs"),
    "ip": ("IP address", "IP addresses"),
    "mac": ("MAC address", "MAC addresses"),
    "secret": ("secret value", "secret values"),
    "url_credentials": ("URL credential", "URL credentials"),
    "pattern": ("--redact match", "--redact matches"),
}


def redact(report: Report, extra_patterns: Sequence[str] = (), keep_hostname: bool = False,
           local: Identity = Identity()) -> Tuple[Report, RedactionSummary]:
    """The report with private values replaced by placeholders, and what was replaced.

    ``extra_patterns`` are regular expressions (``re`` syntax); ``re.error`` propagates for an
    invalid one. ``local``: user names and homes of whoever writes the report, redacted too (see
    :func:`local_identity`). The result's ``redaction`` field says that and how the report was redacted."""
    scrubber = _Scrubber(report.snapshot, [re.compile(p) for p in extra_patterns], keep_hostname, local)
    redacted = _walk(dataclasses.replace(report, redaction=None), scrubber, None)
    summary = RedactionSummary(scrubber.counts(), tuple(extra_patterns))
    note = (f"Redacted by cudadoctor: {summary.describe()}; placeholders such as <user>, <hostname> and "
            "GPU-a stand for the same value everywhere in this report. `cudadoctor report --no-redact` keeps "
            "the values.")
    result: Report = dataclasses.replace(redacted, redaction=note)
    return result, summary


def redact_texts(texts: Sequence[str], snapshot: Optional[Snapshot] = None, extra_patterns: Sequence[str] = (),
                 local: Identity = Identity(), secrets: Sequence[str] = ()) -> Tuple[Tuple[str, ...], RedactionSummary]:
    """Texts that are not part of a report (the lines of an issue that ``cudadoctor triage``
    quotes) through the same rules, with the same pseudonyms across all of them. The private
    values are learned from ``snapshot`` (the machine the texts describe) and from the texts
    themselves (their addresses); home folders, credentials in URLs, secret assignments and token
    shapes are found wherever they stand. ``secrets``: values replaced wherever they appear,
    whatever their form (triage's own token)."""
    snap = snapshot if snapshot is not None else Snapshot()
    scrubber = _Scrubber(snap, [re.compile(p) for p in extra_patterns], False, local)
    scrubber.secrets = sorted({*scrubber.secrets, *(s for s in secrets if s)}, key=len, reverse=True)
    for text in texts:  # a free text's dotted quads: addresses, unless a version stands there
        for m in IPV4.finditer(text):
            if _is_address(m.group(0)) and not VERSION_BEFORE.search(_line_before(text, m.start())):
                scrubber.ips.add(m.group(0))
        if text.count(":") >= 2:
            scrubber._learn_ips(IPV4.sub("", text))
    out = tuple(scrubber(text) for text in texts)
    return out, RedactionSummary(scrubber.counts(), tuple(extra_patterns))


# ------------------------------------------------------------------------------ the walk


def _walk(value: Any, scrub: "_Scrubber", name: Optional[str]) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            if f.name in IDENTIFIER_FIELDS:
                continue
            old = getattr(value, f.name)
            new = _walk(old, scrub, f.name)
            if new is not old:
                changes[f.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    if isinstance(value, enum.Enum):
        return value
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, tuple):
        return tuple(_walk(v, scrub, name) for v in value)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = scrub(k) if isinstance(k, str) else k
            if isinstance(k, str) and isinstance(v, str) and is_secret_name(k) and v:
                out[key] = scrub.secret(v)
            else:
                out[key] = _walk(v, scrub, name)
        return out
    return value


def _strings(value: Any, name: Optional[str] = None) -> Iterable[Tuple[Optional[str], str]]:
    """Every (field name, string) of a dataclass tree, identifier fields left out."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            if f.name not in IDENTIFIER_FIELDS:
                yield from _strings(getattr(value, f.name), f.name)
    elif isinstance(value, enum.Enum):
        return
    elif isinstance(value, str):
        yield name, value
    elif isinstance(value, tuple):
        for v in value:
            yield from _strings(v, name)
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str):
                yield name, k
            if isinstance(k, str) and isinstance(v, str) and is_secret_name(k):
                yield "$secret", v
            else:
                yield from _strings(v, name)


class _Scrubber:
    """The string transformation: learns the private values of a snapshot, then replaces them."""

    def __init__(self, snap: Snapshot, patterns: Sequence[Pattern[str]], keep_hostname: bool, local: Identity) -> None:
        self.names = Pseudonyms()
        self.patterns = patterns
        self.hits: Dict[str, Set[str]] = {}
        self.secrets: List[str] = []
        self.short_secrets: List[Tuple[str, Pattern[str]]] = []
        self.words: List[Tuple[Pattern[str], str, str]] = []  # (pattern, the name it spells, kind)
        self.ips: Set[str] = set()
        self.homes: List[Tuple[Pattern[str], str]] = []
        self.hostname: Optional[str] = None
        self.username: Optional[str] = None
        self.serials: List[Tuple[str, str]] = []
        self.version_like: Set[str] = set()
        self._learn(snap, keep_hostname, local)

    def counts(self) -> Dict[str, int]:
        return {kind: len(values) for kind, values in self.hits.items() if values}

    def _hit(self, kind: str, value: str) -> None:
        self.hits.setdefault(kind, set()).add(value)

    def _learn(self, snap: Snapshot, keep_hostname: bool, local: Identity) -> None:
        for gpu in snap.gpus or ():  # GPU-a is GPU 0, whatever order the strings come in
            if gpu.uuid and GPU_UUID.fullmatch(gpu.uuid):
                self.names.name("gpu_uuid", gpu.uuid)
            if gpu.serial and gpu.serial.strip():
                self.names.name("gpu_serial", gpu.serial.strip())
        self._learn_people(snap, keep_hostname, local)
        for name, text in _strings(snap):
            if name == "$secret" and text and text != REDACTED:
                self.secrets.append(text)
            elif not (name and name.endswith(VERSION_FIELDS)):
                self._learn_ips(text)
        # A secret's value is replaced wherever else it appears (XLA_FLAGS=--x=<value>): from
        # MIN_SECRET characters on where it stands as a word, from MIN_SECRET_ANYWHERE on inside
        # words too; shorter or trivial values ("1", "true") would damage every other string.
        values = {s for s in self.secrets if len(s) >= MIN_SECRET and s.lower() not in TRIVIAL_SECRETS}
        self.secrets = sorted((s for s in values if len(s) >= MIN_SECRET_ANYWHERE), key=len, reverse=True)
        self.short_secrets = [(s, _word(s)) for s in sorted((s for s in values if len(s) < MIN_SECRET_ANYWHERE),
                                                             key=len, reverse=True)]
        self.serials = self.names.known("gpu_serial")
        self.version_like = {text for name, text in _strings(snap) if name and name.endswith(VERSION_FIELDS)}

    def _learn_people(self, snap: Snapshot, keep_hostname: bool, local: Identity) -> None:
        """The usernames, the home directories and the hostname, and the words that spell them."""
        host, env = snap.host, snap.env or {}
        users = [_real(u) for u in ((host.username if host else None), *(env.get(k) for k in USER_VARIABLES),
                                    *local.users)]
        known = [u for u in dict.fromkeys(u for u in users if u)]
        self.username = known[0] if known else None
        if self.username:
            self.names.name("username", self.username)  # <user>; the others are numbered as they are met
        for user in known:
            if len(user) >= 3 and user.lower() not in GENERIC:
                # any case: MAYA in a path or a variable is still maya (and Windows ignores case)
                self.words.append((_word(user, re.IGNORECASE), user, "username"))
        for home in dict.fromkeys(h for h in (*(env.get(k) for k in HOME_VARIABLES), *local.homes) if h):
            home = home.rstrip("/\\")
            if len(home.strip("/\\")) > 2 and not HOME_DIR.search(home) and home not in SYSTEM_HOMES \
                    and _real(home):
                # the home as a whole path part: /u/ma is not the start of /u/max; /srv//maya is /srv/maya
                parts = re.split(r"[/\\]+", home)
                pattern = r"[/\\]+".join(re.escape(p) for p in parts) + r"(?![^/\\\s:;,'\"<>|])"
                self.homes.append((re.compile(pattern), parts[-1]))
        hostname = _real(host.hostname if host else None)
        if hostname and not keep_hostname:
            # the full name first, then its first label; both before the username ("maya-laptop"
            # is the hostname, not "<user>-laptop")
            words = [w for w in dict.fromkeys((hostname, hostname.split(".")[0]))
                     if len(w) >= 3 and w.lower() not in GENERIC]
            self.words[:0] = [(_word(w, re.IGNORECASE), HOSTNAME, "hostname") for w in words]
        self.hostname = None if keep_hostname else hostname

    def _learn_ips(self, text: str) -> None:
        if "." in text:
            for m in IPV4.finditer(text):
                if _is_address(m.group(0)):
                    self.ips.add(m.group(0))
            for m in IPV4_RANGE.finditer(text):
                self.ips.update(ip for ip in m.groups() if _is_address(ip))
        if text.count(":") >= 2:
            for m in IPV6.finditer(text):
                if _is_address(m.group(0).split("%")[0]):
                    self.ips.add(m.group(0))

    # ------------------------------------------------------------------ replacing

    def secret(self, value: str) -> str:
        if value != REDACTED:
            self._hit("secret", value)
        return REDACTED

    def __call__(self, text: str) -> str:
        if not text:
            return text
        if self.hostname and text == self.hostname:
            return self._sub("hostname", text, HOSTNAME)
        if self.username and text == self.username:  # the field itself, even when the name is generic
            return self._sub("username", text, USER)
        for pattern in self.patterns:
            text = pattern.sub(lambda m: self._sub("pattern", m.group(0), REDACTED), text)
        for secret in self.secrets:
            if secret in text:
                self._hit("secret", secret)
                text = text.replace(secret, REDACTED)
        for secret, word in self.short_secrets:
            if secret in text:
                text = word.sub(self._replacer("secret", REDACTED), text)
        text = AUTH_HEADER.sub(lambda m: m.group(1) + self._sub("secret", m.group(0), REDACTED), text)
        text = ASSIGNMENT.sub(lambda m: m.group(1) + m.group("quote") + self._sub("secret", m.group("value"), REDACTED),
                              text)
        text = TOKEN_SHAPES.sub(lambda m: self._sub("secret", m.group(0), REDACTED), text)
        if "/t/" in text or "/T/" in text:
            text = URL_WORD.sub(self._conda_tokens, text)
        if "://" in text:
            text = URL_CREDENTIALS.sub(
                lambda m: m.group(1) + self._sub("url_credentials", m.group(0), REDACTED) + "@", text)
        if "-" in text:
            text = self._uuids(text)
        text = self._serials(text)
        text = self._addresses(text)
        text = self._home(text)
        for pattern, name, kind in self.words:
            text = pattern.sub(self._replacer(kind, HOSTNAME) if kind == "hostname" else self._user(name), text)
        return text

    def _conda_tokens(self, m: "re.Match[str]") -> str:
        """A word with conda channel tokens (``https://HOST/t/<token>/...``, ``HOST/t/<token>/...``), redacted."""
        word = m.group(0)
        if "/t/" not in word and "/T/" not in word:
            return word
        url = word.find("://")
        if url >= 0:
            return word[:url] + CONDA_TOKEN.sub(self._conda_token, word[url:])
        return ":".join(CONDA_TOKEN.sub(self._conda_token, part) if CONDA_HOST.match(part) else part
                        for part in word.split(":"))

    def _conda_token(self, m: "re.Match[str]") -> str:
        return m.group(0)[:3] + self._sub("secret", m.group(1), REDACTED)

    def _user(self, name: str) -> Callable[["re.Match[str]"], str]:
        return lambda m: self._sub("username", m.group(0), self.names.name("username", name))

    def _replacer(self, kind: str, placeholder: str) -> Callable[["re.Match[str]"], str]:
        return lambda m: self._sub(kind, m.group(0), placeholder)

    def _sub(self, kind: str, value: str, placeholder: str) -> str:
        self._hit(kind, "the hostname" if kind == "hostname" else value)
        return placeholder

    def _uuids(self, text: str) -> str:
        text = GPU_UUID.sub(lambda m: self._named("gpu_uuid", m.group(0)), text)
        text = GPU_PREFIX.sub(self._gpu_prefix, text)
        return BARE_UUID.sub(lambda m: self._named("uuid", m.group(0)), text)

    def _serials(self, text: str) -> str:
        for serial, label in self.serials:
            if text == serial:
                return self._sub("gpu_serial", serial, label)
            if len(serial) >= 6 and serial in text:
                text = _word(serial).sub(self._replacer("gpu_serial", label), text)
        return text

    def _named(self, kind: str, value: str) -> str:
        self._hit(kind, value.lower())
        return self.names.name(kind, value)

    def _gpu_prefix(self, m: "re.Match[str]") -> str:
        """A UUID prefix (``CUDA_VISIBLE_DEVICES=GPU-8f6c``) becomes the pseudonym of the GPU it
        names, or ``GPU-unmatched-N`` when it names none (a prefix of no pseudonym either)."""
        prefix = m.group(1).lower()
        matches = [(uuid, label) for uuid, label in self.names.known("gpu_uuid") if uuid.startswith(prefix)]
        if len(matches) == 1:
            self._hit("gpu_uuid", matches[0][0])
            return matches[0][1]
        self._hit("gpu_uuid", prefix)
        return self.names.name("gpu_unmatched", prefix)

    def _addresses(self, text: str) -> str:
        if text.count(":") >= 5 or text.count("-") >= 5:
            text = MAC.sub(lambda m: self._named("mac", m.group(0)), text)
        if not self.ips:
            return text
        if "." in text:
            text = IPV4.sub(self._ip, text)
            text = IPV4_RANGE.sub(lambda m: f"{self._ip_text(m.group(1))}-{self._ip_text(m.group(2))}", text)
        if text.count(":") >= 2:
            text = IPV6.sub(self._ip, text)
        return text

    def _ip(self, m: "re.Match[str]") -> str:
        return self._ip_text(m.group(0))

    def _ip_text(self, value: str) -> str:
        if value not in self.ips or value in self.version_like:
            return value
        self._hit("ip", value)
        return self.names.name("ip", value)

    def _home(self, text: str) -> str:
        for pattern, last in self.homes:  # (the pattern, the home's last part: found before the pattern runs)
            if last in text:
                text = pattern.sub(self._replacer("home", "<home>"), text)
        if "Users" not in text and "/home/" not in text:
            return text

        def user(m: "re.Match[str]") -> str:
            name = m.group(2)
            if name.lower() in GENERIC or PLACEHOLDER.fullmatch(name):
                return m.group(0)
            self._hit("home", m.group(1) + name)
            label = self.names.name("username", name)
            if label == USER:
                self._hit("username", name)
            return m.group(1) + label

        return HOME_DIR.sub(user, text)


def _line_before(text: str, at: int, limit: int = 64) -> str:
    """What stands before ``at`` on its line, at most ``limit`` characters (a longer part starts with
    a NUL, so that it is not taken for the line's start)."""
    start = text.rfind("\n", max(0, at - limit), at) + 1
    if start == 0 and at > limit:
        return "\x00" + text[at - limit:at]
    return text[start:at]


def _real(value: Optional[str]) -> Optional[str]:
    """``value``, or None when it is empty or already a placeholder (a report redacted twice)."""
    return value if value and not PLACEHOLDER.fullmatch(value) and value != "<home>" else None


def _word(value: str, flags: int = 0) -> Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])", flags)


@functools.lru_cache(maxsize=4096)
def _is_address(text: str) -> bool:
    """A real IP address worth hiding: not loopback, not unspecified."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    return not (address.is_loopback or address.is_unspecified)
