"""What every planning method declares: the protocol the registry holds.

A method (``gpuplan solve --method NAME``) declares, PyVRP- and cvxpy-style, what it takes
and what it can do: its own typed options (a frozen dataclass of
:func:`~gpuplan.core.options.option` fields), the objectives it plans, the backends it can
hand a program to, the warm starts it uses and whether it counts iterations.
:mod:`gpuplan.planning` checks these declarations before anything is solved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from gpuplan.backends.base import Capabilities
from gpuplan.core.instance import Feature, Instance
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.core.options import option
from gpuplan.core.result import Result
from gpuplan.core.settings import WARM_SHARE, Context, WarmStart

#: What a method that solves no program needs of a backend: nothing.
NO_NEEDS = Capabilities()


@dataclass(frozen=True)
class DefaultWarm:
    """A heuristic a method starts from unless the caller names one (or none).

    Attributes
    ----------
    method
        The registered method that runs first.
    options
        Its settings by name.
    share
        The share of the time limit it runs on.
    """

    method: str
    options: Mapping[str, Any] = field(default_factory=dict)
    share: float = WARM_SHARE


class Method(Protocol):
    """A planning method: turns an instance into a :class:`~gpuplan.core.result.Result`."""

    #: Registry name, as given to ``gpuplan solve --method``.
    name: ClassVar[str]
    #: One line for ``--help``.
    description: ClassVar[str]
    #: The method's own options: a frozen dataclass of :func:`option` fields.
    options_type: ClassVar[type[Any]]
    #: The objectives it plans.
    objectives: ClassVar[frozenset[ObjectiveKind]]
    #: The backends it can hand its programs to, default first; () if it solves none.
    backends: ClassVar[tuple[str, ...]]
    #: The warm starts it uses.
    warm_starts: ClassVar[frozenset[WarmStart]]
    #: Whether it counts iterations (``--iterations``).
    iterative: ClassVar[bool]
    #: Whether it starts no job on a GPU before the GPU is ready (the instance's outages
    #: that start at time 0: a re-plan's failed GPUs and the work it keeps running).
    plans_outages: ClassVar[bool]
    #: Whether it takes a previous plan to stay close to (``Context.keep``): a re-plan's
    #: least disruption.
    keeps: ClassVar[bool]

    def check(self, instance: Instance, options: Any) -> None:
        """Refuse what this instance and these options cannot do together, before solving.

        Raises
        ------
        InputError
            Naming the flag and the reason.
        """
        ...

    def needs(self, instance: Instance, options: Any) -> Capabilities:
        """What the chosen backend must be able to do for this instance and options."""
        ...

    def features(self, objective: ObjectiveKind) -> frozenset[Feature]:
        """The parts of the cluster model it plans under ``objective``.

        Beyond whole GPUs in single-node gangs: node resources, CPU-only jobs, multi-node
        gangs, topology. It refuses an instance that uses any other
        (:attr:`~gpuplan.core.instance.Instance.features`).
        """
        ...

    def default_warm(self, instance: Instance, time_limit_s: float | None) -> DefaultWarm | None:
        """The heuristic to start from when the caller names none, or None.

        :func:`~gpuplan.planning.plan` resolves it through the registry, so that no method
        imports another.
        """
        ...

    def solve(self, instance: Instance, options: Any, context: Context) -> Result:
        """Plan the instance within the context's budget.

        Parameters
        ----------
        instance
            The validated problem.
        options
            The method's own options (an ``options_type``).
        context
            Budget, seed, threads, gap and warm starts.
        """
        ...


def solver_option(backends: Sequence[str], what: str) -> Any:
    """The ``--solver`` option of a method that hands programs to ``backends``."""
    return option(backends[0], "--solver", f"backend for {what} (default: {backends[0]})",
                  choices=backends)


class MethodDefaults:
    """What a method declares unless it says otherwise.

    Nothing to refuse beyond its declarations, nothing needed of a backend, and no
    heuristic to start from unless asked.
    """

    plans_outages: ClassVar[bool] = False
    keeps: ClassVar[bool] = False

    def check(self, instance: Instance, options: Any) -> None:
        """Nothing beyond the declared objectives to refuse."""

    def needs(self, instance: Instance, options: Any) -> Capabilities:
        """Nothing: the method hands no program to a backend."""
        return NO_NEEDS

    def features(self, objective: ObjectiveKind) -> frozenset[Feature]:
        """None: whole GPUs in single-node gangs only."""
        return frozenset()

    def default_warm(self, instance: Instance, time_limit_s: float | None) -> DefaultWarm | None:
        """None: the method starts from a heuristic only when asked to."""
        return None
