"""A run log held to what its record claims: :func:`check_run`.

The verifier (:func:`gpuplan.verify.verify_schedule`) checks a run log as it checks any
plan, and more: its segments against the instance, its events (which a run log must
have) against its segments, its overheads against the record's settings. What only the
simulator knows is checked here, from the instance and the log alone:

- what the log states twice, it states alike: the scheduler its ``method``
  (``simulate:NAME``) and its ``solver`` (where it names one: ``gpuplan simulate
  NAME``) name is ``run.scheduler``;
- the record names registered parts, with options they take, in a mode the scheduler
  works in, with a round length exactly in round mode;
- the run keeps the rules its parts promise, where a log can show them: a
  non-preemptive scheduler never stops a job; a scheduler with a fixed order
  (:meth:`~gpuplan.simulate.policy.Scheduler.fixed_order`, fifo's arrival order and
  sjf's) never starts or resumes a job while a job ahead of it waits that fits on some
  node; a
  scheduler that preempts only to start
  (:attr:`~gpuplan.simulate.policy.Scheduler.preempts_to_start`) frees GPUs at each
  preemption that another job starts on at that instant; in round mode, jobs start and
  stop only at the round boundaries the engine's clock gives (:func:`_on_round_boundaries`);
- every job starts on the GPUs the named placement picks (:func:`_placed_as_named`),
  where the log shows what the placement saw: the named placement's own code is asked
  again, on the cluster as the log's events leave it at that start;
- the record's metrics are what the log's segments and events give.

A run of elastic jobs (:mod:`gpuplan.simulate.elastic`: its ``run.scheduler`` is an elastic
policy, no scheduler of the engine's) changes counts as no part of the engine does: the
verifier holds its pieces, overheads and ``rescale`` events to the instance, and here only
what its record states in the engine's terms is checked (its mode, round length and
window, and the scheduler its method names) and its metrics that the log gives (the jobs
met by their due dates and the ratio, the jobs declined, the mean JCT of the jobs that ran,
the GPU-hours held); its policy is the elastic simulator's own
(:func:`gpuplan.simulate.elastic.simulate_elastic` checks it as it writes the log).
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import defaultdict

import numpy as np

from gpuplan.core.errors import InputError
from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.core.result import EventKind, Result
from gpuplan.core.schedule import Plan, ResultSchedule, RunRecord, Schedule
from gpuplan.core.sim import FREE, GpuCluster
from gpuplan.simulate.metrics import run_metrics, utilisation_by_type
from gpuplan.simulate.policies import ADMISSIONS, KINDS, SCHEDULERS, chosen_options
from gpuplan.simulate.policy import Mode, Placement, PolicyContext

#: Problems of one kind listed at most; the rest are counted.
MAX_LISTED = 5

_STARTS = (EventKind.START, EventKind.RESUME, EventKind.MIGRATE)

#: How a run log names its scheduler besides ``run.scheduler``, field by field: the
#: method :func:`~gpuplan.simulate.run.simulate_run` gives it, and the engine's solver.
_NAMED_BY = {"method": "simulate:", "solver": "gpuplan simulate "}


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
    if is_elastic_run(instance, record):
        return _check_elastic_run(instance, schedule, record)
    problems = _check_parts(record)
    if problems:
        # The rules to hold the run to are those of the parts named: unknown, none.
        return problems
    head = schedule.head if isinstance(schedule, ResultSchedule) else schedule
    # A scheduler named two ways is reported, and the run still held to the record's.
    problems = _stated_twice(head, record) if isinstance(head, Schedule) else []
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
    seed = head.seed if isinstance(head, Schedule) else 0
    problems += _placed_as_named(instance, result, _placement(instance, record, seed),
                                 record.placement, scheduler.preemptive)
    return problems if made else problems + _check_metrics(instance, result, record)


def is_elastic_run(instance: Instance, record: RunRecord) -> bool:
    """Whether a run log is the elastic simulator's: elastic jobs, no engine scheduler."""
    return bool(instance.elastic.any()) and record.scheduler not in SCHEDULERS


