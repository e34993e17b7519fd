"""The placement environment: which node the next pod of FGD's replay takes.

The pods arrive as FGD's replay draws them (:func:`gpuplan.sharing.replay.fgd_arrivals`:
the seed's shuffle and inflation); they never leave. A pod no node fits fails, a pod only
one node fits goes there, and for every other pod the policy decides.

State
    The feasible nodes grouped into classes of equal state (GPU model, free CPU, free
    memory and the sorted free milli of their GPUs; a class is placed on its node of
    smallest rank, the replay's tie rule), in the order of those nodes' ranks (so the
    first of tied rows is the replay's pick among them), at most ``window`` of them (when
    there are more, half the window best by FGD's score and the rest best by BestFit's).
    Each row holds
    :data:`FEATURES` in ``[0, 1]``: FGD's and BestFit's scores of the class (min-max over
    the rows), the pod's GPU milli, CPU and whether it shares a GPU, the node's free GPU
    milli, whole free GPUs, CPU and memory, what GPU and CPU the pod would leave, the
    class's share of the feasible nodes, and 1 for a row that holds a class.
Action
    A row (``Discrete(window)``); :meth:`PlacementEnv.action_masks` marks the rows that
    hold a class. A share pod takes the GPU FGD's rule picks on the chosen node (the least
    rise in fragmentation); a whole-GPU pod the lowest free GPUs, as in the replay.
Reward
    The GPU milli placed by the step (the pods it placed, the one decided and those
    without a choice until the next decision), in percent of the cluster's GPU capacity:
    an episode's return is the share of GPUs allocated when it ends.
Episodes
    One replay seed each, drawn from the training seeds (by default 0-41 and 52-999:
    FGD's paper seeds 42-51 are held out for evaluation), until the arrived GPU demand
    reaches ``stop_percent`` of capacity (the published measure is at 100%).

:func:`learned_share_policy` turns a trained policy folder into a placement policy of the
replay (:class:`~gpuplan.sharing.SharePolicy`), so that ``gpuplan.sharing.replay.replay``
runs and the harness verifies it like FGD's own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from gpuplan.core.instance import Instance, IntArray
from gpuplan.core.options import NoOptions
from gpuplan.readers.openb import gpu_specs, read_openb
from gpuplan.rl.policy import KernelPolicy, best_rows, row_mask
from gpuplan.sharing import ShareContext, SharePolicy
from gpuplan.sharing.cluster import GPU_MILLI, MAX_SPEC_CPU, MAX_SPEC_GPU, ClusterState
from gpuplan.sharing.frag import NodeFrag, TypicalPods, typical_pods
from gpuplan.sharing.gorand import GoRand
from gpuplan.sharing.migrate import gpus_on
from gpuplan.sharing.policies.best_fit import BestFitPolicy
from gpuplan.sharing.policies.fgd import FGDPolicy
from gpuplan.sharing.replay import PAPER_RATIO, PAPER_SEEDS, fgd_arrivals

#: What each row of the observation holds, in order.
FEATURES = ("fgd", "best_fit", "pod_gpu", "pod_cpu", "share", "node_gpu", "node_whole",
            "node_cpu", "node_memory", "gpu_left", "cpu_left", "class_share", "present")
#: An observation.
Observation = npt.NDArray[np.float32]
#: Training seeds: FGD's evaluation seeds are held out.
TRAINING_SEEDS = tuple(s for s in range(1000) if s not in PAPER_SEEDS)


class PlacementObserver:
    """Groups a pod's feasible nodes into classes and describes them (see the module)."""

    def __init__(self, state: ClusterState, frag: NodeFrag, window: int) -> None:
        self.window = window
        context = ShareContext(rng=GoRand(0), frag=frag)
        self.fgd = FGDPolicy(context)
        self.best_fit = BestFitPolicy(context)
        self._max_mem = float(max(1, int(state.mem_free.max())))
        self._ids: dict[tuple[int, ...], int] = {}
        self._class = np.full(state.n_nodes, -1, dtype=np.int64)
        self._seen = np.full(state.n_nodes, -1, dtype=np.int64)

    def _classes(self, state: ClusterState, nodes: IntArray) -> IntArray:
        """Each node's class id: one per distinct state, kept as nodes change."""
        stale = nodes[self._seen[nodes] != state.version[nodes]]
        for node in stale.tolist():
            key = (int(state.node_type[node]), int(state.cpu_free[node]),
                   int(state.mem_free[node]), *sorted(state.gpu_free[node].tolist()))
            self._class[node] = self._ids.setdefault(key, len(self._ids))
            self._seen[node] = state.version[node]
        classes: IntArray = self._class[nodes]
        return classes

    def observe(self, state: ClusterState, pod: int,
                feasible: IntArray) -> tuple[Observation, IntArray, IntArray]:
        """The observation, the node of each row, and each feasible node's row (-1: unseen)."""
        _, first, inverse = np.unique(self._classes(state, feasible), return_index=True,
                                      return_inverse=True)
        inverse = inverse.reshape(-1)
        # The class's node is its node of smallest rank, the replay's tie rule.
        order = np.lexsort((state.rank[feasible], inverse))
        starts = np.searchsorted(inverse[order], np.arange(first.size))
        nodes = feasible[order[starts]]
        counts = np.bincount(inverse, minlength=first.size)
        # Rows in rank order: the first of tied rows is the replay's pick among them.
        by_rank = np.argsort(state.rank[nodes], kind="stable")
        renumber = np.empty_like(by_rank)
        renumber[by_rank] = np.arange(by_rank.size)
        nodes, counts, inverse = nodes[by_rank], counts[by_rank], renumber[inverse]
        fgd = self.fgd.score(state, pod, nodes).astype(np.float64)
        best = self.best_fit.score(state, pod, nodes).astype(np.float64)
        rows = np.arange(nodes.size)
        if nodes.size > self.window:
            half = self.window // 2
            top = np.argsort(-fgd, kind="stable")[:half]
            rest = np.setdiff1d(rows, top)
            rows = np.sort(np.concatenate(
                [top, rest[np.argsort(-best[rest], kind="stable")[:self.window - half]]]))
        row_of_class = np.full(nodes.size, -1, dtype=np.int64)
        row_of_class[rows] = np.arange(rows.size)
        chosen = nodes[rows]
        obs = np.zeros((self.window, len(FEATURES)), dtype=np.float32)
        n = rows.size
        milli = float(state.pod_milli[pod] * state.pod_gang[pod])
        free_gpu = state.gpu_free[chosen].sum(axis=1).astype(np.float64)
        cpu_free = state.cpu_free[chosen].astype(np.float64)
        obs[:n, 0] = _spread(fgd[rows])
        obs[:n, 1] = _spread(best[rows])
        obs[:n, 2] = milli / MAX_SPEC_GPU
        obs[:n, 3] = state.pod_cpu[pod] / MAX_SPEC_CPU
        obs[:n, 4] = float(state.pod_share[pod])
        obs[:n, 5] = free_gpu / MAX_SPEC_GPU
        obs[:n, 6] = (state.gpu_free[chosen] == GPU_MILLI).sum(axis=1) / 8.0
        obs[:n, 7] = cpu_free / MAX_SPEC_CPU
        obs[:n, 8] = state.mem_free[chosen] / self._max_mem
        obs[:n, 9] = (free_gpu - milli) / MAX_SPEC_GPU
        obs[:n, 10] = (cpu_free - state.pod_cpu[pod]) / MAX_SPEC_CPU
        obs[:n, 11] = counts[rows] / feasible.size
        obs[:n, 12] = 1.0
        np.clip(obs, 0.0, 1.0, out=obs)
        return obs, chosen, row_of_class[inverse]


