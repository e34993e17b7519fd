"""Solver backends by name: the registry behind ``gpuplan solve --solver``.

Every entry follows :class:`~gpuplan.backends.base.Backend` and declares its
:class:`~gpuplan.backends.base.Capabilities`; CP-SAT and Pyomo import their libraries only
when solving.
"""

from __future__ import annotations

from gpuplan.backends.base import Backend, Capabilities
from gpuplan.backends.cpsat import CpSatBackend
from gpuplan.backends.highs import HighsBackend
from gpuplan.backends.highs_runtime import abandoned
from gpuplan.backends.pyomo import PyomoBackend
from gpuplan.core.errors import InputError, setting

#: Backend name -> class; each call of it makes a fresh backend.
BACKENDS: dict[str, type[Backend]] = {
    backend.name: backend for backend in (HighsBackend, CpSatBackend, PyomoBackend)
}


def backends_with(needed: Capabilities) -> tuple[str, ...]:
    """The registered backends that have every capability ``needed`` asks for, in order.

    Methods offer these as their ``--solver`` choices, so a backend added to the registry
    is offered by every method whose programs it can solve.
    """
    return tuple(name for name, backend in BACKENDS.items()
                 if not backend.capabilities.missing(needed))


def backend_for(needed: Capabilities) -> Backend:
    """A fresh backend of the first registered that has every capability ``needed`` asks for.

    Parts that solve a program of their own (a bound's LP) choose their backend so, by
    what it can do rather than by name.
    """
    return get_backend(backends_with(needed)[0])


def get_backend(name: str) -> Backend:
    """Return a fresh backend by name.

    Raises
    ------
    InputError
        If there is no such backend.
    """
    if name not in BACKENDS:
        raise InputError(setting("backend"), "", f"unknown solver {name!r}; choose from "
                         f"{sorted(BACKENDS)}")
    return BACKENDS[name]()


def solves_left_running() -> bool:
    """Whether a solve left to finish on its own past its time limit still runs.

    A process must not exit normally then (a solver's teardown under a running solve
    aborts it); :func:`gpuplan.cli.run` ends the process at once instead.
    """
    return abandoned()
