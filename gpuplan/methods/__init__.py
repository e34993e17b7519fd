"""Planning methods by name: the registry behind ``gpuplan solve --method``.

Every entry follows :class:`~gpuplan.methods.base.Method`: it declares its options, the
objectives it plans, its backends and warm starts, and returns one
:class:`~gpuplan.core.result.Result`. A method added to gpuplan is one module and one line
here; the CLI's choices and flags, ``gpuplan bench`` specs and the contract tests follow.
"""

from __future__ import annotations

from gpuplan.core.errors import InputError, setting
from gpuplan.methods.balance import BalanceMethod
from gpuplan.methods.base import Method
from gpuplan.methods.cp import CpMethod
from gpuplan.methods.ga import GeneticMethod
from gpuplan.methods.greedy import GreedyMethod
from gpuplan.methods.lp import LpMethod
from gpuplan.methods.milp import MilpMethod
from gpuplan.methods.sa import AnnealingMethod
from gpuplan.methods.textbook import TextbookMethod

METHODS: dict[str, Method] = {
    method.name: method
    for method in (GreedyMethod(), MilpMethod(), LpMethod(), CpMethod(), BalanceMethod(),
                   AnnealingMethod(), GeneticMethod(), TextbookMethod())
}

#: The method ``gpuplan solve`` and :func:`~gpuplan.planning.plan` use unless told.
DEFAULT_METHOD = "greedy"

__all__ = ["DEFAULT_METHOD", "METHODS", "Method", "get_method"]


def get_method(name: str) -> Method:
    """Return the registered method called ``name``.

    Raises
    ------
    InputError
        Naming ``--method`` and the known names, if there is no such method.
    """
    try:
        return METHODS[name]
    except KeyError:
        raise InputError(setting("method"), "", f"unknown method {name!r}; choose one of: "
                         f"{', '.join(METHODS)}") from None
