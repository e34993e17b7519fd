"""Elastic jobs over time: policies that choose each job's GPU count as the run goes.

:mod:`~gpuplan.simulate.elastic.engine` plays a workload out on the simulation core;
:mod:`~gpuplan.simulate.elastic.policies` holds the policies by name (``edf``,
``tiresias``, ``elasticflow`` and gpuplan's ``optimizer``); :func:`simulate_elastic`
makes the verified run log.
"""

from gpuplan.simulate.elastic.run import ElasticSpec, deadline_ratio, simulate_elastic

__all__ = ["ElasticSpec", "deadline_ratio", "simulate_elastic"]
