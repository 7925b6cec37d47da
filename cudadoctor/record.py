"""``@frozen``: a frozen dataclass whose ``__eq__``, ``__hash__``, ``__repr__`` and frozen
``__setattr__``/``__delattr__`` are shared functions instead of code generated for each class.

``dataclasses`` writes and compiles the source of six methods for each frozen class; cudadoctor
has some 150 of them, and compiling them was a third of what `cudadoctor check` spent importing.
Only ``__init__`` is still generated. The shared methods behave as the generated ones do:
equality compares the fields with ``compare=True`` as tuples, only between instances of the
same class; the hash is that of the same tuple (the fields with ``hash`` unset and ``compare``
set, or ``hash=True``); repr lists the fields with ``repr=True``; ``__init__`` sets each field
once, and any assignment or deletion after that raises ``FrozenInstanceError``. ``fields()``,
``replace()`` and ``asdict()`` work as on any dataclass. A class without a docstring gets one
naming its fields (dataclasses would compute the signature with ``inspect``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable, Dict, Tuple, Type, TypeVar

T = TypeVar("T")

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_: Any) -> Callable[[T], T]:
        return lambda f: f

# per class: (the names compared, the names hashed, the names shown)
_NAMES: Dict[type, Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[str, ...]]] = {}


def _names(cls: type) -> Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[str, ...]]:
    names = _NAMES.get(cls)
    if names is None:
        fields = dataclasses.fields(cls)
        names = (tuple(f.name for f in fields if f.compare),
                 tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)),
                 tuple(f.name for f in fields if f.repr))
        _NAMES[cls] = names
    return names


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    compared = _names(self.__class__)[0]
    return tuple(getattr(self, n) for n in compared) == tuple(getattr(other, n) for n in compared)


def _hash(self: Any) -> int:
    return hash(tuple(getattr(self, n) for n in _names(self.__class__)[1]))


def _setattr(self: Any, name: str, value: Any) -> None:
    # __init__ sets each field once; after that, as on a frozen dataclass, nothing can be set
    known = self.__dict__
    if name in known or name not in self.__dataclass_fields__:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
    known[name] = value  # what object.__setattr__ does for a plain attribute, without the call


def _delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


def _repr(self: Any) -> str:
    shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in _names(self.__class__)[2])
    return f"{self.__class__.__qualname__}({shown})"


@dataclass_transform(frozen_default=True, eq_default=True, field_specifiers=(dataclasses.field,))
def frozen(cls: Type[T]) -> Type[T]:
    """The class as ``@dataclass(frozen=True)`` makes it, with the shared methods."""
    if not cls.__doc__:  # dataclasses would ask inspect for the signature: the field names do
        cls.__doc__ = f"{cls.__name__}({', '.join(cls.__dict__.get('__annotations__', ()))})"
    made = dataclasses.dataclass(eq=False, repr=False)(cls)
    for name, method in (("__eq__", _eq), ("__hash__", _hash), ("__repr__", _repr), ("__setattr__", _setattr),
                         ("__delattr__", _delattr)):
        if name not in cls.__dict__:
            setattr(made, name, method)
    return made
