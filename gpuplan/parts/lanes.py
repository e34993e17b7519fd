"""What a search lane needs to run beside branch-and-cut: a low priority and a shared plan.

``milp`` and ``cp`` (on R||Cmax batches) run the peer's branch-and-cut on all the threads,
exactly as ``--method textbook`` does, and their own search on one more thread at the
lowest priority (:func:`lowest_priority`): HiGHS's path is chaotic, so a start or an
offered plan, or a share of the cores taken from its parallel tree search, sends it to
another plan, sometimes a worse one than the peer's. The search then takes only CPU the
tree search leaves idle (its root node and cut rounds are serial, and on large models
most of the time). A later branch-and-cut of the search lane's own may take that lane's
plans while it runs (:class:`SharedIncumbent`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

import numpy as np

from gpuplan.core.instance import FloatArray

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
