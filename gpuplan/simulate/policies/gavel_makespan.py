"""``gavel-makespan`` and ``gavel-makespan-agnostic``: Gavel's makespan policy in rounds.

Gavel's ``min_total_duration_perf`` and ``min_total_duration``: the allocation under which
every job present ends its remaining work soonest, i.e. the smallest ``T`` with
``throughput_j >= remaining_j / T`` for all jobs. Gavel finds ``T`` by a bisection over
feasibility LPs that stops within 5% (``1.05 * min_T < max_T``) and keeps the solver's last
feasible point; gpuplan's makespan LP (:func:`~gpuplan.models.allocation.makespan_program`)
solves it exactly in one LP, so its ``T`` is at most Gavel's. The agnostic form counts
every type at the job's throughput on the fleet's fastest type (Gavel's V100) and visits
the types in a shuffled order each round. The rounds follow Gavel's mechanism
(:mod:`gpuplan.simulate.gavel_rounds`).
"""

from __future__ import annotations

from typing import ClassVar

from gpuplan.models.allocation import Policy
from gpuplan.simulate.gavel_rounds import LpRates, LpRounds


class GavelMakespan(LpRounds):
    """Gavel's heterogeneity-aware makespan policy (min total duration)."""

    name: ClassVar[str] = "gavel-makespan"
    description: ClassVar[str] = (
        "Gavel's makespan policy (min_total_duration_perf), solved exactly in one LP "
        "instead of Gavel's 5% bisection; Gavel's round mechanism, types fastest first")
    aware: ClassVar[bool] = True
    policy: ClassVar[Policy] = Policy.MAKESPAN


class GavelMakespanAgnostic(GavelMakespan):
    """Gavel's heterogeneity-agnostic makespan policy: every type at the fastest's speed."""

    name: ClassVar[str] = "gavel-makespan-agnostic"
    description: ClassVar[str] = (
        "Gavel's agnostic makespan policy (min_total_duration): every type counted at the "
        "job's speed on the fastest type, types in a shuffled order every round")
    aware: ClassVar[bool] = False
    lp_rates: ClassVar[LpRates] = LpRates.REFERENCE
