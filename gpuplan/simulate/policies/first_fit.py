"""``first-fit``: resume where the job ran before, else the first nodes that hold the gang.

As ``best-fit`` (:mod:`gpuplan.simulate.policies.best_fit`) a preempted job gets its
previous GPUs back when they are all free and of the granted type; otherwise it goes to
the lowest-index nodes with enough free GPUs of the type (and room for its node demand),
on their lowest-index free GPUs.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gpuplan.core.instance import IntArray
from gpuplan.core.options import NoOptions
from gpuplan.simulate.policies.best_fit import previous_gpus
from gpuplan.simulate.policy import ClusterView, PolicyContext


class FirstFit:
    """Previous GPUs if free, else the lowest-index nodes that hold the gang."""

    name: ClassVar[str] = "first-fit"
    description: ClassVar[str] = ("resume on the previous GPUs when free, else the first "
                                  "nodes that hold the gang")
    options_type: ClassVar[type[Any]] = NoOptions

    def __init__(self, context: PolicyContext) -> None:
        del context

    def place(self, cluster: ClusterView, job: int, gpu_type: int) -> IntArray | None:
        """The previous GPUs, or the gang on the first nodes that hold it; None if none."""
        before = previous_gpus(cluster, job, gpu_type)
        if before is not None:
            return before
        return cluster.gang(job, gpu_type, np.zeros(cluster.instance.n_nodes))
