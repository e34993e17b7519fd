"""``--method greedy``: best-fit decreasing for static objectives, list scheduling over time.

The baseline every other method must beat: one deterministic pass of
:func:`~gpuplan.parts.construct.best_fit_decreasing` or
:func:`~gpuplan.parts.construct.list_schedule` (its single-GPU jobs then re-seated in the
fullest topology domains, :func:`~gpuplan.parts.compact.compact`). In a re-plan it is
the repair: every job stays in its previous slot where that still fits, in the previous
plan's order, and the others follow where they finish first
(:func:`~gpuplan.parts.construct.repair_keys`).

Elastic jobs are moldable over time (``--moldable``, default true): each runs whole on the
GPU type and count of its speed table where it ends first, within a share of its least
GPU-seconds, the best of a few such shares
(:func:`~gpuplan.parts.moldable.moldable_list_schedule`); with ``--moldable false``, and
in a re-plan, each runs at the count it asked for.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from gpuplan.core.instance import Feature, Instance
from gpuplan.core.objectives import ALL_OBJECTIVES, ObjectiveKind
from gpuplan.core.result import Result, plan_status
from gpuplan.core.settings import Context, WarmStart
from gpuplan.methods.base import MethodDefaults
from gpuplan.parts.compact import compact
from gpuplan.parts.construct import best_fit_decreasing, list_schedule, repair_keys
from gpuplan.parts.moldable import (
    Shapes,
    as_pieces,
    moldable_bound,
    moldable_list_schedule,
    moldable_option,
)


@dataclass(frozen=True)
class GreedyOptions:
    """Options of ``--method greedy``."""

    moldable: bool = moldable_option()


class GreedyMethod(MethodDefaults):
    """Best-fit decreasing for static objectives, list scheduling for time-based ones."""

    name: ClassVar[str] = "greedy"
    description: ClassVar[str] = ("best-fit decreasing (static) / list scheduling "
                                  "(time-based); no bound search")
    options_type: ClassVar[type[Any]] = GreedyOptions
    objectives: ClassVar[frozenset[ObjectiveKind]] = ALL_OBJECTIVES
    backends: ClassVar[tuple[str, ...]] = ()
    warm_starts: ClassVar[frozenset[WarmStart]] = frozenset()
    iterative: ClassVar[bool] = False
    plans_outages: ClassVar[bool] = True
    keeps: ClassVar[bool] = True

    def features(self, objective: ObjectiveKind) -> frozenset[Feature]:
        """All of them, elastic jobs only over time.

        Both passes place gangs on whole nodes, in domains and partitions, within node
        resources and account/QOS GPU limits; list scheduling gives elastic jobs a count.
        """
        if objective.is_static:
            return frozenset(Feature) - {Feature.ELASTIC}
        return frozenset(Feature)

    def solve(self, instance: Instance, options: GreedyOptions, context: Context) -> Result:
        """Plan the instance greedily; one pass, well within any sensible time limit.

        Parameters
        ----------
        instance
            The validated problem.
        options
            Whether elastic jobs choose their count (``moldable``).
        context
            The budget: jobs the pass has not reached when it is spent are left out (the
            plan then places every job only where the objective allows dropping some).
        """
        if instance.objective.is_static:
            return best_fit_decreasing(instance, budget=context.budget)
        keep = context.keep
        # A re-plan repairs the previous plan, whose elastic jobs keep their counts.
        shapes = Shapes.of(instance, options.moldable and keep is None)
        if not shapes.identity:
            return moldable_list_schedule(instance, shapes, context.budget)
        if keep is None:
            plan = compact(instance, list_schedule(instance, budget=context.budget))
        else:
            plan = list_schedule(instance, repair_keys(instance, keep), context.budget, keep)
        if instance.elastic.any():
            # Bounded over every count, not only the ones asked for.
            bound = moldable_bound(instance, Shapes.of(instance))
            plan = dataclasses.replace(plan, bound=bound,
                                       status=plan_status(plan.objective, bound))
        return as_pieces(instance, plan)