def _check_elastic_run(instance: Instance, schedule: Plan, record: RunRecord) -> list[str]:
    """What an elastic run's record states in the engine's terms: mode, rounds, window, names.

    Its method (and its solver, where it names a scheduler) names ``run.scheduler``.
    """
    problems = []
    head = schedule.head if isinstance(schedule, ResultSchedule) else schedule
    if isinstance(head, Schedule):
        problems += _stated_twice(head, record)
    modes = [mode.value for mode in Mode]
    if record.mode not in modes:
        problems.append(f"run.mode: {record.mode!r} is not a mode; gpuplan has "
                        f"{', '.join(modes)}")
    if record.mode == Mode.EVENT.value and record.round_s is not None:
        problems.append(f"run.round_s: event mode has no rounds, got {record.round_s:g}")
    if record.mode == Mode.ROUND.value and not (
            record.round_s is not None and math.isfinite(record.round_s)
            and record.round_s > 0):
        problems.append(f"run.round_s: round mode needs a positive round length, got "
                        f"{record.round_s}")
    if not 0 <= record.window[0] < record.window[1] <= instance.n_jobs:
        problems.append(f"run.window {record.window[0]}:{record.window[1]} is not a range "
                        f"of the instance's {instance.n_jobs} jobs")
    return problems + _elastic_metrics_given(instance, schedule, record)


def _elastic_metrics_given(instance: Instance, schedule: Plan,
                           record: RunRecord) -> list[str]:
    """The elastic run's stated metrics that its segments and declines do not give."""
    if isinstance(schedule, ResultSchedule):
        result = schedule.result
    else:
        assert isinstance(schedule, Schedule), "a log read from a file is a Schedule"
        result = schedule.to_result(instance)
    ends = np.full(instance.n_jobs, -np.inf)
    if result.job.size:
        np.maximum.at(ends, result.job, result.end)
    ran = np.isfinite(ends)
    met = ran & (ends <= instance.due + 1e-6)
    jct = (ends - instance.release)[ran]
    held = float(sum((e - s) * g.size for s, e, g in zip(
        result.start.tolist(), result.end.tolist(), result.gpus, strict=True)))
    given = {"jobs": float(instance.n_jobs), "met": float(met.sum()),
             "deadline_ratio": float(met.sum()) / max(instance.n_jobs, 1),
             "declined": float(len(schedule.unplaced)),
             "mean_jct_h": float(jct.mean()) / 3600 if jct.size else 0.0,
             "held_gpu_h": held / 3600}
    return [f"run.metrics.{name}: the record says {record.metrics[name]:.6g}, the log gives "
            f"{value:.6g}" for name, value in given.items()
            if name in record.metrics and not math.isclose(record.metrics[name], value,
                                                           rel_tol=1e-6, abs_tol=1e-9)]


def _stated_twice(head: Schedule, record: RunRecord) -> list[str]:
    """The scheduler the log's method names, and its solver where it names one, is the record's.

    The method of a run log is always ``simulate:NAME``; the solver names the simulator,
    and a scheduler only in the engine's form ``gpuplan simulate NAME``.
    """
    problems = []
    for field, prefix in _NAMED_BY.items():
        stated: str = getattr(head, field)
        if stated == prefix + record.scheduler:
            continue
        if stated.startswith(prefix):
            problems.append(f"{field}: {stated!r} names scheduler "
                            f"{stated.removeprefix(prefix)!r}, but run.scheduler is "
                            f"{record.scheduler!r}")
        elif field == "method":
            problems.append(f"method: {stated!r} is not a run log's; run.scheduler "
                            f"{record.scheduler!r} runs as {prefix + record.scheduler!r}")
    return problems


def _part_names(record: RunRecord) -> dict[str, str]:
    """The record's part names by kind."""
    return {"scheduler": record.scheduler, "placement": record.placement,
            "admission": record.admission}


def _check_parts(record: RunRecord) -> list[str]:
    """The record's parts are registered, take its options and work in its mode."""
    names = _part_names(record)
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


def _placement(instance: Instance, record: RunRecord, seed: int) -> Placement:
    """The record's placement, built as the run built it: its options, mode and seed."""
    options = chosen_options(_part_names(record), record.options)["placement"]
    # In event mode the log keeps no round length (the run's was unused): none is given.
    context = PolicyContext(instance, Mode(record.mode),
                            math.nan if record.round_s is None else record.round_s, seed,
                            options=options)
    placement: Placement = KINDS["placement"][record.placement](context)
    return placement


