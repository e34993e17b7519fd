"""The dynamic half: an event-driven cluster simulator (``gpuplan simulate``).

Jobs arrive over time (an instance's ``release`` times), a policy decides which run where
(:mod:`gpuplan.simulate.policy`: admission, scheduling, placement, each from a registry in
:mod:`gpuplan.simulate.policies`), and the engine (:mod:`gpuplan.simulate.engine`) plays
the run out with preemption, migration and their overheads. :func:`simulate` returns the
verified run log, a v2 schedule with the run's metrics.
"""

from __future__ import annotations

from gpuplan.simulate.engine import SimulationConfig, SimulationError
from gpuplan.simulate.policy import Mode
from gpuplan.simulate.run import RunSpec, simulate, simulate_run

__all__ = ["Mode", "RunSpec", "SimulationConfig", "SimulationError", "simulate", "simulate_run"]
