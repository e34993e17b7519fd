"""The elastic simulator's policies by name: the registry behind ``gpuplan simulate``.

A policy is a class with ``name``, ``description``, ``options_type`` and ``calls_solver``,
built per run from the instance and its typed options; adding one is a module here and
one line in :data:`ELASTIC_POLICIES`.
"""

from __future__ import annotations

from typing import Any

from gpuplan.core.sim import Registry
from gpuplan.simulate.elastic.policies.edf import EarliestDeadline
from gpuplan.simulate.elastic.policies.elasticflow import ElasticFlow
from gpuplan.simulate.elastic.policies.optimizer import Optimizer
from gpuplan.simulate.elastic.policies.tiresias import Tiresias

#: Elastic policies by name.
ELASTIC_POLICIES: Registry[type[Any]] = Registry("elastic policy", "policy", (
    EarliestDeadline, Tiresias, ElasticFlow, Optimizer))
