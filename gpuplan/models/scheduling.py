"""The time-indexed scheduling formulation for CP-SAT: interval variables per GPU group.

Each job gets one start variable and, for every *group* (the GPUs of one type on one node)
that may host its gang, an optional interval whose length is the job's duration on that
type; exactly one of them is present. Capacity is modelled per group:

- *exclusive* types, where no two jobs can share a GPU (some resource is more than half
  used by every job that may run there, e.g. compute 1.0), pool the group's identical GPUs
  into one cumulative of capacity "GPUs in the group" with demand "gang size". A feasible
  cumulative profile always has a per-GPU assignment (handing out free GPUs in start
  order), so pooling is exact and carries no GPU symmetry at all;
- *shared* types, where jobs may fit together, get a presence literal per (job, GPU) and one
  cumulative per GPU and resource, so that memory and compute are respected on every GPU
  over time; the first job that may use a group takes its lowest GPUs when it is there
  (the GPUs of a group are interchangeable).

On exclusive types, a redundant cumulative over all of the type's groups strengthens
propagation and the solver's bound. A job in a partition has alternatives on the
partition's nodes only; each account or QOS with a GPU limit its jobs could exceed is a
cumulative over their alternatives, each holding the job's GPUs on its node, and over
the GPUs that work held before (a re-plan's running jobs) holds against it until its end.
Times are integers: see :class:`TickScale`.

A job may have several *shapes* (an elastic job planned as moldable: a GPU count and its
layout, each with its own durations): they come as the rows of a rigid *table* instance,
and the job's alternatives are those of all its rows, each holding its row's GPUs per node
for its row's duration; one of them (or one choice of a multi-node row) runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from gpuplan.core.budget import Budget
from gpuplan.core.errors import InputError, setting
from gpuplan.core.instance import BoolArray, FloatArray, GpuLimit, Instance, IntArray, Outage
from gpuplan.core.keep import SAME_START_S, Keep
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.models.bounds import resource_share
from gpuplan.models.linear import LinearProgram, RowBuilder, check_budget

#: Powers of ten tried as the tick, from the coarsest.
TICK_EXPONENTS = range(6, -7, -1)
#: CP-SAT's integers are int64 and it reports objective values and bounds as doubles: times
#: in ticks, and objective values (weights times times), stay below this, where doubles are
#: still exact integers.
CP_LIMIT = 2**53
#: With no exact tick, durations are rounded up by at most this share of the shortest one.
ROUNDING_SHARE = 1e-3
#: Scales tried for weights, costs and per-GPU demands to make them integral.
VALUE_SCALES = (1, 10, 100, 1000, 10000)
#: What was being built when the budget was spent (:class:`~gpuplan.models.linear.OutOfTimeError`).
BUILDING = "the CP-SAT scheduling model"


def decimal(step: float) -> Fraction:
    """A step (a tick, or one over a scale) as the decimal its shortest repr spells.

    ``0.1`` is 1/10 here, not the double nearest to it, so that 0.3 s is three ticks of 0.1 s.
    """
    return Fraction(repr(float(step)))


def _represents(values: FloatArray, count: FloatArray, step: Fraction) -> BoolArray:
    """Whether each value is, bit for bit, the double nearest to ``count`` steps.

    ``count * step`` is formed exactly and rounded once (as the reader rounded the decimal
    the user wrote), so this is an exact test: 1,000,000,000.5 is not 1000 ticks of 10^6 s,
    and 0.3 is three ticks of 0.1 s.
    """
    a, b = step.numerator, step.denominator
    product = count * float(a)
    # Products below 2**53 are exact doubles, and one division rounds them correctly.
    fast = (np.abs(product) < 2.0**53) & (a < 2**53) & (b < 2**53)
    same: BoolArray = np.zeros(values.shape, dtype=bool)
    same[fast] = product[fast] / float(b) == values[fast]
    for i in np.flatnonzero(~fast).tolist():
        same[i] = float(int(count[i]) * step) == float(values[i])
    return same


def to_ticks(values: ArrayLike, step: Fraction, up: bool) -> tuple[IntArray, BoolArray]:
    """Values in whole steps, rounded up or down exactly, and which ones are whole steps.

    A value that is a whole number of steps (:func:`_represents`) becomes that number;
    any other is rounded up (or down) from its exact value, never by float noise.
    """
    array = np.asarray(values, dtype=float)
    flat, inverse = np.unique(array.ravel(), return_inverse=True)
    scaled = flat / float(step)
    nearest = np.rint(scaled)
    # Away from a whole number, the float quotient (off by a few ulps) rounds correctly.
    near = np.abs(scaled - nearest) <= 1e-6 * np.abs(scaled)
    result = (np.ceil(scaled) if up else np.floor(scaled)).astype(np.int64)
    whole: BoolArray = np.zeros(flat.shape, dtype=bool)
    close = np.flatnonzero(near)
    if close.size:
        same = _represents(flat[close], nearest[close], step)
        whole[close[same]] = True
        result[close[same]] = nearest[close[same]].astype(np.int64)
        for i in close[~same].tolist():
            exact = Fraction(float(flat[i])) / step
            result[i] = math.ceil(exact) if up else math.floor(exact)
    result, whole = result[inverse], whole[inverse]
    return result.reshape(array.shape), whole.reshape(array.shape)


def _time_data(instance: Instance) -> FloatArray:
    """Every finite time of the instance: durations, releases, deadlines and due dates."""
    times: FloatArray = np.concatenate([
        instance.duration[instance.eligible], instance.release, instance.deadline,
        instance.due,
    ])
    finite: FloatArray = times[np.isfinite(times)]
    return finite


def horizon_s(instance: Instance) -> float:
    """A time by which some plan ends every job, deadlines aside.

    Running the jobs one at a time in dependency order, each on its fastest type, after
    the latest release, ends by then.
    """
    return float(instance.release.max(initial=0.0) + instance.min_duration.sum())


def tick_limit(instance: Instance) -> int:
    """The most ticks the horizon may span: times and objective values stay below CP_LIMIT.

    For weighted completion and tardiness the objective is weights times times, so the
    limit is :data:`CP_LIMIT` over the sum of the (integer-scaled) weights.
    """
    total = 1
    if instance.objective in (ObjectiveKind.WEIGHTED_COMPLETION, ObjectiveKind.TARDINESS):
        total = max(1, int(integer_weights(instance.weight)[0].sum()))
    # Rounding up adds up to one tick per job and release.
    return max(1, CP_LIMIT // total - instance.n_jobs - 1)


@dataclass(frozen=True)
class TickScale:
    """Integer time for CP-SAT: ``seconds = ticks * tick_s``.

    Attributes
    ----------
    tick_s
        Seconds per tick.
    exact
        Whether every duration, release, deadline and due date is a whole number of ticks
        (exactly, see :func:`to_ticks`). Then the integer model is the instance itself
        (some optimal plan starts every job at a release or another job's end) and the
        solver's bound and infeasibility proofs hold for it, up to :attr:`slack_s`.
        Otherwise durations are rounded up, releases up and deadlines down: every plan of
        the integer model is still a plan at the real times, but the solver's bound and
        infeasibility refer to the rounded problem, not to the instance.
    shift_s
        The most any time moved when rounded to ticks (0 when exact).
    slack_s
        When exact, how far the instance's doubles may add up away from the decimals the
        ticks stand for, along a plan: (jobs + 2) half-ulps of the largest time. A bound
        from the integer model is lowered by it.
    """

    tick_s: float
    exact: bool
    shift_s: float = field(default=0.0, compare=False)
    slack_s: float = field(default=0.0, compare=False)

    @property
    def step(self) -> Fraction:
        """The tick as an exact decimal (see :func:`decimal`)."""
        return decimal(self.tick_s)

    @classmethod
    def at(cls, instance: Instance, tick_s: float) -> TickScale:
        """The scale with a given tick, exact or not, and how far rounding moves times."""
        step = decimal(tick_s)
        times = _time_data(instance)
        ticks_up, whole = to_ticks(times, step, up=True)
        ticks_down, _ = to_ticks(times, step, up=False)
        moved = np.maximum(ticks_up * tick_s - times, times - ticks_down * tick_s)
        largest = float(np.abs(times).max(initial=0.0))
        slack = (instance.n_jobs + 2) * float(np.spacing(largest)) / 2
        exact = bool(whole.all()) and slack < tick_s / 2
        return cls(float(tick_s), exact, 0.0 if exact else float(moved.max(initial=0.0)),
                   slack if exact else 0.0)

    @classmethod
    def choose(cls, instance: Instance, tick_s: float | None = None) -> TickScale:
        """The coarsest power of ten that represents the instance exactly, or a fine one.

        Parameters
        ----------
        instance
            The instance.
        tick_s
            A tick requested by the user; exactness is checked for it.

        Raises
        ------
        InputError
            If the requested tick is so fine that the horizon in ticks exceeds CP-SAT's
            integers (:func:`tick_limit`).
        """
        times = _time_data(instance)
        horizon = max(horizon_s(instance), float(np.abs(times).max(initial=1.0)), 1.0)
        limit = tick_limit(instance)
        if tick_s is not None:
            if horizon / tick_s > limit:
                coarsest = 10.0 ** math.ceil(math.log10(horizon / limit))
                raise InputError(
                    setting("tick_s"), "", f"a tick of {tick_s:g} s makes the horizon of "
                    f"{horizon:g} s {horizon / tick_s:.3g} ticks, beyond the {limit:.3g} "
                    "that CP-SAT's integers allow here (2**53"
                    f"{'' if limit >= CP_LIMIT // 2 else ' over the sum of the weights'}); "
                    f"use `tick_s` {coarsest:g} or coarser")
            return cls.at(instance, tick_s)
        for exponent in TICK_EXPONENTS:
            step = 10.0**exponent
            if horizon / step <= limit:
                scale = cls.at(instance, step)
                if scale.exact:
                    return scale
        shortest = float(instance.min_duration.min(initial=np.inf))
        shortest = shortest if np.isfinite(shortest) and shortest > 0 else 1.0
        step = 10.0 ** math.floor(math.log10(max(shortest * ROUNDING_SHARE, 1e-6)))
        step = max(step, 10.0 ** math.ceil(math.log10(horizon / limit)))
        return cls.at(instance, step)

    def up(self, seconds: ArrayLike) -> IntArray:
        """Ticks covering ``seconds``: whole ticks as they are, anything else rounded up."""
        return to_ticks(seconds, self.step, up=True)[0]

    def down(self, seconds: ArrayLike) -> IntArray:
        """Whole ticks within ``seconds``: whole ticks as they are, anything else down."""
        return to_ticks(seconds, self.step, up=False)[0]

    def describe(self) -> str:
        """The tick in words, for the solver string and messages."""
        if self.exact:
            return f"tick {self.tick_s:g} s"
        if self.shift_s == 0.0:
            return (f"tick {self.tick_s:g} s, finer than the float precision of the times, "
                    "so no proofs")
        return (f"tick {self.tick_s:g} s, durations rounded up, releases up and deadlines "
                f"down by up to {self.shift_s:.3g} s")


def integer_weights(values: FloatArray) -> tuple[IntArray, int, bool]:
    """Values scaled to integers: the scaled values, the scale, and whether exactly.

    When no scale in :data:`VALUE_SCALES` is exact (:func:`to_ticks`) the values are
    rounded *down* at the largest, so that a bound computed with them stays a valid bound
    for the real values.
    """
    for scale in VALUE_SCALES:
        scaled, whole = to_ticks(values, Fraction(1, scale), up=False)
        if whole.all():
            return scaled, scale, True
    scale = VALUE_SCALES[-1]
    return to_ticks(values, Fraction(1, scale), up=False)[0], scale, False


def exclusive_types(instance: Instance) -> np.ndarray:
    """``(T,)`` whether no two jobs can ever share a GPU of each type.

    True when some resource is more than half used by every job that may run on the type.
    """
    exclusive = np.zeros(instance.n_types, dtype=bool)
    for t in range(instance.n_types):
        jobs = instance.eligible[:, t]
        share = resource_share(instance)[jobs, t]
        exclusive[t] = not jobs.any() or bool((share > 0.5 + 1e-12).all(axis=0).any())
    return exclusive


def workload_program(instance: Instance) -> LinearProgram:
    """The LP whose optimum is a makespan bound: work spread over types at best.

    Columns are the share ``x[j, t]`` of each job done on each eligible type, then the
    makespan ``C``. On each type and resource, the GPUs can serve at most ``C`` seconds
    each of their full capacity, so ``sum_j gang_j * duration[j, t] * use[j, t, r] *
    x[j, t] <= C * gpus_t``, where ``use`` is the job's share of one GPU's capacity (jobs
    may share GPUs), and each job's own run time fits between its release and ``C``. Every
    plan gives a feasible point (its own type choice, or for preemptible jobs its split of
    the work over types, and its makespan), so the optimum bounds the makespan from below;
    unlike total work over all GPUs, it sees that slow types are worth less.
    """
    jobs, types = np.nonzero(instance.eligible)
    n_x, n_types, n_resources = jobs.size, instance.n_types, len(instance.packing_resources)
    # Space-shared pairs do up to pair_gain GPU-seconds of work per GPU-second.
    gpus = instance.node_gpus.sum(axis=0).astype(float) * instance.pair_gain
    work = ((instance.gang[jobs] * instance.duration[jobs, types])[:, None]
            * resource_share(instance)[jobs, types])
    rows = RowBuilder()
    rows.add(jobs, np.arange(n_x), np.ones(n_x), np.ones(instance.n_jobs),
             np.ones(instance.n_jobs), [f"share[{j}]" for j in instance.job_ids])
    # Row (t, r): the type's work in resource r minus C times its GPU count is at most 0.
    row_of = types[:, None] * n_resources + np.arange(n_resources)[None]
    every = np.arange(n_types * n_resources)
    rows.add(np.r_[row_of.ravel(), every],
             np.r_[np.repeat(np.arange(n_x), n_resources), np.full(every.size, n_x)],
             np.r_[work.ravel(), -np.repeat(gpus, n_resources)],
             np.full(every.size, -np.inf), np.zeros(every.size),
             [f"work[{t},{r}]" for t in instance.type_ids for r in instance.packing_resources])
    # Row j: a job runs on one type at a time, from its release, so its own run time
    # fits before C: release_j + sum_t duration[j, t] * x[j, t] <= C. With preemptible
    # jobs this is the fluid bound of Gavel's makespan policy, much above volume alone
    # when a few long jobs dominate.
    rows.add(np.r_[jobs, np.arange(instance.n_jobs)],
             np.r_[np.arange(n_x), np.full(instance.n_jobs, n_x)],
             np.r_[instance.duration[jobs, types], -np.ones(instance.n_jobs)],
             np.full(instance.n_jobs, -np.inf), -instance.release,
             [f"runtime[{j}]" for j in instance.job_ids])
    cost = np.zeros(n_x + 1)
    cost[n_x] = 1.0
    return rows.program(
        sense="min", cost=cost, col_lower=np.zeros(n_x + 1),
        col_upper=np.r_[np.ones(n_x), np.inf], integer=np.zeros(n_x + 1, dtype=bool),
        col_names=(*(f"x[{instance.job_ids[j]},{instance.type_ids[t]}]"
                     for j, t in zip(jobs, types, strict=True)), "makespan"),
    )


@dataclass
class Alternative:
    """One way to run a job on a group: its interval and presence literal there.

    A job runs on one alternative, or on one per node of a multi-node gang (all of one
    type, with the job's start and end).
    """

    job: int
    #: The job's shape it runs (its row of :attr:`SchedulingModel.table`).
    row: int
    group: int
    #: Its length in ticks within one domain of its preferred topology level (or when it
    #: has none); spread over several, the job's :attr:`SchedulingModel.spread` literal
    #: adds the slowdown.
    duration: int
    present: Any
    interval: Any
    #: GPU index to presence literal, on shared types only.
    on_gpu: dict[int, Any] = field(default_factory=dict)


@dataclass
class SchedulingModel:
    """A CP-SAT model of a time-based instance, and how to read plans out of it.

    Build it with :meth:`build`; ``model`` is an ``ortools`` ``CpModel`` whose objective is
    the instance's, in ticks and scaled integer weights (:attr:`objective_scale` converts
    back to the instance's units).
    """

    instance: Instance
    scale: TickScale
    model: Any
    start: list[Any]
    end: list[Any]
    alternatives: list[list[Alternative]]
    group_type: IntArray
    group_gpus: list[IntArray]
    #: Instance units per unit of the CP objective.
    objective_scale: float
    #: Whether the CP objective is the instance's objective exactly (times and weights).
    exact: bool
    #: Variable index of each assumption literal to its job, when deadlines are assumptions.
    deadline_job: dict[int, int]
    #: Latest end of any job, in ticks.
    horizon: int
    #: Makespan variables, hinted with the latest end of a hinted plan.
    auxiliary: list[Any] = field(default_factory=list)
    #: Tardiness variables (variable, job, due date in ticks), hinted with the plan's
    #: lateness, so that a plan's hint is a complete solution of the model.
    lateness: list[tuple[Any, int, int]] = field(default_factory=list)
    #: Whether the constraints are the instance's exactly (times and per-GPU demands), so
    #: that an infeasible model proves the instance infeasible; weights do not matter here.
    exact_constraints: bool = True
    #: Whether GPU sharing was left out where the instance allows it (``share_gpus``):
    #: the plans are the instance's, but not all of them, so the solver's bound and
    #: infeasibility do not hold for the instance.
    restricted: bool = False
    #: Per GPU, the tick from which it is free (the instance's outages at time 0).
    ready: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: Jobs to keep in their previous slots where the solution does: job to (GPUs,
    #: earliest and latest start tick that count as staying, literal true when it stays).
    kept: dict[int, tuple[IntArray, int, int, Any]] = field(default_factory=dict)
    #: For each job that may move (a re-plan): its penalty in the instance's objective
    #: units, and the expression that is 1 when it moves.
    moves: list[tuple[float, Any]] = field(default_factory=list)
    #: Per multi-node gang: its choice literals, each with the alternatives it covers
    #: (one type, one domain of its required level), of which it takes ``gang_nodes``.
    choices: dict[int, list[tuple[Any, list[Alternative]]]] = field(default_factory=dict)
    #: Per gang that prefers a topology level: the literal that it spans several domains
    #: of it, with one literal per domain (true where it runs) and that domain's
    #: alternatives.
    spread: dict[int, tuple[Any, list[tuple[Any, list[Alternative]]]]] = field(
        default_factory=dict)
    #: The jobs' shapes as rows of a rigid instance (see the module); None: the instance,
    #: a row per job.
    shapes: Instance | None = None

    @property
    def table(self) -> Instance:
        """The rigid instance whose rows are the jobs' shapes (the instance without shapes)."""
        return self.instance if self.shapes is None else self.shapes

    @classmethod
    def build(cls, instance: Instance, scale: TickScale,
              deadlines_as_assumptions: bool = False, *, share_gpus: bool = True,
              budget: Budget | None = None, keep: Keep | None = None,
              shapes: tuple[Instance, tuple[tuple[int, ...], ...]] | None = None
              ) -> SchedulingModel:
        """Formulate a time-based instance.

        Parameters
        ----------
        instance
            A time-based instance that passed the presolve checks.
        scale
            The tick in use.
        deadlines_as_assumptions
            Enforce each deadline through an assumption literal (see
            :attr:`deadline_job`), so that an infeasible solve names the deadlines
            in conflict.
        share_gpus
            Model GPU sharing on the types that allow it (a literal per job and GPU).
            False pools every type like an exclusive one: a far smaller model whose
            plans never share a GPU (:attr:`restricted`).
        budget
            The time building may take: it raises
            :class:`~gpuplan.models.linear.OutOfTimeError` once it is spent;
            None: no limit.
        keep
            A previous plan to stay close to (:meth:`keep`).
        shapes
            The jobs' shapes (see the module): a rigid table on the same fleet and the
            rows of each job in it; None: each job as it is.

        Raises
        ------
        OutOfTimeError
            If the budget is spent before the model is complete.
        """
        from ortools.sat.python import cp_model

        budget = budget or Budget()
        model = cp_model.CpModel()
        table, rows = shapes or (instance, tuple((j,) for j in range(instance.n_jobs)))
        counts, groups, group_type = _groups(instance)
        first = np.r_[0, np.cumsum(counts)][groups]
        group_gpus = [np.arange(f, f + counts[q]) for q, f in zip(groups, first, strict=True)]
        duration = np.where(table.eligible, table.duration, 0.0)
        ticks = scale.up(duration)
        release = scale.up(instance.release)
        deadline = np.where(np.isfinite(instance.deadline),
                            scale.down(np.nan_to_num(instance.deadline, posinf=0.0)), -1)
        # One job at a time after the last release and the last GPU to be ready, each on
        # its fastest type (in ticks).
        fastest_row = np.where(table.eligible, ticks, np.iinfo(np.int64).max).min(axis=1)
        fastest = np.array([fastest_row[list(mine)].min() for mine in rows], dtype=np.int64)
        ready_at = instance.ready_at
        finite = np.isfinite(ready_at)
        ready_ticks = scale.up(np.where(finite, ready_at, 0.0))
        horizon = (max(int(release.max(initial=0)), int(ready_ticks.max(initial=0)))
                   + int(fastest.sum()))
        ready_ticks = np.where(finite, ready_ticks, horizon)
        shareable = ~exclusive_types(table)
        exclusive = ~shareable if share_gpus else np.ones(instance.n_types, dtype=bool)
        fits = alternative_fits(table, counts, groups, group_type)
        # Spread over its preferred level, a gang runs its slowdown times longer.
        preferred = (table.preferred_level if table.levels
                     else np.full(table.n_jobs, -1, dtype=np.int64))
        slowed = (preferred >= 0) & (table.gang_nodes > 1)
        slow_ticks = scale.up(duration * np.where(slowed, np.maximum(
            table.spread_slowdown if table.levels else 1.0, 1.0), 1.0)[:, None])
        horizon += int((slow_ticks - ticks).max(axis=1, initial=0).sum())

        start, end, alternatives = [], [], []
        deadline_job: dict[int, int] = {}
        spread_of: dict[int, Any] = {}
        for j in range(instance.n_jobs):
            if j % 64 == 0:
                check_budget(budget, BUILDING)
            latest = horizon
            if deadline[j] >= 0 and not deadlines_as_assumptions:
                latest = int(deadline[j])
            s = model.new_int_var(int(release[j]), latest, f"start_{j}")
            e = model.new_int_var(int(release[j]), latest, f"end_{j}")
            if deadline[j] >= 0 and deadlines_as_assumptions:
                meets = model.new_bool_var(f"meets_deadline_{j}")
                model.add(e <= int(deadline[j])).only_enforce_if(meets)
                model.add_assumption(meets)
                deadline_job[meets.index] = j
            if slowed[list(rows[j])].any():
                spread_of[j] = model.new_bool_var(f"spread_{j}")
            options = []
            for r in rows[j]:
                for place in np.flatnonzero(fits[r]).tolist():
                    t = int(group_type[place])
                    length = int(ticks[r, t])
                    present = model.new_bool_var(f"on_{j}_{r}_{place}")
                    # The interval ties end to start + length whenever it is present.
                    size = (length if not slowed[r] else
                            length + (int(slow_ticks[r, t]) - length) * spread_of[j])
                    interval = model.new_optional_interval_var(s, size, e, present,
                                                               f"run_{j}_{r}_{place}")
                    options.append(Alternative(j, r, place, length, present, interval))
            start.append(s)
            end.append(e)
            alternatives.append(options)
        for j in range(instance.n_jobs):
            for p in instance.predecessors[j]:
                model.add(start[j] >= end[p])

        exact = scale.exact
        by_group: list[list[Alternative]] = [[] for _ in groups]
        for options in alternatives:
            for a in options:
                by_group[a.group].append(a)
        for q, members in enumerate(by_group):
            check_budget(budget, BUILDING)
            t = int(group_type[q])
            if not members:
                continue
            if exclusive[t]:
                held, amounts = _held(model, ready_ticks[group_gpus[q]])
                model.add_cumulative([a.interval for a in members] + held,
                                     [int(table.gpus_per_node[a.row]) for a in members]
                                     + amounts, int(counts[groups[q]]))
            else:
                exact &= _per_gpu(model, table, members, group_gpus[q], t, budget,
                                  ready_ticks)
        for kind in np.flatnonzero(exclusive):
            places = np.flatnonzero(group_type == kind)
            members = [a for q in places for a in by_group[q]]
            if len(members) > 1 and places.size > 1:
                held, amounts = _held(model, ready_ticks[np.concatenate(
                    [group_gpus[q] for q in places])])
                model.add_cumulative([a.interval for a in members] + held,
                                     [int(table.gpus_per_node[a.row]) for a in members]
                                     + amounts, int(counts[groups[group_type == kind]].sum()))
        exact &= _node_capacity(model, instance, by_group, groups // instance.n_types,
                                lambda seconds: int(scale.up(np.array([seconds]))[0]))
        for limit, members, held in _binding_limits(instance, table, alternatives):
            # Work held before holds its GPUs until its end (in ticks, rounded up).
            ends = [int(scale.up(np.array([o.end_s]))[0]) if np.isfinite(o.end_s) else horizon
                    for o in held]
            fixed = [model.new_fixed_size_interval_var(0, end, f"held_{limit.kind}_{limit.id}_{i}")
                     for i, end in enumerate(ends)]
            model.add_cumulative([a.interval for a in members] + fixed,
                                 [int(table.gpus_per_node[a.row]) for a in members]
                                 + [int(o.gpus.size) for o in held], limit.gpus)

        restricted = bool(not share_gpus and shareable[np.unique(group_type)].any())
        built = cls(instance, scale, model, start, end, alternatives,
                    group_type, group_gpus, 1.0, exact, deadline_job, horizon,
                    exact_constraints=exact, restricted=restricted,
                    ready=ready_ticks.astype(np.int64),
                    shapes=None if shapes is None else table)
        for j, options in enumerate(alternatives):
            built._gang(j, options, spread_of.get(j))
        if keep is not None:
            built.keep(keep)
        built.set_objective()
        check_budget(budget, BUILDING)
        return built

    def _gang(self, j: int, options: list[Alternative], spread: Any | None) -> None:
        """Job ``j`` runs on one alternative, or a multi-node gang on ``m`` of one choice.

        A choice is the alternatives of one shape and type within one domain of the job's
        required topology level, of which it takes as many as the shape spans nodes; a gang
        that prefers a level spans several of its domains exactly when ``spread`` is true.
        """
        model, instance, table = self.model, self.instance, self.table
        spans = table.gang_nodes
        if all(spans[a.row] == 1 for a in options):
            model.add_exactly_one(a.present for a in options)
            return
        level = int(instance.required_level[j]) if instance.levels else -1
        nodes = self.group_node
        by_choice: dict[tuple[int, int, int], list[Alternative]] = {}
        for a in options:
            domain = int(instance.node_domain[nodes[a.group], level]) if level >= 0 else 0
            by_choice.setdefault((a.row, int(self.group_type[a.group]), domain),
                                 []).append(a)
        choices = []
        for (r, t, domain), members in by_choice.items():
            m = int(spans[r])
            if len(members) < m:
                for a in members:
                    model.add(a.present == 0)
                continue
            chosen = model.new_bool_var(f"choice_{j}_{r}_{t}_{domain}")
            model.add(sum(a.present for a in members) == m * chosen)
            choices.append((chosen, members))
        model.add_exactly_one(c for c, _ in choices)
        self.choices[j] = choices
        if spread is None:
            return
        # Only rigid gangs (one shape) spread.
        m = int(spans[options[0].row])
        level = int(instance.preferred_level[j])
        by_domain: dict[int, list[Alternative]] = {}
        for a in options:
            by_domain.setdefault(int(instance.node_domain[nodes[a.group], level]),
                                 []).append(a)
        used = []
        for domain, members in by_domain.items():
            here = model.new_bool_var(f"in_{j}_{domain}")
            for a in members:
                model.add_implication(a.present, here)
            model.add(sum(a.present for a in members) >= here)
            used.append((here, members))
        # Spread exactly when it runs in two domains or more.
        model.add(sum(u for u, _ in used) >= 2 * spread)
        model.add(sum(u for u, _ in used) <= 1 + (m - 1) * spread)
        self.spread[j] = (spread, used)

    @property
    def group_node(self) -> IntArray:
        """``(groups,)`` the node of each group."""
        nodes: IntArray = self.instance.gpu_node[[g[0] for g in self.group_gpus]]
        return nodes

    def bound_slack(self) -> float:
        """How far a bound of the integer model may lie above the instance's optimum.

        Zero but for the difference between the instance's doubles and the decimals the
        ticks and integer weights stand for (:attr:`TickScale.slack_s`, and a few ulps of
        each weight or cost), which adds up over the jobs.
        """
        instance = self.instance
        n = instance.n_jobs
        match instance.objective:
            case ObjectiveKind.MAKESPAN:
                return self.scale.slack_s
            case ObjectiveKind.WEIGHTED_COMPLETION | ObjectiveKind.TARDINESS:
                weight = np.abs(instance.weight)
                latest = self.horizon * self.scale.tick_s
                return (self.scale.slack_s * float(weight.sum())
                        + n * float(np.spacing(weight.max(initial=0.0))) * latest)
            case ObjectiveKind.COST:
                cost = np.abs(np.nan_to_num(instance.cost))
                return n * float(np.spacing(cost.max(initial=0.0)))
        return 0.0

    def objective_expression(self, kind: ObjectiveKind | None = None) -> Any:
        """The CP expression of an objective (the instance's by default), and its units.

        Sets :attr:`objective_scale` (instance units per CP unit) and clears :attr:`exact`
        when weights or costs had to be rounded (down, so that bounds stay valid).
        """
        instance, model = self.instance, self.model
        kind = kind or instance.objective
        horizon = self.horizon
        match kind:
            case ObjectiveKind.MAKESPAN:
                makespan = model.new_int_var(0, horizon, "makespan")
                model.add_max_equality(makespan, self.end)
                self._add_energy(makespan)
                self.auxiliary.append(makespan)
                self.objective_scale = self.scale.tick_s
                return makespan
            case ObjectiveKind.WEIGHTED_COMPLETION:
                weight, factor, exact = integer_weights(instance.weight)
                self.objective_scale = self.scale.tick_s / factor
                self.exact &= exact
                return sum(int(w) * e for w, e in zip(weight, self.end, strict=True))
            case ObjectiveKind.TARDINESS:
                weight, factor, exact = integer_weights(instance.weight)
                due = self.scale.up(np.nan_to_num(instance.due, posinf=0.0))
                terms = []
                for j in np.flatnonzero(np.isfinite(instance.due) & (weight > 0)):
                    late = model.new_int_var(0, horizon, f"late_{j}")
                    model.add(late >= self.end[j] - int(due[j]))
                    self.lateness.append((late, int(j), int(due[j])))
                    terms.append(int(weight[j]) * late)
                self.objective_scale = self.scale.tick_s / factor
                self.exact &= exact
                return sum(terms)
            case ObjectiveKind.COST:
                cost, factor, exact = integer_weights(np.nan_to_num(instance.cost))
                self.objective_scale = 1.0 / factor
                self.exact &= exact
                return sum(int(cost[a.job, self.group_type[a.group]]) * a.present
                           for options in self.alternatives for a in options)
        raise AssertionError(f"{kind} is not a time-based objective")

    def _add_energy(self, makespan: Any) -> None:
        """Redundant area rows: the work a group takes on fits between its release and ``makespan``.

        ``sum(demand * duration * present) <= capacity * (makespan - earliest release)``
        per exclusive group (in GPUs), per GPU and resource of a shared group, and per
        binding GPU limit (in GPUs). The
        cumulatives imply them, but as linear rows they reach CP-SAT's LP relaxation,
        which then sees the load of each machine: on unrelated machines (R||Cmax) this is
        what closes the gap to the optimum.
        """
        instance, table = self.instance, self.table
        release = self.scale.up(instance.release)
        by_group: list[list[Alternative]] = [[] for _ in self.group_gpus]
        for options in self.alternatives:
            for a in options:
                by_group[a.group].append(a)
        for q, (gpus, members) in enumerate(zip(self.group_gpus, by_group, strict=True)):
            if not members:
                continue
            earliest = int(min(release[a.job] for a in members))
            if not members[0].on_gpu:
                self._add_area([(int(table.gpus_per_node[a.row]) * a.duration, a.present)
                                for a in members], gpus.size, makespan, earliest)
                continue
            t = int(self.group_type[q])
            jobs = [a.row for a in members]
            for r in range(len(table.packing_resources)):
                capacity, demand, _ = scaled_capacity(
                    float(table.packing_capacity[t, r]), table.packing_demand[jobs, t, r])
                if not demand.any():
                    continue
                for g in gpus.tolist():
                    self._add_area([(int(d) * a.duration, a.on_gpu[g])
                                    for d, a in zip(demand, members, strict=True)],
                                   capacity, makespan, earliest)
        self._add_node_energy(by_group, makespan, release)
        for limit, members, _ in _binding_limits(instance, table, self.alternatives):
            self._add_area([(int(table.gpus_per_node[a.row]) * a.duration, a.present)
                            for a in members], limit.gpus, makespan,
                           int(min(release[a.job] for a in members)))

    def _add_node_energy(self, by_group: list[list[Alternative]], makespan: Any,
                         release: IntArray) -> None:
        """Area rows of the node resources: per node, and over the whole fleet.

        What the jobs draw times how long fits each node's capacity (and the fleet's sum of
        them) times the time from the earliest release to ``makespan``; the fleet-wide row
        is what lets the LP relaxation see node resources as the binding ones.
        """
        instance = self.instance
        if not instance.node_demand.any():
            return
        nodes = self.group_node
        for r in range(len(instance.node_resources)):
            fleet: list[tuple[int, Any]] = []
            earliest = int(release.min(initial=0))
            # The fleet's row on one scale for all jobs, so that its terms add up.
            scaled, fleet_draw, _ = scaled_capacity(float(instance.node_capacity[:, r].sum()),
                                                    instance.node_demand[:, r])
            for n in range(instance.n_nodes):
                members = [a for q in np.flatnonzero(nodes == n).tolist() for a in by_group[q]]
                if not members:
                    continue
                draw = instance.node_demand[[a.job for a in members], r]
                if not draw.any():
                    continue
                capacity, demand, _ = scaled_capacity(float(instance.node_capacity[n, r]),
                                                      draw)
                terms = [(int(d) * a.duration, a.present)
                         for d, a in zip(demand, members, strict=True) if d > 0]
                self._add_area(terms, capacity, makespan,
                               int(min(release[a.job] for a in members)))
                fleet.extend((int(fleet_draw[a.job]) * a.duration, a.present)
                             for a in members if fleet_draw[a.job] > 0)
            if fleet:
                self._add_area(fleet, scaled, makespan, earliest)

    def _add_area(self, terms: list[tuple[int, Any]], capacity: int, makespan: Any,
                  earliest: int) -> None:
        """Add ``sum(area * literal) <= capacity * (makespan - earliest)`` if it fits int64."""
        if sum(area for area, _ in terms) + capacity * self.horizon >= 2**62:
            return
        self.model.add(sum(area * literal for area, literal in terms)
                       <= capacity * (makespan - earliest))

    def set_objective(self, kind: ObjectiveKind | None = None) -> None:
        """Minimise an objective (the instance's by default), plus the moves' penalty."""
        expression = self.objective_expression(kind)
        scale = self.objective_scale
        self.model.minimize(expression + sum(round(penalty / scale) * moved
                                             for penalty, moved in self.moves))

    def keep(self, keep: Keep) -> int:
        """Stay close to a previous plan: pay its penalty for each job that moves.

        A job stays when it runs on the group of its previous GPUs from its previous start
        (within ``keep.tolerance_s``, in whole ticks); the objective (set after this) adds
        the job's penalty otherwise, and at most ``keep.max_changes`` jobs move. Jobs with
        no whole tick within the tolerance of their previous start, or whose GPUs the model
        cannot give them, count as moved. Returns how many jobs may stay.
        """
        model = self.model
        gpu_group = np.full(self.instance.n_gpus, -1)
        for q, members in enumerate(self.group_gpus):
            gpu_group[members] = q
        moves: list[Any] = []
        for j in np.flatnonzero(keep.has_slot).tolist():
            gpus = keep.gpus[j]
            assert gpus is not None
            wide = max(keep.tolerance_s, SAME_START_S)
            lo = math.ceil((float(keep.start[j]) - wide) / self.scale.tick_s)
            hi = math.floor((float(keep.start[j]) + wide) / self.scale.tick_s)
            wanted = set(gpu_group[gpus].tolist())
            places = [a for a in self._shape_of(j, gpus) if a.group in wanted]
            penalty = float(keep.penalty[j])
            if len(places) != len(wanted) or not gpus.size or lo > hi:
                moves.append(1)
                self.moves.append((penalty, 1))
                continue
            stays = model.new_bool_var(f"stays_{j}")
            model.add_linear_constraint(self.start[j], lo, hi).only_enforce_if(stays)
            for place in places:
                model.add_implication(stays, place.present)
                for g, literal in place.on_gpu.items():
                    model.add(literal == 1 if g in set(gpus.tolist()) else literal == 0
                              ).only_enforce_if(stays)
            self.kept[j] = (np.sort(gpus), lo, hi, stays)
            moves.append(1 - stays)
            self.moves.append((penalty, 1 - stays))
        if keep.max_changes is not None:
            model.add(sum(moves) <= keep.max_changes)
        return len(self.kept)

    def hint(self, job: IntArray, gpus: tuple[IntArray, ...], start_s: FloatArray,
             node: IntArray | None = None) -> None:
        """Offer a known plan (for instance list scheduling's) as the search's first guess.

        ``node`` is each job's (first) node, where a CPU-only job runs; None when the plan
        has none.
        """
        self.model.clear_hints()
        gpu_group = np.full(self.instance.n_gpus, -1)
        for q, members in enumerate(self.group_gpus):
            gpu_group[members] = q
        rename = self._first_user_first(job, gpus, gpu_group)
        # On an exact tick, a plan whose starts are whole ticks keeps its times (and the
        # GPUs its jobs share). Otherwise it is re-timed in ticks, in its own order and on
        # its own GPUs, one job after another on each GPU: rounded-up durations only push
        # jobs later, so the hint stays feasible.
        instance = self.instance
        release = self.scale.up(instance.release)
        in_ticks = np.asarray(start_s, dtype=float) / self.scale.tick_s
        own = (self.scale.exact and not self.restricted
               and bool(np.allclose(in_ticks, np.rint(in_ticks), rtol=0.0, atol=1e-6)))
        own_start = np.rint(in_ticks).astype(np.int64)
        free = np.zeros(instance.n_gpus, dtype=np.int64)
        end = np.zeros(instance.n_jobs, dtype=np.int64)
        latest = 0
        free[:] = self.ready
        given = np.full(instance.n_jobs, -1, dtype=np.int64)
        node_free = np.zeros(instance.n_nodes, dtype=np.int64)
        for i in np.lexsort((job, start_s)):
            j, used = int(job[i]), rename[gpus[i]]
            groups = set(gpu_group[used].tolist())
            chosen = [a for a in self._shape_of(j, used) if a.group in groups]
            if not used.size:
                assert node is not None, "a CPU-only job's hint needs its node"
                # A CPU-only job's alternative is a group of its node.
                chosen = [next(a for a in self.alternatives[j]
                               if self.group_node[a.group] == node[i]
                               and self.instance.eligible[j, self.group_type[a.group]])]
                groups = {chosen[0].group}
            nodes = np.unique(self.group_node[[a.group for a in chosen]])
            length = self._length(j, chosen)
            ready = int(free[used].max(initial=0))
            if not used.size:
                # A CPU-only job: one after another on its node.
                ready = int(node_free[nodes].max(initial=0))
            s = max(int(release[j]), int(own_start[i]) if own else ready,
                    *(int(end[p]) for p in instance.predecessors[j]))
            end[j] = free[used] = s + length
            node_free[nodes] = np.maximum(node_free[nodes], end[j])
            given[j] = s
            latest = max(latest, int(end[j]))
            self.model.add_hint(self.start[j], s)
            self.model.add_hint(self.end[j], int(end[j]))
            on = set(used.tolist())
            taken = {id(a) for a in chosen}
            for a in self.alternatives[j]:
                self.model.add_hint(a.present, id(a) in taken)
                for g, literal in a.on_gpu.items():
                    self.model.add_hint(literal, id(a) in taken and g in on)
            for literal, covered in self.choices.get(j, []):
                self.model.add_hint(literal, any(id(a) in taken for a in covered))
            if j in self.spread:
                spread, domains = self.spread[j]
                here = [any(a.group in groups for a in covered) for _, covered in domains]
                self.model.add_hint(spread, sum(here) >= 2)
                for (literal, _), value in zip(domains, here, strict=True):
                    self.model.add_hint(literal, value)
        for variable in self.auxiliary:
            self.model.add_hint(variable, latest)
        for variable, j, due in self.lateness:
            self.model.add_hint(variable, max(0, int(end[j]) - due))
        hinted = {int(j): int(i) for i, j in enumerate(job.tolist())}
        for j, (previous, lo, hi, stays) in self.kept.items():
            mine = hinted.get(j, -1)
            same = mine >= 0 and np.array_equal(np.sort(rename[gpus[mine]]), previous)
            self.model.add_hint(stays, bool(same and lo <= given[j] <= hi))

    def _shape_of(self, j: int, gpus: IntArray) -> list[Alternative]:
        """Job ``j``'s alternatives in the shape that holds these GPUs (count and layout).

        All of them for a job of one shape; none where no shape holds the GPUs.
        """
        options = self.alternatives[j]
        if self.shapes is None:
            return options
        table = self.table
        nodes = np.unique(self.instance.gpu_node[gpus]).size if gpus.size else 1
        return [a for a in options if int(table.gang[a.row]) == gpus.size
                and int(table.gpus_per_node[a.row]) * nodes == gpus.size]

    def _length(self, j: int, chosen: list[Alternative]) -> int:
        """Job ``j``'s length in ticks on these alternatives (its slowdown if spread)."""
        length = chosen[0].duration
        if j not in self.spread:
            return length
        nodes = np.unique(self.group_node[[a.group for a in chosen]])
        factor = self.instance.spread_factor(j, nodes)
        if factor == 1.0:
            return length
        t = int(self.group_type[chosen[0].group])
        slow = self.scale.up(np.array([self.table.duration[chosen[0].row, t] * factor]))
        return int(slow[0])

    def hinted_values(self) -> IntArray:
        """The hint as a full vector of variable values (by variable index).

        Raises
        ------
        ValueError
            If some variable has no hint: the hint is then no complete solution.
        """
        hint = self.model.proto.solution_hint
        index = np.array(list(hint.vars), dtype=np.int64)
        values = np.zeros(len(self.model.proto.variables), dtype=np.int64)
        seen = np.zeros(values.size, dtype=bool)
        values[index] = list(hint.values)
        seen[index] = True
        if not seen.all():
            raise ValueError(f"{int((~seen).sum())} of {seen.size} variables have no hint")
        return values

    def hint_values(self, values: IntArray) -> None:
        """Offer a full vector of variable values (a solution) as the next solve's guess."""
        self.model.clear_hints()
        hint = self.model.proto.solution_hint
        hint.vars.extend(range(values.size))
        hint.values.extend(values.tolist())

    def _first_user_first(self, job: IntArray, gpus: tuple[IntArray, ...],
                          gpu_group: IntArray) -> IntArray:
        """A renaming of twin GPUs that gives each shared group's first user its lowest GPUs.

        The model fixes the first job that may use a shared group to the group's lowest
        GPUs when it runs there (:func:`_per_gpu`); a plan on other GPUs of the group is
        the same plan with twins renamed, which keeps the hint feasible.
        """
        rename = np.arange(self.instance.n_gpus)
        first_user: dict[int, int] = {}
        for options in self.alternatives:
            for a in options:
                if a.on_gpu:
                    first_user[a.group] = min(first_user.get(a.group, a.job), a.job)
        where = {int(j): used for j, used in zip(job.tolist(), gpus, strict=True)}
        for q, j in first_user.items():
            used = where.get(j)
            if used is None:
                continue
            used = used[gpu_group[used] == q]
            if not used.size:
                continue
            members = self.group_gpus[q]
            taken = set(used.tolist())
            lowest = members[:used.size]
            rename[np.sort(used)] = lowest
            rest = [g for g in members.tolist() if g not in taken]
            rename[rest] = [g for g in members.tolist() if g not in set(lowest.tolist())]
        return rename

    def _staying(self, here: list[Alternative], start: IntArray,
                 values: IntArray) -> dict[int, IntArray]:
        """The jobs of one group the solution keeps in their previous slots, with their GPUs."""
        staying = {}
        for a in here:
            kept = self.kept.get(a.job)
            if kept is not None and values[kept[3].index] and kept[1] <= start[a.job] <= kept[2]:
                staying[a.job] = kept[0]
        return staying

    def decode(
        self, values: IntArray
    ) -> tuple[IntArray, IntArray, tuple[IntArray, ...], FloatArray, FloatArray, IntArray]:
        """Read a solution's plan: job, type, GPUs, start and end in seconds, node, per job.

        ``values`` is the solution as a full vector of variable values (by variable
        index, as :func:`solution_values` reads it from the solver). The node is the
        first of the job's nodes (the one a CPU-only job runs on).

        On exclusive types, GPUs are handed out group by group in start order: at each
        start the cumulative leaves at least a gang's worth of GPUs free, and a GPU free
        then stays free for the job's whole interval.
        """
        instance, table = self.instance, self.table
        n_jobs = instance.n_jobs
        chosen = [[a for a in options if values[a.present.index]]
                  for options in self.alternatives]
        start = values[[s.index for s in self.start]].astype(np.int64)
        finish = values[[e.index for e in self.end]].astype(np.int64)
        parts: list[list[IntArray]] = [[] for _ in range(n_jobs)]
        for q, members in enumerate(self.group_gpus):
            here = [a for mine in chosen for a in mine if a.group == q]
            if not here:
                continue
            if here[0].on_gpu:
                for a in here:
                    parts[a.job].append(np.array(sorted(g for g, lit in a.on_gpu.items()
                                                        if values[lit.index]), dtype=np.int64))
                continue
            kept = self._staying(here, start, values)
            free_at = {g: int(self.ready[g]) for g in members.tolist()}
            for a in sorted(here, key=lambda a: (start[a.job], a.job)):
                at_tick, k = int(start[a.job]), int(table.gpus_per_node[a.row])
                ready = sorted((g for g, t in free_at.items() if t <= at_tick),
                               key=lambda g: (-free_at[g], g))
                previous = kept.get(a.job)
                # A job that stays takes its own GPUs; the others leave those GPUs to
                # the staying jobs that start on them before they would end.
                if previous is not None and set(previous.tolist()) <= set(ready):
                    picked = previous
                else:
                    end_at = int(finish[a.job])
                    spoken = {int(g) for j, p in kept.items() if j != a.job
                              and at_tick <= int(start[j]) < end_at for g in p.tolist()}
                    fits = [g for g in ready if g not in spoken]
                    picked = np.array(sorted((fits if len(fits) >= k else ready)[:k]),
                                      dtype=np.int64)
                assert picked.size == k, "cumulative left too few GPUs free"
                for g in picked:
                    free_at[int(g)] = int(finish[a.job])
                parts[a.job].append(picked)
        job = np.arange(n_jobs, dtype=np.int64)
        gpus = tuple(np.sort(np.concatenate(p)) if p else np.zeros(0, dtype=np.int64)
                     for p in parts)
        types = self.group_type[[mine[0].group for mine in chosen]].astype(np.int64)
        rows = np.array([mine[0].row for mine in chosen], dtype=np.int64)
        node = np.array([int(self.group_node[[a.group for a in mine]].min())
                         for mine in chosen], dtype=np.int64)
        begin = start * self.scale.tick_s
        slow = table.spread_factors(rows, gpus)
        # The end in ticks times the tick is exactly the float a later start on the same
        # GPU computes, so capping there keeps float noise from creating an overlap.
        ticks_end = finish * self.scale.tick_s
        end: FloatArray = np.minimum(begin + table.duration[rows, types] * slow, ticks_end)
        return job, types, gpus, begin.astype(float), end, node


def _held(model: Any, ready: IntArray) -> tuple[list[Any], list[int]]:
    """Fixed intervals ``[0, ready)`` holding the GPUs not free at time 0, and their counts."""
    ticks, amounts = np.unique(ready[ready > 0], return_counts=True)
    return ([model.new_fixed_size_interval_var(0, int(t), f"held_{k}_{t}")
             for k, t in enumerate(ticks.tolist())], [int(n) for n in amounts.tolist()])


def solution_values(solver: Any) -> IntArray:
    """A solver's last solution as a full vector of variable values, by variable index."""
    return np.array(solver.response_proto.solution, dtype=np.int64)


def scaled_capacity(capacity: float, demand: FloatArray) -> tuple[int, IntArray, bool]:
    """Capacity and demands of one resource as integers: capacity down, demands up.

    Exact when some scale in :data:`VALUE_SCALES` makes them all integral; otherwise the
    rounding only ever tightens the constraint, so plans stay feasible.
    """
    values = np.r_[capacity, demand]
    for scale in VALUE_SCALES:
        scaled, whole = to_ticks(values, Fraction(1, scale), up=True)
        if whole.all():
            return int(scaled[0]), scaled[1:], True
    step = Fraction(1, VALUE_SCALES[-1])
    return (int(to_ticks(np.array([capacity]), step, up=False)[0][0]),
            to_ticks(demand, step, up=True)[0], False)


def _per_gpu(model: Any, table: Instance, members: list[Alternative], gpus: IntArray,
             t: int, budget: Budget, ready: IntArray) -> bool:
    """Exact per-GPU capacity over time on a shared type's group; False if rounded.

    ``table`` holds the alternatives' rows (the jobs' shapes). A GPU not free at time 0
    is held whole until it is; the first job that may use the group is then no longer
    fixed to its lowest GPUs (they are no longer alike).
    """
    first_user = min(a.job for a in members) if not (ready[gpus] > 0).any() else -1
    intervals: dict[int, list[Any]] = {g: [] for g in gpus.tolist()}
    for n, a in enumerate(members):
        if n % 64 == 0:
            check_budget(budget, BUILDING)
        k = int(table.gpus_per_node[a.row])
        for g in gpus.tolist():
            a.on_gpu[g] = model.new_bool_var(f"gpu_{a.job}_{a.row}_{g}")
            intervals[g].append(model.new_optional_interval_var(
                a.interval.start_expr(), a.interval.size_expr(), a.interval.end_expr(),
                a.on_gpu[g], f"use_{a.job}_{g}"))
        model.add(sum(a.on_gpu.values()) == k * a.present)
        if a.job == first_user:
            for g in gpus[:k].tolist():
                model.add(a.on_gpu[g] == a.present)
    exact = True
    jobs = [a.row for a in members]
    for r in range(len(table.packing_resources)):
        capacity, demand, exact_r = scaled_capacity(
            float(table.packing_capacity[t, r]), table.packing_demand[jobs, t, r])
        exact &= exact_r
        if not demand.any():
            continue
        for g in gpus.tolist():
            held = ([model.new_fixed_size_interval_var(0, int(ready[g]), f"held_{g}")]
                    if ready[g] > 0 else [])
            model.add_cumulative(intervals[g] + held,
                                 demand.tolist() + [capacity] * len(held), capacity)
    return exact


def alternative_fits(instance: Instance, counts: IntArray, groups: IntArray,
                     group_type: IntArray) -> BoolArray:
    """``(J, groups)`` whether each group may take a job's GPUs on one of its nodes.

    Its type is eligible, it has the job's GPUs per node, its node is labelled with the
    job's required topology level and is in the job's partition.
    """
    fits: BoolArray = instance.eligible[:, group_type] & (
        counts[groups][None, :] >= instance.gpus_per_node[:, None])
    node = groups // instance.n_types
    if instance.levels:
        level = instance.required_level
        labelled = instance.node_domain[node[None, :], np.maximum(level, 0)[:, None]] >= 0
        fits &= (level[:, None] < 0) | labelled
    if instance.partition_ids:
        partition = instance.job_partition
        inside = instance.partition_nodes[np.maximum(partition, 0)][:, node]
        fits &= (partition[:, None] < 0) | inside
    return fits


def _binding_limits(instance: Instance, table: Instance, alternatives: list[list[Alternative]]
                    ) -> list[tuple[GpuLimit, list[Alternative], list[Outage]]]:
    """The GPU limits whose jobs could exceed them together, with the work held before.

    A job counts with its largest shape (its row in ``table`` with the most GPUs).

    Each with its jobs' alternatives (an alternative holds the job's GPUs on its node: the
    present ones of a job hold its gang) and the outages from 0 that count against it (a
    re-plan's running jobs).
    """
    held = [(o, o.limits(instance)) for o in instance.outages
            if o.start_s <= 0] if instance.gpu_limits else []
    binding = []
    largest = np.array([max((int(table.gang[a.row]) for a in options), default=0)
                        for options in alternatives], dtype=np.int64)
    for k, limit in enumerate(instance.gpu_limits):
        mine = [o for o, under in held if k in under]
        if int(largest[limit.jobs].sum()) + sum(o.gpus.size for o in mine) > limit.gpus:
            binding.append((limit, [a for j in limit.jobs.tolist() for a in alternatives[j]],
                            mine))
    return binding


def _node_capacity(model: Any, instance: Instance, by_group: list[list[Alternative]],
                   group_node: IntArray, ticks: Callable[[float], int]) -> bool:
    """Each node's resources over time: a cumulative per node and resource.

    A job draws its node demand on each node it runs on (its alternative there). Returns
    False if demands had to be rounded (up) to integers.
    """
    if not instance.node_demand.any():
        return True
    exact = True
    held = [(o, n) for o in instance.outages for n in o.nodes.tolist() if o.start_s <= 0]
    for n in range(instance.n_nodes):
        members = [a for q in np.flatnonzero(group_node == n).tolist() for a in by_group[q]]
        holds = [o for o, m in held if m == n]
        if not members:
            continue
        jobs = [a.job for a in members]
        for r in range(len(instance.node_resources)):
            draw = np.r_[instance.node_demand[jobs, r], [o.draw[r] for o in holds]]
            if draw.sum() <= instance.node_capacity[n, r] or not draw[:len(jobs)].any():
                continue
            capacity, demand, exact_r = scaled_capacity(float(instance.node_capacity[n, r]),
                                                        draw)
            exact &= exact_r
            used = [k for k in range(len(members)) if demand[k] > 0]
            # Work planned before holds its draw until its end (in ticks, rounded up).
            fixed = [model.new_fixed_size_interval_var(0, int(ticks(o.end_s)), f"hold_{n}_{i}")
                     for i, o in enumerate(holds) if demand[len(jobs) + i] > 0]
            amounts = [int(d) for d in demand[len(jobs):] if d > 0]
            model.add_cumulative([members[k].interval for k in used] + fixed,
                                 [int(demand[k]) for k in used] + amounts, capacity)
    return exact


def _groups(instance: Instance) -> tuple[IntArray, IntArray, IntArray]:
    """GPUs per (node, type) cell, the cells that have GPUs (the groups), and their types."""
    counts = instance.node_gpus.ravel()
    groups = np.flatnonzero(counts)
    return counts, groups, groups % instance.n_types


def model_size(instance: Instance, share_gpus: bool = True) -> tuple[int, int]:
    """The size of :meth:`SchedulingModel.build`'s model, before building it.

    Returns the number of (job, group) alternatives, each an interval and a literal, and
    of (job, GPU) literals on the types where jobs may share GPUs, each a literal and an
    interval too. Building, loading and freeing the model take time in proportion.
    """
    counts, groups, group_type = _groups(instance)
    fits = alternative_fits(instance, counts, groups, group_type)
    alternatives = int(fits.sum())
    if not share_gpus:
        return alternatives, 0
    shared = ~exclusive_types(instance)[group_type]
    return alternatives, int((fits[:, shared] * counts[groups][shared]).sum())
