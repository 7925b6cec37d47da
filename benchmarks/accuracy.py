"""How right is cudadoctor on real failures? Diagnoses every pasted report of the corpus
(tests/corpus/: real public threads, each with its confirmed root cause) as `cudadoctor diagnose
FILE` does, and prints:

- top-1: the first ranked cause is the confirmed category; recall: the confirmed category is
  among the ranked causes (overall and per category);
- healthy machines: how many got an error finding (should be none);
- facts: of the facts case.json says a reader must extract, how many were read right, read with
  another value, or missed.

    python benchmarks/accuracy.py [--cases] [--json]

Targets (issue 15): top-1 >= 0.85 and recall >= 0.95 overall, each category >= 0.75 top-1,
no error finding on a healthy machine. Exit status 1 if one is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, os.pardir, "tests", "corpus")
TOP1, RECALL, PER_CATEGORY = 0.85, 0.95, 0.75

# case.json's fact names -> the intake's; values are compared by their leading token
FACT_NAMES = {
    "python_version": "python", "gpu_name": "gpu_name", "driver_version": "driver_version", "os": "os",
    "torch_version": "torch_version", "torch_cuda": "torch_cuda", "cuda_driver_version": "driver_cuda_version",
    "jax_version": "jax_version", "jaxlib_version": "jaxlib_version", "cudnn_version": "cudnn_system",
    "compute_capability": "compute_capability", "gcc_version": "gcc_version", "in_container": "container",
    "cuda_runtime_version": "nvcc_version", "gpu_count": "gpu_count", "cuda_visible_devices": "cuda_visible_devices",
    "tensorflow_version": "tensorflow_version", "wsl": "wsl", "cupy_package": "cupy_package",
    "onnxruntime_package": "onnxruntime_package", "nvcc_version": "nvcc_version",
    "torchvision_version": "torchvision_version", "mig": "mig", "missing_library": "missing_library",
}


def cases(kind: str) -> List[Tuple[str, Dict[str, Any], str]]:
    """(slug, case.json, paste text) of each case under tests/corpus/<kind>/."""
    root = os.path.join(CORPUS, kind)
    out = []
    for slug in sorted(os.listdir(root)):
        folder = os.path.join(root, slug)
        with open(os.path.join(folder, "case.json"), encoding="utf-8") as fh:
            case = json.load(fh)
        with open(os.path.join(folder, "paste.md"), encoding="utf-8", errors="replace") as fh:
            out.append((slug, case, fh.read()))
    return out


def _same(expected: Any, got: Any, key: str) -> bool:
    if key == "in_container":
        return bool(got) == bool(expected)
    if key in ("wsl", "mig"):
        return bool(got) == bool(expected)
    if expected is None or got is None:
        return expected is got
    exp, have = str(expected).strip().lower(), str(got).strip().lower()
    if key == "os":
        return have in exp or (have == "macos" and "mac" in exp) or (have == "linux" and any(
            w in exp for w in ("ubuntu", "debian", "centos", "red", "fedora", "gentoo", "arch", "rocky", "suse")))
    token = re.split(r"[\s(,]", exp, maxsplit=1)[0]
    return have == token or have == exp or (token.startswith(have) and len(have) >= 3) or exp.startswith(have + " ")


def evaluate() -> Dict[str, Any]:
    """The figures, and each case's outcome."""
    from cudadoctor.api import diagnose_text
    from cudadoctor.model import Severity

    per: Dict[str, Dict[str, int]] = {}
    outcomes: Dict[str, Any] = {}
    facts = {"right": 0, "wrong": 0, "missed": 0}
    wrong_facts: List[str] = []
    for slug, case, text in cases("reports"):
        d = diagnose_text(text, name=slug)
        ranked = d.categories()
        category = case["category"]
        row = per.setdefault(category, {"cases": 0, "top1": 0, "recall": 0})
        row["cases"] += 1
        row["top1"] += bool(ranked) and ranked[0] == category
        row["recall"] += category in ranked
        outcomes[slug] = {"category": category, "top": ranked[0] if ranked else None, "ranked": ranked[:5]}
        chosen = d.intake.chosen()
        for name, expected in case.get("facts", {}).items():
            key = FACT_NAMES.get(name)
            if key is None:
                continue
            fact = chosen.get(key)
            if fact is None:
                facts["missed"] += 1
            elif _same(expected, fact.value, name):
                facts["right"] += 1
            else:
                facts["wrong"] += 1
                wrong_facts.append(f"{slug}: {name} expected {expected!r}, read {fact.value!r} (line {fact.line})")
    healthy = []
    for slug, case, text in cases("healthy"):
        d = diagnose_text(text, name=slug)
        errors = [f.code for f in d.findings if f.severity is Severity.ERROR]
        outcomes[slug] = {"category": "healthy", "errors": errors, "ranked": d.categories()[:3]}
        if errors:
            healthy.append(slug)
    total = sum(r["cases"] for r in per.values())
    return {
        "cases": total,
        "top1": sum(r["top1"] for r in per.values()) / total,
        "recall": sum(r["recall"] for r in per.values()) / total,
        "categories": per,
        "healthy": len(cases("healthy")),
        "healthy_with_errors": healthy,
        "facts": facts,
        "wrong_facts": wrong_facts,
        "outcomes": outcomes,
    }


