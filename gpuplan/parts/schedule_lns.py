"""Large neighbourhood search over the CP-SAT scheduling model: windows and GPU groups.

One full CP-SAT search on a mixed-gang batch of 150 jobs spends seconds proving little and
often keeps its hint; CP-SAT is at its best on small subproblems. Here the incumbent (a
full solution vector of :class:`~gpuplan.models.scheduling.SchedulingModel`'s model) is
improved by re-solving a part of it at a time, the rest held where the incumbent has it:

- a *time window*: the jobs that start one after another around some time;
- *GPU groups*: the jobs on a few (node, type) groups near some time;
- the *end*: the jobs that end last (makespan) or add most to the objective;
- a *spread*: half the jobs that end last, half jobs that could run on the least busy
  GPU type but run on another;
- a *balance*: the last jobs of the group that ends last and of the two that end first.

Each is tried once, then drawn at random with odds that grow with its improvements on the
instance at hand.

The freed jobs may move anywhere (any group, any GPUs, any time). Of the others, those
that end before the first freed job starts keep their times and GPUs; the rest keep their
GPUs but not their times, so that the plan behind the window can close up. Each
subproblem is a copy of the model with those variables' domains fixed, hinted with the
whole incumbent (a solution of it), solved by CP-SAT for a short time; a solution at least
as good replaces the incumbent (equal ones too, which lets the search drift over
plateaus). The neighbourhood grows while CP-SAT solves its subproblems to optimality and
shrinks while it runs out of time, so that each solve stays short.

The bookkeeping is vectorised: each variable's job and role are arrays, a neighbourhood
is a boolean mask over jobs, and the variables to fix are read off with one indexing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from gpuplan.backends.cpsat import import_cp_model, search_solver
from gpuplan.core.budget import Budget, Limits
from gpuplan.core.instance import BoolArray, IntArray
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.models.scheduling import SchedulingModel, solution_values

logger = logging.getLogger(__name__)

#: Jobs freed by the first neighbourhood, and the least and most ever.
FIRST_SIZE, MIN_SIZE, MAX_SIZE = 24, 6, 80
#: Growth of the neighbourhood after a subproblem solved to optimality, and its shrinking
#: after one that ran out of time.
GROW, SHRINK = 1.2, 0.85
#: Seconds of CP-SAT per subproblem: the first, the least and the most.
FIRST_SOLVE_S, MIN_SOLVE_S, MAX_SOLVE_S = 0.3, 0.1, 2.0
#: Below this many seconds left, no further subproblem is started.
MIN_LEFT_S = 0.05
#: The neighbourhoods where the jobs kept may move later as well as earlier: behind the
#: jobs that end last, others must make room for them earlier.
UNCAPPED = ("end", "spread", "balance")
#: The neighbourhoods, tried in turn.
KINDS = ("window", "groups", "end", "spread", "balance")


@dataclass(frozen=True)
class Improved:
    """What the search made of an incumbent.

    Attributes
    ----------
    values
        The best solution found, a full vector of variable values.
    objective
        Its objective value in the model's units.
    subproblems, improvements
        Subproblems solved, and how many of them lowered the objective.
    """

    values: IntArray
    objective: float
    subproblems: int
    improvements: int


class ScheduleNeighbourhoods:
    """Each variable's job and role in a :class:`SchedulingModel`, and the neighbourhoods.

    Parameters
    ----------
    model
        The built model; its objective is the one the search lowers.
    """

    def __init__(self, model: SchedulingModel) -> None:
        self.model = model
        instance = model.instance
        n_vars = len(model.model.proto.variables)
        #: Per variable, its job (-1: none, e.g. the makespan), and whether it is a time
        #: (start, end) rather than an assignment literal.
        self.var_job = np.full(n_vars, -1, dtype=np.int64)
        self.is_time = np.zeros(n_vars, dtype=bool)
        start_index = np.array([v.index for v in model.start], dtype=np.int64)
        end_index = np.array([v.index for v in model.end], dtype=np.int64)
        jobs = np.arange(instance.n_jobs)
        self.var_job[start_index] = jobs
        self.var_job[end_index] = jobs
        self.is_time[start_index] = self.is_time[end_index] = True
        present: list[int] = []
        alt_job: list[int] = []
        alt_group: list[int] = []
        gpu_literals: list[int] = []
        gpu_job: list[int] = []
        for options in model.alternatives:
            for a in options:
                present.append(a.present.index)
                alt_job.append(a.job)
                alt_group.append(a.group)
                gpu_literals.extend(lit.index for lit in a.on_gpu.values())
                gpu_job.extend([a.job] * len(a.on_gpu))
        self.var_job[present] = alt_job
        self.var_job[gpu_literals] = gpu_job
        # A gang's choice of type and domain, and whether it spreads, are the job's too.
        for j, choices in model.choices.items():
            self.var_job[[literal.index for literal, _ in choices]] = j
        for j, (spread, domains) in model.spread.items():
            self.var_job[[spread.index, *(literal.index for literal, _ in domains)]] = j
        self.start_index, self.end_index = start_index, end_index
        #: Per variable, the least value of its domain as built (times: the release).
        self.earliest = np.zeros(n_vars, dtype=np.int64)
        release = model.scale.up(instance.release)
        self.earliest[start_index] = self.earliest[end_index] = release
        self.present = np.array(present, dtype=np.int64)
        self.alt_job = np.array(alt_job, dtype=np.int64)
        self.alt_group = np.array(alt_group, dtype=np.int64)
        proto = model.model.proto.objective
        self.objective_vars = np.array(list(proto.vars), dtype=np.int64)
        self.objective_coeffs = np.array(list(proto.coeffs), dtype=np.int64)
        self.objective_offset = float(proto.offset)
        # Per job, what it adds to the objective: its weight (completion, tardiness) or 1.
        weight = np.ones(instance.n_jobs)
        if instance.objective in (ObjectiveKind.WEIGHTED_COMPLETION, ObjectiveKind.TARDINESS):
            weight = np.maximum(instance.weight, 0.0)
        self.weight = weight
        self.due = np.full(instance.n_jobs, -1, dtype=np.int64)
        for _, j, due in model.lateness:
            self.due[j] = due

    def objective(self, values: IntArray) -> float:
        """The model's objective value of a solution vector."""
        return float(values[self.objective_vars] @ self.objective_coeffs) + self.objective_offset

    def groups(self, values: IntArray) -> IntArray:
        """``(J,)`` the group each job runs on in a solution."""
        on = values[self.present].astype(bool)
        group = np.empty(self.model.instance.n_jobs, dtype=np.int64)
        group[self.alt_job[on]] = self.alt_group[on]
        return group

    def idlest(self, values: IntArray) -> int:
        """The type whose GPUs are busy the smallest share of the plan's span."""
        instance = self.model.instance
        start, end = values[self.start_index], values[self.end_index]
        types = self.model.group_type[self.groups(values)]
        busy = np.bincount(types, weights=instance.gang * (end - start),
                           minlength=instance.n_types)
        gpus = instance.node_gpus.sum(axis=0).astype(float)
        share = np.where(gpus > 0, busy / np.maximum(gpus, 1.0), np.inf)
        return int(share.argmin())

    def choose(self, kind: str, values: IntArray, size: int,
               rng: np.random.Generator) -> BoolArray:
        """The jobs a neighbourhood frees: a boolean mask over jobs, about ``size`` of them."""
        start = values[self.start_index]
        end = values[self.end_index]
        n = start.size
        size = min(size, n)
        if kind == "groups":
            group = self.groups(values)
            # Jobs on a few random groups, those nearest to a random time first.
            order = rng.permutation(int(group.max()) + 1)
            rank = np.empty_like(order)
            rank[order] = np.arange(order.size)
            moment = rng.uniform(0, end.max(initial=1))
            distance = np.abs(start - moment) / max(float(end.max(initial=1)), 1.0)
            # A job's key: its group's rank first, its distance to the moment within.
            picked = np.argsort(rank[group] + distance, kind="stable")[:size]
        elif kind == "end":
            # The jobs that weigh most at the end of the plan: latest ends for makespan,
            # largest weighted completion or lateness otherwise, with some noise.
            late = end - np.where(self.due >= 0, self.due, 0)
            share = self.weight * np.maximum(late if (self.due >= 0).any() else end, 0)
            noise = rng.uniform(0.8, 1.0, n)
            picked = np.argsort(-share * noise, kind="stable")[:size]
        elif kind == "balance":
            # The last jobs of the group that ends last and of the two that end first
            # (at random among near ties): evening out their ends lowers the makespan.
            group = self.groups(values)
            last = np.zeros(int(self.model.group_type.size))
            np.maximum.at(last, group, end)
            ranked = np.argsort(last * rng.uniform(0.97, 1.0, last.size), kind="stable")
            chosen = np.r_[ranked[-1], ranked[:2]]
            members = np.flatnonzero(np.isin(group, chosen))
            picked = members[np.argsort(-end[members], kind="stable")[:size]]
        elif kind == "spread":
            # Half the jobs that end last, half of those that could run on the least busy
            # type but run elsewhere: moving them there frees room on the busy types.
            picked = np.argsort(-end * rng.uniform(0.9, 1.0, n), kind="stable")[:size // 2]
            movable = np.flatnonzero(self.model.instance.eligible[:, self.idlest(values)]
                                     & ~np.isin(np.arange(n), picked))
            more = rng.permutation(movable)[:size - picked.size]
            picked = np.r_[picked, more]
        else:
            order = np.argsort(start, kind="stable")
            first = int(rng.integers(0, max(1, n - size + 1)))
            picked = order[first:first + size]
        free = np.zeros(n, dtype=bool)
        free[picked] = True
        return free

    def held(self, values: IntArray, free: BoolArray,
             cap: bool) -> tuple[IntArray, IntArray]:
        """The variables a neighbourhood holds: at the incumbent's values, or below them.

        Returns the variables fixed (every assignment literal of a job not freed, and the
        times of jobs not freed that end before the first freed job starts) and, with
        ``cap``, the times capped (those of the other jobs not freed, which may then only
        move earlier; without, they may move either way).
        """
        start = values[self.start_index]
        end = values[self.end_index]
        first = start[free].min(initial=np.iinfo(np.int64).max)
        held_time = ~free & (end <= first)
        job = self.var_job
        owned = job >= 0
        kept = np.zeros(job.size, dtype=bool)
        kept[owned] = ~free[job[owned]]
        fixed = kept & (~self.is_time | np.r_[held_time, False][job])
        capped = kept & self.is_time & ~fixed & cap
        return np.flatnonzero(fixed), np.flatnonzero(capped)


def improve_schedule(model: SchedulingModel, values: IntArray, limits: Limits,
                     budget: Budget, target: float = -np.inf) -> Improved:
    """Lower a solution's objective by LNS until the budget is spent or it reaches ``target``.

    Parameters
    ----------
    model
        The built model (its objective set; its hint is replaced).
    values
        A solution of the model (a full vector of variable values, e.g.
        :meth:`~gpuplan.models.scheduling.SchedulingModel.hinted_values`).
    limits
        Threads (CP-SAT workers per subproblem) and seed.
    budget
        The search's time: no subproblem outlasts it. Without a time limit the search
        would not end, so none is made.
    target
        A value in the model's units at which to stop (a bound, within the gap that
        counts as optimal): nothing lower is to be found.
    """
    cp_model = import_cp_model()
    hoods = ScheduleNeighbourhoods(model)
    rng = np.random.default_rng(limits.seed)
    best = values.copy()
    best_value = hoods.objective(best)
    # Each neighbourhood keeps its own size and time: some solve at once, others need
    # seconds.
    size = dict.fromkeys(KINDS, float(FIRST_SIZE))
    seconds = dict.fromkeys(KINDS, FIRST_SOLVE_S)
    # Each neighbourhood is drawn with odds of (improvements + 1) / (tries + 2): those
    # that lower the objective on this instance get more of the time.
    tries = dict.fromkeys(KINDS, 0)
    wins = dict.fromkeys(KINDS, 0)
    solved = improvements = 0
    every = np.arange(best.size)
    while (budget.limited and best_value > target and budget.left() > MIN_LEFT_S
           and not budget.spent()):
        odds = np.array([(wins[k] + 1) / (tries[k] + 2) for k in KINDS])
        kind = KINDS[solved] if solved < len(KINDS) else KINDS[
            int(rng.choice(len(KINDS), p=odds / odds.sum()))]
        free = hoods.choose(kind, best, int(size[kind]), rng)
        sub = model.model.clone()
        variables = sub.proto.variables
        fixed, capped = hoods.held(best, free, cap=kind not in UNCAPPED)
        for i, v in zip(fixed.tolist(), best[fixed].tolist(), strict=True):
            domain = variables[i].domain
            domain.clear()
            domain.extend([v, v])
        for i, low, v in zip(capped.tolist(), hoods.earliest[capped].tolist(),
                             best[capped].tolist(), strict=True):
            domain = variables[i].domain
            domain.clear()
            domain.extend([low, v])
        sub.clear_hints()
        hint = sub.proto.solution_hint
        hint.vars.extend(every.tolist())
        hint.values.extend(best.tolist())
        part = budget.part(min(seconds[kind], max(0.0, budget.left())))
        solver = search_solver(Limits(part, limits.threads, int(rng.integers(2**31)),
                                      limits.gap), presolve=True)
        # Presolve to its fixed point and the symmetry search took much of a 150-job
        # subproblem's time; one round of presolve removes the fixed part in a fraction.
        solver.parameters.max_presolve_iterations = 1
        solver.parameters.symmetry_level = 0
        code = solver.solve(sub)
        solved += 1
        tries[kind] += 1
        lowered = False
        if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            found = solution_values(solver)
            value = hoods.objective(found)
            if value <= best_value:
                lowered = value < best_value
                improvements += lowered
                wins[kind] += lowered
                best, best_value = found, value
        # Solved to optimality: a larger neighbourhood in less time; no solution at all
        # (not even the hint, on a loaded machine): twice the time; out of time without
        # progress: a smaller one with more time; progress: the same again.
        if code == cp_model.OPTIMAL:
            size[kind] = min(size[kind] * GROW, MAX_SIZE)
            seconds[kind] = max(seconds[kind] / GROW, MIN_SOLVE_S)
        elif code == cp_model.UNKNOWN:
            seconds[kind] = min(seconds[kind] * 2, MAX_SOLVE_S)
        elif not lowered:
            size[kind] = max(size[kind] * SHRINK, MIN_SIZE)
            seconds[kind] = min(seconds[kind] * GROW, MAX_SOLVE_S)
        logger.debug("lns %d %s size %d: %s, best %g", solved, kind, int(size[kind]),
                     solver.status_name(code), best_value)
    return Improved(best, best_value, solved, improvements)
