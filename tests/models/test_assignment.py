"""The assignment model: names spelled on demand, and plans that place nothing decoded."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import instance_from
from methods.test_milp_lp import BACKENDS, TINY

from gpuplan import plan
from gpuplan.models.assignment import AssignmentModel
from gpuplan.models.linear import LazyNames


def test_names_are_spelled_on_demand() -> None:
    """Column and row names read like the model (x[job,gpu]) without being stored."""
    model = AssignmentModel.build(instance_from(TINY))
    names = model.program.col_names
    assert names[0] == "x[j1,a/0]" and names[-1] == list(names)[-1]
    assert isinstance(names, LazyNames) and len(list(names)) == model.program.n_cols
    with pytest.raises(IndexError):
        names[model.program.n_cols]


def test_decoding_a_plan_that_places_nothing() -> None:
    """Max-weight with every weight 0: any backend may place nothing, and that decodes."""
    document = {**TINY, "objective": "max-weight",
                "jobs": [{**job, "weight": 0} for job in TINY["jobs"]]}
    instance = instance_from(document)
    model = AssignmentModel.build(instance)
    assert model.decode(np.zeros(model.program.n_cols)) == {}
    for backend in BACKENDS:
        assert plan(instance, "milp", {"backend": backend}).objective == 0
