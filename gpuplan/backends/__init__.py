"""Solver backends by name: the registry behind ``gpuplan solve --solver``.

Every entry follows :class:`~gpuplan.backends.base.Backend` and declares its
:class:`~gpuplan.backends.base.Capabilities`; CP-SAT and Pyomo import their libraries only
when solving.
"""

from __future__ import annotations

from gpuplan.backends.base import Backend, Capabilities
from gpuplan.backends.cpsat import CpSatBackend
from gpuplan.backends.highs import HighsBackend
from gpuplan.backends.pyomo import PyomoBackend
from gpuplan.core.errors import InputError

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


def get_backend(name: str) -> Backend:
    """Return a fresh backend by name.

    Raises
    ------
    InputError
        If there is no such backend.
    """
    if name not in BACKENDS:
        raise InputError("--solver", "", f"unknown solver {name!r}; choose from {sorted(BACKENDS)}")
    return BACKENDS[name]()
