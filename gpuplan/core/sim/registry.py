"""Named parts of one kind: the one registry shape every simulator's policies use.

A part (a scheduler, a placement, an admission, a queue-ordering heuristic, a GPU-sharing
policy) has a ``name``, a line of ``description`` and an ``options_type`` (a frozen
dataclass of :func:`~gpuplan.core.options.option` fields). A :class:`Registry` holds the
parts of one kind by name; a command's choices, flags and help are read from it, and
adding a part is one module and one line in its registry.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableMapping
from typing import Generic, TypeVar

from gpuplan.core.errors import InputError, setting

_Part = TypeVar("_Part")


class Registry(MutableMapping[str, _Part], Generic[_Part]):
    """The parts of one kind, by name, in the order given.

    Parameters
    ----------
    kind
        What the parts are, for messages (``"scheduler"``).
    choice
        The setting that names one (``"scheduler"``, ``"policy"``), for messages.
    parts
        The parts (classes or objects), each with a ``name``.
    """

    def __init__(self, kind: str, choice: str, parts: Iterable[_Part]) -> None:
        self.kind = kind
        self.choice = choice
        self._parts: dict[str, _Part] = {}
        for part in parts:
            name: str = getattr(part, "name")  # noqa: B009 - parts are duck-typed
            if name in self._parts:
                raise ValueError(f"{kind} {name!r} is registered twice")
            self._parts[name] = part

    def __getitem__(self, name: str) -> _Part:
        return self._parts[name]

    def __setitem__(self, name: str, part: _Part) -> None:
        """Register a part (a plug-in, or a test's) under its own name."""
        if getattr(part, "name", None) != name:
            raise ValueError(f"a {self.kind} is registered under its own name, not {name!r}")
        self._parts[name] = part

    def __delitem__(self, name: str) -> None:
        del self._parts[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._parts)

    def __len__(self) -> int:
        return len(self._parts)

    def part(self, name: str) -> _Part:
        """The part called ``name``.

        Raises
        ------
        InputError
            Naming the setting that chooses it and the registered names, if there is none.
        """
        try:
            return self._parts[name]
        except KeyError:
            raise InputError(setting(self.choice), "", f"unknown {self.kind} {name!r}; "
                             f"choose one of: {', '.join(self._parts)}") from None
