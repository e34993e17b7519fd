"""``--method greedy``: best-fit decreasing for static objectives, list scheduling over time.

The baseline every other method must beat: one deterministic pass of
:func:`~gpuplan.parts.construct.best_fit_decreasing` or
:func:`~gpuplan.parts.construct.list_schedule` (its single-GPU jobs then re-seated in the
fullest topology domains, :func:`~gpuplan.parts.compact.compact`). In a re-plan it is
the repair: every job stays in its previous slot where that still fits, in the previous
plan's order, and the others follow where they finish first
(:func:`~gpuplan.parts.construct.repair_keys`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from gpuplan.core.instance import Feature, Instance
from gpuplan.core.objectives import ALL_OBJECTIVES, ObjectiveKind
from gpuplan.core.options import NoOptions
from gpuplan.core.result import Result
from gpuplan.core.settings import Context, WarmStart
from gpuplan.methods.base import MethodDefaults
from gpuplan.parts.compact import compact
from gpuplan.parts.construct import best_fit_decreasing, list_schedule, repair_keys


class GreedyMethod(MethodDefaults):
    """Best-fit decreasing for static objectives, list scheduling for time-based ones."""

    name: ClassVar[str] = "greedy"
    description: ClassVar[str] = ("best-fit decreasing (static) / list scheduling "
                                  "(time-based); no bound search")
    options_type: ClassVar[type[Any]] = NoOptions
    objectives: ClassVar[frozenset[ObjectiveKind]] = ALL_OBJECTIVES
    backends: ClassVar[tuple[str, ...]] = ()
    warm_starts: ClassVar[frozenset[WarmStart]] = frozenset()
    iterative: ClassVar[bool] = False
    plans_outages: ClassVar[bool] = True
    keeps: ClassVar[bool] = True

    def features(self, objective: ObjectiveKind) -> frozenset[Feature]:
        """All of them.

        Both passes place gangs on whole nodes, in domains and partitions, within node
        resources and account/QOS GPU limits.
        """
        return frozenset(Feature)

    def solve(self, instance: Instance, options: NoOptions, context: Context) -> Result:
        """Plan the instance greedily; one pass, well within any sensible time limit.

        Parameters
        ----------
        instance
            The validated problem.
        options
            None of its own.
        context
            The budget: jobs the pass has not reached when it is spent are left out (the
            plan then places every job only where the objective allows dropping some).
        """
        if instance.objective.is_static:
            return best_fit_decreasing(instance, budget=context.budget)
        keep = context.keep
        if keep is None:
            return compact(instance, list_schedule(instance, budget=context.budget))
        return list_schedule(instance, repair_keys(instance, keep), context.budget, keep)
