"""A previous plan a re-plan stays close to, and what it pays for each job it moves.

A re-plan (:mod:`gpuplan.hybrid`) hands a method the residual instance with a :class:`Keep`:
for each job that had a slot in the previous plan (its GPUs and start, in the residual's
time), the penalty of moving it, and a cap on the number of moves. Methods that declare
``keeps`` minimise the objective plus :meth:`Keep.cost` and never move more than the cap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuplan.core.instance import BoolArray, FloatArray, IntArray
from gpuplan.core.result import Result

#: Seconds within which a start counts as unchanged (float noise of shifted times).
SAME_START_S = 1e-6


@dataclass(frozen=True, eq=False)
class Keep:
    """Each job's previous slot and the price of moving it.

    Attributes
    ----------
    gpus
        Per job of the instance, the GPUs of its previous slot; None: the job had none
        (added, or on GPUs that are gone), so placing it anywhere moves nothing.
    start
        ``(J,)`` the previous slot's start (NaN where none).
    penalty
        ``(J,)`` what moving the job adds to the objective, in the objective's units.
    max_changes
        The most jobs with a slot that may move; None: no cap.
    tolerance_s
        A start that moves by at most this many seconds is no move.
    """

    gpus: tuple[IntArray | None, ...]
    start: FloatArray
    penalty: FloatArray
    max_changes: int | None = None
    tolerance_s: float = SAME_START_S

    @property
    def has_slot(self) -> BoolArray:
        """``(J,)`` whether each job had a previous slot."""
        mask: BoolArray = ~np.isnan(self.start)
        return mask

    def moved(self, result: Result) -> BoolArray:
        """``(J,)`` whether the plan moves each job that had a slot.

        A job stays when it runs in one segment on exactly its previous GPUs from its
        previous start (within :attr:`tolerance_s`); anything else (other GPUs, another
        start, several segments, not placed) moves it.
        """
        n = self.start.size
        count = np.bincount(result.job, minlength=n)
        first = np.full(n, np.nan)
        first[result.job] = result.start
        stays = self.has_slot & (count == 1) & (
            np.abs(first - self.start) <= max(self.tolerance_s, SAME_START_S))
        where = {int(j): k for k, j in enumerate(result.job.tolist())}
        for j in np.flatnonzero(stays).tolist():
            previous = self.gpus[j]
            assert previous is not None
            if not np.array_equal(np.sort(result.gpus[where[j]]), np.sort(previous)):
                stays[j] = False
        moved: BoolArray = self.has_slot & ~stays
        return moved

    def cost(self, result: Result) -> float:
        """What the plan's moves add to its objective."""
        return float(self.penalty[self.moved(result)].sum())

    def allows(self, result: Result) -> bool:
        """Whether the plan moves no more jobs than the cap."""
        return self.max_changes is None or int(self.moved(result).sum()) <= self.max_changes

    def score(self, result: Result) -> float:
        """Objective plus moves' cost (to minimise); inf for no plan or too many moves."""
        if result.objective is None or not self.allows(result):
            return float(np.inf)
        return result.objective + self.cost(result)
