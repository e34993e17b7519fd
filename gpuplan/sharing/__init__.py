"""GPU-sharing placement on Alibaba's openb trace: FGD's replay, its policies and gpuplan's own.

Modules: :mod:`~gpuplan.sharing.gorand` (Go's random numbers, bit for bit),
:mod:`~gpuplan.sharing.cluster` (the mutable cluster state), :mod:`~gpuplan.sharing.frag`
(typical pods and the fragmentation measure), :mod:`~gpuplan.sharing.policies` (the
registry of placement policies) and :mod:`~gpuplan.sharing.replay` (the paper's protocol).
This module holds the interface every placement policy implements.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from gpuplan.core.instance import IntArray
from gpuplan.core.options import NoOptions
from gpuplan.sharing.cluster import ClusterState
from gpuplan.sharing.frag import NodeFrag
from gpuplan.sharing.gorand import GoRand


@dataclass
class ShareContext:
    """What a policy may use besides the cluster state.

    Attributes
    ----------
    rng
        The replay's Go random source (FGD's Random policy draws from it).
    frag
        Every node's fragmentation under the trace's typical pods, kept current by the replay
        (``frag.typical`` holds the typical pods).
    options
        The policy's own typed options (an instance of its ``options_type``).
    """

    rng: GoRand
    frag: NodeFrag
    options: Any = field(default_factory=NoOptions)


class SharePolicy(Protocol):
    """A placement policy: it scores the feasible nodes for a pod and picks a shared GPU.

    The replay filters the nodes (:meth:`ClusterState.feasible`), calls :meth:`score` only
    when more than one node is feasible (as Kubernetes does), takes the highest score with
    ties to the smallest :attr:`ClusterState.rank`, then asks :meth:`share_gpu` for the GPU
    of a share pod; whole-GPU pods take the lowest-index free GPUs.
    """

    #: Registry key, the paper's name (``best-fit``).
    name: ClassVar[str]
    #: One line for ``--help`` and reports.
    description: ClassVar[str]
    #: Its own options (:attr:`ShareContext.options`): a frozen dataclass of
    #: :func:`~gpuplan.core.options.option` fields.
    options_type: ClassVar[type[Any]]

    def __init__(self, context: ShareContext) -> None:
        """Bind the policy to one replay."""

    def score(self, state: ClusterState, pod: int, feasible: IntArray) -> IntArray:
        """``int64`` scores of the ``feasible`` nodes for ``pod``, higher is better."""

    def share_gpu(self, state: ClusterState, pod: int, node: int) -> int:
        """The GPU slot of ``node`` a share pod takes (one with enough free milli)."""
