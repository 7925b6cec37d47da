from __future__ import annotations

from cudadoctor.version import __version__


def line() -> str:
    from cudadoctor.data.source import data_info  # only --version and errors need it

    info = data_info()
    data = f"compat data {info.data_version} ({info.origin}: {info.directory})" if info else "compat data not found"
    warning = f"\nwarning: {info.warning}" if info and info.warning else ""
    return f"cudadoctor {__version__} · {data}{warning}"
