"""A run log held to what its record claims: :func:`check_run`.

The verifier (:func:`gpuplan.verify.verify_schedule`) checks a run log as it checks any
plan, and more: its segments against the instance, its events (which a run log must
have) against its segments, its overheads against the record's settings. What only the
simulator knows is checked here, from the instance and the log alone:

- the record names registered parts, with options they take, in a mode the scheduler
  works in, with a round length exactly in round mode;
- the run keeps the rules its parts promise, where a log can show them: a
  non-preemptive scheduler never stops a job; a scheduler with a fixed order
  (:meth:`~gpuplan.simulate.policy.Scheduler.fixed_order`, fifo's arrival order and
  sjf's) never starts a job while a job ahead of it waits that fits on some node; a
  scheduler that preempts only to start
  (:attr:`~gpuplan.simulate.policy.Scheduler.preempts_to_start`) frees GPUs at each
  preemption that another job starts on at that instant; in round mode, jobs start and
  stop only at round boundaries (a whole number of rounds after the last one, or an
  instant when nothing runs: a round that ended at its last completion, or the clock's
  jump to an arrival);
- the record's metrics are what the log's segments and events give.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import defaultdict
from collections.abc import Iterator

import numpy as np

from gpuplan.core.errors import InputError
from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.core.result import EventKind, Result
from gpuplan.core.schedule import Plan, RunRecord, Schedule
from gpuplan.simulate.metrics import run_metrics, utilisation_by_type
from gpuplan.simulate.policies import ADMISSIONS, KINDS, SCHEDULERS, chosen_options
from gpuplan.simulate.policy import Mode

#: Problems of one kind listed at most; the rest are counted.
MAX_LISTED = 5

_STARTS = (EventKind.START, EventKind.RESUME, EventKind.MIGRATE)


def check_run(instance: Instance, schedule: Plan, result: Result | None = None) -> list[str]:
    """What a run log's record claims that the log does not keep.

    Call it on a log the verifier accepted. Nothing for a schedule without a run record.

    Parameters
    ----------
    instance
        The instance the run simulated.
    schedule
        A run log (``schedule.run`` set).
    result
        The run as the engine recorded it, when the log was just made from it: its
        metrics were computed from it, so they are not recomputed. None for a log read
        from a file (the run is read from the log, its metrics recomputed).

    Returns
    -------
    list[str]
        One line per problem, naming the record's field or the rule and the jobs.
    """
    record = schedule.run
    if record is None:
        return []
    # The run met its failures and its actual durations: hold it to those; its policy
    # saw the instance's durations as estimates, and ordered jobs by those.
    seen, instance = instance, record.actual(instance)
    problems = _check_parts(record)
    if problems:
        # The rules to hold the run to are those of the parts named: unknown, none.
        return problems
    made = result is not None
    if result is None:
        assert isinstance(schedule, Schedule), "a log read from a file is a Schedule"
        result = schedule.to_result(instance)
    scheduler = SCHEDULERS[record.scheduler]
    if not scheduler.preemptive:
        problems += _never_preempted(instance, result, record.scheduler)
    order = scheduler.fixed_order(seen)
    if order is not None and not ADMISSIONS[record.admission].holds_back:
        problems += _in_order(instance, result, order, record.scheduler)
    if scheduler.preemptive and scheduler.preempts_to_start:
        problems += _preempted_to_start(instance, result, record.scheduler)
    if record.mode == Mode.ROUND.value and record.round_s is not None:
        problems += _on_round_boundaries(instance, result, record.round_s)
    return problems if made else problems + _check_metrics(instance, result, record)


def _check_parts(record: RunRecord) -> list[str]:
    """The record's parts are registered, take its options and work in its mode."""
    names = {"scheduler": record.scheduler, "placement": record.placement,
             "admission": record.admission}
    problems = [f"run.{kind}: {name!r} is not a registered {kind}; gpuplan has "
                f"{', '.join(KINDS[kind])}" for kind, name in names.items()
                if name not in KINDS[kind]]
    modes = [mode.value for mode in Mode]
    if record.mode not in modes:
        problems.append(f"run.mode: {record.mode!r} is not a mode; gpuplan has "
                        f"{', '.join(modes)}")
    elif record.scheduler in SCHEDULERS and Mode(record.mode) not in SCHEDULERS[
            record.scheduler].modes:
        problems.append(f"run.mode: scheduler {record.scheduler!r} does not work in "
                        f"{record.mode} mode")
    if record.mode == Mode.ROUND.value and not (
            record.round_s is not None and math.isfinite(record.round_s)
            and record.round_s > 0):
        problems.append(f"run.round_s: round mode needs a positive round length, got "
                        f"{record.round_s}")
    if record.mode == Mode.EVENT.value and record.round_s is not None:
        problems.append(f"run.round_s: event mode has no rounds, got {record.round_s:g}")
    if problems:
        return problems
    try:
        chosen_options(names, record.options, source="run.options")
    except InputError as exc:
        problems.append(str(exc))
    return problems