def _listed(problems: list[str], what: str) -> list[str]:
    """The first problems of a rule, and how many more there are."""
    if len(problems) <= MAX_LISTED:
        return problems
    return [*problems[:MAX_LISTED], f"{what}: {len(problems) - MAX_LISTED} more like these"]


class _Failing:
    """Whether some of a set of GPUs fail at an instant (an outage of the run starts then).

    The outages by their start, so that a question costs a bisection (and a look at the
    outages starting then), not a pass over every outage.
    """

    def __init__(self, instance: Instance) -> None:
        outages = sorted(instance.outages, key=lambda outage: outage.start_s)
        self.starts: list[float] = [outage.start_s for outage in outages]
        self.gpus = [set(outage.gpus.tolist()) for outage in outages]

    def __call__(self, time_s: float, gpus: IntArray) -> bool:
        """Whether some of ``gpus`` fail at ``time_s`` (up to float noise: relative 1e-9)."""
        noise = 1e-9 * max(1.0, abs(time_s))
        first = bisect.bisect_left(self.starts, time_s - noise)
        last = bisect.bisect_right(self.starts, time_s + noise)
        if first == last:
            return False
        mine = set(gpus.tolist())
        return any(not mine.isdisjoint(self.gpus[k]) for k in range(first, last))


def _cut_by_failure(instance: Instance, result: Result) -> np.ndarray:
    """``(S,)`` whether each segment ends as some of its GPUs fail."""
    failed = np.zeros(result.n_segments, dtype=bool)
    if instance.outages:
        failing = _Failing(instance)
        ends = result.end.tolist()
        failed[:] = [failing(ends[k], result.gpus[k]) for k in range(result.n_segments)]
    return failed


def _gpu_names(instance: Instance, gpus: IntArray) -> str:
    """The GPUs' ids, in index order."""
    return ", ".join(instance.gpu_ids[g] for g in sorted(gpus.tolist()))


def _never_preempted(instance: Instance, result: Result, name: str) -> list[str]:
    """A non-preemptive scheduler runs every job in one segment, but where a GPU fails."""
    failed = _cut_by_failure(instance, result)
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
    failing = _Failing(instance)
    for event in result.events:
        if event.kind is not EventKind.PREEMPT or failing(event.time_s, event.gpus):
            continue
        freed = set(event.gpus.tolist())
        if not any(job != event.job and not freed.isdisjoint(gpus)
                   for job, gpus in started.get(event.time_s, ())):
            problems.append(f"scheduler {name!r} preempts only to start another job on "
                            f"the GPUs it frees, but job {instance.job_ids[event.job]!r} is "
                            f"preempted at {event.time_s:g} s and no job starts on "
                            f"{_gpu_names(instance, event.gpus)} then")
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


