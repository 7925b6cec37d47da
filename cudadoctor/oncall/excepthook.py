"""``cudadoctor.install_excepthook()``: after the traceback of an uncaught exception whose text
holds a known GPU error signature, print what it means and which cause holds on this machine.

Installing costs nothing: the signatures load only when an exception reaches the hook, and the
machine is probed only when one matches. The hook chains to the hooks it replaced (so the normal
traceback comes first) and never raises: a failure of the doctor prints one line.
"""

from __future__ import annotations

import sys
import threading
from types import TracebackType
from typing import Any, Callable, Optional, TextIO, Type
from cudadoctor.record import frozen

_SysHook = Callable[[Type[BaseException], BaseException, Optional[TracebackType]], Any]
_ThreadHook = Callable[[Any], Any]


@frozen
class _Installed:
    check: bool
    stream: Optional[TextIO]
    sys_hook: _SysHook  # ours
    thread_hook: _ThreadHook  # ours
    previous_sys: _SysHook
    previous_thread: _ThreadHook


_state: Optional[_Installed] = None
_lock = threading.Lock()


def install_excepthook(*, check: bool = True, stream: Optional[TextIO] = None) -> None:
    """Diagnose uncaught exceptions that carry a known GPU error: wraps ``sys.excepthook`` and
    ``threading.excepthook``. After the usual traceback, such an error gets a line
    ``cudadoctor: this looks like "<signature>" (...)`` and the text ``cudadoctor explain`` prints,
    judged on this machine (``check=False``: without probing it). Other exceptions get nothing
    extra. ``stream``: where to write (default: ``sys.stderr`` at the time of the exception).
    Calling it again only updates ``check`` and ``stream``.

    >>> import cudadoctor
    >>> cudadoctor.install_excepthook()
    """
    global _state
    with _lock:
        if _state is not None and sys.excepthook is _state.sys_hook:
            _state = _Installed(check, stream, _state.sys_hook, _state.thread_hook, _state.previous_sys,
                                _state.previous_thread)
            return
        previous_sys, previous_thread = sys.excepthook, threading.excepthook

        def sys_hook(exc_type: Type[BaseException], exc: BaseException, tb: Optional[TracebackType]) -> None:
            try:
                previous_sys(exc_type, exc, tb)
            finally:  # a failing previous hook fails as it would alone; the diagnosis still comes
                _after(sys_hook, exc)

        def thread_hook(args: Any) -> None:
            try:
                previous_thread(args)
            finally:
                _after(sys_hook, args.exc_value)

        _state = _Installed(check, stream, sys_hook, thread_hook, previous_sys, previous_thread)
        sys.excepthook = sys_hook
        threading.excepthook = thread_hook


def uninstall_excepthook() -> None:
    """Put back the hooks :func:`install_excepthook` replaced (a no-op when it is not installed).
    Where another hook was installed on top since, ours stays in the chain but does nothing."""
    global _state
    with _lock:
        if _state is None:
            return
        if sys.excepthook is _state.sys_hook:
            sys.excepthook = _state.previous_sys
        if threading.excepthook is _state.thread_hook:
            threading.excepthook = _state.previous_thread
        _state = None


def _after(hook: _SysHook, exc: Optional[BaseException]) -> None:
    """The diagnosis, when ``hook`` is still the installed one and ``exc`` holds a known error."""
    state = _state
    if state is None or state.sys_hook is not hook or exc is None:
        return
    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        return
    stream = state.stream or sys.stderr
    try:
        text = diagnosis(exc, check=state.check)
    except BaseException as failure:  # the doctor must never hide the program's own error
        text = f"cudadoctor: could not diagnose this error ({type(failure).__name__}: {failure})\n"
    if text and stream is not None:
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError):  # a closed stream at interpreter exit
            pass


def diagnosis(exc: BaseException, *, check: bool = True) -> Optional[str]:
    """The headline and explanation of ``exc`` when a known signature is in it, else None."""
    from cudadoctor.diagnosis.explanation import explain_message, message_of
    from cudadoctor.diagnosis.matching import match
    from cudadoctor.data.source import default_matrix

    message = message_of(exc)
    matrix = default_matrix()
    if not match(message, matrix):  # the common case: no probing, nothing printed
        return None
    if check:
        from cudadoctor.api import explain

        result = explain(message)
    else:
        result = explain_message(message, None, matrix)
    return f"\n{result.headline()}\n{result.text()}"
