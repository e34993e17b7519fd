"""The registry of linear-program backends behind ``gpuplan solve --solver``."""

from __future__ import annotations

from collections.abc import Callable

from gpuplan.errors import InputError
from gpuplan.solvers.base import Backend
from gpuplan.solvers.cpsat import CpSatBackend
from gpuplan.solvers.highs import HighsBackend
from gpuplan.solvers.pyomo import PyomoBackend

#: Backend name -> factory. CP-SAT and Pyomo import their libraries only when solving.
BACKENDS: dict[str, Callable[[], Backend]] = {
    "highs": HighsBackend,
    "cpsat": CpSatBackend,
    "pyomo": PyomoBackend,
}


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
