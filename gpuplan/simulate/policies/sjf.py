"""``sjf``: shortest job first, non-preemptive.

A job's length is its whole run time on its fastest eligible type (known in advance, as
in the classic policy); ties go to the earlier arrival. A job that does not fit is
skipped for a later, longer one that does. Running jobs keep their GPUs.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.simulate.policies.fifo import Fifo
from gpuplan.simulate.policy import View


class ShortestJobFirst(Fifo):
    """Shortest whole run time first, non-preemptive."""

    name: ClassVar[str] = "sjf"
    description: ClassVar[str] = ("shortest job first (run time on its fastest type), "
                                  "non-preemptive")

    @classmethod
    def fixed_order(cls, instance: Instance) -> IntArray | None:
        """Run time on the fastest eligible type, then arrival."""
        order: IntArray = np.lexsort((np.arange(instance.n_jobs), instance.release,
                                      instance.min_duration))
        return order

    def key(self, view: View, jobs: IntArray) -> FloatArray:
        """Each job's run time on its fastest eligible type."""
        seconds: FloatArray = view.instance.min_duration[jobs]
        return seconds
