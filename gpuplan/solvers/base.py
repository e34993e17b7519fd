"""TEMPORARY: the old flat options, kept while methods move to gpuplan.methods.base."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from gpuplan.backends.base import ProgramSolution
from gpuplan.errors import InputError
from gpuplan.instance import FloatArray, Instance, IntArray, ObjectiveKind
from gpuplan.models.linear import LinearProgram
from gpuplan.readers.instance_file import MAX_TIME_S
from gpuplan.solution import Result

MAX_SEED = 2**31 - 1  # TEMPORARY copy while the shim lives
CORES = max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class SolveOptions:
    """Settings every method accepts; a method ignores what it has no use for.

    Attributes
    ----------
    time_limit_s
        Wall-clock budget; the method returns the best plan found when it is spent.
    seed
        Random seed, for reproducible runs.
    threads
        Threads a solver may use.
    gap_tolerance
        Relative gap at which a solver may stop and call its plan optimal.
    backend
        Which backend an optimization method hands its model to (``highs``, ``cpsat``,
        ``pyomo``); heuristics ignore it.
    rounding
        How ``--method lp`` rounds its relaxation (a name from the rounding registry).
    warm_start
        A known plan (job index to GPU indices) to start from; optimization methods use it
        instead of their own greedy start.
    tick_s
        Seconds per integer time step of ``--method cp``; None picks one
        (:meth:`~gpuplan.models.scheduling.TickScale.choose`).
    then
        A secondary time-based objective, optimised with the primary held at its best.
    policy
        The allocation policy of ``--method balance`` (a
        :class:`~gpuplan.models.allocation.Policy` value).
    round_s
        Round length of ``--method balance``'s round-based plans (Gavel uses 6 minutes).
    floor
        For the ``min-cost`` policy: each job's throughput floor as a multiple of its
        equal-share throughput.
    partitions
        Solve ``--method balance``'s policy POP-style in this many parts (1: exactly).
    space_sharing
        Let ``--method balance`` pair jobs on GPUs where the instance gives pair speeds.
    moves
        Neighbourhood moves of ``--method sa`` (and the GA's improvement step), by name
        (:data:`~gpuplan.search.plan_encodings.MOVES`).
    crossover
        Crossover of ``--method ga``, by name (:data:`~gpuplan.search.plan_encodings.CROSSOVERS`).
    iterations
        Steps of ``sa`` (moves or decodes) or ``ga`` (generations); None: until the time
        limit, or the method's default without one.
    start_plan
        A whole plan to start from (``--warm-start greedy|ga|sa``): ``cp`` hints it to
        CP-SAT and keeps it if it finds nothing better.
    start_search
        A heuristic to run beside the method (``--warm-start ga|sa`` for ``milp`` on
        HiGHS with a time limit): called with the method's options, it returns a plan
        that the method takes as an incumbent while its own search keeps the whole time.
    stop
        Called between steps by the anytime methods (``sa``, ``ga``): True means the
        caller needs no more (branch-and-cut has ended), and they return their best plan.
    """

    time_limit_s: float | None = None
    seed: int = 0
    threads: int = min(2, CORES)
    gap_tolerance: float = 1e-4
    backend: str = "highs"
    rounding: str = "largest-share"
    warm_start: Mapping[int, IntArray] | None = None
    tick_s: float | None = None
    then: ObjectiveKind | None = None
    policy: str = "max-min-fairness"
    round_s: float = 360.0
    floor: float = 1.0
    partitions: int = 1
    space_sharing: bool = False
    moves: tuple[str, ...] = ("shift", "swap")
    crossover: str = "uniform"
    iterations: int | None = None
    start_plan: Result | None = None
    start_search: Callable[[SolveOptions], Result] | None = None
    stop: Callable[[], bool] | None = None

    def __post_init__(self) -> None:
        """Refuse settings out of range, whoever gives them (CLI, bench specs, the API).

        Raises
        ------
        InputError
            Naming the option and its range.
        """
        # (option, value, lowest, highest, whether the lowest itself is allowed)
        ranges: tuple[tuple[str, float | None, float, float, bool], ...] = (
            # The longest limit, tick or round is the instance format's longest time.
            ("--time-limit", self.time_limit_s, 0, MAX_TIME_S, False),
            ("--seed", self.seed, 0, MAX_SEED, True),
            ("--threads", self.threads, 1, CORES, True),
            ("--tick", self.tick_s, 0, MAX_TIME_S, False),
            ("--round", self.round_s, 0, MAX_TIME_S, False),
            ("--partitions", self.partitions, 1, 10**9, True),
            ("--iterations", self.iterations, 1, 10**12, True),
            ("gap_tolerance", self.gap_tolerance, 0, 1.0, True),
        )
        for name, value, low, high, closed in ranges:
            if value is None:
                continue
            if not ((value >= low if closed else value > low) and value <= high):
                raise InputError(name, "", f"{value!r} is out of range: expected "
                                 f"{'from' if closed else 'above'} {low} to {high:g}"
                                 if isinstance(high, float) else
                                 f"{value!r} is out of range: expected from {low} to {high}")


def seconds_left(options: SolveOptions, began: float) -> float:
    """What is left of the options' time limit ``time.perf_counter() - began`` after."""
    if options.time_limit_s is None:
        return math.inf
    return options.time_limit_s - (time.perf_counter() - began)


class Backend(Protocol):
    """A solver for canonical linear programs."""

    #: Registry name, as given to ``gpuplan solve --solver``.
    name: str

    def solve_program(
        self, program: LinearProgram, options: SolveOptions, start: FloatArray | None = None
    ) -> ProgramSolution:
        """Solve within the options' limits, from an optional starting solution.

        Parameters
        ----------
        program
            The model in canonical form.
        options
            Time limit, threads, seed and gap tolerance.
        start
            Column values of a known (possibly partial) solution: a warm start or hint.
        """
        ...


class Solver(Protocol):
    """A planning method: turns an instance into a :class:`Result`."""

    #: Registry name, as given to ``gpuplan solve --method``.
    name: str
    #: One line for ``--help``.
    description: str

    def supports(self, instance: Instance) -> bool:
        """Whether the method can plan this instance's objective."""
        ...

    def solve(self, instance: Instance, options: SolveOptions) -> Result:
        """Plan the instance within the options' limits.

        Parameters
        ----------
        instance
            The validated problem.
        options
            Time limit, seed, threads and tolerance.
        """
        ...
