"""The invariants of ``errors.json``: sorted unique ids, safe patterns, examples that their own
signature matches (first, or after the one the record names) and the schema's category list equal
to :class:`cudadoctor.model.Category`. Run by ``cudadoctor data validate`` and the tests, never by a
diagnosis, so :mod:`.signatures` loads this module only when asked.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List

from cudadoctor.model import Category
from cudadoctor.matrix._signatures_patterns import pattern_problems
from cudadoctor.matrix.load import DataError, read_json
from cudadoctor.matrix._error_codes import family_of, read_families
from cudadoctor.matrix.signatures import CODES, FAMILIES, FILE, SCHEMA, Signature, SignatureData


def invariants(data: SignatureData, matrix: Any) -> List[str]:
    """Sorted unique ids; safe patterns with keywords; every example matched by its own pattern,
    first, or after the signature its record names; https seen_in; the schema's category list
    equal to cudadoctor.model.Category."""
    problems: List[str] = []
    try:  # the order of the file itself (the rows are built sorted)
        ids = [str(r.get("id")) for r in matrix.doc(FILE)["records"]]
    except Exception:
        ids = [s.id for s in data.signatures]
    if ids != sorted(ids):
        problems.append(f"{FILE}: records are not sorted by id")
    seen = set()
    for i in ids:
        if i in seen:
            problems.append(f"{FILE}: {i}: id is listed twice")
        seen.add(i)
    for s in data.signatures:
        where = f"{FILE}: {s.id}"
        if not s.pattern and not s.codes:
            problems.append(f"{where}: needs a pattern or codes")
        if s.pattern:
            problems.extend(f"{where}: {p}" for p in pattern_problems(s.pattern))
        if not s.seen_in or any(not u.startswith("https://") for u in s.seen_in):
            problems.append(f"{where}: seen_in needs at least one https:// URL, and only those")
        problems.extend(_example_problems(data, s))
    problems.extend(_schema_problems(matrix))
    problems.extend(_soname_problems(data))
    problems.extend(_code_problems(data, matrix))
    return problems


def _code_problems(data: SignatureData, matrix: Any) -> List[str]:
    """error_codes.json and error_families.json: every code a signature lists exists; every error
    code has a signature (so a category and a fix); every family takes at least one code; no code
    is listed by two signatures."""
    problems: List[str] = []
    names = {c.name for c in data.codes}
    seen: Dict[str, str] = {}
    for s in data.signatures:
        for name in s.codes:
            if name not in names:
                problems.append(f"{FILE}: {s.id}: code {name} is not in error_codes.json")
            if name in seen and seen[name] != s.id:
                problems.append(f"{FILE}: code {name} is listed by {seen[name]} and {s.id}")
            seen.setdefault(name, s.id)
    try:
        families = read_families(matrix.doc(FAMILIES))
    except Exception as exc:  # the schema check reports an unreadable file
        return problems + [f"{FAMILIES}: cannot be read: {exc}"]
    used = set()
    for c in data.codes:
        fam = family_of(c, families)
        if fam is not None:
            used.add(fam.id)
        if data.for_code(c.name) is None and (fam is None or fam.error):
            problems.append(f"{CODES}: {c.library} {c.name} has no signature: no family of {FAMILIES} takes it")
    for fam in families:
        if fam.id not in used:
            problems.append(f"{FAMILIES}: {fam.id} takes no code of {CODES}")
        if fam.error and not all(k in fam.record for k in ("specificity", "categories", "explanation", "verify")):
            problems.append(f"{FAMILIES}: {fam.id}: a family of errors needs specificity, categories, explanation and verify")
    return problems


def _soname_problems(data: SignatureData) -> List[str]:
    """sonames.json: sorted by file name then CUDA major, one record per pair; a Windows name ends
    in .dll and a Linux one holds .so."""
    problems: List[str] = []
    keys = [(s.soname.lower(), s.cuda_major) for s in data.sonames]
    if keys != sorted(keys):
        problems.append("sonames.json: records are not sorted by soname, then cuda_major")
    if len(set(keys)) != len(keys):
        problems.append("sonames.json: a soname is listed twice for one CUDA major")
    for s in data.sonames:
        if (s.os == "windows") != s.soname.lower().endswith(".dll"):
            problems.append(f"sonames.json: {s.soname}: os {s.os} does not fit the file name")
    return problems


def _example_problems(data: SignatureData, s: Signature) -> List[str]:
    """A signature's example is found by its pattern, before any other pattern's match (or after
    the one it names); a signature of codes alone has an example that names one of its codes or
    gives one's message. The whole matcher (codes, log prefixes, wrapped lines) is held to every
    example and its variants by tests/test_signature_variants.py."""
    where = f"{FILE}: {s.id}"
    low = s.example.lower()
    for name in s.codes:
        code = data.code(name)
        if name in s.example or (code is not None and any(m.lower() in low for m in code.messages)):
            return []
    if s.regex is None:
        return [f"{where}: example names none of its codes"]
    found = data.match(s.example)
    order = [m.signature.id for m in found]
    if s.id not in order:
        return [f"{where}: example is not matched by its own pattern"]
    first = found[0].signature
    if s.example_first_match is None:
        if first.id != s.id:
            return [f"{where}: {first.id} (specificity {first.specificity}) comes before it on its own "
                    f"example; raise its specificity or name {first.id} in example_first_match"]
        ties = [m.signature.id for m in found[1:] if m.signature.specificity == s.specificity]
        if ties:
            return [f"{where}: {', '.join(ties)} match its example at the same specificity; "
                    "give the more specific one a higher specificity"]
        return []
    winner = data.by_id(s.example_first_match)
    if winner is None:
        return [f"{where}: example_first_match {s.example_first_match} is not a signature"]
    if first.id != winner.id:
        return [f"{where}: example_first_match says {winner.id} comes first on its example, but {first.id} does"]
    if winner.specificity <= s.specificity:
        return [f"{where}: example_first_match {winner.id} must have a higher specificity than {s.specificity}"]
    return []


def _schema_problems(matrix: Any) -> List[str]:
    directory = getattr(matrix, "directory", None)
    if not isinstance(directory, str):
        return []
    try:
        schema = read_json(os.path.join(directory, "schemas"), SCHEMA)
        listed = schema["$defs"]["category"]["enum"]
    except DataError as exc:
        return [f"{SCHEMA}: {p}" for p in exc.problems]
    except (KeyError, TypeError):
        return [f"{SCHEMA}: $defs.category.enum is missing"]
    vocabulary = [c.value for c in Category]
    if listed != vocabulary:
        missing = [c for c in vocabulary if c not in listed]
        extra = [c for c in listed if c not in vocabulary]
        return [f"{SCHEMA}: $defs.category.enum differs from cudadoctor.model.Category "
                f"(missing: {missing or 'none'}; not in Category: {extra or 'none'}; or another order)"]
    return []
