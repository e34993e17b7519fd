"""``elasticflow``: ElasticFlow's admission control and elastic scaling (Gu et al., ASPLOS'23).

As its simulator does it (``ef_sim_jobs_access_control``, ``ef_sim_allocation`` and
``allocate_free_gpus`` in ``ElasticFlow/scheduler/scheduler.py`` of pkusys/ElasticFlow),
over the slots of :mod:`~gpuplan.simulate.elastic.slots` (60 s, its ``scheduling_slot``):

- at every decision, the admitted jobs and the arrivals are planned again from an empty
  future, earliest deadline first. Each gets its **minimum satisfactory share**: the
  smallest level ``q`` such that holding ``q`` (or the most GPUs left in a slot, if
  fewer) from some slot to its deadline does its iterations; it then holds the level
  below ``q`` from now until that slot and ``q`` from it, until its iterations are done;
- **admission control**: if some arrival cannot meet its deadline so, every job that
  arrived at this decision is declined (all of them, as ElasticFlow does), and the admitted
  jobs are planned again without them. An admitted job that can no longer meet its
  deadline is planned to run as soon and as wide as the slots allow;
- each job holds now what its plan holds in the first slot; the GPUs left over go one
  level at a time to the job that gains the most iterations per second per GPU added
  (**marginal gain**);
- decisions are taken at arrivals, completions and where a plan changes level, never
  closer than one slot apart: events within a slot of the last decision wait for the
  next slot boundary and are decided together (**slot merging**; the engine's
  ``decision_gap_s``).

ElasticFlow charges a restart overhead that grows with the GPU count on every running job
at every decision; gpuplan charges each job's ``rescale_s`` on each start, resume and
change of GPUs (see ``docs/guide/elastic.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from gpuplan.core.options import option, parse_number
from gpuplan.simulate.elastic.engine import ElasticDecision, ElasticView
from gpuplan.simulate.elastic.policies.common import JobLevels, SharePlanner

#: ElasticFlow's scheduling slot, seconds.
SLOT_S = 60.0


@dataclass(frozen=True)
class SlotOptions:
    """Options of the slot-planning policies (``elasticflow``, ``edf``)."""

    slot_s: float = option(SLOT_S, "--slot", "seconds per planning slot; decisions are at "
                           "least one slot apart (default: 60, ElasticFlow's)",
                           parse=parse_number(float, 1.0, 86400.0), metavar="S")


class ElasticFlow:
    """ElasticFlow: minimum satisfactory shares, all-or-none admission, marginal gain."""

    name: ClassVar[str] = "elasticflow"
    description: ClassVar[str] = ("ElasticFlow: admission control, minimum satisfactory "
                                  "shares in deadline order, leftovers by marginal gain")
    options_type: ClassVar[type[Any]] = SlotOptions
    calls_solver: ClassVar[bool] = False

    def __init__(self, instance: Any, options: SlotOptions) -> None:
        self.planner = SharePlanner(JobLevels(instance, useful=True), options.slot_s)
        self.decision_gap_s = options.slot_s

    def decide(self, view: ElasticView) -> ElasticDecision:
        """Plan every job in deadline order; decline the arrivals if one cannot make it."""
        plans, late = self.planner.plan(view, np.concatenate([view.active, view.arrived]))
        declined: list[int] = []
        if late:
            declined = view.arrived.tolist()
            plans, late = self.planner.plan(view, view.active)
        return self.planner.decision(view, plans, declined)