def _listed(problems: list[str], what: str) -> list[str]:
    """The first problems of a rule, and how many more there are."""
    if len(problems) <= MAX_LISTED:
        return problems
    return [*problems[:MAX_LISTED], f"{what}: {len(problems) - MAX_LISTED} more like these"]


def _failed(instance: Instance, time_s: float, gpus: IntArray) -> bool:
    """Whether some of these GPUs fail at this instant (an outage of the run starts)."""
    mine = set(gpus.tolist())
    return any(abs(outage.start_s - time_s) <= 1e-9 * max(1.0, abs(time_s))
               and not mine.isdisjoint(outage.gpus.tolist()) for outage in instance.outages)


def _never_preempted(instance: Instance, result: Result, name: str) -> list[str]:
    """A non-preemptive scheduler runs every job in one segment, but where a GPU fails."""
    failed = np.zeros(result.n_segments, dtype=bool)
    if instance.outages:
        failed[:] = [_failed(instance, float(result.end[k]), result.gpus[k])
                     for k in range(result.n_segments)]
    counts = np.bincount(result.job[~failed], minlength=instance.n_jobs)
    problems = []
    for j in np.flatnonzero(counts > 1).tolist():
        mine = np.flatnonzero(result.job == j)
        stopped = float(np.sort(result.end[mine])[0])
        problems.append(f"scheduler {name!r} never preempts, but job "
                        f"{instance.job_ids[j]!r} runs in {counts[j]} segments (stopped at "
                        f"{stopped:g} s)")
    return _listed(problems, f"scheduler {name!r}")


def _preempted_to_start(instance: Instance, result: Result, name: str) -> list[str]:
    """Every preemption frees GPUs another job starts on at that instant."""
    started: dict[float, list[tuple[int, set[int]]]] = defaultdict(list)
    for event in result.events:
        if event.kind in _STARTS:
            started[event.time_s].append((event.job, set(event.gpus.tolist())))
    problems = []
    for event in result.events:
        if event.kind is not EventKind.PREEMPT or _failed(instance, event.time_s, event.gpus):
            continue
        freed = set(event.gpus.tolist())
        if not any(job != event.job and not freed.isdisjoint(gpus)
                   for job, gpus in started.get(event.time_s, ())):
            problems.append(f"scheduler {name!r} preempts only to start another job on "
                            f"the GPUs it frees, but job {instance.job_ids[event.job]!r} is "
                            f"preempted at {event.time_s:g} s and no job starts on "
                            f"{', '.join(instance.gpu_ids[g] for g in sorted(freed))} then")
    return _listed(problems, f"scheduler {name!r}")


def _ready_times(instance: Instance, result: Result) -> FloatArray:
    """When each job could first start: its arrival, or its last predecessor's end."""
    last_end = np.full(instance.n_jobs, -np.inf)
    np.maximum.at(last_end, result.job, result.end)
    ready = instance.release.astype(float).copy()
    for j, predecessors in enumerate(instance.predecessors):
        if predecessors:
            ready[j] = max(ready[j], float(last_end[list(predecessors)].max()))
    return ready


def _segment_nodes(instance: Instance, result: Result) -> list[IntArray]:
    """Each segment's distinct nodes."""
    return [np.unique(instance.gpu_node[g]) for g in result.gpus]


