"""The canonical form every linear backend consumes (HiGHS, CP-SAT, Pyomo).

A formulation compiles itself to one :class:`LinearProgram`: optimise ``cost @ x + offset``
subject to ``row_lower <= A @ x <= row_upper`` and ``col_lower <= x <= col_upper``, with some
columns integer. ``A`` is stored row-wise (CSR) in plain numpy arrays, which is what highspy
takes directly and what the other backends walk row by row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from gpuplan.instance import BoolArray, FloatArray, IntArray


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
        Names for export and for explaining infeasibility.
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
    col_names: tuple[str, ...]
    row_names: tuple[str, ...]
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
        self._names: list[str] = []
        self.count = 0

    def add(
        self,
        row: IntArray,
        col: IntArray,
        value: FloatArray,
        lower: FloatArray,
        upper: FloatArray,
        names: list[str],
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
            One name per row in the block.
        """
        self._rows.append(np.asarray(row, dtype=np.int64) + self.count)
        self._cols.append(np.asarray(col, dtype=np.int64))
        self._values.append(np.asarray(value, dtype=float))
        self._lower.append(np.asarray(lower, dtype=float))
        self._upper.append(np.asarray(upper, dtype=float))
        self._names.extend(names)
        self.count += len(names)

    def program(
        self,
        sense: Literal["min", "max"],
        cost: FloatArray,
        col_lower: FloatArray,
        col_upper: FloatArray,
        integer: BoolArray,
        col_names: tuple[str, ...],
        hessian: FloatArray | None = None,
    ) -> LinearProgram:
        """The program with these columns and the rows added so far."""
        row = np.concatenate(self._rows) if self._rows else np.zeros(0, dtype=np.int64)
        col = np.concatenate(self._cols) if self._cols else np.zeros(0, dtype=np.int64)
        value = np.concatenate(self._values) if self._values else np.zeros(0)
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
            row_names=tuple(self._names),
            hessian=None if hessian is None else np.asarray(hessian, dtype=float),
        )