class _Held:
    """The free GPUs of each type on each node, and each node's room, as segments hold them.

    ``free`` is ``(N, T)``; ``room`` ``(N, Q)``, None when no job draws on node resources.
    A segment whose GPUs are all of one type on one node (every gang on one node) is
    booked by one cell of ``free``; any other by its cells' counts.
    """

    def __init__(self, instance: Instance, result: Result) -> None:
        self.instance = instance
        kinds = instance.n_types
        self.free: IntArray = instance.node_gpus.astype(np.int64).copy()
        self.flat: IntArray = _flat(self.free)
        self.room: FloatArray | None = (instance.node_capacity.astype(float).copy()
                                        if instance.node_demand.any() else None)
        sizes = np.array([g.size for g in result.gpus], dtype=np.int64)
        self.sizes: list[int] = sizes.tolist()
        cells = (np.concatenate(result.gpus) if result.n_segments else
                 np.zeros(0, dtype=np.int64))
        cells = instance.gpu_node[cells] * kinds + instance.gpu_type[cells]
        self.offsets: IntArray = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        self.cells: IntArray = cells
        whole = sizes > 0
        starts = self.offsets[:-1][whole]
        lowest = np.full(sizes.size, -1, dtype=np.int64)
        highest = np.full(sizes.size, -2, dtype=np.int64)
        if starts.size:
            lowest[whole] = np.minimum.reduceat(cells, starts)
            highest[whole] = np.maximum.reduceat(cells, starts)
        # The one cell of each segment on one node and type; -1 for the others.
        self.cell: list[int] = np.where(lowest == highest, lowest, -1).tolist()
        self.kinds = kinds
        self.job: list[int] = result.job.tolist()

    def book(self, k: int, sign: int, free: IntArray | None = None,
             room: FloatArray | None = None) -> None:
        """Segment ``k`` gives back (``sign`` 1) or takes (-1) its GPUs and node room.

        On ``free`` and ``room`` when given (copies), else on the held state.
        """
        flat = self.flat if free is None else _flat(free)
        cell = self.cell[k]
        if cell >= 0:
            flat[cell] += sign * self.sizes[k]
            nodes: IntArray | None = None
        else:
            mine = self.cells[self.offsets[k]:self.offsets[k + 1]]
            np.add.at(flat, mine, sign)
            nodes = np.unique(mine // self.kinds)
        left = self.room if room is None else room
        if left is not None:
            if nodes is None:
                nodes = np.array([cell // self.kinds])
            left[nodes] += sign * self.instance.node_demand[self.job[k]]


def _flat(array: IntArray) -> IntArray:
    """A 1-D view of a C-ordered array (never a copy: writing to it writes to the array)."""
    view = array.view()
    view.shape = (array.size,)
    return view


def _row_groups(rows: np.ndarray) -> IntArray:
    """``(R,)`` a number per row, from 0 up, equal for equal rows and only for them.

    Column by column (a sort of one column at a time), not by a sort of whole rows, which
    costs ten times more.
    """
    codes = np.zeros(rows.shape[0], dtype=np.int64)
    for column in rows.T:
        values = np.unique(column, return_inverse=True)[1].ravel()
        codes = np.unique(codes * (int(values.max(initial=0)) + 1) + values,
                          return_inverse=True)[1].ravel()
    return codes


def _waits(instance: Instance, result: Result) -> tuple[list[float], list[float], list[int]]:
    """Every span of time a job waits, by its beginning: ``(begins, ends, jobs)``.

    A job waits from its arrival (or its predecessors' end) to its first start, and from
    the end of each segment but its last (a failure stopped it) to its next start; a job
    that never starts waits for good.
    """
    by_job = np.lexsort((result.start, result.job))
    jobs = result.job[by_job]
    opens = np.ones(jobs.size, dtype=bool)
    opens[1:] = jobs[1:] != jobs[:-1]
    ready = _ready_times(instance, result)
    ends = result.end[by_job]
    begin = np.where(opens, ready[jobs], np.concatenate(([-np.inf], ends[:-1])))
    until = result.start[by_job]
    never = np.flatnonzero(np.bincount(result.job, minlength=instance.n_jobs) == 0)
    begin = np.concatenate((begin, ready[never]))
    until = np.concatenate((until, np.full(never.size, np.inf)))
    jobs = np.concatenate((jobs, never))
    keep = np.flatnonzero(begin < until)
    keep = keep[np.argsort(begin[keep], kind="stable")]
    return begin[keep].tolist(), until[keep].tolist(), jobs[keep].tolist()


def _fits(instance: Instance, j: int, types: list[int], free: IntArray,
          room: FloatArray | None, largest: list[int] | None) -> int:
    """The first of job ``j``'s ``types`` on which its gang fits the free GPUs and room.

    -1 if none. ``largest``: the most free GPUs of each type on one node, for an instance
    whose gangs are on one node and draw on nothing else (None for the others).
    """
    if largest is not None:
        need = int(instance.gang[j])
        for t in types:
            if largest[t] >= need:
                return t
        return -1
    anywhere = np.zeros(instance.n_nodes)
    for t in types:
        hosts = instance.gang_hosts(j, t, free[:, t], room)
        if instance.pick_nodes(j, hosts, anywhere) is not None:
            return int(t)
    return -1


def _in_order(instance: Instance, result: Result, order: IntArray, name: str) -> list[str]:
    """No job starts or resumes while a job ahead of it in the fixed order waits and fits.

    At each instant a segment starts, the GPUs free then (those no segment holds, less
    those down) go to the jobs starting in the scheduler's order, as the engine hands
    them out: a job that waits (arrived, or stopped by a failure, and not yet running)
    must not fit on what the jobs ahead of it leave. Jobs that resume after a failure
    take their GPUs in that order too (they are ahead of later arrivals).

    Waiting jobs are grouped by what they ask for (gang shape, node demand, required
    topology level and eligible types). Within a group only the earliest in the order can
    be the one passed over: the GPUs left to a waiting job shrink the further down the
    order it is, and the members of a group ask the same, so if the earliest does not
    fit, no later one of its group does. The groups are kept in a heap by their earliest
    waiting job, so an instant costs time in proportion to the jobs starting and the
    groups passed over, not to the queue or the number of groups.
    """
    n = instance.n_jobs
    if result.n_segments == 0:
        return []
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    ranks: list[int] = rank.tolist()
    level = (instance.required_level if instance.levels
             else np.full(n, -1, dtype=np.int64))
    asks = np.column_stack((instance.gang, instance.gpus_per_node, level,
                            instance.eligible, instance.node_demand))
    group_of = _row_groups(asks)
    group: list[int] = group_of.tolist()
    # Each group's eligible types, in index order.
    firsts = np.unique(group_of, return_index=True)[1]
    types = [np.flatnonzero(instance.eligible[j]).tolist() for j in firsts.tolist()]
    held = _Held(instance, result)
    one_node = not instance.features
    starts: list[float] = result.start.tolist()
    ends: list[float] = result.end.tolist()
    jobs: list[int] = result.job.tolist()
    by_start: list[int] = np.argsort(result.start, kind="stable").tolist()
    by_end: list[int] = np.argsort(result.end, kind="stable").tolist()
    begins, untils, waiting = _waits(instance, result)
    # GPUs down now: how many failures hold each, and per node and type how many are down.
    failing = np.zeros(instance.n_gpus, dtype=np.int64)
    down = np.zeros_like(held.free)
    n_down = 0
    cells = instance.gpu_node * instance.n_types + instance.gpu_type
    changes = sorted([(o.start_s, 1, o.gpus) for o in instance.outages]
                     + [(o.end_s, -1, o.gpus) for o in instance.outages
                        if math.isfinite(o.end_s)], key=lambda change: change[0])
    # Per group, its waiting jobs as (rank, end of the wait, job), entries whose wait is
    # over dropped when they reach the top; the groups in a heap by the rank of their top
    # entry when listed there (``head``: the rank a group is listed by; older listings are
    # dropped when they surface).
    queues: dict[int, list[tuple[int, float, int]]] = defaultdict(list)
    heads: list[tuple[int, int]] = []
    head: dict[int, int] = {}
    taken = [False] * len(starts)
    at_start = at_end = at_wait = at_change = 0
    problems: list[str] = []
    while at_start < len(by_start):
        now = starts[by_start[at_start]]
        while at_end < len(by_end) and ends[by_end[at_end]] <= now:
            k = by_end[at_end]
            if taken[k]:
                held.book(k, 1)
            at_end += 1
        while at_change < len(changes) and changes[at_change][0] <= now:
            _, step, gpus = changes[at_change]
            if step < 0:
                failing[gpus] -= 1
            turned = gpus[failing[gpus] == 0]
            np.add.at(_flat(down), cells[turned], step)
            n_down += step * turned.size
            if step > 0:
                failing[gpus] += 1
            at_change += 1
        while at_wait < len(begins) and begins[at_wait] <= now:
            j, g = waiting[at_wait], group[waiting[at_wait]]
            heapq.heappush(queues[g], (ranks[j], untils[at_wait], j))
            if ranks[j] < head.get(g, n):
                head[g] = ranks[j]
                heapq.heappush(heads, (ranks[j], g))
            at_wait += 1
        starting = []
        while at_start < len(by_start) and starts[by_start[at_start]] == now:
            starting.append(by_start[at_start])
            at_start += 1
        if len(starting) > 1:
            starting.sort(key=lambda k: ranks[jobs[k]])
        going = [ranks[jobs[k]] for k in starting]
        # The groups whose earliest waiting job is ahead of the last one starting.
        passed: list[tuple[int, int, int]] = []
        while heads and heads[0][0] < going[-1]:
            key, g = heapq.heappop(heads)
            if head.get(g) != key:
                continue
            queue = queues[g]
            while queue and queue[0][1] <= now:
                heapq.heappop(queue)
            if not queue:
                del head[g]
                continue
            if queue[0][0] != key:
                head[g] = queue[0][0]
                heapq.heappush(heads, (queue[0][0], g))
                continue
            passed.append((key, g, queue[0][2]))
        for key, g, _ in passed:
            heapq.heappush(heads, (key, g))
        if passed:
            passed.sort()
            problems += _passed_over(instance, held, down if n_down else None, starting,
                                     going, passed, types, one_node, now, name)
        for k in starting:
            if ends[k] > now:
                held.book(k, -1)
                taken[k] = True
    return _listed(problems, f"scheduler {name!r}")


def _passed_over(instance: Instance, held: _Held, down: IntArray | None, starting: list[int],
                 going: list[int], passed: list[tuple[int, int, int]],
                 types: list[list[int]], one_node: bool, now: float, name: str) -> list[str]:
    """What the waiting jobs passed over would have fitted on: one problem for each that fits.

    ``passed`` are (rank, group, job) by rank; ``starting`` the segments starting now, by
    their jobs' ranks ``going``; ``types`` each group's eligible types. Each waiting job
    is offered what is free (less the GPUs ``down``, None: none) less what the jobs ahead
    of it take.
    """
    # What is free now, copied only when the jobs ahead are taken from it.
    free = held.free if down is None else np.maximum(held.free - down, 0)
    room = held.room
    applied = 0
    largest: list[int] | None = free.max(axis=0).tolist() if one_node else None
    problems = []
    for place, g, j in passed:
        ahead = bisect.bisect_left(going, place)
        if applied < ahead:
            if applied == 0:
                free = free.copy()
                room = None if room is None else room.copy()
            while applied < ahead:
                held.book(starting[applied], -1, free, room)
                applied += 1
            largest = free.max(axis=0).tolist() if one_node else None
        kind = _fits(instance, j, types[g], free, room, largest)
        if kind >= 0:
            later = instance.job_ids[held.job[starting[ahead]]]
            where = int(free[:, kind].argmax())
            problems.append(
                f"scheduler {name!r} starts jobs in its order, but job {later!r} starts "
                f"at {now:g} s while job {instance.job_ids[j]!r}, ahead of it, waits and "
                f"fits on {instance.type_ids[kind]} GPUs of node "
                f"{instance.node_ids[where]!r}")
    return problems


def _on_round_boundaries(instance: Instance, result: Result, round_s: float) -> list[str]:
    """Jobs start and stop only at the round boundaries the engine's clock gives.

    The boundaries are rebuilt from the log as the engine's round loop
    (:meth:`~gpuplan.simulate.engine.Engine._rounds`) makes them, from the first arrival
    on. After a boundary at which jobs run (those whose segments span it), the next is a
    round later, unless every one of them completes sooner: then the round ends at the
    last of those completions. After a boundary at which nothing runs, the next is the
    next arrival, or a round later when every job has arrived. Every start, and every
    stop but a failure's, must fall on a boundary (up to float noise: relative 1e-9).

    A round in which a failure stopped a job is the one case the log does not pin down:
    the round would have ended early at that job's projected completion, which the log
    does not state. The next start or stop is then only held to come no earlier than the
    round's last segment end, and the boundaries are taken up again from it.

    Each step moves to the next start or stop, segment end or arrival, or leaps over
    whole rounds at once, so the check costs time in proportion to the log (and a
    logarithm), not to the number of rounds.
    """
    if result.n_segments == 0:
        return []
    # A job's last segment ends as it completes; every other is cut short.
    latest = np.full(instance.n_jobs, -np.inf)
    np.maximum.at(latest, result.job, result.start)
    cut = result.start < latest[result.job]
    failed = _cut_by_failure(instance, result)
    by_start = np.argsort(result.start, kind="stable")
    starts = result.start[by_start].tolist()
    # The latest end among the segments begun by each start: while jobs run at an instant,
    # the last of them ends then.
    reach = np.maximum.accumulate(result.end[by_start]).tolist()
    ends = np.sort(result.end).tolist()
    cut_starts, cut_ends = np.sort(result.start[cut]).tolist(), np.sort(result.end[cut]).tolist()
    fail_starts = np.sort(result.start[failed]).tolist()
    fail_ends = np.sort(result.end[failed]).tolist()
    arrivals = np.unique(instance.release.astype(float)).tolist()
    failing = _Failing(instance)
    decided = np.unique([e.time_s for e in result.events if e.kind is not EventKind.COMPLETE
                         and not (e.kind is EventKind.PREEMPT
                                  and failing(e.time_s, e.gpus))]).tolist()

    def spanning(begun: list[float], over: list[float], now: float) -> int:
        """How many of the segments with these sorted starts and ends span ``now``."""
        return bisect.bisect_right(begun, now) - bisect.bisect_right(over, now)

    problems: list[str] = []
    base, i = arrivals[0], 0
    while True:
        while i < len(decided) and decided[i] <= base + _noise(base):
            i += 1
        if i == len(decided):
            break
        now = decided[i]
        near = base + _noise(base)
        if spanning(starts, ends, near) == 0:
            # Nothing runs: the next arrival, or (all arrived) whole idle rounds.
            k = bisect.bisect_right(arrivals, near)
            following = arrivals[k] if k < len(arrivals) else base + round_s * max(
                1, math.floor((now - base) / round_s + 1e-9))
        else:
            last_end = reach[bisect.bisect_right(starts, near) - 1]
            if last_end > base + round_s + _noise(base + round_s):
                # A job runs past the round: whole rounds, up to the next decision or
                # that end, whichever is first.
                following = base + round_s * max(1, math.floor(
                    (min(last_end, now) - base) / round_s + 1e-9))
            elif spanning(fail_starts, fail_ends, near):
                if now < last_end - _noise(last_end):
                    problems.append(_off_round(now, base, last_end, round_s))
                base = now
                continue
            elif spanning(cut_starts, cut_ends, near):
                # A job stopped within the round was not done: the round runs whole.
                following = base + round_s
            else:
                # Every job running completes within the round: it ends with the last.
                following = last_end
        if now < following - _noise(following):
            problems.append(_off_round(now, base, following, round_s))
            base = now
        else:
            base = now if now <= following + _noise(following) else following
    return _listed(problems, "round mode")


def _noise(time_s: float) -> float:
    """How far two instants computed two ways may differ in float noise."""
    return 1e-9 * max(1.0, abs(time_s))


def _off_round(now: float, base: float, following: float, round_s: float) -> str:
    """A start or stop at ``now``, between the boundaries ``base`` and ``following``."""
    return (f"round mode decides at round boundaries, but jobs start or stop at {now:g} s, "
            f"{now - base:g} s after the boundary at {base:g} s, before the next at "
            f"{following:g} s (rounds of {round_s:g} s)")


def _placed_as_named(instance: Instance, result: Result, placement: Placement, name: str,
                     preemptive: bool) -> list[str]:
    """Every start is on the GPUs the named placement picks, where the log shows its pick.

    The cluster is rebuilt as the log's events leave it, one event at a time in the log's
    order (the engine records them in the order it acts, so the events of one instant are
    its steps in turn): who holds each GPU, the free GPUs and node room, the GPUs down
    then (the run's failures), and each job's last GPUs. At each start the placement's own
    :meth:`~gpuplan.simulate.policy.Placement.place` is asked for the job's gang on the
    type it started on, and must give the GPUs it started on. So each placement is held
    to its own rule, whatever it is: best-fit's tightest nodes, first-fit's first ones,
    both resuming on the previous GPUs when free, multi-node gangs, node room and
    required topology domains as :meth:`~gpuplan.simulate.policy.ClusterView.gang`
    picks them. It is not asked where its answer is forced: a gang on one node, with no
    node resources or required topology, whose GPUs are then the only free ones of their
    type on the only node with that many free (every placement must give those).

    Under a preemptive scheduler a start that displaced running jobs is not held to the
    pick: the placement then saw as free the GPUs of every job offered to it (running
    jobs lower in the scheduler's order, the lowest first until some node held the gang),
    and the scheduler's order is not in the log. The engine stops the jobs it displaces
    just before it starts the job that displaced them, so such a start is told apart
    without the order: with the jobs stopped since the instant's last start whose GPUs it
    took holding them again, the placement finds no gang. (Fewer free GPUs never make a
    gang, so where the placement finds one then, it found one on the free GPUs, and the
    job did not displace anyone.) A placement drawing random numbers could not be asked
    again (its draws would depend on every call, those that found nothing included); none
    of the registered ones does.
    """
    cluster = GpuCluster(instance)
    owner, free, previous = cluster.owner, cluster.free, cluster.previous
    flat = _flat(free)
    kinds = instance.n_types
    # Gangs on one node drawing on nothing else, with no required topology, are booked
    # here, cell by cell of ``free`` (a node's GPUs of a type); any other through the
    # cluster's own methods.
    plain = cluster.room is None and not bool((instance.gang_nodes > 1).any()) and not (
        instance.levels and bool((instance.required_level >= 0).any()))
    cell_of: list[int] = (instance.gpu_node * kinds + instance.gpu_type).tolist()
    # How many failures hold each GPU down; a GPU is down while one does (the engine
    # keeps it down until its last failure ends).
    down = np.zeros(instance.n_gpus, dtype=np.int64)
    changes = sorted([(o.start_s, 1, o.gpus) for o in instance.outages]
                     + [(o.end_s, -1, o.gpus) for o in instance.outages
                        if math.isfinite(o.end_s)], key=lambda change: change[0])

    def displaced(job: int, gpus: IntArray, kind: int,
                  stopped: list[tuple[int, IntArray]]) -> bool:
        """Whether the start may have displaced the jobs stopped just before it."""
        taken = [(other, mine) for other, mine in stopped
                 if other != job and np.isin(mine, gpus).any()]
        if not taken:
            return False
        saved = [array.copy() for array in (cluster.owner, cluster.free, cluster.room)
                 if array is not None]
        for other, mine in taken:
            cluster.hold(other, mine)
        found = placement.place(cluster, job, kind)
        for array, before in zip((cluster.owner, cluster.free, cluster.room), saved,
                                 strict=False):
            if array is not None:
                array[:] = before
        return found is None

    problems: list[str] = []
    # The jobs stopped since the current instant's last start: those a start may have
    # displaced (under a preemptive scheduler).
    stopped: list[tuple[int, IntArray]] = []
    at, applied = -math.inf, 0
    for event in result.events:
        now, job, gpus = event.time_s, event.job, event.gpus
        if now != at:
            at, stopped = now, []
            while applied < len(changes) and changes[applied][0] <= now:
                # Failures and repairs at an instant come before its decision, as in the
                # engine.
                _, step, failing = changes[applied]
                np.add.at(down, failing, step)
                cluster.down(failing[down[failing] > 0])
                cluster.up(failing[down[failing] == 0])
                applied += 1
        cell = cell_of[gpus[0]]
        if event.kind not in _STARTS:
            if plain:
                owner[gpus] = FREE
                flat[cell] += gpus.size
            else:
                cluster.give_back(job, gpus)
            if changes and down[gpus].any():
                cluster.down(gpus[down[gpus] > 0])
            previous[job] = gpus
            if preemptive:
                stopped.append((job, gpus))
            continue
        kind = cell % kinds
        size = gpus.size
        if not (plain and flat[cell] == size
                and int(np.count_nonzero(free[:, kind] >= size)) == 1):
            picked = placement.place(cluster, job, kind)
            if not _same_gpus(picked, gpus) and not displaced(job, gpus, kind, stopped):
                where = "no free GPUs" if picked is None else _gpu_names(instance, picked)
                problems.append(f"run.placement is {name!r}, which gives job "
                                f"{instance.job_ids[job]!r} {where} at {now:g} s, but it "
                                f"starts on {_gpu_names(instance, gpus)}")
        if plain:
            owner[gpus] = job
            flat[cell] -= size
        else:
            cluster.hold(job, gpus)
        stopped = []
    return _listed(problems, f"placement {name!r}")


def _same_gpus(picked: IntArray | None, gpus: IntArray) -> bool:
    """Whether a placement's pick is these GPUs, in any order."""
    if picked is None or len(picked) != len(gpus):
        return False
    mine, theirs = np.asarray(picked).tolist(), gpus.tolist()
    return bool(mine == theirs or sorted(mine) == sorted(theirs))


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
