"""Portfolios: lanes that search at once on threads of their own, the first proof ending all.

``milp`` and ``cp`` (on R||Cmax batches) run the peer's branch-and-cut on all the threads,
exactly as ``--method textbook`` does, and their own search on one more thread at the
lowest priority (:func:`lowest_priority`): HiGHS's path is chaotic, so a start or an
offered plan, or a share of the cores taken from its parallel tree search, sends it to
another plan, sometimes a worse one than the peer's. The search then takes only CPU the
tree search leaves idle (its root node and cut rounds are serial, and on large models
most of the time).

A :class:`Portfolio` starts each lane (:meth:`Portfolio.start`); a lane whose answer is a
proof (optimality, infeasibility) *settles* the portfolio, which cancels every solve
registered with :meth:`Portfolio.on_settle` and tells the other lanes, which read
:attr:`Portfolio.settled` between their steps. A later branch-and-cut of a search lane's
own may take that lane's plans while it runs (:attr:`Portfolio.incumbent`). Whatever a
lane raises is raised on the caller's thread, and a caller interrupted while lanes run
(Ctrl-C) settles and joins them first, so that no solve is left running behind it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Generic, TypeVar

import numpy as np

from gpuplan.core.instance import FloatArray

T = TypeVar("T")

#: The nice value of a search lane's thread: the lowest priority.
LANE_NICE = 19


def lowest_priority() -> None:
    """Give the calling thread the lowest priority (on Linux, where threads have their own).

    Called first thing on a search lane's own thread (a priority cannot be raised again
    without privileges, so never on the caller's).
    """
    if sys.platform == "linux":
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LANE_NICE)


class SharedIncumbent:
    """The best plan of one lane, offered to branch-and-cut in another (thread-safe)."""

    def __init__(self, sense: str) -> None:
        self._lock = threading.Lock()
        self._sign = -1.0 if sense == "max" else 1.0
        self._values: FloatArray | None = None
        self._value = np.inf
        self._given = True

    def update(self, values: FloatArray, value: float) -> None:
        """Record a new plan if it is better than the one held."""
        with self._lock:
            if self._sign * value < self._value - 1e-9:
                self._values, self._value, self._given = values.copy(), self._sign * value, False

    def offer(self, current: float) -> FloatArray | None:
        """The held plan, once, if it beats ``current`` (branch-and-cut's incumbent)."""
        with self._lock:
            if self._given or self._values is None or self._value >= self._sign * current:
                return None
            self._given = True
            return self._values


class Lane(Generic[T]):
    """One lane of a portfolio: its thread and, once it ended, its answer."""

    def __init__(self, name: str, thread: threading.Thread) -> None:
        self.name = name
        self._thread = thread
        self._answer: list[T] = []
        self._error: list[BaseException] = []

    def running(self) -> bool:
        """Whether the lane still works."""
        return self._thread.is_alive()

    def answer(self) -> T:
        """What the lane returned (after :meth:`Portfolio.join`).

        Raises
        ------
        BaseException
            Whatever the lane raised.
        """
        if self._error:
            raise self._error[0]
        return self._answer[0]


class Portfolio:
    """Lanes run at once, each on a thread of its own; the first proof settles them all.

    Parameters
    ----------
    sense
        ``"min"`` or ``"max"``: which plans of :attr:`incumbent` are better.
    """

    def __init__(self, sense: str = "min") -> None:
        #: The best plan a search lane found, for branch-and-cut in another to adopt.
        self.incumbent = SharedIncumbent(sense)
        self._lock = threading.Lock()
        self._settled = threading.Event()
        self._cancels: list[Callable[[], None]] = []
        self._lanes: list[Lane[object]] = []

    @property
    def settled(self) -> bool:
        """Whether a lane proved its answer (or failed): the others have nothing to add."""
        return self._settled.is_set()

    def on_settle(self, cancel: Callable[[], None]) -> None:
        """Call ``cancel`` (a backend's) when the portfolio settles; at once if it has."""
        with self._lock:
            if not self._settled.is_set():
                self._cancels.append(cancel)
                return
        cancel()

    def settle(self) -> None:
        """End the portfolio's work: cancel every registered solve and tell the lanes."""
        with self._lock:
            self._settled.set()
            cancels, self._cancels = self._cancels, []
        for cancel in cancels:
            cancel()

    def start(self, name: str, work: Callable[[], T], *,
              settles: Callable[[T], bool] = lambda _: False,
              low_priority: bool = False) -> Lane[T]:
        """Run ``work`` on a thread of its own; a lane that raises settles the portfolio.

        Parameters
        ----------
        name
            The thread's name.
        work
            The lane's search; it returns its answer.
        settles
            Whether an answer is a proof that ends the other lanes' work.
        low_priority
            Run at the lowest priority (:func:`lowest_priority`), on CPU the other lanes
            leave idle.
        """
        lane: Lane[T]

        def run() -> None:
            if low_priority:
                lowest_priority()
            try:
                answer = work()
            except BaseException as exc:  # raised on the caller's thread by answer()
                lane._error.append(exc)
                self.settle()
                return
            lane._answer.append(answer)
            if settles(answer):
                self.settle()

        thread = threading.Thread(target=run, name=f"gpuplan-{name}", daemon=True)
        lane = Lane(name, thread)
        self._lanes.append(lane)  # type: ignore[arg-type]  # answers are read typed
        thread.start()
        return lane

    def join(self) -> None:
        """Wait for every lane; each solve in one returns within its budget.

        Raises
        ------
        BaseException
            The first error a lane raised, on the caller's thread.
        """
        for lane in self._lanes:
            lane._thread.join()
        for lane in self._lanes:
            if lane._error:
                raise lane._error[0]

    def __enter__(self) -> Portfolio:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        """On an error of the caller's (Ctrl-C), settle and wait: no solve is left behind."""
        if error is not None:
            self.settle()
            for lane in self._lanes:
                lane._thread.join()