def _held_sweep(instance: Instance, result: Result, instants: FloatArray
                ) -> Iterator[tuple[IntArray, FloatArray | None]]:
    """``(N, T)`` free GPUs and ``(N, Q)`` node room at each instant (room None: unused).

    Both are taken before the jobs starting at the instant take theirs.

    A segment holds its GPUs (and its node demand on each of their nodes) from its start
    (exclusive of the instant itself) to its end (what is freed at an instant is free at
    it).
    """
    free = instance.node_gpus.astype(np.int64).copy()
    room = instance.node_capacity.copy() if instance.node_demand.any() else None
    nodes = _segment_nodes(instance, result)
    by_start = np.argsort(result.start, kind="stable").tolist()
    by_end = np.argsort(result.end, kind="stable").tolist()
    held = np.zeros(len(result.gpus), dtype=bool)
    over = np.zeros(len(result.gpus), dtype=bool)
    started = ended = 0

    def take(k: int, sign: int) -> None:
        gpus = result.gpus[k]
        np.add.at(free, (instance.gpu_node[gpus], instance.gpu_type[gpus]), sign)
        if room is not None:
            room[nodes[k]] += sign * instance.node_demand[result.job[k]]

    for now in instants.tolist():
        while started < len(by_start) and result.start[by_start[started]] < now:
            k = by_start[started]
            if not over[k]:
                take(k, -1)
                held[k] = True
            started += 1
        while ended < len(by_end) and result.end[by_end[ended]] <= now:
            k = by_end[ended]
            if held[k]:
                take(k, 1)
            over[k] = True
            ended += 1
        down = [o.gpus for o in instance.outages if o.start_s <= now < o.end_s]
        if not down:
            yield free, room
            continue
        # Failed GPUs are no free GPUs (those a stopped job held are counted once).
        gpus = np.unique(np.concatenate(down))
        fewer = free.copy()
        np.subtract.at(fewer, (instance.gpu_node[gpus], instance.gpu_type[gpus]), 1)
        yield np.maximum(fewer, 0), room


def _fits(instance: Instance, j: int, free: IntArray, room: FloatArray | None) -> int:
    """The first type on which job ``j``'s gang fits the free GPUs and room; -1 if none."""
    if not instance.features:
        # A gang on one node, GPUs only: some node has it free.
        fits = instance.eligible[j] & (free.max(axis=0) >= instance.gang[j])
        return int(np.argmax(fits)) if fits.any() else -1
    anywhere = np.zeros(instance.n_nodes)
    for t in np.flatnonzero(instance.eligible[j]).tolist():
        hosts = instance.gang_hosts(j, t, free[:, t], room)
        if instance.pick_nodes(j, hosts, anywhere) is not None:
            return int(t)
    return -1


def _in_order(instance: Instance, result: Result, order: IntArray, name: str) -> list[str]:
    """No job starts while a job ahead of it in the fixed order waits and fits.

    Waiting jobs are grouped by what they ask for (gang shape, node demand, required
    topology level and eligible types). Within a group only the earliest in the order can
    be the one passed over: the GPUs left to a waiting job shrink the further down the
    order it is, as the jobs starting ahead of it take theirs, so if the earliest does not
    fit, no later one of its group does. A check then costs time in proportion to the
    groups and the jobs starting, not to the queue.
    """
    n = instance.n_jobs
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    first = np.full(n, np.inf)
    np.minimum.at(first, result.job, result.start)
    segment = np.full(n, -1, dtype=np.int64)
    for k in np.argsort(result.start, kind="stable")[::-1].tolist():
        segment[result.job[k]] = k
    ready = _ready_times(instance, result)
    placed = np.flatnonzero(np.isfinite(first))
    instants = np.unique(first[placed])
    starters = placed[np.argsort(first[placed], kind="stable")]
    by_ready = np.argsort(ready, kind="stable").tolist()
    # Each job's group, and per group a heap of its waiting jobs by rank; jobs that have
    # started leave their heap when they reach its top.
    level = (instance.required_level if instance.levels
             else np.full(n, -1, dtype=np.int64))
    asks = np.column_stack((instance.gang, instance.gpus_per_node, level,
                            instance.eligible, instance.node_demand))
    group: list[int] = np.unique(asks, axis=0, return_inverse=True)[1].ravel().tolist()
    heaps: dict[int, list[tuple[int, int]]] = defaultdict(list)
    started = np.zeros(n, dtype=bool)
    ranks = rank.tolist()
    nodes = _segment_nodes(instance, result)
    entered = begun = 0
    problems: list[str] = []
    for now, (free, room) in zip(instants.tolist(), _held_sweep(instance, result, instants),
                                 strict=True):
        while entered < n and ready[by_ready[entered]] <= now:
            j = by_ready[entered]
            heapq.heappush(heaps[group[j]], (ranks[j], j))
            entered += 1
        starting = []
        while begun < starters.size and first[starters[begun]] == now:
            starting.append(int(starters[begun]))
            begun += 1
        starting.sort(key=ranks.__getitem__)
        started[starting] = True
        # The free GPUs and room left to a job waiting behind the first i starting jobs.
        left = [(free.copy(), None if room is None else room.copy())]
        for j in starting:
            k = segment[j]
            gpus = result.gpus[k]
            now_free = left[-1][0].copy()
            np.subtract.at(now_free, (instance.gpu_node[gpus], instance.gpu_type[gpus]), 1)
            now_room = left[-1][1]
            if now_room is not None:
                now_room = now_room.copy()
                now_room[nodes[k]] -= instance.node_demand[j]
            left.append((now_free, now_room))
        going_ranks = [ranks[j] for j in starting]
        last = going_ranks[-1]
        for heap in heaps.values():
            while heap and started[heap[0][1]]:
                heapq.heappop(heap)
            if not heap or heap[0][0] > last:
                continue
            place, j = heap[0]
            ahead = bisect.bisect_left(going_ranks, place)
            kind = _fits(instance, j, *left[ahead])
            if kind >= 0:
                later = instance.job_ids[starting[ahead]]
                where = int(left[ahead][0][:, kind].argmax())
                problems.append(
                    f"scheduler {name!r} starts jobs in its order, but job {later!r} starts "
                    f"at {now:g} s while job {instance.job_ids[j]!r}, ahead of it, waits and "
                    f"fits on {instance.type_ids[kind]} GPUs of node "
                    f"{instance.node_ids[where]!r}")
    return _listed(problems, f"scheduler {name!r}")


