"""Small value classes without `dataclasses`: `Record` and `FrozenRecord`.

Creating a dataclass costs ~2 M instructions at import (~4 M frozen): it writes its methods as
text and compiles them. A module on a command's start-up path (`tracetool index` re-indexing one
recording imports ~25 of them) can declare its value classes as records instead: the subclass
names its fields in `_fields` (in order) and writes its `__init__`; the record gives what
`@dataclass` would: `__repr__` (`Name(a=1, b='x')`), `__eq__` (field by field, instances of the
very same class only, else NotImplemented), and for a `FrozenRecord` `__hash__` (of the fields)
and `dataclasses.FrozenInstanceError` on assignment or deletion (its `__init__` stores through
`self.__dict__`). Instances pickle and copy as plain objects. Not dataclasses: no
`dataclasses.fields`, `asdict` or `replace` (keep a dataclass where those are used).
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import Any, ClassVar

__all__ = ["FrozenRecord", "Record"]


class Record:
    """A value class: `repr` and `==` over `_fields` (module doc)."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({fields})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()  # type: ignore[attr-defined]
        return NotImplemented

    # (`__eq__` without `__hash__` makes instances unhashable, as a non-frozen dataclass's)
    __hash__: ClassVar[None] = None  # type: ignore[assignment]

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self._fields])


class FrozenRecord(Record):
    """A `Record` whose fields cannot change once `__init__` stored them: hashable."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self._values())
