"""``optimizer``: gpuplan's admission by a MILP over the future timeline (HiGHS).

At each decision the admitted jobs and the arrivals are planned as ElasticFlow plans them
(minimum satisfactory shares in deadline order over 60 s slots,
:class:`~gpuplan.simulate.elastic.policies.common.SharePlanner`). Where that plan meets
every deadline it lacked before, every arrival is admitted: nothing is to be gained by
declining a job that fits. Where it does not, ElasticFlow declines every arrival of the
decision; this policy instead

1. solves the admission MILP of :mod:`gpuplan.models.admission` (which arrivals to admit,
   how many GPUs each job holds in each period up to the last deadline, admitted jobs
   kept first) with HiGHS, within the per-decision time limit, warm-started from the
   admitted jobs' plans of this decision with no arrival admitted;
2. checks its choice slot by slot: while the plan of the admitted jobs and the chosen
   arrivals makes some job late that was not late without the arrivals, the chosen
   arrival holding the most GPU-seconds is declined instead.

Arrivals that cannot meet their deadline even alone on the whole cluster are declined at
once. Counts, leftovers (by marginal gain) and the next decision are then ElasticFlow's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from gpuplan.backends.highs import HighsBackend
from gpuplan.core.budget import Budget, Limits
from gpuplan.core.options import option, parse_number
from gpuplan.core.settings import RunSettings
from gpuplan.models.admission import AdmissionJob, admission_model
from gpuplan.simulate.elastic.engine import ElasticDecision, ElasticView
from gpuplan.simulate.elastic.policies.common import JobLevels, SharePlanner
from gpuplan.simulate.elastic.policies.elasticflow import SlotOptions
from gpuplan.simulate.elastic.slots import Plan

#: Seconds each decision's MILP may take when no time limit is given.
DEFAULT_LIMIT_S = 1.0


@dataclass(frozen=True)
class OptimizerOptions(SlotOptions):
    """Options of ``optimizer``: ElasticFlow's slot, and the MILP's periods."""

    periods: int = option(12, "--periods", "periods of the admission MILP's timeline, cut "
                          "at deadlines (default: 12)",
                          parse=parse_number(int, 1, 1000), metavar="N")


class Optimizer:
    """gpuplan: the largest set of arrivals a joint timeline plan meets, by MILP."""

    name: ClassVar[str] = "optimizer"
    description: ClassVar[str] = ("gpuplan: admits the largest set of arrivals whose "
                                  "deadlines a plan over the timeline meets (HiGHS MILP), "
                                  "ElasticFlow's shares and leftovers")
    options_type: ClassVar[type[Any]] = OptimizerOptions
    calls_solver: ClassVar[bool] = True

    def __init__(self, instance: Any, options: OptimizerOptions,
                 settings: RunSettings) -> None:
        self.levels = JobLevels(instance, useful=True)
        self.planner = SharePlanner(self.levels, options.slot_s)
        self.decision_gap_s = options.slot_s
        self.periods = options.periods
        self.settings = settings
        self.limit_s = settings.time_limit_s or DEFAULT_LIMIT_S
        self.backend = HighsBackend()
        #: Wall seconds spent in the MILP, and each solve's seconds.
        self.solver_s = 0.0
        self.solves: list[float] = []

    def decide(self, view: ElasticView) -> ElasticDecision:
        """Admit what fits; on a conflict, the MILP's choice, checked slot by slot.

        The whole decision keeps to the time limit: the MILP gets what the planning before
        it left, less a fifth for the check; a check that runs out of time declines the
        arrivals it has not cleared.
        """
        budget = Budget(self.limit_s)
        arrived = [j for j in view.arrived.tolist() if self._alone(view, j)]
        declined = [j for j in view.arrived.tolist() if j not in set(arrived)]
        if not arrived:
            plans, _ = self.planner.plan(view, view.active)
            return self.planner.decision(view, plans, declined)
        plans, late = self.planner.plan(view, np.concatenate([view.active, arrived]))
        if not late:
            return self.planner.decision(view, plans, declined)
        kept, before = self.planner.plan(view, view.active)
        chosen = self._choose(view, {j: plan for j, plan in kept.items() if j not in before},
                              arrived, Budget(0.8 * budget.left()))
        declined += [j for j in arrived if j not in chosen]
        while True:
            plans, late = self.planner.plan(
                view, np.concatenate([view.active, np.array(chosen, dtype=np.int64)]))
            broken = late - before
            if not broken or not chosen:
                break
            if budget.spent():
                declined += chosen
                chosen = []
                plans = kept
                break
            out = max(chosen, key=lambda j: (j in broken, self._gpu_seconds(view, j)))
            chosen.remove(out)
            declined.append(out)
        return self.planner.decision(view, plans, declined)

    def _alone(self, view: ElasticView, j: int) -> bool:
        """Whether the job meets its deadline alone at its fastest level from now."""
        levels = self.levels(j)
        fastest = float(levels.rates.max())
        left = float(view.instance.due[j]) - view.now - float(view.instance.rescale_s[j])
        return fastest > 0 and left > 0 and float(view.remaining[j]) / fastest <= left

    def _gpu_seconds(self, view: ElasticView, j: int) -> float:
        """GPU-seconds the job needs at its most efficient level."""
        levels = self.levels(j)
        per = levels.counts[1:] / levels.rates[1:]
        return float(view.remaining[j]) * float(per.min())

    def _choose(self, view: ElasticView, kept: dict[int, Plan], arrived: list[int],
                budget: Budget) -> list[int]:
        """The arrivals the admission MILP admits beside the ``kept`` jobs.

        It starts from the ``kept`` jobs' plans, admitting no arrival; none is admitted
        when it finds no plan within the budget.
        """
        jobs = [*kept, *arrived]
        instance = view.instance
        model = admission_model([
            AdmissionJob(left_s=float(instance.due[j]) - view.now,
                         need=float(view.remaining[j]),
                         counts=self.levels(j).counts[1:], rates=self.levels(j).rates[1:],
                         overhead_s=(float(view.overhead_left[j]) if view.count[j]
                                     else float(instance.rescale_s[j])),
                         admitted=k < len(kept),
                         planned=(self.planner.slot_work(view, j, kept[j]) if j in kept
                                  else None))
            for k, j in enumerate(jobs)], view.gpus, self.periods)
        began = time.perf_counter()
        solution = self.backend.solve_program(
            model.program, Limits(budget, threads=self.settings.threads,
                                  seed=self.settings.seed), start=model.start)
        spent = time.perf_counter() - began
        self.solver_s += spent
        self.solves.append(spent)
        if solution.values is None:
            return []
        admitted = model.admitted(solution.values)
        return [j for k, j in enumerate(jobs) if k >= len(kept) and admitted[k]]