def _on_round_boundaries(instance: Instance, result: Result, round_s: float) -> list[str]:
    """Jobs start and stop only at round boundaries.

    A boundary is a whole number of rounds after the one before it, or an instant when
    nothing runs (a round ends early at its last completion; after a round that ran
    nothing, the next begins at the next arrival).
    """
    starts, ends = np.sort(result.start), np.sort(result.end)

    def spanned(times: FloatArray) -> np.ndarray:
        running: np.ndarray = (np.searchsorted(starts, times, side="left")
                               - np.searchsorted(ends, times, side="right")) > 0
        return running

    candidates = np.unique(np.concatenate((result.end, instance.release.astype(float))))
    quiet = candidates[~spanned(candidates)]
    decided = np.unique([e.time_s for e in result.events if e.kind is not EventKind.COMPLETE
                         and not (e.kind is EventKind.PREEMPT
                                  and _failed(instance, e.time_s, e.gpus))])
    busy = decided[spanned(decided)]
    problems: list[str] = []
    for now in busy.tolist():
        earlier_quiet = quiet[np.searchsorted(quiet, now, side="left") - 1] if (
            quiet.size and quiet[0] < now) else -np.inf
        earlier_decided = decided[np.searchsorted(decided, now, side="left") - 1] if (
            decided[0] < now) else -np.inf
        base = float(max(earlier_quiet, earlier_decided))
        rounds = (now - base) / round_s
        whole = round(rounds) if math.isfinite(rounds) else 0
        if whole < 1 or abs(now - base - whole * round_s) > 1e-9 * max(1.0, abs(now)) * max(
                1, whole):
            problems.append(f"round mode decides at round boundaries, but jobs start or "
                            f"stop at {now:g} s, {now - base:g} s after the boundary at "
                            f"{base:g} s, while jobs run (rounds of {round_s:g} s)")
    return _listed(problems, "round mode")


def _check_metrics(instance: Instance, result: Result, record: RunRecord) -> list[str]:
    """The record's metrics and per-type utilisation are what the log gives."""
    window = (record.window[0], record.window[1])
    if not 0 <= window[0] < window[1] <= instance.n_jobs:
        return [f"run.window {window[0]}:{window[1]} is not a range of the instance's "
                f"{instance.n_jobs} jobs"]
    recomputed = {**{f"metrics.{k}": v for k, v in run_metrics(instance, result,
                                                               window).items()},
                  **{f"utilisation_by_type.{k}": v for k, v in utilisation_by_type(
                      instance, result, window).items()}}
    stated = {**{f"metrics.{k}": v for k, v in record.metrics.items()},
              **{f"utilisation_by_type.{k}": v for k, v in record.utilisation_by_type.items()}}
    problems = [f"run.{key} is missing" for key in recomputed if key not in stated]
    problems += [f"run.{key} is not a metric gpuplan computes" for key in stated
                 if key not in recomputed]
    problems += [
        f"run.{key} states {stated[key]:.6g}, the log's segments give {value:.6g}"
        for key, value in recomputed.items()
        if key in stated and not _same(stated[key], value)]
    return problems


def _same(a: float, b: float) -> bool:
    """Equal up to float noise, NaN equal to NaN."""
    return bool(np.isclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True))
