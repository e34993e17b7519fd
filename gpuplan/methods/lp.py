"""Relaxed static assignment: ``--method lp``.

``lp`` solves the pooled-type LP relaxation (:class:`~gpuplan.models.assignment.PooledModel`),
whose optimum is the reported bound, rounds it with a rounding from
:data:`~gpuplan.parts.lp_rounding.ROUNDINGS`, and improves the plan by moving jobs. The
time limit covers the relaxation (half of it at most), rounding, repair and the moves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from gpuplan.backends import backends_with, get_backend
from gpuplan.backends.base import Capabilities
from gpuplan.core.instance import Feature, FloatArray, Instance
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.core.options import option
from gpuplan.core.result import Result
from gpuplan.core.settings import Context, WarmStart
from gpuplan.core.status import Status
from gpuplan.methods.base import MethodDefaults, solver_option
from gpuplan.models.assignment import POOLED_OBJECTIVES, PooledModel
from gpuplan.models.bounds import objective_bound
from gpuplan.parts.lp_rounding import ROUNDINGS, improve_by_moves, repair_by_ejection
from gpuplan.parts.static_plans import (
    placements,
    proven_infeasible,
    static_result,
    static_value,
    tightest,
)

#: Share of the time left that the relaxation may take; rounding and moves get the rest.
RELAXATION_SHARE = 0.5


#: Backends with continuous columns, which the pooled LP relaxation has.
LP_BACKENDS = backends_with(Capabilities(continuous=True))


@dataclass(frozen=True)
class LpOptions:
    """Options of ``--method lp``."""

    backend: str = solver_option(LP_BACKENDS, "the pooled LP relaxation")
    rounding: str = option("largest-share", "--rounding", "how the relaxation is rounded "
                           "(default: largest-share)", choices=tuple(ROUNDINGS))


class LpMethod(MethodDefaults):
    """LP relaxation over pooled GPU types, rounded and improved."""

    name: ClassVar[str] = "lp"
    description: ClassVar[str] = ("pooled LP relaxation + --rounding + job moves "
                                  "(assign-cost/-profit, max-weight)")
    options_type: ClassVar[type[LpOptions]] = LpOptions
    objectives: ClassVar[frozenset[ObjectiveKind]] = POOLED_OBJECTIVES
    backends: ClassVar[tuple[str, ...]] = LP_BACKENDS
    warm_starts: ClassVar[frozenset[WarmStart]] = frozenset()
    iterative: ClassVar[bool] = False

    def needs(self, instance: Instance, options: LpOptions) -> Capabilities:
        """Continuous columns: the relaxation is an LP.

        An infeasible relaxation is explained by the backend when it can name the
        conflict (capability ``explain``), and said to be infeasible otherwise.
        """
        return Capabilities(continuous=True)

    def features(self, objective: ObjectiveKind) -> frozenset[Feature]:
        """Node resources, multi-node gangs and topology, in the rounding and its moves.

        The pooled relaxation leaves them out (it stays a relaxation); best-fit decreasing
        and the single-GPU moves keep them. CPU-only jobs are not planned.
        """
        return frozenset({Feature.NODE_RESOURCES, Feature.MULTI_NODE, Feature.TOPOLOGY})

    def solve(self, instance: Instance, options: LpOptions, context: Context) -> Result:
        """Solve the relaxation, round it, improve the rounded plan until the budget is spent.

        Parameters
        ----------
        instance
            An instance whose objective is in :data:`POOLED_OBJECTIVES`.
        options
            Backend (HiGHS or Pyomo) and rounding.
        context
            Budget and seed (of the randomized rounding).
        """
        budget = context.budget
        pooled = PooledModel.build(instance)
        backend = get_backend(options.backend)
        relaxation = backend.solve_program(pooled.program, context.limits(
            budget.part(RELAXATION_SHARE * budget.left()) if budget.limited else budget))
        if relaxation.status is Status.INFEASIBLE:
            return proven_infeasible(instance, pooled.program, backend, context.limits(),
                                     relaxation.solver)
        if relaxation.values is None:
            shares: FloatArray = np.where(instance.eligible, 1.0, 0.0)
        else:
            shares = pooled.shares(relaxation.values)
        rounded = ROUNDINGS[options.rounding](instance, shares, context.seed, budget)
        bound = tightest(instance, relaxation.objective if relaxation.status is Status.OPTIMAL
                         else None, objective_bound(instance))
        solver = f"{relaxation.solver} + {options.rounding} rounding"
        placed = placements(rounded)
        if not instance.objective.allows_unplaced and len(placed) < instance.n_jobs:
            placed = repair_by_ejection(instance, placed, budget)
            if len(placed) < instance.n_jobs:
                return static_result(
                    instance, placed, Status.NO_SOLUTION, None, bound, solver + " + repair",
                    "the time limit ended rounding and repair before every job had a GPU"
                    if budget.spent() else "rounding and repair found no GPU with room for it",
                )
        placed, moves = improve_by_moves(instance, placed, budget)
        value = static_value(instance, placed)
        return static_result(instance, placed, Status.FEASIBLE, value, bound,
                             f"{solver} + {moves} moves",
                             "left out: no GPU had room after rounding")
