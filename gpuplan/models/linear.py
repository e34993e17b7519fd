"""The canonical form every linear backend consumes (HiGHS, CP-SAT, Pyomo).

A formulation compiles itself to one :class:`LinearProgram`: optimise ``cost @ x + offset``
subject to ``row_lower <= A @ x <= row_upper`` and ``col_lower <= x <= col_upper``, with some
columns integer. ``A`` is stored row-wise (CSR) in plain numpy arrays, which is what highspy
takes directly and what the other backends walk row by row.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, overload

import numpy as np

from gpuplan.core.budget import Budget
from gpuplan.core.instance import BoolArray, FloatArray, IntArray


class OutOfTimeError(Exception):
    """The budget was spent while a model was being built; the message says where."""


def check_budget(budget: Budget, stage: str) -> None:
    """Raise :class:`OutOfTimeError` naming ``stage`` once the budget is spent.

    Spent means its time is up or its caller has stopped (:meth:`Budget.spent`).
    """
    if budget.spent():
        raise OutOfTimeError(stage)


class LazyNames(Sequence[str]):
    """Row or column names spelled out only when one is asked for.

    A model of half a million columns would spend a large share of its build time
    formatting names that only an export or an explanation of infeasibility ever reads.

    Parameters
    ----------
    size
        How many names there are.
    spell
        The name at an index in ``range(size)``.
    """

    def __init__(self, size: int, spell: Callable[[int], str]) -> None:
        self._size = int(size)
        self._spell = spell

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, key: int) -> str: ...

    @overload
    def __getitem__(self, key: slice) -> Sequence[str]: ...

    def __getitem__(self, key: int | slice) -> str | Sequence[str]:
        if isinstance(key, slice):
            return [self._spell(k) for k in range(self._size)[key]]
        k = int(key)
        if k < 0:
            k += self._size
        if not 0 <= k < self._size:
            raise IndexError(f"name {key} of {self._size}")
        return self._spell(k)


def take_names(names: Sequence[str], indices: IntArray) -> Sequence[str]:
    """The names at ``indices``, spelled out only when asked for."""
    chosen = np.asarray(indices, dtype=np.int64)
    return LazyNames(chosen.size, lambda i: names[int(chosen[i])])


def chain_names(*parts: Sequence[str]) -> Sequence[str]:
    """The names of several blocks one after another; lazy when any block is."""
    if all(isinstance(part, (list, tuple)) for part in parts):
        return tuple(name for part in parts for name in part)
    ends = np.cumsum([len(part) for part in parts]).tolist()

    def spell(k: int) -> str:
        block = bisect.bisect_right(ends, k)
        return parts[block][k - (ends[block - 1] if block else 0)]

    return LazyNames(ends[-1] if ends else 0, spell)



#: The largest power of two a row is scaled by: far beyond any coefficient worth keeping,
#: and finite (2**1024 is not).
_MAX_SHIFT = 1000

@dataclass(frozen=True)
class LinearProgram:
    """A mixed-integer linear program in canonical, row-wise sparse form.

    Attributes
    ----------
    sense
        ``"min"`` or ``"max"``.
    cost
        ``(n,)`` objective coefficients.
    col_lower, col_upper
        ``(n,)`` column bounds.
    integer
        ``(n,)`` which columns are integer.
    row_lower, row_upper
        ``(m,)`` row bounds (``-inf`` / ``inf`` where open).
    row_start, col_index, value
        CSR matrix: row ``i`` holds ``value[row_start[i]:row_start[i+1]]`` at columns
        ``col_index[row_start[i]:row_start[i+1]]``.
    col_names, row_names
        Names for export and for explaining infeasibility (a :class:`LazyNames` spells
        them out only when read).
    hessian
        ``(n,)`` diagonal of ``Q`` for a convex quadratic objective ``cost @ x + 1/2 x'Qx``
        (HiGHS' convention), or None for a linear one.
    """

    sense: Literal["min", "max"]
    cost: FloatArray
    col_lower: FloatArray
    col_upper: FloatArray
    integer: BoolArray
    row_lower: FloatArray
    row_upper: FloatArray
    row_start: IntArray
    col_index: IntArray
    value: FloatArray
    col_names: Sequence[str]
    row_names: Sequence[str]
    hessian: FloatArray | None = None

    @property
    def n_cols(self) -> int:
        """Number of columns."""
        return int(self.cost.size)

    @property
    def n_rows(self) -> int:
        """Number of rows."""
        return int(self.row_lower.size)

    def round_bound(self, bound: float) -> float:
        """Tighten a bound to the next attainable value when the objective is integral.

        If every column with a non-zero cost is integer and every cost is an integer, any
        solution has an integral objective, so a lower bound rounds up (an upper bound down).
        """
        costly = self.cost != 0
        if not (self.integer[costly].all() and np.all(self.cost == np.round(self.cost))):
            return bound
        return math.floor(bound + 1e-6) if self.sense == "max" else math.ceil(bound - 1e-6)

    def objective_value(self, x: FloatArray) -> float:
        """The objective at column values ``x``, the quadratic part included."""
        value = float(self.cost @ x)
        if self.hessian is not None:
            value += 0.5 * float(self.hessian @ (x * x))
        return value

    def equilibrated(self) -> LinearProgram:
        """The program with rows of tiny or huge coefficients scaled by a power of two.

        A row whose largest coefficient is below ``2**-20`` or above ``2**20`` (a demand of
        1e-9 against a capacity of 1e-9) is multiplied by the power of two that brings
        that coefficient into ``[1, 2)``, bounds included. Scaling by a power of two is
        exact, so the solutions, column values and reduced costs are those of the program
        itself; but no coefficient stays small enough for a solver to drop (HiGHS ignores
        matrix entries below 1e-9). Other rows are left as they are.
        """
        scale = self.row_scale()
        if scale is None:
            return self
        lengths = np.diff(self.row_start)
        return replace(self, value=self.value * np.repeat(scale, lengths),
                       row_lower=self.row_lower * scale, row_upper=self.row_upper * scale)

    def row_scale(self) -> FloatArray | None:
        """The factor :meth:`equilibrated` multiplies each row by; None when it keeps them.

        A dual of the equilibrated program's row times its factor is the program's.
        """
        lengths = np.diff(self.row_start)
        filled = np.flatnonzero(lengths > 0)
        if not filled.size:
            return None
        largest = np.zeros(self.n_rows)
        largest[filled] = np.maximum.reduceat(np.abs(self.value), self.row_start[filled])
        odd = (largest > 0) & ((largest < 2.0**-20) | (largest > 2.0**20))
        if not odd.any():
            return None
        scale = np.ones(self.n_rows)
        _, exponent = np.frexp(largest[odd])  # largest = m * 2**exponent, m in [0.5, 1)
        # A subnormal coefficient (1e-311) would need a factor beyond the largest float;
        # the shift stops where the row's finite bounds would overflow.
        bounds = np.maximum(np.abs(np.nan_to_num(self.row_lower[odd], posinf=0, neginf=0)),
                            np.abs(np.nan_to_num(self.row_upper[odd], posinf=0, neginf=0)))
        _, room = np.frexp(np.maximum(bounds, largest[odd]))
        scale[odd] = np.ldexp(1.0, np.minimum(np.minimum(1 - exponent, 1022 - room),
                                              _MAX_SHIFT))
        return scale

    def relaxed(self) -> LinearProgram:
        """The continuous relaxation: the same program with no integer columns."""
        return replace(self, integer=np.zeros_like(self.integer))

    def row(self, i: int) -> tuple[IntArray, FloatArray]:
        """Column indices and coefficients of row ``i``."""
        lo, hi = self.row_start[i], self.row_start[i + 1]
        return self.col_index[lo:hi], self.value[lo:hi]

    def activity(self, x: FloatArray) -> FloatArray:
        """``A @ x`` for a column vector ``x``."""
        rows = np.repeat(np.arange(self.n_rows), np.diff(self.row_start))
        activity: FloatArray = np.bincount(
            rows, weights=self.value * x[self.col_index], minlength=self.n_rows
        ).astype(float)
        return activity


class RowBuilder:
    """Collects rows as coordinate triples, then emits the CSR arrays of a program."""

    def __init__(self) -> None:
        self._rows: list[IntArray] = []
        self._cols: list[IntArray] = []
        self._values: list[FloatArray] = []
        self._lower: list[FloatArray] = []
        self._upper: list[FloatArray] = []
        self._names: list[Sequence[str]] = []
        self.count = 0

    def add(
        self,
        row: IntArray,
        col: IntArray,
        value: FloatArray,
        lower: FloatArray,
        upper: FloatArray,
        names: Sequence[str],
    ) -> None:
        """Add a block of rows.

        Parameters
        ----------
        row
            Row of each coefficient, numbered from 0 within the block.
        col, value
            Column and coefficient of each entry.
        lower, upper
            Bounds of each row in the block.
        names
            One name per row in the block (a :class:`LazyNames` for large blocks).
        """
        self._rows.append(np.asarray(row, dtype=np.int64) + self.count)
        self._cols.append(np.asarray(col, dtype=np.int64))
        self._values.append(np.asarray(value, dtype=float))
        self._lower.append(np.asarray(lower, dtype=float))
        self._upper.append(np.asarray(upper, dtype=float))
        self._names.append(names)
        self.count += len(names)

    def program(
        self,
        sense: Literal["min", "max"],
        cost: FloatArray,
        col_lower: FloatArray,
        col_upper: FloatArray,
        integer: BoolArray,
        col_names: Sequence[str],
        hessian: FloatArray | None = None,
    ) -> LinearProgram:
        """The program with these columns and the rows added so far."""
        row = np.concatenate(self._rows) if self._rows else np.zeros(0, dtype=np.int64)
        col = np.concatenate(self._cols) if self._cols else np.zeros(0, dtype=np.int64)
        value = np.concatenate(self._values) if self._values else np.zeros(0)
        n_cols = max(int(np.asarray(cost).size), 1)
        if self.count * n_cols < 2**62:
            # By row, then column, ties in the order given: what a lexsort gives, in a
            # fraction of its time on millions of entries.
            order = np.argsort(row * n_cols + col, kind="stable")
        else:  # pragma: no cover - keys would overflow
            order = np.lexsort((col, row))
        start = np.zeros(self.count + 1, dtype=np.int64)
        np.cumsum(np.bincount(row, minlength=self.count), out=start[1:])
        return LinearProgram(
            sense=sense,
            cost=np.asarray(cost, dtype=float),
            col_lower=np.asarray(col_lower, dtype=float),
            col_upper=np.asarray(col_upper, dtype=float),
            integer=np.asarray(integer, dtype=bool),
            row_lower=np.concatenate(self._lower) if self._lower else np.zeros(0),
            row_upper=np.concatenate(self._upper) if self._upper else np.zeros(0),
            row_start=start,
            col_index=col[order],
            value=value[order],
            col_names=col_names,
            row_names=chain_names(*self._names),
            hessian=None if hessian is None else np.asarray(hessian, dtype=float),
        )
