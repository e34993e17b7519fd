"""Makespan bounds from time windows: a window-aware workload LP and energetic reasoning.

The workload LP of :func:`~gpuplan.models.scheduling.workload_program` spreads each job's
work over the GPU types as if capacity were a pool of GPU-seconds over ``[0, C]``. Three
relaxations it leaves out are added here, each valid for every plan the verifier accepts:

**Packing** (:func:`packing_rows`). At any instant the jobs on one GPU hold at most its
capacity in each resource, so their shares ``s`` (demand over capacity) sum to at most 1.
A *dual-feasible function* ``f`` (Fekete & Schepers 2001) maps ``[0, 1]`` to ``[0, 1]``
so that shares summing to at most 1 have images summing to at most 1 too; counting
``gang * f(s)`` instead of ``gang * s`` therefore still fits the GPUs. With ``f(s) = 1``
for ``s > 1/2`` (``k = 1`` of :func:`~gpuplan.models.bounds.dff_rounding`) a job of 45 GiB
on an 80 GiB GPU takes a whole GPU, as it does in any plan;
:func:`~gpuplan.models.bounds.dff_threshold` and
:func:`~gpuplan.models.bounds.dff_rounding` give the classic families. A gang of ``g``
GPUs runs on one node with at least ``g`` GPUs of the type, so the jobs of gang ``>= g``
are also counted against those nodes' GPUs alone.

**Windows** (:func:`windows`). Every job starts after its release and after its
predecessors end (each at least its fastest duration on the types it may still use:
``est``, the head), and must leave room for its successors before the makespan (the
tail ``q``) and before their deadlines (``lct``). The LP (:func:`window_program`) keeps a
completion time ``c_j >= est_j + run_j``, ``c_j >= c_i + run_j`` for each dependency
``i -> j`` (``run_j = sum_t duration[j, t] * x[j, t]``, the run time of the types chosen,
not the fastest), ``c_j <= deadline_j`` and ``C >= c_j + q_j`` (a job with no
dependency needs no ``c_j``: ``est_j + run_j <= C`` and ``<= lct_j``); and on each type,
the work of the jobs that cannot start before ``a`` and cannot end later than ``C - b``
fits in ``[a, C - b]``, and that of the jobs inside ``[a, d]`` fits there.

**Energetic reasoning** at a trial makespan ``T`` (:func:`trial_program`). If some plan
ends by ``T``, every job runs inside ``[est_j, min(lct_j, T - q_j)]``, so a job that is not
preemptible cannot run on a type whose duration does not fit there; and, on the type it
runs on, it spends at least ``max(0, min(b - a, p, est + p - a, b - lct + p))`` seconds
inside any interval ``[a, b]`` (its left- or right-most position; Baptiste, Le Pape &
Nuijten 2001), all of which must fit the type's GPUs over ``[a, b]``. A preemptible job
may split its work over types, so it counts only where its whole window lies inside
``[a, b]``. When that LP is infeasible, or its optimal ``C`` exceeds ``T``, no plan ends
by ``T``, so ``T`` is a lower bound: :func:`~gpuplan.parts.bounds.energetic_bound`
searches for the largest such ``T``.

Every constraint is met by the point a plan defines (``x`` its type choice, or for a
preemptible job the shares of its work done on each type; ``c`` its completion times;
``C`` its makespan), so each LP optimum, and each ``T`` proven infeasible, bounds the
optimal makespan from below. Space-shared pairs do up to ``pair_gain`` GPU-seconds of
work per GPU-second (a pair holds its GPUs as one occupant with the larger demand), so
capacities are multiplied by it. Times and shares are taken as loosely as the verifier
accepts them (:data:`SLACK_S`, :func:`~gpuplan.models.bounds.accepted_share`). The
window and energetic rows are marked as cuts, to join the LP only once its solution
breaks them (:func:`~gpuplan.parts.bounds.solve_by_rows`): each round solves a relaxation
of the whole LP, so whatever it proves holds for the whole.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from gpuplan.core.instance import BoolArray, FloatArray, Instance, IntArray
from gpuplan.core.status import TOLERANCE
from gpuplan.models.bounds import (
    ROUNDINGS,
    THRESHOLDS,
    accepted_share,
    dff_rounding,
    dff_threshold,
)
from gpuplan.models.linear import LazyNames, LinearProgram, RowBuilder, take_names

#: Most head (release) and tail values the window rows of :func:`window_program` use,
#: and most interval ends per side of :func:`trial_program`'s energetic rows.
MAX_THRESHOLDS = 12
MAX_POINTS = 10
#: Most coefficients one family of window or energetic rows may hold before it is made
#: sparse: on large batches fewer heads, tails and interval ends are used, so that the
#: rows stay within memory and build time.
MAX_ENTRIES = 3_000_000
#: Seconds by which durations are shortened, releases moved earlier and deadlines later:
#: the verifier accepts times off by its tolerance (and float rounding well below it).
SLACK_S = 2 * TOLERANCE


@dataclass(frozen=True)
class PackingRows:
    """Ways of counting what jobs take of a type's GPUs, each within its GPUs at any time.

    Attributes
    ----------
    gpu_type
        ``(Q,)`` the type each row counts.
    weight
        ``(Q, J)`` GPUs' worth each job holds while it runs on that type (0 where the row
        does not count it or it may not run there).
    gpus
        ``(Q,)`` the GPUs the counted jobs share, times the instance's pair gain.
    """

    gpu_type: IntArray
    weight: FloatArray
    gpus: FloatArray


def _dominated(weight: FloatArray, gpus: FloatArray) -> BoolArray:
    """Rows implied by another: weights nowhere larger and GPUs no fewer (first kept)."""
    n = gpus.size
    drop = np.zeros(n, dtype=bool)
    for i in range(n):
        for k in range(n):
            if i == k or drop[k]:
                continue
            if (gpus[i] >= gpus[k] and (weight[i] <= weight[k] + 1e-12).all()
                    and (k < i or (weight[i] < weight[k] - 1e-12).any()
                         or gpus[i] > gpus[k])):
                drop[i] = True
                break
    return drop


def packing_rows(instance: Instance) -> PackingRows:
    """Per type, the gang- and dual-feasible-function-weighted counts that are not implied.

    For each type, resource and function ``f`` (identity, :data:`THRESHOLDS`,
    :data:`ROUNDINGS`), and each gang size ``g`` whose jobs cannot use every node of the
    type: ``gang_j * f(share_j)`` for the jobs of gang at least ``g`` that may run on the
    type, against the GPUs of the nodes with at least ``g`` of them. Shares are taken of
    the load the verifier accepts, ``capacity * (1 + TOLERANCE) + TOLERANCE``.
    """
    shares = accepted_share(instance)
    per_node = instance.node_gpus
    functions: list[Callable[[FloatArray], FloatArray]] = [np.asarray]
    functions += [partial(dff_threshold, eps=e) for e in THRESHOLDS]
    functions += [partial(dff_rounding, k=k) for k in ROUNDINGS]
    types: list[int] = []
    weights: list[FloatArray] = []
    gpus: list[float] = []
    for t in range(instance.n_types):
        on = instance.eligible[:, t] & (instance.gang > 0)
        if not on.any():
            continue
        rows: list[FloatArray] = []
        room: list[float] = []
        for g in np.unique(instance.gang[on]):
            hosts = per_node[per_node[:, t] >= g, t].sum()
            counted = on & (instance.gang >= g)
            if g > instance.gang[on].min() and hosts == per_node[:, t].sum():
                continue
            for r in range(len(instance.packing_resources)):
                share = np.clip(np.nan_to_num(shares[:, t, r]), 0.0, 1.0)
                for f in functions:
                    rows.append(np.where(counted, instance.gang * f(share), 0.0))
                    room.append(float(hosts) * instance.pair_gain)
        weight, capacity = np.array(rows), np.array(room)
        keep = ~_dominated(weight, capacity) & weight.any(axis=1)
        types += [t] * int(keep.sum())
        weights += list(weight[keep])
        gpus += capacity[keep].tolist()
    return PackingRows(np.array(types, dtype=np.int64),
                       np.array(weights).reshape(len(types), instance.n_jobs),
                       np.array(gpus))


@dataclass(frozen=True)
class Windows:
    """Where each job can run when every job ends by a trial makespan.

    Attributes
    ----------
    usable
        ``(J, T)`` the types each job may still use.
    est
        ``(J,)`` earliest start: release and predecessors at their fastest usable types.
    tail
        ``(J,)`` least time between the job's end and the makespan (its successors).
    lct
        ``(J,)`` latest completion: deadline, successors' deadlines, and the trial
        makespan less the tail.
    feasible
        False when some job has no usable type, which proves that no plan ends by the
        trial makespan (or meets the deadlines).
    """

    usable: BoolArray
    est: FloatArray
    tail: FloatArray
    lct: FloatArray
    feasible: bool


def windows(instance: Instance, horizon: float = np.inf) -> Windows:
    """Heads, tails and latest completions when every job ends by ``horizon``.

    A job that is not preemptible runs on one type for its whole duration, so a type
    whose duration does not fit its window is dropped, which may lengthen the fastest
    durations of the chains around it; this repeats until nothing changes. Times are
    moved by :data:`SLACK_S` in the bound's favour.
    """
    duration = np.where(instance.eligible, _length(instance.duration), np.inf)
    usable = instance.eligible.copy()
    order = instance.topological_order
    while True:
        fastest = np.where(usable, duration, np.inf).min(axis=1)
        if not np.isfinite(fastest).all():
            n = instance.n_jobs
            return Windows(usable, np.zeros(n), np.zeros(n), np.zeros(n), False)
        est = instance.release - SLACK_S
        for j in order:
            for p in instance.predecessors[j]:
                est[j] = max(est[j], est[p] + fastest[p])
        tail = np.zeros(instance.n_jobs)
        latest = instance.deadline + SLACK_S
        for j in order[::-1]:
            for s in instance.successors[j]:
                tail[j] = max(tail[j], tail[s] + fastest[s])
                latest[j] = min(latest[j], latest[s] - fastest[s])
        lct = np.minimum(latest, horizon - tail)
        room = lct - est
        fits = duration <= room[:, None]
        keep = usable & (fits | instance.preemptible[:, None])
        if (keep == usable).all():
            feasible = bool((fastest <= room).all())
            return Windows(usable, est, tail, lct, feasible)
        usable = keep


def _length(duration: FloatArray) -> FloatArray:
    """Durations less :data:`SLACK_S`, the least run time the verifier accepts."""
    shorter: FloatArray = np.maximum(duration - SLACK_S, 0.0)
    return shorter


def mandatory(est: FloatArray, lct: FloatArray, length: FloatArray, a: float,
              b: float) -> FloatArray:
    """Least time a job of this ``length`` inside ``[est, lct]`` spends in ``[a, b]``.

    ``max(0, min(b - a, length, est + length - a, b - lct + length))``: the overlap of its
    left-most and right-most positions, the smaller.
    """
    least = np.minimum(np.minimum(b - a, length),
                       np.minimum(est + length - a, b - lct + length))
    out: FloatArray = np.maximum(least, 0.0)
    return out


def _spread(values: FloatArray, most: int) -> FloatArray:
    """At most ``most`` of the distinct finite values, spread over their range."""
    distinct = np.unique(values[np.isfinite(values)])
    if distinct.size <= most:
        return distinct
    picked: FloatArray = distinct[np.unique(np.linspace(0, distinct.size - 1, most)
                                            .round().astype(np.int64))]
    return picked


@dataclass(frozen=True)
class WindowProgram:
    """The window LP and how to read it.

    Attributes
    ----------
    program
        Minimise ``C`` (its last column).
    jobs, types
        ``(X,)`` the (job, type) pair of each share column ``x``, the first columns.
    cuts
        ``(rows,)`` the rows :func:`solve_by_rows` adds only once violated: every window
        and energetic row but the whole horizon's.
    """

    program: LinearProgram
    jobs: IntArray
    types: IntArray
    cuts: BoolArray


def window_program(instance: Instance, packing: PackingRows, frame: Windows,
                   horizon: float = np.inf) -> WindowProgram:
    """The workload LP with completion times, windows and packing rows (module notes).

    With a finite ``horizon`` it is the trial LP of :func:`trial_program` without its
    energetic rows: the caller adds those.
    """
    return _build(instance, packing, frame, horizon, energetic=False)


def trial_program(instance: Instance, packing: PackingRows, frame: Windows,
                  horizon: float) -> WindowProgram:
    """The window LP at a trial makespan ``horizon``, with energetic rows (module notes).

    ``frame`` is :func:`windows` at that horizon. If the program is infeasible or its
    optimum exceeds ``horizon``, no plan ends by ``horizon``.
    """
    return _build(instance, packing, frame, horizon, energetic=True)


def _build(instance: Instance, packing: PackingRows, frame: Windows, horizon: float,
           energetic: bool) -> WindowProgram:
    """Assemble :func:`window_program` or :func:`trial_program`."""
    n_jobs = instance.n_jobs
    jobs, types = np.nonzero(frame.usable)
    n_x = jobs.size
    # Completion columns only for jobs with dependencies; the others need none.
    linked = np.array([bool(p or s) for p, s in zip(instance.predecessors,
                                                     instance.successors, strict=True)])
    chained = np.flatnonzero(linked)
    col_c = np.full(n_jobs, -1, dtype=np.int64)
    col_c[chained] = n_x + np.arange(chained.size)
    col_makespan = n_x + chained.size
    n_cols = col_makespan + 1
    length = _length(instance.duration[jobs, types])
    rows = RowBuilder()
    ones = np.ones(n_jobs)
    rows.add(jobs, np.arange(n_x), np.ones(n_x), ones, ones,
             [f"share[{j}]" for j in instance.job_ids])
    mine = linked[jobs]
    # Linked jobs: c_j - run_j >= est_j, c_j - c_i - run_j >= 0 for each dependency
    # i -> j, C - c_j >= tail_j and c_j <= lct_j (its column's bound).
    block = np.searchsorted(chained, jobs[mine])
    rows.add(np.r_[block, np.arange(chained.size)],
             np.r_[np.flatnonzero(mine), col_c[chained]],
             np.r_[-length[mine], np.ones(chained.size)], frame.est[chained],
             np.full(chained.size, np.inf), take_names(
                 [f"start[{j}]" for j in instance.job_ids], chained))
    edges = [(i, j) for j in range(n_jobs) for i in instance.predecessors[j]]
    if edges:
        before, after = (np.array(e, dtype=np.int64) for e in zip(*edges, strict=True))
        first = np.searchsorted(jobs, after)
        last = np.searchsorted(jobs, after, side="right")
        edge_of = np.repeat(np.arange(len(edges)), last - first)
        columns = np.concatenate([np.arange(f, e) for f, e in zip(first, last, strict=True)])
        rows.add(np.r_[edge_of, np.arange(len(edges)), np.arange(len(edges))],
                 np.r_[columns, col_c[after], col_c[before]],
                 np.r_[-length[columns], np.ones(len(edges)), -np.ones(len(edges))],
                 np.zeros(len(edges)), np.full(len(edges), np.inf),
                 [f"after[{instance.job_ids[i]},{instance.job_ids[j]}]" for i, j in edges])
    rows.add(np.r_[np.arange(chained.size), np.arange(chained.size)],
             np.r_[np.full(chained.size, col_makespan), col_c[chained]],
             np.r_[np.ones(chained.size), -np.ones(chained.size)], frame.tail[chained],
             np.full(chained.size, np.inf),
             take_names([f"tail[{j}]" for j in instance.job_ids], chained))
    # Other jobs: est_j + run_j <= C, and <= lct_j.
    alone = np.flatnonzero(~linked)
    block = np.searchsorted(alone, jobs[~mine])
    rows.add(np.r_[block, np.arange(alone.size)],
             np.r_[np.flatnonzero(~mine), np.full(alone.size, col_makespan)],
             np.r_[length[~mine], -np.ones(alone.size)], np.full(alone.size, -np.inf),
             -frame.est[alone], take_names([f"run[{j}]" for j in instance.job_ids], alone))
    due = alone[np.isfinite(frame.lct[alone])]
    on_due = np.isin(jobs, due)
    rows.add(np.searchsorted(due, jobs[on_due]), np.flatnonzero(on_due), length[on_due],
             np.full(due.size, -np.inf), frame.lct[due] - frame.est[due],
             take_names([f"deadline[{j}]" for j in instance.job_ids], due))
    first_cut = rows.count
    core = _add_area(rows, instance, packing, frame, jobs, types, length, col_makespan,
                     horizon, energetic)
    cost = np.zeros(n_cols)
    cost[col_makespan] = 1.0
    upper = np.r_[np.ones(n_x), frame.lct[chained], np.inf]
    program = rows.program(
        sense="min", cost=cost, col_lower=np.zeros(n_cols), col_upper=upper,
        integer=np.zeros(n_cols, dtype=bool),
        col_names=(*(f"x[{instance.job_ids[j]},{instance.type_ids[t]}]"
                     for j, t in zip(jobs, types, strict=True)),
                   *(f"c[{instance.job_ids[j]}]" for j in chained), "makespan"))
    cuts = np.zeros(program.n_rows, dtype=bool)
    cuts[first_cut:] = True
    cuts[core] = False
    return WindowProgram(program, jobs.astype(np.int64), types.astype(np.int64), cuts)


def _add_area(rows: RowBuilder, instance: Instance, packing: PackingRows, frame: Windows,
              jobs: IntArray, types: IntArray, length: FloatArray, col_makespan: int,
              horizon: float, energetic: bool) -> list[int]:
    """Add the packing rows over windows, and energetic ones at a trial makespan.

    ``[a, C - b]`` for heads ``a`` and tails ``b``, ``[a, d]`` for latest completions
    ``d``, and with ``energetic`` every ``[a, b]`` between heads and latest completions
    at the trial ``horizon``. Returns the rows of the widest windows, one per packing row
    (the first of each packing row's block), which :func:`solve_by_rows` always keeps.
    """
    est, tail, lct = frame.est[jobs], frame.tail[jobs], frame.lct[jobs]
    # Rows per packing row that a family may have within MAX_ENTRIES coefficients.
    room = max(1, MAX_ENTRIES // max(1, packing.gpus.size * jobs.size))
    side = int(np.clip(np.sqrt(room), 1, MAX_THRESHOLDS))
    heads = _spread(frame.est, side)
    tails = _spread(frame.tail, side)
    ends = _spread(frame.lct, side)
    # (Q, X): GPU-seconds' worth each share column takes of each packing row.
    work = packing.weight[:, jobs] * length * (types[None] == packing.gpu_type[:, None])
    gpus = packing.gpus
    # [a, C - b]: the jobs with est >= a and tail >= b fit in gpus * (C - a - b).
    late = (est[None] >= heads[:, None])[:, None] & (tail[None] >= tails[:, None])[None]
    late = late.reshape(-1, jobs.size)
    offset = (heads[:, None] + tails[None]).ravel()
    core = _add_block(rows, work[:, None] * late[None], gpus[:, None] * offset[None],
               np.repeat(gpus, offset.size), col_makespan, "area")
    # [a, d]: the jobs that must run inside it fit its GPU-seconds.
    start, end = np.meshgrid(heads, ends, indexing="ij")
    pairs = start < end
    inside = ((est[None] >= start[pairs][:, None]) & (lct[None] <= end[pairs][:, None]))
    span = (end - start)[pairs]
    _add_block(rows, work[:, None] * inside[None], -gpus[:, None] * span[None],
               np.zeros(gpus.size * span.size), -1, "window")
    if energetic:
        side = int(np.clip(np.sqrt(room / 2), 1, MAX_POINTS))
        points = np.unique(np.r_[_spread(frame.est, side),
                                 _spread(np.minimum(frame.lct, horizon), side)])
        left, right = np.meshgrid(points, points, indexing="ij")
        pairs = left < right
        a, b = left[pairs][:, None], right[pairs][:, None]
        part = mandatory(est[None], lct[None], length[None], a, b)
        # A preemptible job may split its work over types: only whole windows count.
        whole = np.where((est[None] >= a) & (lct[None] <= b), length[None], 0.0)
        part = np.where(instance.preemptible[jobs][None], whole, part)
        shares = packing.weight[:, jobs] * (types[None] == packing.gpu_type[:, None])
        _add_block(rows, shares[:, None] * part[None], -gpus[:, None] * (b - a).T,
                   np.zeros(gpus.size * a.size), -1, "energy")
    return core


def _add_block(rows: RowBuilder, coefficient: FloatArray, rhs: FloatArray,
               makespan: FloatArray, col_makespan: int, family: str) -> list[int]:
    """Add ``coefficient @ x - makespan * C <= -rhs``, one row per leading index pair.

    ``coefficient`` is ``(Q, K, X)`` and ``rhs`` ``(Q, K)``; without a makespan column
    (``col_makespan`` -1) the ``makespan`` coefficients are not used. Rows with no share
    column are left out but for the first of each packing row, whose row numbers are
    returned.
    """
    n_q, n_k, n_x = coefficient.shape
    if not n_q * n_k:
        return []
    flat = coefficient.reshape(n_q * n_k, n_x)
    used: BoolArray = np.asarray(flat.any(axis=1))
    used[::n_k] = True
    flat, upper, kept = flat[used], -rhs.ravel()[used], np.flatnonzero(used)
    row, col = np.nonzero(flat)
    values = flat[row, col]
    if col_makespan >= 0:
        row = np.r_[row, np.arange(kept.size)]
        col = np.r_[col, np.full(kept.size, col_makespan)]
        values = np.r_[values, -makespan.ravel()[used]]
    first = (rows.count + np.flatnonzero(kept % n_k == 0)).tolist()
    rows.add(row, col, values, np.full(kept.size, -np.inf), upper,
             LazyNames(kept.size, lambda i: f"{family}[{kept[i] // n_k},{kept[i] % n_k}]"))
    return first


def keep_rows(program: LinearProgram, keep: BoolArray) -> LinearProgram:
    """The program with only the rows in ``keep``: a relaxation of it."""
    lengths = np.diff(program.row_start)
    entries = np.repeat(keep, lengths)
    start = np.zeros(int(keep.sum()) + 1, dtype=np.int64)
    np.cumsum(lengths[keep], out=start[1:])
    chosen = np.flatnonzero(keep)
    return replace(program, row_lower=program.row_lower[keep],
                   row_upper=program.row_upper[keep], row_start=start,
                   col_index=program.col_index[entries], value=program.value[entries],
                   row_names=take_names(program.row_names, chosen))
