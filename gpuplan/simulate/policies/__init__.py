"""The simulator's policy parts by name: the registries behind ``gpuplan simulate``.

A part is a class with ``name`` and ``description`` class attributes, built once per run
from a :class:`~gpuplan.simulate.policy.PolicyContext`. Adding one is a module here and
one line in its registry; the CLI's choices and ``--help`` follow.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from gpuplan.errors import InputError
from gpuplan.simulate.policies.admit_all import AdmitAll
from gpuplan.simulate.policy import Admission, Placement, PolicyContext, Scheduler

_Part = TypeVar("_Part")

#: Factories of schedulers by name.
SCHEDULERS: dict[str, Callable[[PolicyContext], Scheduler]] = {}
#: Factories of placements by name.
PLACEMENTS: dict[str, Callable[[PolicyContext], Placement]] = {}
#: Factories of admissions by name.
ADMISSIONS: dict[str, Callable[[PolicyContext], Admission]] = {
    part.name: part for part in (AdmitAll,)
}


def build(registry: Mapping[str, Callable[[PolicyContext], _Part]], name: str, flag: str,
          context: PolicyContext) -> _Part:
    """Build the part called ``name`` from ``registry`` for one run.

    Raises
    ------
    InputError
        Naming ``flag`` and the known names, if there is no such part.
    """
    try:
        factory = registry[name]
    except KeyError:
        raise InputError(flag, "", f"unknown name {name!r}; choose one of: "
                         f"{', '.join(registry)}") from None
    return factory(context)
