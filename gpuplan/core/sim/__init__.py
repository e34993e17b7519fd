"""The one small core every simulator of gpuplan runs on.

- :mod:`~gpuplan.core.sim.events`: the clock, timed events in one priority queue;
- :mod:`~gpuplan.core.sim.cluster`: the cluster's state, whole GPUs by type on nodes and
  what each node has left of its resources;
- :mod:`~gpuplan.core.sim.recorder`: the segments and events of a run, built into the
  :class:`~gpuplan.core.result.Result` the verifier checks;
- :mod:`~gpuplan.core.sim.registry`: named parts of one kind, the registry shape of every
  simulator's policies.

The event and round engine of ``gpuplan simulate`` (:mod:`gpuplan.simulate.engine`) and
the GPU-sharing time replay (:mod:`gpuplan.sharing.timeline`) are rules over these; every
simulator's policies are registries. RLScheduler's HPC machine (:mod:`gpuplan.simulate.hpc`)
and the ``balance`` method's round planner (:mod:`gpuplan.parts.round_plans`) keep their
own clocks for now. See ``docs/guide/simulation-core.md``.
"""

from gpuplan.core.sim.cluster import DOWN, FREE, GpuCluster
from gpuplan.core.sim.events import EventQueue
from gpuplan.core.sim.recorder import Recorder
from gpuplan.core.sim.registry import Registry

__all__ = ["DOWN", "FREE", "EventQueue", "GpuCluster", "Recorder", "Registry"]
