"""The outcome of a solve, its quality certificate and the tolerances every check uses."""

from __future__ import annotations

from enum import StrEnum

#: Tolerance for capacities and objective values (relative), and for times (absolute
#: seconds; the verifier adds the float rounding of times far from zero).
TOLERANCE = 1e-6
#: The largest relative gap at which a plan may be called ``optimal`` (HiGHS' default
#: MIP gap); the verifier holds every schedule, and so every method, to it.
OPTIMAL_GAP = 1e-4


class Status(StrEnum):
    """Outcome of a solve."""

    #: A plan that is proven optimal: its bound is within :data:`OPTIMAL_GAP` of it.
    OPTIMAL = "optimal"
    #: A plan that satisfies every constraint; optimality is not proven.
    FEASIBLE = "feasible"
    #: Proven: no plan satisfies every constraint.
    INFEASIBLE = "infeasible"
    #: No plan was found (time limit, or a heuristic that failed); feasibility is unknown.
    NO_SOLUTION = "no_solution"

    @property
    def has_plan(self) -> bool:
        """Whether the schedule claims to satisfy every constraint."""
        return self in (Status.OPTIMAL, Status.FEASIBLE)


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """The relative gap ``|objective - bound| / |objective|``, as HiGHS and CP-SAT define it.

    Returns 0 when both are zero and None when either is missing.
    """
    if objective is None or bound is None:
        return None
    difference = abs(objective - bound)
    if difference <= 1e-9 * max(1.0, abs(objective)):
        return 0.0
    return difference / abs(objective) if objective != 0 else float("inf")
