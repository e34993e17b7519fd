"""Constructive plans every part starts from: best-fit decreasing and list scheduling.

These are the field's simplest real planners: ``--method greedy`` runs them alone, and the
other methods start from them or fall back on them. Both are deterministic (ties go to the
lower index), never change the instance, and work on numpy arrays over all GPUs at once,
so one job costs a handful of vector operations. Both read the clock as they go when
given a budget: jobs not reached by then are left out, and say so.
"""

from __future__ import annotations

import heapq

import numpy as np

from gpuplan.core.budget import Budget
from gpuplan.core.instance import BoolArray, FloatArray, Instance, IntArray
from gpuplan.core.keep import Keep
from gpuplan.core.objectives import ObjectiveKind, time_objective
from gpuplan.core.result import Result, plan_status
from gpuplan.models.bounds import objective_bound
from gpuplan.parts.free_gpus import FreeGpus, Slot

#: Capacity slack (relative) within which a demand counts as fitting; far below the
#: verifier's tolerance, so a plan the greedy accepts is never rejected for rounding.
_FIT_EPS = 1e-9
#: Jobs placed between two readings of the clock.
CLOCK_EVERY = 64
#: Why a job is left out when the time limit ends the pass before it.
NOT_REACHED = "the time limit was reached before the greedy pass got to it"


def expired(budget: Budget | None, done: int) -> bool:
    """Whether the budget is spent, read every :data:`CLOCK_EVERY` jobs."""
    return budget is not None and done % CLOCK_EVERY == 0 and done > 0 and budget.spent()


def ready_at(instance: Instance, j: int, end: FloatArray) -> float | str:
    """When job ``j`` may start given the ends of the jobs placed (NaN: not placed).

    Its release and its predecessors' ends; a string saying which predecessor is not
    placed when one is not.
    """
    missing = [p for p in instance.predecessors[j] if np.isnan(end[p])]
    if missing:
        return f"its predecessor {instance.job_ids[missing[0]]!r} is not placed"
    return max([float(instance.release[j]),
                *(float(end[p]) for p in instance.predecessors[j])])


def _blocking_resource(instance: Instance, j: int, residual: FloatArray) -> str:
    """Name the resource that rules out most of the job's eligible GPUs."""
    gpu_type = instance.gpu_type
    eligible = instance.eligible[j][gpu_type]
    short = residual[eligible] < instance.packing_demand[j][gpu_type][eligible]
    r = int(np.argmax(short.sum(axis=0)))
    return instance.packing_resources[r]


def _assignment_cost(instance: Instance) -> FloatArray:
    """``(J, T)`` what an assignment costs, negated profit when profit is maximised."""
    sign = -1.0 if instance.objective.sense == "max" else 1.0
    return sign * instance.assignment_value


