"""The registry of GPU-sharing placement policies, keyed by the paper's names.

Every policy implements :class:`gpuplan.sharing.SharePolicy`. FGD's six (``random``,
``dot-product``, ``gpu-packing``, ``gpu-clustering``, ``best-fit``, ``fgd``) reproduce its
simulator's scores exactly; gpuplan's own register here too, one import and one line each.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from gpuplan.core.options import declared_options, part_options
from gpuplan.core.sim import Registry
from gpuplan.sharing import ShareContext, SharePolicy
from gpuplan.sharing.policies.best_fit import BestFitPolicy
from gpuplan.sharing.policies.cutting_stock import CuttingStockPolicy
from gpuplan.sharing.policies.dot_product import DotProductPolicy
from gpuplan.sharing.policies.fgd import FGDPolicy
from gpuplan.sharing.policies.gpu_clustering import GpuClusteringPolicy
from gpuplan.sharing.policies.gpu_packing import GpuPackingPolicy
from gpuplan.sharing.policies.random import RandomPolicy

#: Policy classes by name, in the paper's order.
POLICIES: Registry[type[SharePolicy]] = Registry("sharing policy", "policy", (
    RandomPolicy, DotProductPolicy, GpuClusteringPolicy, GpuPackingPolicy, BestFitPolicy,
    FGDPolicy, CuttingStockPolicy))


def policy_class(policy: str | type[SharePolicy]) -> type[SharePolicy]:
    """The registered policy called ``policy`` (or the class given).

    Raises
    ------
    InputError
        Naming ``--policy`` and the registered policies, if there is no such policy.
    """
    if not isinstance(policy, str):
        return policy
    return POLICIES.part(policy)


def build_policy(policy: str | type[SharePolicy], context: ShareContext,
                 options: Mapping[str, Any]) -> SharePolicy:
    """A policy for one replay, with its typed options built from ``options``.

    Raises
    ------
    InputError
        An unknown policy, or an option it does not take (or a bad value).
    """
    cls = policy_class(policy)
    typed = part_options(cls, "sharing policy", options)
    return cls(dataclasses.replace(context, options=typed))


def policy_option_takers() -> dict[str, tuple[dataclasses.Field[Any], list[str]]]:
    """Every option of a registered policy, once by flag, with the policies that take it."""
    return declared_options(POLICIES.values())
