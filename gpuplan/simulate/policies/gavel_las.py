"""``gavel-las`` and ``gavel-las-agnostic``: Gavel's LAS, max-min fairness in rounds.

Gavel's ``max_min_fairness_perf`` (its "Gavel" LAS curve) and ``max_min_fairness`` (its
"LAS" baseline). The allocation maximises the smallest ``throughput / (weight * fair
share)``, each job owed an equal share of the GPUs (Gavel's normalisation, ``--fair-share
gpus`` of ``--method balance``: a gang of k GPUs is owed 1/k of a single-GPU job's time).
The agnostic form solves the same LP with every throughput 1, so it maximises the smallest
gang-weighted share of time, and visits the types in a shuffled order each round: at light
load a job runs on a random type, where the aware form runs it on its fastest type. The
rounds follow Gavel's mechanism (:mod:`gpuplan.simulate.gavel_rounds`).
"""

from __future__ import annotations

from typing import ClassVar

from gpuplan.models.allocation import Policy
from gpuplan.simulate.gavel_rounds import LpRates, LpRounds


class GavelLas(LpRounds):
    """Gavel's heterogeneity-aware LAS: max-min fairness over measured throughputs."""

    name: ClassVar[str] = "gavel-las"
    description: ClassVar[str] = (
        "Gavel's LAS (max_min_fairness_perf): max-min fairness of throughput over the equal "
        "GPU share, recomputed at most every 1920 s, Gavel's round mechanism, types fastest "
        "first")
    aware: ClassVar[bool] = True
    policy: ClassVar[Policy] = Policy.MAX_MIN_FAIRNESS


class GavelLasAgnostic(GavelLas):
    """Gavel's heterogeneity-agnostic LAS: max-min fairness of time, every throughput 1."""

    name: ClassVar[str] = "gavel-las-agnostic"
    description: ClassVar[str] = (
        "Gavel's agnostic LAS (max_min_fairness): max-min fairness with every throughput 1, "
        "Gavel's round mechanism, types in a shuffled order every round")
    aware: ClassVar[bool] = False
    lp_rates: ClassVar[LpRates] = LpRates.UNIT