def _group_ranks(groups: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """For a sorted array of group ids: each entry's group position, rank in it, group sizes."""
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    counts = np.diff(np.r_[starts, groups.size])
    position = np.repeat(np.arange(starts.size), counts)
    rank = np.arange(groups.size) - starts[position]
    return position, rank, counts


def _finish(
    instance: Instance,
    objective: float | None,
    placed: list[tuple[int, int, IntArray, float, float, int]],
    unplaced: dict[int, str],
) -> Result:
    bound = objective_bound(instance)
    return Result(
        status=plan_status(objective, bound),
        objective=objective,
        bound=bound,
        solver="gpuplan-greedy",
        job=np.array([p[0] for p in placed], dtype=np.int64),
        gpu_type=np.array([p[1] for p in placed], dtype=np.int64),
        gpus=tuple(p[2] for p in placed),
        start=np.array([p[3] for p in placed]),
        end=np.array([p[4] for p in placed]),
        node=np.array([p[5] for p in placed], dtype=np.int64),
        unplaced=unplaced,
    )


def job_size(instance: Instance) -> FloatArray:
    """``(J,)`` total normalised demand over all resources, gang included, at its least."""
    relative = np.where(instance.eligible[:, :, None],
                        instance.packing_demand / instance.packing_capacity[None], np.inf)
    size: FloatArray = relative.min(axis=1).sum(axis=1) * instance.gang
    return size


def _choose_groups(instance: Instance, j: int, heads: IntArray, counts: IntArray,
                   position: IntArray, take: BoolArray, fit: FloatArray, new: BoolArray,
                   type_rank: FloatArray | None) -> IntArray | None:
    """The (node, type) groups that take job ``j``'s gang under best-fit decreasing.

    ``heads`` is each candidate group's first fitting GPU; ``take`` marks the GPUs each
    group would give the job. One group per node the gang spans, all of one type (and one
    domain of its required topology level), best for the objective (see
    :func:`best_fit_decreasing`), the sum over the groups for a multi-node gang. None if
    no type has enough groups.
    """
    objective = instance.objective
    k, m = max(int(instance.gpus_per_node[j]), 1), int(instance.gang_nodes[j])
    n_groups = counts.size
    fit_sum = np.bincount(position[take], weights=fit[take], minlength=n_groups)
    opened = np.bincount(position[take], weights=new[take], minlength=n_groups)
    group_type = instance.gpu_type[heads]
    if type_rank is not None:
        primary = type_rank[j, group_type]
    elif objective in (ObjectiveKind.ASSIGN_COST, ObjectiveKind.ASSIGN_PROFIT):
        primary = _assignment_cost(instance)[j, group_type]
    elif objective is ObjectiveKind.MIN_GPUS:
        primary = opened
    elif objective is ObjectiveKind.MIN_GPU_COST:
        primary = opened * instance.price_per_hour[group_type]
    else:
        primary = np.zeros(n_groups)
    able = np.flatnonzero(counts >= k)
    if able.size < m:
        return None
    if m == 1 and not (instance.levels and instance.required_level[j] >= 0):
        best = able[int(np.lexsort((fit_sum[able], primary[able]))[0])]
        return np.array([best])
    # Groups of one type (and one domain), best first; each set's first m, summed.
    level = int(instance.required_level[j]) if instance.levels else -1
    domain = (instance.node_domain[instance.gpu_node[heads[able]], level] if level >= 0
              else np.zeros(able.size, dtype=np.int64))
    able, domain = able[domain >= 0], domain[domain >= 0]
    kind = group_type[able] * (int(domain.max(initial=0)) + 1) + domain
    order = np.lexsort((fit_sum[able], primary[able], kind))
    able, kind = able[order], kind[order]
    starts = np.flatnonzero(np.r_[True, kind[1:] != kind[:-1]])
    sizes = np.diff(np.r_[starts, kind.size])
    starts = starts[sizes >= m]
    if not starts.size:
        return None
    sets = able[starts[:, None] + np.arange(m)[None, :]]
    best = int(np.lexsort((fit_sum[sets].sum(axis=1), primary[sets].sum(axis=1)))[0])
    chosen: IntArray = sets[best]
    return chosen


def _why_not_static(instance: Instance, j: int, k: int, residual: FloatArray,
                    node_room: FloatArray | None) -> str:
    """Why best-fit decreasing found no room for job ``j`` (``k`` GPUs per node)."""
    m = int(instance.gang_nodes[j])
    where = (f"{m} nodes with {k} GPU(s) each" if m > 1 else
             "a node" + (f" with {k} GPU(s)" if k else ""))
    if instance.levels and instance.required_level[j] >= 0:
        where += f" in one {instance.levels[instance.required_level[j]]}"
    blocked = (_blocking_resource(instance, j, residual) if k else
               ", ".join(instance.node_resources))
    if node_room is not None and k:
        blocked += " (or node " + ", ".join(instance.node_resources) + ")"
    return f"no {where} of an eligible type has enough free {blocked} left"


def _static_order(instance: Instance) -> IntArray:
    """Largest first; densest first for weight; highest regret first for assignment value."""
    size = job_size(instance)
    index = np.arange(instance.n_jobs)
    objective = instance.objective
    if objective is ObjectiveKind.MAX_WEIGHT:
        density = instance.weight / np.maximum(size, 1e-12)
        return np.lexsort((index, -size, -density))
    if objective in (ObjectiveKind.ASSIGN_COST, ObjectiveKind.ASSIGN_PROFIT):
        # Regret first (Martello & Toth): a job that loses most by missing its best type,
        # or has only one type, is placed before others take that type's room.
        costs = np.sort(np.where(instance.eligible, _assignment_cost(instance), np.inf), axis=1)
        regret = costs[:, 1] - costs[:, 0] if instance.n_types > 1 else np.zeros(instance.n_jobs)
        regret = np.where(np.isnan(regret), np.inf, regret)
        return np.lexsort((index, -size, -regret))
    return np.lexsort((index, -size))


def best_fit_decreasing(
    instance: Instance, order: IntArray | None = None, type_rank: FloatArray | None = None,
    budget: Budget | None = None,
) -> Result:
    """Place the batch at once, largest jobs first, each where it fits best.

    Jobs are taken by decreasing total normalised demand over all named resources (by
    decreasing weight per unit of demand when weight is maximised, by decreasing regret
    when assignment cost is minimised). Each goes to the
    (node, type) group that is best for the objective: cheapest type for assignment cost,
    fewest newly opened GPUs (or their price) for GPU counts. Ties, and all other
    objectives, go to the GPUs whose free capacity is best aligned with the job's demand
    vector (the dot-product rule for vector packing, which ended far closer to the LP
    bound than the tightest-fit rule when rounding a two-resource fleet; docs/benchmarks.md,
    "LP relaxation and rounding at scale"), except ``min-max-load``, which takes the GPUs
    left least loaded. A job in a partition takes GPUs of its nodes only; one whose
    account or QOS has fewer GPUs left within its limit than its gang is left out.

    Parameters
    ----------
    instance
        A static-objective instance.
    order
        Take jobs in this order instead (rounding uses the LP's confidence).
    type_rank
        ``(J, T)`` preference per type, lower first, instead of the objective's rule; used
        to follow a fractional solution, falling back to other types when full.
    budget
        When it is spent, the remaining jobs are left out; None: never.
    """
    objective = instance.objective
    gpu_type, n_types = instance.gpu_type, instance.n_types
    capacity = instance.packing_capacity[gpu_type]
    residual = capacity.copy()
    used = np.zeros(instance.n_gpus, dtype=bool)
    group_of = instance.gpu_node * n_types + gpu_type
    node_room = instance.node_capacity.copy() if instance.node_demand.any() else None
    # The GPUs left within each GPU limit: the batch holds them all at once.
    limit_room = np.array([limit.gpus for limit in instance.gpu_limits], dtype=np.int64)

    if order is None:
        order = _static_order(instance)

    placed: list[tuple[int, int, IntArray, float, float, int]] = []
    unplaced: dict[int, str] = {}
    for done, j in enumerate(order.tolist()):
        if expired(budget, done):
            unplaced.update(dict.fromkeys(order[done:].tolist(), NOT_REACHED))
            break
        k = int(instance.gpus_per_node[j])
        limits = instance.job_limits[j]
        full = [q for q in limits if limit_room[q] < instance.gang[j]] if limits else []
        if full:
            limit = instance.gpu_limits[full[0]]
            unplaced[int(j)] = (f"{limit} has {limit_room[full[0]]} of its {limit.gpus} "
                                f"GPUs left, and the job needs {instance.gang[j]}")
            continue
        demand = instance.packing_demand[j][gpu_type]
        fits = instance.eligible[j][gpu_type] & (
            residual - demand >= -_FIT_EPS * capacity
        ).all(axis=1)
        if k == 0:
            # A CPU-only job holds no GPU: every GPU of a type it may use stands for its node.
            fits = instance.eligible[j][gpu_type].copy()
        allowed = instance.allowed_nodes(j)
        if allowed is not None:
            fits &= allowed[instance.gpu_node]
        if node_room is not None:
            draw = instance.node_demand[j]
            fits &= (node_room - draw >= -_FIT_EPS * instance.node_capacity).all(axis=1)[
                instance.gpu_node]
        candidates = np.flatnonzero(fits)
        after = residual[candidates] - demand[candidates]
        if objective is ObjectiveKind.MIN_MAX_LOAD:
            fit = ((capacity[candidates] - after) / capacity[candidates]).max(axis=1)
        else:
            # Dot-product rule (Panigrahy et al., vector bin packing): prefer the GPU
            # whose free capacity lines up best with the demand, across resources.
            relative_demand = demand[candidates] / capacity[candidates]
            fit = -(relative_demand * residual[candidates] / capacity[candidates]).sum(1)
        new = ~used[candidates]
        sort = np.lexsort((candidates, fit, new, group_of[candidates]))
        candidates, fit, new = candidates[sort], fit[sort], new[sort]
        position, rank, counts = _group_ranks(group_of[candidates])
        take = (rank < max(k, 1)) & (counts[position] >= max(k, 1))
        chosen_groups = _choose_groups(instance, j, candidates[rank == 0], counts, position,
                                       take, fit, new, type_rank) if take.any() else None
        if chosen_groups is None:
            unplaced[int(j)] = _why_not_static(instance, int(j), k, residual, node_room)
            continue
        first = candidates[rank == 0][chosen_groups]
        t = int(gpu_type[first[0]])
        chosen = (candidates[take & np.isin(position, chosen_groups)] if k else
                  np.zeros(0, dtype=np.int64))
        residual[chosen] -= demand[chosen]
        used[chosen] = True
        if limits:
            limit_room[list(limits)] -= instance.gang[j]
        nodes = instance.gpu_node[first]
        if node_room is not None:
            node_room[nodes] -= instance.node_demand[j]
        slow = instance.spread_factor(j, np.unique(nodes))
        placed.append((int(j), t, chosen, 0.0, float(instance.duration[j, t]) * slow,
                       int(nodes.min())))

    value: float | None = None
    if objective.allows_unplaced or not unplaced:
        jobs = np.array([p[0] for p in placed], dtype=np.int64)
        types = np.array([p[1] for p in placed], dtype=np.int64)
        match objective:
            case ObjectiveKind.ASSIGN_COST | ObjectiveKind.ASSIGN_PROFIT:
                value = float(instance.assignment_value[jobs, types].sum())
            case ObjectiveKind.MAX_WEIGHT:
                value = float(instance.weight[jobs].sum())
            case ObjectiveKind.MIN_GPUS:
                value = float(used.sum())
            case ObjectiveKind.MIN_GPU_COST:
                value = float(instance.price_per_hour[gpu_type[used]].sum())
            case ObjectiveKind.MIN_MAX_LOAD:
                value = float(((capacity - residual) / capacity).max())
    return _finish(instance, value, placed, unplaced)


def _priority(instance: Instance) -> list[tuple[float, float, int]]:
    """Per job, the key that orders ready jobs: earliest deadline, then the objective's rule.

    Makespan and cost take the longest remaining dependency chain first (critical path),
    weighted completion the largest weight per second (Smith's rule), tardiness the
    earliest due date.
    """
    objective = instance.objective
    if objective is ObjectiveKind.WEIGHTED_COMPLETION:
        rule = -instance.weight / instance.min_duration
    elif objective is ObjectiveKind.TARDINESS:
        rule = instance.due.copy()
    else:
        tail = instance.min_duration.copy()
        for j in instance.topological_order[::-1]:
            if instance.successors[j]:
                tail[j] += max(tail[s] for s in instance.successors[j])
        rule = -tail
    return [(float(instance.deadline[j]), float(rule[j]), j) for j in range(instance.n_jobs)]


def list_order(instance: Instance, keys: FloatArray | None = None) -> list[int]:
    """A topological order that takes ready jobs by :func:`_priority`, or by ``keys``.

    ``keys`` (lower first) is the random-key encoding of the metaheuristics: any vector
    decodes to an order that respects the dependencies.
    """
    key = (_priority(instance) if keys is None
           else [(float(keys[j]), 0.0, j) for j in range(instance.n_jobs)])
    waiting = [len(p) for p in instance.predecessors]
    ready = [key[j] for j in range(instance.n_jobs) if waiting[j] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        j = heapq.heappop(ready)[2]
        order.append(j)
        for s in instance.successors[j]:
            waiting[s] -= 1
            if waiting[s] == 0:
                heapq.heappush(ready, key[s])
    return order


def repair_keys(instance: Instance, keep: Keep) -> FloatArray:
    """List keys that take the jobs with a previous slot by their previous start.

    Jobs without one that have a deadline come first (earliest deadline first), so that
    a deadline is met if moving others meets it; the rest follow in list scheduling's own
    priority order after every kept job, so that placing them moves none of those (a plan
    that keeps most and fixes the rest).
    """
    rank = np.empty(instance.n_jobs)
    rank[np.array(list_order(instance), dtype=np.int64)] = np.arange(instance.n_jobs)
    start = np.nan_to_num(keep.start, nan=0.0)
    last = float(start.max(initial=0.0)) + 1.0
    due = np.isfinite(instance.deadline) & ~keep.has_slot
    deadline_rank = np.argsort(np.argsort(np.where(due, instance.deadline, np.inf),
                                          kind="stable"), kind="stable")
    keys: FloatArray = np.where(keep.has_slot, start, np.where(
        due, deadline_rank - instance.n_jobs - 1.0, last + rank))
    return keys


def list_schedule(
    instance: Instance, keys: FloatArray | None = None, budget: Budget | None = None,
    keep: Keep | None = None,
) -> Result:
    """Schedule jobs one by one, each at its earliest finish on whole GPUs.

    Jobs are taken in a dependency-respecting priority order (:func:`_priority`, or
    ``keys``, lower first, when given). Each starts no earlier than its release and its
    predecessors' ends, on the GPUs of one type where it finishes first (where it is
    cheapest, for the cost objective, among those meeting its deadline): its gang's GPUs
    on as many nodes as it spans, within its required topology domain, with its node
    demand free on each for its whole run, on the GPUs that became free last before its
    start so that earlier gaps stay open (:class:`~gpuplan.parts.free_gpus.FreeGpus`).
    GPUs are not shared over time here. No job starts on a GPU before it is ready
    (:attr:`~gpuplan.core.instance.Instance.ready_at`). With ``keep``, a job whose previous
    GPUs are free by its previous start (and which may start then) stays in that slot;
    the others go where they finish first.

    Parameters
    ----------
    instance
        A time-based-objective instance.
    keys
        ``(J,)`` priorities (lower first) that replace the priority rule.
    budget
        When it is spent, the remaining jobs are left out; None: never.
    keep
        A previous plan to stay in where it still fits (a re-plan's repair).
    """
    objective = instance.objective
    fleet = FreeGpus(instance)
    end = np.full(instance.n_jobs, np.nan)
    placed: list[Slot] = []
    jobs: list[int] = []
    unplaced: dict[int, str] = {}
    order = list_order(instance, keys)
    for done, j in enumerate(order):
        if expired(budget, done):
            unplaced.update(dict.fromkeys(order[done:], NOT_REACHED))
            break
        ready = ready_at(instance, j, end)
        if isinstance(ready, str):
            unplaced[j] = ready
            continue
        previous = None if keep is None else keep.gpus[j]
        slot = (None if previous is None or keep is None or np.isnan(keep.start[j]) else
                fleet.kept(j, previous, float(keep.start[j]), ready))
        if slot is None:
            slots = [found for t in np.flatnonzero(instance.eligible[j]).tolist()
                     if (found := fleet.earliest(j, t, ready)) is not None]
            if not slots:
                unplaced[j] = ("no GPU it may run on is up" if instance.node_demand.size == 0
                               else "no node it may run on is up with room for it")
                continue
            finish = np.array([found.end for found in slots])
            on_time = finish <= instance.deadline[j]
            if not on_time.any():
                unplaced[j] = (f"its earliest finish {finish.min():g} s is after its "
                               f"deadline {instance.deadline[j]:g} s")
                continue
            types = np.array([found.gpu_type for found in slots])
            cost = np.nan_to_num(instance.cost[j, types], nan=0.0)
            if objective is ObjectiveKind.COST:
                pick = np.lexsort((types, finish, cost, ~on_time))[0]
            else:
                pick = np.lexsort((types, cost, finish))[0]
            slot = slots[int(pick)]
        fleet.take(j, slot)
        end[j] = slot.end
        placed.append(slot)
        jobs.append(j)

    value: float | None = None
    job = np.array(jobs, dtype=np.int64)
    types = np.array([slot.gpu_type for slot in placed], dtype=np.int64)
    if not unplaced:
        value = time_objective(instance, job, types, end[job])
    bound = objective_bound(instance)
    return Result(
        status=plan_status(value, bound), objective=value, bound=bound,
        solver="gpuplan-greedy", job=job, gpu_type=types,
        gpus=tuple(slot.gpus for slot in placed),
        start=np.array([slot.start for slot in placed]),
        end=np.array([slot.end for slot in placed]),
        node=np.array([slot.node for slot in placed], dtype=np.int64),
        unplaced=unplaced,
    )
