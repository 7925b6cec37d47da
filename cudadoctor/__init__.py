"""cudadoctor: why a GPU software stack does or does not work, and how to fix it.

The library API (docs/api.md)::

    import cudadoctor

    snapshot = cudadoctor.collect()                 # probe this machine
    findings = cudadoctor.diagnose(snapshot)        # what is wrong, with the fix
    report = cudadoctor.make_report(snapshot, findings)
    results = cudadoctor.smoke()                    # real workloads on the GPUs, in child processes
    text = cudadoctor.report()                      # a redacted bug report (Markdown)
    plans = cudadoctor.plan_install("torch")        # install commands that fit this machine
    print(cudadoctor.explain(exc))                  # what a CUDA error means here
    cudadoctor.install_excepthook()                 # ... for every uncaught one
    cudadoctor.uninstall_excepthook()

``cudadoctor.smoke`` is listed under PACKAGE CONTENTS, not FUNCTIONS: it is also the package of
the smoke suites, made callable (``help(cudadoctor.api.smoke)`` shows the function).

The names load on first use, so ``import cudadoctor`` stays as cheap as ``cudadoctor --version``
needs (no click, no framework, no compatibility data).
"""

from __future__ import annotations

import types

from cudadoctor.version import __version__ as __version__

# typing costs ~4 ms at import, and `cudadoctor run` and `--version` import this package on their
# fast paths: the annotations here are for mypy only (mypy reads a name TYPE_CHECKING as true).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List


__all__ = [
    "CudadoctorError",
    "Explanation",
    "collect",
    "diagnose",
    "diagnose_text",
    "docker",
    "explain",
    "install_excepthook",
    "make_report",
    "plan_install",
    "report",
    "smoke",
    "uninstall_excepthook",
]

# Which module defines each name; imported when the name is first asked for.
_HOME: Dict[str, str] = {name: "api" for name in __all__}
_HOME.update(CudadoctorError="errors", Explanation="diagnosis.explanation", install_excepthook="oncall.excepthook",
             uninstall_excepthook="oncall.excepthook")

if TYPE_CHECKING:  # the real signatures, for mypy and IDEs
    from cudadoctor.api import collect, diagnose, diagnose_text, docker, explain, make_report, plan_install, report, smoke
    from cudadoctor.errors import CudadoctorError
    from cudadoctor.oncall.excepthook import install_excepthook, uninstall_excepthook
    from cudadoctor.diagnosis.explanation import Explanation
else:
    # ``cudadoctor.smoke`` is also the package of the smoke suites, and importing any of its modules
    # (``check`` does) sets the attribute to that package, hiding a function of the same name. So the
    # package itself is made callable: ``cudadoctor.smoke(...)`` runs :func:`cudadoctor.api.smoke`,
    # and ``cudadoctor.smoke.runner`` still works. The package's own imports are light (os, typing).
    from cudadoctor import smoke as _smoke_package

    class _CallableSmoke(types.ModuleType):
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            from cudadoctor.api import smoke

            return smoke(*args, **kwargs)

    _smoke_package.__class__ = _CallableSmoke
    del _smoke_package


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'cudadoctor' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


def __dir__() -> List[str]:
    return sorted(set(__all__) | {"__version__"})
