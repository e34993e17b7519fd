"""The simulator's policy parts by name: the registries behind ``gpuplan simulate``.

A part is a class with ``name``, ``description`` and ``takes`` (its option names) class
attributes, built once per run from a :class:`~gpuplan.simulate.policy.PolicyContext`
holding its options. Adding one is a module here and
one line in its registry; the CLI's choices and ``--help`` follow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from gpuplan.core.errors import InputError
from gpuplan.simulate.policies.admit_all import AdmitAll
from gpuplan.simulate.policies.best_fit import BestFit
from gpuplan.simulate.policies.fifo import Fifo
from gpuplan.simulate.policies.first_fit import FirstFit
from gpuplan.simulate.policies.gavel_fifo import GavelFifo, GavelFifoAgnostic
from gpuplan.simulate.policies.gavel_ftf import GavelFtf, GavelFtfAgnostic
from gpuplan.simulate.policies.gavel_las import GavelLas, GavelLasAgnostic
from gpuplan.simulate.policies.gavel_makespan import GavelMakespan, GavelMakespanAgnostic
from gpuplan.simulate.policies.las import Las
from gpuplan.simulate.policies.replan import Replan
from gpuplan.simulate.policies.sjf import ShortestJobFirst
from gpuplan.simulate.policies.srtf import ShortestRemainingFirst
from gpuplan.simulate.policy import Admission, Placement, PolicyContext, Scheduler

_Part = TypeVar("_Part")

#: Schedulers by name; each class is built with a PolicyContext.
SCHEDULERS: dict[str, type[Scheduler]] = {part.name: part for part in (
    Fifo, ShortestJobFirst, ShortestRemainingFirst, Las, Replan, GavelFifo, GavelFifoAgnostic,
    GavelLas, GavelLasAgnostic, GavelFtf, GavelFtfAgnostic, GavelMakespan,
    GavelMakespanAgnostic)}
#: Placements by name.
PLACEMENTS: dict[str, type[Placement]] = {part.name: part for part in (BestFit, FirstFit)}
#: Admissions by name.
ADMISSIONS: dict[str, type[Admission]] = {part.name: part for part in (AdmitAll,)}


def part_class(registry: Mapping[str, type[_Part]], name: str, flag: str) -> type[_Part]:
    """The part called ``name`` in ``registry``.

    Raises
    ------
    InputError
        Naming ``flag`` and the known names, if there is no such part.
    """
    try:
        return registry[name]
    except KeyError:
        raise InputError(flag, "", f"unknown name {name!r}; choose one of: "
                         f"{', '.join(registry)}") from None


def build_parts(names: Mapping[str, str], options: Mapping[str, Any],
                context: PolicyContext) -> tuple[Scheduler, Placement, Admission]:
    """Build a run's scheduler, placement and admission, each with the options it takes.

    Parameters
    ----------
    names
        ``scheduler``, ``placement`` and ``admission`` names.
    options
        Every part option given (flag name without dashes, underscores for dashes).
    context
        The run's context; each part gets it with its own options.

    Raises
    ------
    InputError
        An unknown name, or an option no chosen part takes (naming the flag and the parts).
    """
    scheduler = part_class(SCHEDULERS, names["scheduler"], "--policy")
    placement = part_class(PLACEMENTS, names["placement"], "--placement")
    admission = part_class(ADMISSIONS, names["admission"], "--admission")
    parts: tuple[tuple[str, type[Any]], ...] = (
        ("scheduler", scheduler), ("placement", placement), ("admission", admission))
    stray = sorted(set(options) - set().union(*(cls.takes for _, cls in parts)))
    if stray:
        flags = ", ".join("--" + key.replace("_", "-") for key in stray)
        chosen = ", ".join(f"{kind} {names[kind]!r}" for kind, _ in parts)
        raise InputError(flags, "", f"no part of the policy takes {flags} ({chosen})")

    def own(cls: type[Any]) -> PolicyContext:
        return dataclasses.replace(context, options={
            key: value for key, value in options.items() if key in cls.takes})

    # Protocol classes cannot be called in mypy's eyes; every registered class takes
    # exactly the context.
    return (cast(Callable[[PolicyContext], Scheduler], scheduler)(own(scheduler)),
            cast(Callable[[PolicyContext], Placement], placement)(own(placement)),
            cast(Callable[[PolicyContext], Admission], admission)(own(admission)))
