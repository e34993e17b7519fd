"""``first-fit``: resume where the job ran before, else the first node that holds the gang.

As ``best-fit`` (:mod:`gpuplan.simulate.policies.best_fit`) a preempted job gets its
previous GPUs back when they are all free and of the granted type; otherwise it goes to
the lowest-index node with enough free GPUs of the type, on its lowest-index free GPUs.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gpuplan.core.instance import IntArray
from gpuplan.core.options import NoOptions
from gpuplan.simulate.policies.best_fit import gpus_on, previous_gpus
from gpuplan.simulate.policy import ClusterView, PolicyContext


class FirstFit:
    """Previous GPUs if free, else the lowest-index node that holds the gang."""

    name: ClassVar[str] = "first-fit"
    description: ClassVar[str] = ("resume on the previous GPUs when free, else the first "
                                  "node that holds the gang")
    options_type: ClassVar[type[Any]] = NoOptions

    def __init__(self, context: PolicyContext) -> None:
        del context

    def place(self, cluster: ClusterView, job: int, gpu_type: int) -> IntArray | None:
        """The previous GPUs, or the gang on the first node that holds it; None if none."""
        before = previous_gpus(cluster, job, gpu_type)
        if before is not None:
            return before
        holds = cluster.free[:, gpu_type] >= cluster.instance.gang[job]
        node = int(np.argmax(holds))
        if not holds[node]:
            return None
        return gpus_on(cluster, node, gpu_type, job)
