"""The registry of GPU-sharing placement policies, keyed by the paper's names.

Every policy implements :class:`gpuplan.sharing.SharePolicy`. FGD's six (``random``,
``dot-product``, ``gpu-packing``, ``gpu-clustering``, ``best-fit``, ``fgd``) reproduce its
simulator's scores exactly; gpuplan's own register here too, one import and one line each.
"""

from __future__ import annotations

from gpuplan.sharing import SharePolicy
from gpuplan.sharing.policies.best_fit import BestFitPolicy
from gpuplan.sharing.policies.cutting_stock import CuttingStockPolicy
from gpuplan.sharing.policies.dot_product import DotProductPolicy
from gpuplan.sharing.policies.fgd import FGDPolicy
from gpuplan.sharing.policies.gpu_clustering import GpuClusteringPolicy
from gpuplan.sharing.policies.gpu_packing import GpuPackingPolicy
from gpuplan.sharing.policies.random import RandomPolicy

#: Policy classes by name, in the paper's order.
POLICIES: dict[str, type[SharePolicy]] = {
    policy.name: policy
    for policy in (
        RandomPolicy,
        DotProductPolicy,
        GpuClusteringPolicy,
        GpuPackingPolicy,
        BestFitPolicy,
        FGDPolicy,
        CuttingStockPolicy,
    )
}