def _spread(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    low, high = values.min(), values.max()
    if high == low:
        return np.ones_like(values)
    spread: npt.NDArray[np.float64] = (values - low) / (high - low)
    return spread


@dataclass(frozen=True)
class PlacementConfig:
    """How the placement environment draws its episodes.

    Attributes
    ----------
    window
        Rows of the observation: the most node classes a policy sees.
    seeds
        Replay seeds episodes are drawn from.
    ratio
        FGD's inflation ratio.
    stop_percent
        An episode ends when the arrived GPU demand reaches this share of capacity.
    """

    window: int = 128
    seeds: tuple[int, ...] = TRAINING_SEEDS
    ratio: float = PAPER_RATIO
    stop_percent: float = 100.0


class PlacementEnv(gym.Env[Observation, np.int64]):
    """Place the next pod of FGD's replay (see the module).

    Parameters
    ----------
    instance
        The openb nodes and pods (:func:`gpuplan.readers.openb.read_openb`).
    typical
        The typical pods of the fragmentation measure (from the pods' ``gpu_spec``).
    config
        Window, seeds, ratio and where episodes stop.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (gymnasium's attribute)

    def __init__(self, instance: Instance, typical: TypicalPods,
                 config: PlacementConfig | None = None) -> None:
        super().__init__()
        self.instance = instance
        self.typical = typical
        self.config = config or PlacementConfig()
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self.config.window, len(FEATURES)),
                                                dtype=np.float32)
        self.action_space = gym.spaces.Discrete(self.config.window)
        self._obs: Observation = np.zeros((self.config.window, len(FEATURES)),
                                          dtype=np.float32)
        self._nodes: IntArray = np.zeros(0, dtype=np.int64)
        self.state: ClusterState | None = None

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        """Start a replay: ``options={"replay_seed": s}`` picks its seed, else one is drawn."""
        super().reset(seed=seed)
        replay_seed = (options or {}).get("replay_seed")
        if replay_seed is None:
            replay_seed = int(self.config.seeds[self.np_random.integers(len(self.config.seeds))])
        arrivals = fgd_arrivals(self.instance, int(replay_seed), self.config.ratio)
        inflated = self.instance.take(arrivals.jobs)
        self.state = state = ClusterState(inflated)
        state.rank = arrivals.rank
        self.frag = NodeFrag(self.typical, state)
        self.observer = PlacementObserver(state, self.frag, self.config.window)
        asked = state.pod_gang * state.pod_milli
        capacity = float(GPU_MILLI * int(state.n_gpus.sum()))
        arrived = np.cumsum(asked) / capacity * 100.0
        self._last = int(np.searchsorted(arrived, self.config.stop_percent, side="left"))
        self._last = min(self._last, inflated.n_jobs - 1)
        self._capacity = capacity
        self.pod = 0
        placed = self._advance()
        return self._obs, {"replay_seed": int(replay_seed), "placed_percent": placed}

    def _place(self, pod: int, node: int) -> float:
        state = self.state
        assert state is not None
        state.place(pod, node, gpus_on(state, pod, node, self.observer.fgd))
        return float(state.pod_gang[pod] * state.pod_milli[pod]) / self._capacity * 100.0

    def _advance(self) -> float:
        """Place the pods that need no decision; stop at one that does (or the end)."""
        state = self.state
        assert state is not None
        placed = 0.0
        while self.pod <= self._last:
            feasible = state.feasible(self.pod)
            if feasible.size >= 2:
                self._obs, self._nodes, _ = self.observer.observe(state, self.pod, feasible)
                if self._nodes.size >= 2:
                    return placed
                placed += self._place(self.pod, int(self._nodes[0]))
            elif feasible.size == 1:
                placed += self._place(self.pod, int(feasible[0]))
            self.pod += 1
        self._nodes = np.zeros(0, dtype=np.int64)
        self._obs = np.zeros_like(self._obs)
        return placed

    def action_masks(self) -> np.ndarray:
        """Which rows hold a node class."""
        return row_mask(self.config.window, self._nodes.size)

    def step(self, action: np.int64 | int) -> tuple[Observation, float, bool, bool,
                                                     dict[str, Any]]:
        """Place the pod on the row's node; the placed share of capacity is the reward."""
        if self.state is None or self._nodes.size == 0:
            raise RuntimeError("call reset() before step(), and again after an episode ends")
        row = int(action)
        masked = not 0 <= row < self._nodes.size
        reward = self._place(self.pod, int(self._nodes[0 if masked else row]))
        self.pod += 1
        reward += self._advance()
        done = self.pod > self._last
        info: dict[str, Any] = {"masked": masked}
        if done:
            info["allocated_percent"] = self.state.used_gpu_milli / self._capacity * 100.0
        return self._obs, reward, done, False, info


def read_trace(pods: str | Path, nodes: str | Path) -> tuple[Instance, TypicalPods]:
    """The openb trace and its typical pods, as the replay reads them."""
    instance = read_openb(nodes, pods)
    return instance, typical_pods(instance, gpu_specs(pods))


def learned_share_policy(folder: str | Path) -> type[SharePolicy]:
    """A trained placement policy as a placement policy of FGD's replay.

    The replay asks it to score the feasible nodes: the nodes of the class the policy
    picks score 1, the others 0, so that the replay's pick (ties to the smallest rank) is
    the class's node the environment would place on; a share pod's GPU is FGD's.

    Raises
    ------
    InputError
        If the folder is not a safe placement policy folder of these features.
    """
    from gpuplan.core.errors import InputError
    from gpuplan.rl.policy import load_policy

    policy, description = load_policy(folder, "placement")
    if tuple(description.features) != FEATURES:
        raise InputError(str(folder), "features", f"the policy reads {description.features}; "
                         f"this gpuplan's placement environment gives {list(FEATURES)}")
    window = description.rows

    class Learned:
        name: ClassVar[str] = f"rl:{folder}"
        description: ClassVar[str] = "a trained placement policy (gpuplan rl train)"
        options_type: ClassVar[type[Any]] = NoOptions

        def __init__(self, context: ShareContext) -> None:
            self.observer = PlacementObserver(context.frag.state, context.frag, window)

        def score(self, state: ClusterState, pod: int, feasible: IntArray) -> IntArray:
            obs, nodes, row = self.observer.observe(state, pod, feasible)
            best = best_rows(policy, obs, row_mask(window, nodes.size))
            scores: IntArray = np.where(row == best, 1, 0).astype(np.int64)
            return scores

        def share_gpu(self, state: ClusterState, pod: int, node: int) -> int:
            return self.observer.fgd.share_gpu(state, pod, node)

    return Learned


#: The replay seed whose allocation validates a placement policy (a training seed).
VALIDATION_SEED = 0


def validation(instance: Instance, typical: TypicalPods,
               config: PlacementConfig) -> Callable[[KernelPolicy], float]:
    """Minus the share a policy allocates on :data:`VALIDATION_SEED`'s replay (greedy)."""
    env = PlacementEnv(instance, typical, config)

    def score(policy: KernelPolicy) -> float:
        obs, _ = env.reset(options={"replay_seed": VALIDATION_SEED})
        done, info = False, dict[str, Any]()
        while not done:
            row = best_rows(policy, obs, env.action_masks())
            obs, _, done, _, info = env.step(row)
        return -float(info["allocated_percent"])
    return score


def train_placement(pods: str, nodes: str, steps: int, seed: int, folder: Path,
                    progress: bool = False, minutes: float | None = None,
                    config: PlacementConfig | None = None) -> dict[str, Any]:
    """Train the placement policy on the training seeds; write its folder (see ``train``).

    Raises
    ------
    InputError
        Naming a bad pod or node list.
    """
    from gpuplan.rl.policy import FORMAT, PolicyDescription
    from gpuplan.rl.train import train

    instance, typical = read_trace(pods, nodes)
    chosen = config or PlacementConfig()
    description = PolicyDescription(
        format=FORMAT, env="placement", rows=chosen.window, features=list(FEATURES),
        hidden=[1], training={"trace": Path(pods).stem, "nodes": Path(nodes).stem,
                              "ratio": chosen.ratio, "stop_percent": chosen.stop_percent,
                              "held_out_seeds": list(PAPER_SEEDS)})
    return train(lambda: PlacementEnv(instance, typical, chosen), description, steps, seed,
                 folder, progress=progress, minutes=minutes, fields=("allocated_percent",),
                 validate=validation(instance, typical, chosen), validate_every=20)
