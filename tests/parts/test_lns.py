"""Large-neighbourhood search: sub-programs that free some columns and fix the rest."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import instance_from
from methods.test_milp_lp import TINY

from gpuplan.backends import get_backend
from gpuplan.core.budget import Budget, Limits
from gpuplan.models.assignment import AssignmentModel
from gpuplan.parts.lns import subprogram


def test_subprogram_fixes_the_rest() -> None:
    """Freeing every column gives back the program; freeing none leaves nothing to solve."""
    model = AssignmentModel.build(instance_from(TINY))
    program = model.program
    limits = Limits(Budget())
    solution = get_backend("highs").solve_program(program, limits)
    assert solution.values is not None
    whole, columns = subprogram(program, np.ones(program.n_cols, dtype=bool), solution.values)
    assert whole.n_cols == program.n_cols and whole.n_rows == program.n_rows
    assert get_backend("highs").solve_program(whole, limits).objective == pytest.approx(
        solution.objective
    )
    empty, columns = subprogram(program, np.zeros(program.n_cols, dtype=bool), solution.values)
    assert empty.n_cols == 0 and empty.n_rows == 0 and columns.size == 0
