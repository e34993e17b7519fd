"""The ordering environment: which waiting job starts next, on an SWF trace.

State
    A window of up to ``window`` waiting jobs (:func:`visible_jobs`: all of them when
    they fit, else half the window earliest submitted and the rest shortest requested)
    and the machine. Each row holds :data:`FEATURES`, every one in ``[0, 1]``: the job's
    wait (of 12 hours), its requested time and its requested area (processors times
    time, both on a log scale of the trace's largest), its processors (of the machine's),
    whether it fits now, how long until it could start by the running jobs' requested
    times (of 12 hours), the machine's free nodes, the queue's length (of the window) and
    1 for a row that holds a job. Empty rows are zeros.
Action
    A row of the window (``Discrete(window)``); :meth:`OrderingEnv.action_masks` marks
    the rows that hold a job. The picked job starts now or, if it does not fit, as soon
    as it does (with backfilling, others may start meanwhile): RLScheduler's semantics
    (:class:`~gpuplan.simulate.hpc.HpcSimulator`). A masked row (no job) is never
    picked by a masked policy; given anyway, it schedules the earliest submitted job and
    ``info["masked"]`` says so.
Reward
    With ``reward="relative"`` (the default), at every step minus the slowdown the jobs
    accrued meanwhile: each waiting job adds its wait over ``max(run, 10)``, divided by
    the episode's length and by ``best``, the better mean bounded slowdown of SJF and F1
    on the same sequence. An episode's return is thus ``-(bsld - 1) / best`` up to the
    jobs shorter than 10 s (bounded slowdown is ``1 + wait / max(run, 10)`` for the
    others): the same ordering of policies as the bounded slowdown, credited to the step
    that made a job wait, at a scale that does not swing by 100x between quiet and busy
    sequences. With ``reward="bsld"``, 0 until the sequence ends, then minus its mean
    bounded slowdown (RLScheduler's reward).
Episodes
    Sequences of ``length`` consecutive jobs (RLScheduler trains on 256), each on an
    empty machine, drawn with the environment's seed from starts whose jobs do not
    overlap the held-out ranges (by default the protocol's evaluation sequences), so that
    evaluation under ``gpuplan hpc`` is on jobs never trained on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from gpuplan.core.errors import InputError
from gpuplan.core.instance import IntArray
from gpuplan.readers.swf import read_swf
from gpuplan.rl.policy import KernelPolicy, best_rows, load_policy, row_mask
from gpuplan.simulate.hpc import (
    BSLD_THRESHOLD_S,
    QUEUE_POLICIES,
    HpcSimulator,
    HpcWorkload,
    Protocol,
    play,
    sequence_metrics,
)

#: What each row of the observation holds, in order.
FEATURES = ("wait", "request", "area", "processors", "fits", "until_start", "free_nodes",
            "queue", "present")
#: Waits and times until a start are read as shares of this (RLScheduler's 12 hours).
HORIZON_S = 12 * 3600.0
#: An observation.
Observation = npt.NDArray[np.float32]
#: The rewards the environment gives.
REWARDS = ("relative", "bsld")


@dataclass(frozen=True)
class OrderingConfig:
    """How the ordering environment draws and scores its episodes.

    Attributes
    ----------
    window
        Rows of the observation: the most waiting jobs a policy sees.
    length
        Jobs per episode.
    backfill
        Whether waiting jobs backfill around a picked job that does not fit.
    reward
        ``relative`` or ``bsld`` (see the module).
    first_jobs
        Draw episodes from the first this many jobs only; 0: all.
    holdout
        ``(first, length)`` ranges of jobs no episode may touch.
    """

    window: int = 128
    length: int = 256
    backfill: bool = False
    reward: str = "relative"
    first_jobs: int = 0
    holdout: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        if self.reward not in REWARDS:
            raise ValueError(f"reward {self.reward!r}: choose from {', '.join(REWARDS)}")
        if self.window < 1 or self.length < 2:
            raise ValueError("window >= 1 and length >= 2 are needed")


def protocol_holdout(workload: HpcWorkload, protocol: Protocol) -> tuple[tuple[int, int], ...]:
    """The job ranges of the protocol's evaluation sequences."""
    return tuple((first, protocol.length) for first in protocol.starts(workload))


def training_starts(workload: HpcWorkload, config: OrderingConfig) -> IntArray:
    """The first jobs an episode may start at: its jobs clear of every held-out range.

    Raises
    ------
    ValueError
        If no sequence of ``config.length`` jobs is left.
    """
    pool = workload.n_jobs if config.first_jobs == 0 else min(config.first_jobs,
                                                              workload.n_jobs)
    starts = np.arange(0, pool - config.length + 1)
    clear = np.ones(starts.size, dtype=bool)
    for first, length in config.holdout:
        clear &= (starts + config.length <= first) | (starts >= first + length)
    if not clear.any():
        raise ValueError(f"{workload.name}: no sequence of {config.length} jobs is clear of "
                         "the held-out ones")
    return starts[clear]