PINS = os.path.join(CORPUS, "verdicts.json")


def pins(result: Dict[str, Any]) -> Dict[str, Any]:
    """Each case's verdict as tests/test_corpus_verdicts.py pins it: the first cause ranked (a
    failure) or the error findings (a healthy machine)."""
    out: Dict[str, Any] = {}
    for slug, o in result["outcomes"].items():
        if o["category"] == "healthy":
            out[slug] = {"expected": "healthy", "errors": o["errors"]}
        else:
            out[slug] = {"expected": o["category"], "top": o["top"], "right": o["top"] == o["category"]}
    return out


def misses(result: Dict[str, Any]) -> List[str]:
    out = []
    if result["top1"] < TOP1:
        out.append(f"top-1 {result['top1']:.3f} < {TOP1}")
    if result["recall"] < RECALL:
        out.append(f"recall {result['recall']:.3f} < {RECALL}")
    for name, row in sorted(result["categories"].items()):
        if row["top1"] / row["cases"] < PER_CATEGORY:
            out.append(f"{name}: top-1 {row['top1']}/{row['cases']} < {PER_CATEGORY}")
    if result["healthy_with_errors"]:
        out.append(f"healthy with an error finding: {', '.join(result['healthy_with_errors'])}")
    return out


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", action="store_true", help="also print each case that missed")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--pin", action="store_true",
                        help=f"write each case's verdict to {os.path.relpath(PINS, os.path.join(HERE, os.pardir))} "
                             "(what tests/test_corpus_verdicts.py holds the code to)")
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.join(HERE, os.pardir))
    result = evaluate()
    if args.pin:
        with open(PINS, "w", encoding="utf-8") as fh:
            json.dump(pins(result), fh, indent=1, sort_keys=True)
            fh.write("\n")
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "outcomes" or args.cases}, indent=2))
        return 1 if misses(result) else 0
    print(f"corpus: {result['cases']} failure reports, {result['healthy']} healthy machines")
    print(f"top-1   {result['top1']:.3f}  (target >= {TOP1})")
    print(f"recall  {result['recall']:.3f}  (target >= {RECALL})")
    print(f"{'category':<28} {'cases':>5} {'top-1':>6} {'recall':>6}")
    for name, row in sorted(result["categories"].items()):
        print(f"{name:<28} {row['cases']:>5} {row['top1'] / row['cases']:>6.2f} {row['recall'] / row['cases']:>6.2f}")
    print(f"healthy machines with an error finding: {len(result['healthy_with_errors'])} of {result['healthy']}")
    f = result["facts"]
    read = f["right"] + f["wrong"] + f["missed"]
    print(f"facts: {f['right']} of {read} read right, {f['wrong']} with another value, {f['missed']} missed")
    if args.cases:
        for slug, o in result["outcomes"].items():
            if o["category"] == "healthy":
                if o["errors"]:
                    print(f"  HEALTHY {slug}: errors {o['errors']}")
            elif o["top"] != o["category"]:
                print(f"  MISS {slug}: {o['category']} <- {o['ranked']}")
        for line in result["wrong_facts"]:
            print(f"  FACT {line}")
    missed = misses(result)
    for line in missed:
        print(f"missed: {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
