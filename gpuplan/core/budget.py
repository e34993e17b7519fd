"""The one time budget of a solve: created once, handed down, read by every part.

A :class:`Budget` holds what a solve may spend (a time limit, an iteration limit, a
caller's stop) and when it began. :func:`gpuplan.planning.plan` makes one per solve;
methods, heuristics run inside them and backends read it, and give a part of it to a
sub-search with :meth:`Budget.part`. Absolute clock readings stay inside this module: the
word "deadline" belongs to jobs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from gpuplan.core.status import OPTIMAL_GAP


def never() -> bool:
    """The stop of a budget no caller can end early."""
    return False


@dataclass(frozen=True)
class Budget:
    """What a solve may spend, from the moment it started.

    Attributes
    ----------
    time_limit_s
        Wall-clock seconds from :attr:`started`; None for no limit.
    iterations
        Steps an iterative method (``sa`` moves, ``ga`` generations) may take; None for
        no limit of its own.
    stop
        Called between steps: True means the caller needs no more (another lane has
        finished), and the part returns its best at once.
    started
        ``time.perf_counter()`` when the budget began.
    """

    time_limit_s: float | None = None
    iterations: int | None = None
    stop: Callable[[], bool] = never
    started: float = field(default_factory=time.perf_counter)

    @property
    def limited(self) -> bool:
        """Whether there is a time limit."""
        return self.time_limit_s is not None

    def elapsed(self) -> float:
        """Seconds since the budget began."""
        return time.perf_counter() - self.started

    def left(self) -> float:
        """Seconds left of the time limit (negative once past it); infinite without one."""
        if self.time_limit_s is None:
            return math.inf
        return self.time_limit_s - self.elapsed()

    def spent(self) -> bool:
        """Whether the time is up or the caller has stopped."""
        return self.left() <= 0 or self.stop()

    def part(self, seconds: float | None = None, *, share: float | None = None,
             iterations: int | None = None, stop: Callable[[], bool] | None = None) -> Budget:
        """A budget that starts now for a part of the work, never outlasting this one.

        Parameters
        ----------
        seconds
            At most this long.
        share
            At most this share of this budget's whole time limit.
        iterations
            The part's own iteration limit (this budget's is not inherited: it counts the
            steps of the method it was given to).
        stop
            Another stop, checked besides this budget's.
        """
        now = time.perf_counter()
        caps = [self.time_limit_s - (now - self.started)] if self.time_limit_s is not None else []
        if seconds is not None:
            caps.append(seconds)
        if share is not None and self.time_limit_s is not None:
            caps.append(share * self.time_limit_s)
        mine = self.stop
        both = mine if stop is None else (lambda: mine() or stop())
        return Budget(min(caps) if caps else None, iterations, both, now)


@dataclass(frozen=True)
class Limits:
    """What a backend may spend and how it may search: the methods' options stay above.

    Attributes
    ----------
    budget
        The solve's time budget; the backend stops when it is spent.
    threads
        Threads the backend may use.
    seed
        Random seed of the backend's search.
    gap
        Relative gap at which the backend may stop and call its solution optimal.
    presolve
        Whether the backend may presolve the program (off where presolve costs more than
        the solve, as on small MILPs with many binary columns).
    algorithm
        How an LP is solved: ``"auto"`` (the backend's choice), ``"simplex"`` or
        ``"ipm"`` (interior point); backends with one algorithm read only ``"auto"``.
    """

    budget: Budget
    threads: int = 1
    seed: int = 0
    gap: float = OPTIMAL_GAP
    presolve: bool = True
    algorithm: Literal["auto", "simplex", "ipm"] = "auto"
