"""Round-based plans that realise an allocation's time shares on whole GPUs (Gavel's rounds).

Time is cut into rounds of ``round_s`` seconds. At the start of each round every runnable
job (released, its predecessors done, not finished) is ranked, per type it may use, by how
far it lags its share: ``share[j, t] / received[j, t]``, where ``received`` is the share of
its time so far that it spent on ``t`` (Gavel's priority). Pairs are taken in that order
and each job gets whole GPUs of one type on one node for the round, preferring the GPUs it
held last round (no needless migration). Types the allocation gave no share come last, so
that no GPU idles while a job could use it. A job that is not preemptible keeps its GPUs
from its first round until it ends. A job that finishes inside a round ends there; its
GPUs idle until the next round, as in Gavel.

With space sharing, pair columns are ranked with the jobs by their own share over the
share of rounds they received; a chosen pair's two jobs hold one gang over the same
interval, each at its colocation speed (the form the verifier recognises).

The realised shares differ from the allocation by a *tracking error*: per job, half the sum
over types of ``|realised - share|`` over the rounds it was runnable, counting time on a
type alone or paired (0 is perfect, 1 is disjoint), reported as mean and maximum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuplan.instance import FloatArray, Instance, IntArray
from gpuplan.models.allocation import PairColumns

#: Rounds of planning after which the loop gives up (a guard; plans end much sooner).
MAX_ROUNDS = 1_000_000


@dataclass(frozen=True)
class RoundPlan:
    """Segments of a round-based plan, and how closely it tracked the shares.

    Attributes
    ----------
    job, gpu_type, start, end
        One entry per segment (consecutive rounds on the same GPUs are merged).
    gpus
        GPU indices of each segment.
    work
        Share of its job's work each segment does.
    tracking_error
        ``(J,)`` per job, see the module docstring.
    rounds
        Rounds planned.
    """

    job: IntArray
    gpu_type: IntArray
    start: FloatArray
    end: FloatArray
    gpus: tuple[IntArray, ...]
    work: FloatArray
    tracking_error: FloatArray
    rounds: int


def plan_rounds(instance: Instance, share: FloatArray, round_s: float,
                pairs: PairColumns | None = None,
                pair_share: FloatArray | None = None) -> RoundPlan:
    """Realise ``share`` (and pair shares) round by round until every job is done.

    Parameters
    ----------
    instance
        A time-based instance; jobs marked preemptible may move between rounds.
    share
        ``(J, T)`` the allocation's time shares of jobs alone.
    round_s
        Round length in seconds.
    pairs, pair_share
        Space sharing: pair columns and their time shares. A pair is ranked like a job,
        by its own share over what it received; chosen, both jobs hold one gang for the
        round (the same GPUs, the same interval) and run at their colocation speeds.
    """
    n_jobs, n_types = instance.n_jobs, instance.n_types
    gpu_type, gpu_node = instance.gpu_type, instance.gpu_node
    duration = np.where(instance.eligible, instance.duration, np.inf)
    remaining = np.ones(n_jobs)
    finish = np.full(n_jobs, np.inf)
    received = np.zeros((n_jobs, n_types))
    alone = np.zeros((n_jobs, n_types))
    active = np.zeros(n_jobs)
    if pairs is None or pair_share is None:
        pairs, pair_share = PairColumns(*(np.zeros(0, dtype=np.int64),) * 3), np.zeros(0)
    keep = pair_share > 1e-9
    pair_a, pair_b, pair_t = pairs.a[keep], pairs.b[keep], pairs.gpu_type[keep]
    pair_share = pair_share[keep]
    pair_got, pair_active = np.zeros(pair_a.size), np.zeros(pair_a.size)
    speed_a, speed_b = _pair_speeds(instance, pair_a, pair_b, pair_t)
    target = share.copy()
    np.add.at(target, (pair_a, pair_t), pair_share)
    np.add.at(target, (pair_b, pair_t), pair_share)
    held: list[IntArray | None] = [None] * n_jobs
    pinned = np.zeros(n_jobs, dtype=bool)
    segments: list[list[float]] = []  # job, type, start, end, work, partner job (-1)
    segment_gpus: list[IntArray] = []
    open_segment = np.full(n_jobs, -1)
    # Unfinished predecessors per job; a job that ends in a round is done by the next.
    blocking = np.array([len(p) for p in instance.predecessors], dtype=np.int64)
    now, rounds = 0.0, 0
    while (remaining > 0).any():
        if rounds >= MAX_ROUNDS:
            raise RuntimeError("round-based planning did not finish; a job cannot run")
        ready = (remaining > 0) & (instance.release <= now) & (blocking == 0)
        if not ready.any():
            # Nothing runs: jump to the round of the next release.
            later = instance.release[(instance.release > now) & (remaining > 0)]
            if later.size == 0:
                raise RuntimeError("round-based planning is stuck: no job can become ready")
            now = float(np.ceil(later.min() / round_s) * round_s)
            open_segment[:] = -1
            continue
        free = np.ones(instance.n_gpus, dtype=bool)
        free_of_type = np.bincount(gpu_type, minlength=n_types)
        # Each run: jobs, their speeds, type and GPUs (two jobs when space-shared).
        runs: list[tuple[tuple[int, ...], tuple[float, ...], int, IntArray]] = []
        for pin in np.flatnonzero(pinned & ready).tolist():
            gpus = held[pin]
            assert gpus is not None
            free[gpus] = False
            free_of_type[gpu_type[gpus[0]]] -= gpus.size
            runs.append(((pin,), (1.0,), int(gpu_type[gpus[0]]), gpus))
        chosen = pinned.copy()
        lag = np.where(ready[:, None] & instance.eligible & ~pinned[:, None],
                       share / np.maximum(alone / np.maximum(active[:, None], 1e-12), 1e-9),
                       -np.inf)
        # Types with no share rank after every shared one, fastest first.
        fallback = -1.0 - duration / duration.max(initial=1.0, where=np.isfinite(duration))
        priority = np.where(share > 0, lag, np.where(np.isfinite(lag), fallback, -np.inf))
        both = ready[pair_a] & ready[pair_b]
        pair_priority = np.where(both, pair_share / np.maximum(
            pair_got / np.maximum(pair_active, 1e-12), 1e-9), -np.inf)
        # One ranking of single (job, type) entries, then pairs, highest first.
        ranked = np.r_[priority.ravel(), pair_priority]
        order = np.argsort(-ranked, kind="stable")
        for flat in order[: int(np.isfinite(ranked).sum())].tolist():
            if flat < priority.size:
                j, t = divmod(flat, n_types)
                members: tuple[int, ...] = (j,)
                speeds: tuple[float, ...] = (1.0,)
            else:
                p = flat - priority.size
                j, t = int(pair_a[p]), int(pair_t[p])
                members, speeds = (j, int(pair_b[p])), (speed_a[p], speed_b[p])
            if chosen[list(members)].any() or free_of_type[t] < instance.gang[j]:
                continue
            gpus = _take(instance, free, j, t, held[j], gpu_type, gpu_node)
            if gpus is None:
                continue
            chosen[list(members)] = True
            free[gpus] = False
            free_of_type[t] -= gpus.size
            runs.append((members, speeds, t, gpus))
            if len(members) == 2:
                pair_got[flat - priority.size] += 1.0
            if not free_of_type.any():
                break
        end_of_round = now + round_s
        pair_active[both] += 1.0
        for members, speeds, t, gpus in runs:
            # A shared gang runs until the round ends or one of its jobs is done.
            left = [remaining[j] * duration[j, t] / v for j, v in zip(members, speeds,
                                                                      strict=True)]
            length = min(round_s, *left)
            stop = now + length
            for j, v, need in zip(members, speeds, left, strict=True):
                done = length * v / duration[j, t]
                if need - length <= 1e-12 * max(1.0, need):
                    done = remaining[j]
                remaining[j] -= done
                received[j, t] += length
                if len(members) == 1:
                    alone[j, t] += length
                partner = float(sum(members) - j) if len(members) == 2 else -1.0
                k = int(open_segment[j])
                if k >= 0 and segments[k][1] == t and np.array_equal(segment_gpus[k], gpus) \
                        and segments[k][3] == now and segments[k][5] == partner:
                    segments[k][3] = stop
                    segments[k][4] += done
                else:
                    open_segment[j] = len(segments)
                    segments.append([float(j), float(t), now, float(stop), float(done),
                                     partner])
                    segment_gpus.append(gpus)
                held[j] = gpus
                if not instance.preemptible[j]:
                    pinned[j] = True
                if remaining[j] <= 0:
                    remaining[j] = 0.0
                    finish[j] = stop
                    pinned[j] = False
                    for s in instance.successors[j]:
                        blocking[s] -= 1
        stopped = np.setdiff1d(np.flatnonzero(open_segment >= 0),
                               [j for run in runs for j in run[0]])
        open_segment[stopped] = -1
        active[ready] += np.array([min(round_s, (finish[j] if np.isfinite(finish[j])
                                                 else end_of_round) - now)
                                   for j in np.flatnonzero(ready)])
        now = end_of_round
        rounds += 1
    realised = received / np.maximum(active[:, None], 1e-12)
    error = 0.5 * np.abs(realised - target).sum(axis=1)
    table = np.array(segments, dtype=float).reshape(-1, 6)
    return RoundPlan(job=table[:, 0].astype(np.int64), gpu_type=table[:, 1].astype(np.int64),
                     start=table[:, 2], end=table[:, 3], gpus=tuple(segment_gpus),
                     work=table[:, 4], tracking_error=error, rounds=rounds)


def _pair_speeds(instance: Instance, a: IntArray, b: IntArray,
                 t: IntArray) -> tuple[FloatArray, FloatArray]:
    """``(P,)`` the colocation speed of each pair's two jobs."""
    if a.size == 0:
        return np.zeros(0), np.zeros(0)
    cls, speed = instance.job_class, instance.colocation_speed
    return speed[cls[a], cls[b], t], speed[cls[b], cls[a], t]


def _take(instance: Instance, free: np.ndarray, j: int, t: int, last: IntArray | None,
          gpu_type: IntArray, gpu_node: IntArray) -> IntArray | None:
    """Free GPUs of type ``t`` for job ``j``'s gang on one node: its last ones if free."""
    k = int(instance.gang[j])
    if last is not None and gpu_type[last[0]] == t and free[last].all():
        return last
    candidates = np.flatnonzero(free & (gpu_type == t))
    if candidates.size < k:
        return None
    nodes, counts = np.unique(gpu_node[candidates], return_counts=True)
    fits = nodes[counts >= k]
    if fits.size == 0:
        return None
    # The node with the fewest free GPUs that still fits: keep big blocks for big gangs.
    node = fits[np.argmin(counts[counts >= k])]
    picked: IntArray = candidates[gpu_node[candidates] == node][:k]
    return picked
