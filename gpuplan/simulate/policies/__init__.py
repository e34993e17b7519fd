"""The simulator's policy parts by name: the registries behind ``gpuplan simulate``.

A part is a class with ``name``, ``description`` and ``options_type`` (a frozen dataclass of
:func:`~gpuplan.core.options.option` fields) class attributes, built once per run from a
:class:`~gpuplan.simulate.policy.PolicyContext` holding its typed options. Adding one,
options and all, is a module here and one line in its registry; the CLI's choices, flags
and ``--help`` follow (:func:`option_takers`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from gpuplan.core.errors import InputError, setting
from gpuplan.core.options import declared_options, part_options, takes_key
from gpuplan.core.sim import Registry
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

#: Schedulers by name; each class is built with a PolicyContext.
SCHEDULERS: Registry[type[Scheduler]] = Registry("scheduler", "scheduler", (
    Fifo, ShortestJobFirst, ShortestRemainingFirst, Las, Replan, GavelFifo, GavelFifoAgnostic,
    GavelLas, GavelLasAgnostic, GavelFtf, GavelFtfAgnostic, GavelMakespan,
    GavelMakespanAgnostic))
#: Placements by name.
PLACEMENTS: Registry[type[Placement]] = Registry("placement", "placement", (BestFit, FirstFit))
#: Admissions by name.
ADMISSIONS: Registry[type[Admission]] = Registry("admission", "admission", (AdmitAll,))

#: The registry of each kind of part a run chooses (the kind names the setting too).
KINDS: dict[str, Registry[type[Any]]] = {
    "scheduler": SCHEDULERS, "placement": PLACEMENTS, "admission": ADMISSIONS}


def option_takers() -> dict[str, tuple[dataclasses.Field[Any], list[str]]]:
    """Every option of a registered part, once by flag, with the parts that take it."""
    return declared_options(cls for registry in KINDS.values() for cls in registry.values())


def chosen_options(names: Mapping[str, str], options: Mapping[str, Any],
                   source: str | None = None) -> dict[str, Any]:
    """Each chosen part's typed options, by kind, from the settings given.

    Parameters
    ----------
    names
        ``scheduler``, ``placement`` and ``admission`` names.
    options
        The parts' settings by option name or flag, as text (parsed as the flag parses
        it) or as values; each goes to every chosen part that takes it.
    source
        Where the settings were written (a run log's ``run.options``), for messages;
        None for settings given by name.

    Raises
    ------
    InputError
        An unknown name, an option no chosen part takes (naming the flag and the parts),
        or a bad value.
    """
    chosen = {kind: registry.part(names[kind]) for kind, registry in KINDS.items()}
    stray = [key for key in options
             if not any(takes_key(cls.options_type, key) for cls in chosen.values())]
    if stray:
        parts = ", ".join(f"{kind} {cls.name!r}" for kind, cls in chosen.items())
        if source is not None:
            raise InputError(source, stray[0], f"no part of the policy takes it ({parts})")
        named = [setting(key.lstrip("-").replace("-", "_")) for key in stray]
        raise InputError(named[0], "", f"no part of the policy takes {', '.join(named)} "
                         f"({parts})")
    return {kind: part_options(cls, kind, {key: value for key, value in options.items()
                                           if takes_key(cls.options_type, key)}, source)
            for kind, cls in chosen.items()}


def options_record(typed: Mapping[str, Any]) -> dict[str, Any]:
    """The chosen parts' options as JSON values by option name (a run log's ``options``)."""
    return {name: list(value) if isinstance(value, tuple) else value
            for options in typed.values() for name, value in dataclasses.asdict(options).items()}


def build_parts(names: Mapping[str, str], options: Mapping[str, Any],
                context: PolicyContext) -> tuple[Scheduler, Placement, Admission]:
    """Build a run's scheduler, placement and admission, each with the options it takes.

    ``names`` and ``options`` are as :func:`chosen_options` takes them; each part gets
    ``context`` with its own typed options.

    Raises
    ------
    InputError
        An unknown name, an option no chosen part takes, or a bad value.
    """
    typed = chosen_options(names, options)
    scheduler, placement, admission = (
        KINDS[kind].part(names[kind])(dataclasses.replace(context, options=mine))
        for kind, mine in typed.items())
    return scheduler, placement, admission
