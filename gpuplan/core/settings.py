"""What every solve is given: its run settings and, inside a method, its context."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from gpuplan.core.budget import Budget, Limits
from gpuplan.core.instance import MAX_TIME_S
from gpuplan.core.keep import Keep
from gpuplan.core.options import check_range
from gpuplan.core.result import Result
from gpuplan.core.status import OPTIMAL_GAP

#: Seeds every method takes (CP-SAT's and numpy's common range).
MAX_SEED = 2**31 - 1
#: Cores of this machine: the most solver threads a solve may ask for (more only thrash;
#: HiGHS aborted with 1000 under a memory cap).
CORES = max(1, os.cpu_count() or 1)
#: Threads a solve uses unless told otherwise.
DEFAULT_THREADS = min(2, CORES)
#: The most iterations ``--iterations`` takes.
MAX_ITERATIONS = 10**12


class WarmStart(StrEnum):
    """What a method can start from (``gpuplan solve --warm-start``)."""

    #: A plan to start from: a schedule file's, or a heuristic's run first.
    PLAN = "plan"
    #: A heuristic run beside the method on a second lane, its plan taken as an incumbent.
    LANE = "lane"

#: Share of the time limit a heuristic warm start gets when it runs before the method.
WARM_SHARE = 0.3


@dataclass(frozen=True)
class RunSettings:
    """What every method takes: the limits of one solve.

    Attributes
    ----------
    time_limit_s
        Wall-clock seconds; the method returns the best plan found when they are spent.
    iterations
        Steps of an iterative method (``Method.iterative``); None: until the time limit,
        or the method's default without one.
    seed
        Random seed, for reproducible runs.
    threads
        Threads the method and its backend may use.
    gap
        Relative gap at which a solver may stop and call its plan optimal.
    """

    time_limit_s: float | None = None
    iterations: int | None = None
    seed: int = 0
    threads: int = DEFAULT_THREADS
    gap: float = OPTIMAL_GAP

    def __post_init__(self) -> None:
        """Refuse settings out of range, whoever gives them (CLI, bench specs, the API)."""
        check_range("time_limit_s", self.time_limit_s, 0, MAX_TIME_S, closed=False)
        check_range("iterations", self.iterations, 1, MAX_ITERATIONS)
        check_range("seed", self.seed, 0, MAX_SEED)
        check_range("threads", self.threads, 1, CORES)
        check_range("gap", self.gap, 0, 1.0)


@dataclass(frozen=True)
class Context:
    """What a method receives besides its options: the budget and the run's settings.

    Attributes
    ----------
    budget
        The solve's one time budget; every part reads it or a :meth:`~Budget.part` of it.
    seed, threads, gap
        From :class:`RunSettings`.
    start
        A whole plan to start from (a schedule file's), already verified.
    warm
        A heuristic to start from (``--warm-start greedy|ga|sa``, or the method's default):
        called with a budget, it returns its plan. A method runs it first, or beside its
        own search when it declares :attr:`WarmStart.LANE` and can.
    warm_share
        The share of the time limit ``warm`` runs on.
    keep
        A previous plan to stay close to (a re-plan): the method minimises the objective
        plus :meth:`~gpuplan.core.keep.Keep.cost` and moves at most its cap of jobs.
    """

    budget: Budget
    seed: int = 0
    threads: int = DEFAULT_THREADS
    gap: float = OPTIMAL_GAP
    start: Result | None = None
    warm: Callable[[Budget], Result] | None = None
    warm_share: float = WARM_SHARE
    keep: Keep | None = None

    def limits(self, budget: Budget | None = None) -> Limits:
        """The backend limits of this context, for its budget or a part of it."""
        return Limits(budget or self.budget, self.threads, self.seed, self.gap)

    def with_budget(self, budget: Budget) -> Context:
        """The same context for a part of the work with a budget of its own."""
        return dataclasses.replace(self, budget=budget)