class Observer:
    """Builds observations of a simulator; normalisers come from the workload."""

    def __init__(self, workload: HpcWorkload, window: int) -> None:
        self.window = window
        self.max_nodes = workload.max_nodes
        self.max_procs = float(workload.max_procs)
        self._log_request = np.log1p(max(1.0, float(workload.request.max())))
        area = workload.request.astype(np.float64) * np.maximum(workload.procs, 1)
        self._log_area = np.log1p(max(1.0, float(area.max())))
        self._request = np.maximum(workload.request, 0).astype(np.float64)
        self._procs = np.maximum(workload.procs, 0).astype(np.float64)
        self._submit = workload.submit.astype(np.float64)
        self._nodes = workload.nodes

    def visible(self, sim: HpcSimulator) -> list[int]:
        """The waiting jobs in the window, in row order (see the module)."""
        queue = sim.queue
        if len(queue) <= self.window:
            return sorted(queue, key=self._submit.__getitem__)
        jobs = np.array(queue, dtype=np.int64)
        half = self.window // 2
        early = jobs[np.argsort(self._submit[jobs], kind="stable")[:half]]
        rest = np.setdiff1d(jobs, early)
        short = rest[np.argsort(self._request[rest], kind="stable")[:self.window - half]]
        return sorted(np.concatenate([early, short]).tolist(), key=self._submit.__getitem__)

    def observe(self, sim: HpcSimulator) -> tuple[Observation, list[int]]:
        """The observation (``(window, len(FEATURES))`` float32) and the jobs of its rows."""
        jobs = self.visible(sim)
        obs = np.zeros((self.window, len(FEATURES)), dtype=np.float32)
        if not jobs:
            return obs, jobs
        j = np.array(jobs, dtype=np.int64)
        n = j.size
        request = self._request[j]
        nodes = self._nodes[j]
        times, counts = sim.release_profile()
        fits = nodes <= sim.free
        until = np.zeros(n)
        if times.size:
            at = np.minimum(np.searchsorted(counts, nodes), times.size - 1)
            until = np.where(fits, 0.0, np.maximum(times[at] - sim.now, 0.0))
        rows = obs[:n]
        rows[:, 0] = np.minimum((sim.now - self._submit[j]) / HORIZON_S, 1.0)
        rows[:, 1] = np.log1p(request) / self._log_request
        rows[:, 2] = np.log1p(request * self._procs[j]) / self._log_area
        rows[:, 3] = np.minimum(self._procs[j] / self.max_procs, 1.0)
        rows[:, 4] = fits
        rows[:, 5] = np.minimum(until / HORIZON_S, 1.0)
        rows[:, 6] = sim.free / self.max_nodes
        rows[:, 7] = min(len(sim.queue) / self.window, 1.0)
        rows[:, 8] = 1.0
        np.clip(rows, 0.0, 1.0, out=rows)
        return obs, jobs


class OrderingEnv(gym.Env[Observation, np.int64]):
    """Pick the next job of an SWF trace's waiting queue (see the module).

    Parameters
    ----------
    trace
        An SWF file or a workload read from one.
    config
        Window, episode length, backfilling, reward and held-out jobs.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (gymnasium's attribute)

    def __init__(self, trace: str | HpcWorkload, config: OrderingConfig | None = None) -> None:
        super().__init__()
        self.workload = (trace if isinstance(trace, HpcWorkload)
                         else HpcWorkload.from_trace(read_swf(trace)))
        self.config = config or OrderingConfig()
        self.observer = Observer(self.workload, self.config.window)
        self.starts = training_starts(self.workload, self.config)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self.config.window, len(FEATURES)),
                                                dtype=np.float32)
        self.action_space = gym.spaces.Discrete(self.config.window)
        self.sim: HpcSimulator | None = None
        self._submit = self.workload.submit.astype(np.float64)
        self._floor = np.maximum(self.workload.run, BSLD_THRESHOLD_S).astype(np.float64)
        self._accrued = self._done_sum = self._scale = 0.0
        self._counted = 0
        self._rows: list[int] = []
        self._obs: Observation = np.zeros((self.config.window, len(FEATURES)),
                                          dtype=np.float32)

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        """Start a sequence: ``options={"first": i}`` picks it, else one is drawn."""
        super().reset(seed=seed)
        first = (options or {}).get("first")
        if first is None:
            first = int(self.starts[self.np_random.integers(self.starts.size)])
        self.sim = HpcSimulator(self.workload, int(first), self.config.length,
                                self.config.backfill)
        self._accrued = self._done_sum = 0.0
        self._counted = 0
        self._scale = self.config.length * (self.baseline(int(first))
                                            if self.config.reward == "relative" else 1.0)
        self._obs, self._rows = self.observer.observe(self.sim)
        return self._obs, {"first": int(first)}

    def _slowdown_accrued(self) -> float:
        """Sum over the jobs so far of wait / max(run, 10), the waiting ones up to now."""
        sim = self.sim
        assert sim is not None
        started = sim.start_order[self._counted:]
        self._counted = len(sim.start_order)
        if started:
            jobs = np.array(started, dtype=np.int64)
            wait = np.array([sim.started[j] for j in started], dtype=np.float64)
            wait -= self._submit[jobs]
            self._done_sum += float(np.sum(wait / self._floor[jobs]))
        queue = np.array(sim.queue, dtype=np.int64)
        waiting = float(np.sum((sim.now - self._submit[queue]) / self._floor[queue]))
        return self._done_sum + waiting

    def action_masks(self) -> np.ndarray:
        """Which rows hold a job (the actions a policy may take)."""
        return row_mask(self.config.window, len(self._rows))

    def step(self, action: np.int64 | int) -> tuple[Observation, float, bool, bool,
                                                     dict[str, Any]]:
        """Schedule the job of a row; the next observation and the reward (see the module)."""
        if self.sim is None:
            raise RuntimeError("call reset() before step()")
        sim = self.sim
        row = int(action)
        masked = not 0 <= row < len(self._rows)
        sim.schedule(self._rows[0] if masked else self._rows[row])
        info: dict[str, Any] = {"masked": masked}
        reward = 0.0
        if self.config.reward == "relative":
            accrued = self._slowdown_accrued()
            reward = -(accrued - self._accrued) / self._scale
            self._accrued = accrued
        if not sim.done:
            self._obs, self._rows = self.observer.observe(sim)
            return self._obs, reward, False, False, info
        bsld, utilization = sequence_metrics(self.workload, sim)
        info.update(bounded_slowdown=bsld, utilization=utilization)
        if self.config.reward == "bsld":
            reward = -bsld
        else:
            info["baseline_bsld"] = self._scale / self.config.length
        self._rows = []
        self._obs = np.zeros_like(self._obs)
        return self._obs, float(reward), True, False, info

    def baseline(self, first: int) -> float:
        """The better mean bounded slowdown of SJF and F1 on the sequence from ``first``."""
        values = []
        for name in ("sjf", "f1"):
            sim = play(self.workload, first, self.config.length, QUEUE_POLICIES[name],
                       self.config.backfill)
            values.append(sequence_metrics(self.workload, sim)[0])
        return min(values)


class LearnedOrder:
    """A trained ordering policy as a queue policy of the HPC protocol.

    It picks, deterministically, the visible job of the highest logit.

    Parameters
    ----------
    policy
        The network.
    observer
        Builds its observations (the workload's scales).
    name
        The policy's name in reports.
    """

    def __init__(self, policy: KernelPolicy, observer: Observer, name: str) -> None:
        self.policy, self.observer, self.name = policy, observer, name

    @classmethod
    def load(cls, folder: str, workload: HpcWorkload) -> LearnedOrder:
        """Load a policy folder for a trace (see :mod:`gpuplan.rl.policy`).

        Raises
        ------
        InputError
            If the folder is not a safe ordering policy folder of these features.
        """
        policy, description = load_policy(folder, "ordering")
        if tuple(description.features) != FEATURES:
            raise InputError(folder, "features", f"the policy reads {description.features}; "
                             f"this gpuplan's ordering environment gives {list(FEATURES)}")
        return cls(policy, Observer(workload, description.rows), f"rl:{folder}")

    def choose(self, sim: HpcSimulator) -> int:
        """The job of the best-scored row."""
        obs, jobs = self.observer.observe(sim)
        mask = row_mask(self.observer.window, len(jobs))
        return jobs[best_rows(self.policy, obs, mask)]


#: Validation sequences: how many, of how many jobs, drawn with which seed.
VALIDATION = (4, 512, 12345)


def validation(workload: HpcWorkload, config: OrderingConfig) -> Callable[[KernelPolicy], float]:
    """A policy's mean bounded slowdown on validation sequences clear of the held-out ones.

    The sequences (:data:`VALIDATION`) are drawn from the training starts: model selection
    never sees the protocol's evaluation sequences.
    """
    count, length, seed = VALIDATION
    starts = training_starts(workload, dataclasses.replace(config, length=length))
    rng = np.random.default_rng(seed)
    firsts = rng.choice(starts, size=min(count, starts.size), replace=False).tolist()
    observer = Observer(workload, config.window)

    def score(policy: KernelPolicy) -> float:
        order = LearnedOrder(policy, observer, "validation")
        return float(np.mean([sequence_metrics(workload, play(
            workload, int(first), length, order, config.backfill))[0] for first in firsts]))
    return score
