"""Makespan of batches with nothing to sequence: the unrelated parallel machine problem.

``--method cp`` hands a sequencing-free batch
(:func:`~gpuplan.models.machine_load.sequencing_free`: single-GPU jobs, one release, no
dependencies, deadlines or GPU sharing) here, with the start plan and the bound it
already has. The makespan is then the release plus the largest GPU load, so the plan is an
assignment, and two lanes search for it at once:

- branch-and-cut (HiGHS) on the assignment MILP
  (:class:`~gpuplan.models.assignment_makespan.AssignmentMakespanModel`, the peer's
  model, in whole ticks) on all the threads, exactly as the peer (``--method textbook``)
  runs it: no start, no plans offered. HiGHS's path is chaotic: a start or an offered
  plan sends its parallel tree search elsewhere, sometimes to a better plan and sometimes
  to a worse one (on the R||Cmax grid, with them cp ended a unit above the peer on a few
  instances; without them it still does on a few, where a peer's tree found its better
  plan in its last moments: docs/benchmarks.md, "Unrelated parallel machines
  (R||Cmax)"); kept intact, HiGHS's own plan is among cp's, though HiGHS's result itself
  varies from run to run. Its LP relaxation and cuts give the bound, and it alone proves
  optimality;
- a search (:class:`PairSearch`) from the LP relaxation's plan (:func:`lp_rounded`):
  the jobs of the most loaded GPU and of a partner are re-assigned exactly (a vectorised
  dynamic programme over one GPU's load), accepted when both loads end below the makespan;
  when no partner helps, the jobs of the most loaded GPU and a few partners go to a small
  MILP that must put them all below it; when that fails too, a random pair of other GPUs
  moves to the plan of least total load below the makespan (a plateau move that makes
  room), and the most loaded GPU tries those two next. When the search has found nothing
  better for :data:`STALL_S`, its lane runs a second branch-and-cut on one thread
  (another seed, an integer largest load) from the best plan, offered every better plan
  the search had (:attr:`~gpuplan.parts.portfolio.Portfolio.incumbent`).

The search lane runs at the lowest priority (:mod:`gpuplan.parts.portfolio`; HiGHS releases
the GIL), so that it takes only CPU that branch-and-cut leaves idle; the search stops
when its plan meets the best bound or branch-and-cut proves optimality, either of which
also stops the other lane's branch-and-cut. With one thread the search runs first, then
branch-and-cut from its plan.
The best of the lanes' plans and the start's is returned, with the best bound: the LP's or
branch-and-cut's, which count when the ticks are the instance's times exactly and no job
is preemptible (a preemptible job could be split between GPUs, which the model does not
do).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable

import numpy as np

from gpuplan.backends import get_backend
from gpuplan.backends.base import Backend, ProgramSolution
from gpuplan.core.budget import Budget, Limits
from gpuplan.core.instance import Instance, IntArray
from gpuplan.core.objectives import time_objective
from gpuplan.core.result import Result, better, plan_status, with_bound
from gpuplan.core.settings import Context
from gpuplan.core.status import Status
from gpuplan.models.assignment_makespan import AssignmentMakespanModel
from gpuplan.models.machine_load import back_to_back
from gpuplan.models.scheduling import TickScale
from gpuplan.parts.lns import subprogram
from gpuplan.parts.portfolio import Lane, Portfolio

logger = logging.getLogger(__name__)

#: Share of the time limit the pair search takes before branch-and-cut on one thread.
SEARCH_SHARE = 0.4
#: Seconds the pair search takes before branch-and-cut on one thread without a time limit.
UNLIMITED_SEARCH_S = 5.0
#: GPUs beside the most loaded one in the first MILP neighbourhood; later ones grow
#: while the MILP refutes them within QUICK_STEP_S, and shrink when it runs out of time.
FIRST_PARTNERS = 4
#: Seconds per MILP neighbourhood at most, and below which it counts as quick.
STEP_S = 0.3
QUICK_STEP_S = 0.1
#: Seconds the MILP over the LP's split jobs may take at most.
ROUNDING_S = 1.0
#: Seconds without a better plan after which the search hands its lane to a second
#: branch-and-cut, if this many seconds are left.
STALL_S = 3.0
SECOND_MIN_S = 2.0
#: The most (load level, job) cells of a pair's dynamic programme (fine ticks make
#: loads of millions of ticks: such pairs are left to the MILP neighbourhoods).
MAX_CELLS = 4_000_000
#: Larger than any load in ticks: the duration of a job on a GPU it may not use.
NEVER = 2**40


class PairSearch:
    """Large-neighbourhood search over GPU pairs for the smallest largest load.

    Parameters
    ----------
    ticks
        ``(J, G)`` each job's duration on each GPU in whole ticks, :data:`NEVER` where it
        may not run.
    gpu
        ``(J,)`` the GPU of each job in the plan to start from.
    rng
        The random choices of GPUs and plateau moves.

    Attributes
    ----------
    gpu
        The current plan (always the best found: moves never raise the largest load).
    load
        ``(G,)`` each GPU's load in ticks.
    """

    def __init__(self, ticks: IntArray, gpu: IntArray, rng: np.random.Generator) -> None:
        self.ticks = ticks
        self.rng = rng
        self.moves = 0
        self.improved_at = time.perf_counter()
        self.adopt(gpu)

    def adopt(self, gpu: IntArray) -> None:
        """Continue from another plan."""
        self.gpu = gpu.copy()
        self.load = np.bincount(gpu, weights=self.ticks[np.arange(gpu.size), gpu],
                                minlength=self.ticks.shape[1]).round().astype(np.int64)

    def stalled(self, seconds: float) -> bool:
        """Whether the largest load has not dropped for ``seconds``."""
        return time.perf_counter() - self.improved_at > seconds

    @property
    def makespan(self) -> int:
        """The largest load, in ticks."""
        return int(self.load.max(initial=0))

    def reassign(self, a: int, b: int, cap: int) -> bool:
        """Re-assign the jobs of GPUs ``a`` and ``b`` between them, both loads within ``cap``.

        A dynamic programme over ``a``'s load gives, for each, the least load on ``b``;
        of the plans within ``cap``, one of the least total load is taken (at random among
        ties), which leaves the most room on the two GPUs for others' jobs.

        Returns
        -------
        bool
            Whether the pair got a plan within ``cap`` (False also when the programme
            would exceed :data:`MAX_CELLS`).
        """
        jobs = np.flatnonzero((self.gpu == a) | (self.gpu == b))
        if (cap + 1) * jobs.size > MAX_CELLS:
            return False
        on_a, on_b = self.ticks[jobs, a], self.ticks[jobs, b]
        least = np.full(cap + 1, NEVER, dtype=np.int64)
        least[0] = 0
        to_a = np.empty((jobs.size, cap + 1), dtype=bool)
        shifted = np.empty_like(least)
        for k in range(jobs.size):
            step = int(on_a[k])
            shifted.fill(NEVER)
            if step <= cap:
                shifted[step:] = least[:cap + 1 - step]
            stay = least + on_b[k]
            to_a[k] = shifted < stay
            np.minimum(shifted, stay, out=least)
            least[least > cap] = NEVER
        total = np.arange(cap + 1) + least
        fits = np.flatnonzero(total == total.min())
        if least[fits[0]] > cap:
            return False
        level = int(self.rng.choice(fits))
        for k in range(jobs.size - 1, -1, -1):
            if to_a[k, level]:
                self.gpu[jobs[k]] = a
                level -= int(on_a[k])
            else:
                self.gpu[jobs[k]] = b
        for g in (a, b):
            self.load[g] = int(self.ticks[jobs, g][self.gpu[jobs] == g].sum())
        self.moves += 1
        return True

    def resolve(self, gpus: IntArray, backend: Backend, limits: Limits) -> Status:
        """Re-assign the jobs of ``gpus`` among them by the MILP, all below their largest load.

        The backend proves or refutes that such a plan exists within the limits.

        Returns
        -------
        Status
            ``optimal`` or ``feasible`` when the plan changed, ``infeasible`` when no
            plan of these jobs on these GPUs is better, ``no_solution`` when the limits
            ended the search first.
        """
        jobs = np.flatnonzero(np.isin(self.gpu, gpus))
        times = self.ticks[np.ix_(jobs, gpus)]
        model = AssignmentMakespanModel.of_times(
            times, times < NEVER, True, [f"job {j}" for j in jobs.tolist()],
            [f"gpu {g}" for g in gpus.tolist()])
        cap = int(self.load[gpus].max()) - 1
        program = dataclasses.replace(model.program, col_upper=np.r_[
            model.program.col_upper[:-1], cap])
        solution = backend.solve_program(program, limits)
        if solution.values is None:
            return solution.status
        local = model.decode(solution.values)
        self.gpu[jobs] = gpus[local]
        for g in gpus.tolist():
            self.load[g] = int(self.ticks[jobs, g][self.gpu[jobs] == g].sum())
        self.moves += 1
        return solution.status

    def improve(self, budget: Budget, target: int, backend: Backend, limits: Limits,
                on_improvement: Callable[[IntArray, int], None]) -> str:
        """Lower the largest load until it reaches ``target`` or the budget is spent.

        Each round takes a GPU of the largest load: its jobs and a partner's are
        re-assigned exactly (:meth:`reassign`) with each other GPU in turn; when none
        helps, with several partners by the MILP (:meth:`resolve`, as many as it proves
        or refutes within :data:`STEP_S`); when that fails too, a random pair of other
        GPUs moves to another plan below the makespan (a plateau move), and the GPU tries
        those two first in the next round.

        Returns
        -------
        str
            What was done, for the log and the solver string.
        """
        n_gpus = self.load.size
        plateau_moves = mips = 0
        partners_n = min(FIRST_PARTNERS, n_gpus - 1)
        tried: list[int] = []
        best = self.makespan
        self.improved_at = time.perf_counter()
        while n_gpus > 1 and self.makespan > target and not budget.spent():
            makespan = self.makespan
            if makespan < best:
                best = makespan
                self.improved_at = time.perf_counter()
                on_improvement(self.gpu, makespan)
                logger.debug("cp: R||Cmax search at %d ticks", makespan)
            top = int(self.rng.choice(np.flatnonzero(self.load == makespan)))
            partners = tried or [int(g) for g in self.rng.permutation(n_gpus) if g != top]
            if any(self.reassign(top, g, makespan - 1) for g in partners):
                tried = []
                continue
            below = np.flatnonzero(self.load < makespan)
            if partners_n >= 2 and below.size >= partners_n:
                # Partners with room are likelier to take the top GPU's jobs.
                room = (makespan - self.load[below]).astype(float)
                chosen = self.rng.choice(below, partners_n, replace=False, p=room / room.sum())
                began = budget.elapsed()
                status = self.resolve(np.r_[top, chosen], backend,
                                      dataclasses.replace(limits, budget=budget.part(STEP_S)))
                mips += 1
                quick = budget.elapsed() - began < QUICK_STEP_S
                if status.has_plan:
                    tried = []
                    continue
                if status is Status.INFEASIBLE and quick:
                    partners_n = min(partners_n + 1, n_gpus - 1)
                elif status is Status.NO_SOLUTION:
                    partners_n = max(partners_n - 1, 2)
            if below.size < 2:
                break
            a, b = (int(g) for g in self.rng.choice(below, 2, replace=False))
            self.reassign(a, b, makespan - 1)
            plateau_moves += 1
            tried = [a, b]
        if self.makespan < best:
            on_improvement(self.gpu, self.makespan)
        return (f"{self.moves} moves, {mips} MILP neighbourhoods (last of "
                f"{partners_n + 1} GPUs), {plateau_moves} plateau moves")


def lp_rounded(model: AssignmentMakespanModel, backend: Backend,
               limits: Limits) -> tuple[IntArray | None, float | None]:
    """A plan from the LP relaxation, and the relaxation's value (a bound).

    The jobs the LP places whole stay where it puts them; the MILP over the others (at
    most one split job per GPU at a vertex) places them.

    Returns
    -------
    tuple
        The GPU of each job (or None without a plan in time), and the LP's value (or None
        when it was not solved in time).
    """
    program, n_x = model.program, model.x_job.size
    relaxation = backend.relax(program, limits)
    if relaxation.status is not Status.OPTIMAL or relaxation.values is None:
        return None, None
    whole = relaxation.values[:n_x] > 1.0 - 1e-6
    kept = np.zeros(model.column.shape[0], dtype=bool)
    kept[model.x_job[whole]] = True
    base = np.r_[whole.astype(float), 0.0]
    free = np.r_[~kept[model.x_job], True]
    sub, columns = subprogram(program, free, base)
    solution = backend.solve_program(sub, dataclasses.replace(
        limits, budget=limits.budget.part(ROUNDING_S)))
    if solution.values is None:
        return None, relaxation.objective
    base[columns] = np.round(solution.values)
    return model.decode(base), relaxation.objective


def _assignment(instance: Instance, result: Result) -> IntArray | None:
    """The GPU of each job in a plan that runs every job in one piece, or None."""
    if not result.status.has_plan or result.job.size != instance.n_jobs:
        return None
    gpu = np.full(instance.n_jobs, -1, dtype=np.int64)
    gpu[result.job] = [int(used[0]) for used in result.gpus]
    return None if (gpu < 0).any() else gpu


def _largest_load(ticks: IntArray, gpu: IntArray) -> int:
    """The largest GPU load of a plan, in ticks."""
    return int(np.bincount(gpu, weights=ticks[np.arange(gpu.size), gpu]).max(initial=0))


def _fastest_free(ticks: IntArray) -> IntArray:
    """Each job, longest first, on the GPU where it would end first: a plan to start from."""
    n_jobs, n_gpus = ticks.shape
    fastest = ticks.min(axis=1)
    load = np.zeros(n_gpus, dtype=np.int64)
    gpu = np.zeros(n_jobs, dtype=np.int64)
    for j in np.argsort(-fastest, kind="stable").tolist():
        g = int(np.argmin(load + ticks[j]))
        gpu[j] = g
        load[g] += ticks[j, g]
    return gpu


def plan_unrelated(instance: Instance, context: Context, start: Result, origin: str,
                   hint: Result | None, bound: float, scale: TickScale, name: str) -> Result:
    """The best plan of a sequencing-free batch within the context's budget.

    Parameters
    ----------
    instance
        A batch for which :func:`~gpuplan.models.machine_load.sequencing_free` holds.
    context
        Budget, threads (branch-and-cut's; the search lane runs beside it), seed and gap.
    start
        The plan to fall back on (list scheduling's or the warm start's).
    origin
        What messages call ``start``.
    hint
        Another plan to start the search from (every job in one piece), or None.
    bound
        The valid bound known before the search.
    scale
        The ticks of the search and of branch-and-cut.
    name
        The solver string of the result.
    """
    budget = context.budget
    logger.info("cp: R||Cmax search begins after %.2f s", budget.elapsed())
    release = float(instance.release.max(initial=0.0))
    by_type = scale.up(np.where(instance.eligible, instance.duration, 0.0)).astype(np.int64)
    ticks = np.where(instance.eligible, by_type, NEVER)[:, instance.gpu_type]
    certain = scale.exact and not instance.preemptible.any()
    # A plan whose load meets the bound is optimal: the search stops there.
    target = (math.ceil((bound - release + scale.slack_s) / scale.tick_s - 1e-9)
              if certain and math.isfinite(bound) else 0)
    # The first branch-and-cut has the plain model (a continuous largest load), the
    # second an integer one: HiGHS takes different paths on them, each the faster on
    # some instances.
    model = AssignmentMakespanModel.build(instance, by_type, integer_makespan=False)
    backend = get_backend("highs")
    lanes = budget.limited and context.threads >= 2
    limits = context.limits()
    search: PairSearch | None = None
    solutions: list[ProgramSolution] = []

    def branch_and_cut() -> ProgramSolution:
        # Beside the search, the peer's solve untouched; after it, from its plan.
        return backend.solve_program(
            model.program, limits,
            None if lanes or search is None else model.encode(search.gpu, search.makespan))

    with Portfolio("min") as portfolio:
        portfolio.on_settle(backend.cancel)
        peer: Lane[ProgramSolution] | None = None
        if lanes:
            # The peer's solve starts before the search is set up: where the peer's tree
            # reaches a better plan in its last moments, every millisecond counts.
            peer = portfolio.start("branch-and-cut", branch_and_cut,
                                   settles=lambda solution: solution.status is Status.OPTIMAL)
        plans = [g for g in (_assignment(instance, start),
                             None if hint is None else _assignment(instance, hint))
                 if g is not None]
        plans.append(_fastest_free(ticks))
        loads = [_largest_load(ticks, g) for g in plans]
        search = PairSearch(ticks, plans[int(np.argmin(loads))],
                            np.random.default_rng(context.seed))
        integer_program = AssignmentMakespanModel.build(instance, by_type,
                                                        integer_makespan=True).program
        portfolio.incumbent.update(model.encode(search.gpu, search.makespan), search.makespan)
        relaxed: list[float] = []

        def share(gpu: IntArray, makespan: int) -> None:
            portfolio.incumbent.update(model.encode(gpu, makespan), makespan)

        def improve(part: Budget) -> None:
            nonlocal target
            assert search is not None
            best = search.makespan
            lane_backend = get_backend("highs")
            lane_limits = dataclasses.replace(limits, budget=part, threads=1)
            rounded, lp_value = lp_rounded(model, lane_backend, lane_limits)
            if lp_value is not None:
                relaxed.append(lp_value)
                if certain:
                    target = max(target, math.ceil(lp_value - 1e-6))
            if rounded is not None and (rounded >= 0).all() and (
                    _largest_load(ticks, rounded) < search.makespan):
                search.adopt(rounded)
                share(search.gpu, search.makespan)
            logger.info("cp: R||Cmax LP %s, rounded %d ticks after %.2f s", lp_value,
                        search.makespan, budget.elapsed())
            done = search.improve(part, target, lane_backend, lane_limits, share)
            logger.info("cp: R||Cmax pair search %d -> %d ticks (%s) after %.2f s", best,
                        search.makespan, done, budget.elapsed())

        if peer is not None:
            running = peer

            def second_lane() -> ProgramSolution | None:
                # Branch-and-cut ending (a proof, or its limit) ends the search; so does the
                # search meeting the bound, or stalling, after which a second
                # branch-and-cut with another seed takes over this lane from the best plan
                # (HiGHS's time to find good plans varies much with its seed).
                assert search is not None
                improve(budget.part(stop=lambda: not running.running()
                                    or search.stalled(STALL_S)))
                answer = None
                if (search.makespan > target and running.running()
                        and budget.left() > SECOND_MIN_S):
                    second = get_backend("highs")
                    second.offer = portfolio.incumbent.offer
                    portfolio.on_settle(second.cancel)
                    answer = second.solve_program(
                        integer_program,
                        dataclasses.replace(limits, seed=limits.seed + 1, threads=1),
                        model.encode(search.gpu, search.makespan))
                    if answer.status is Status.OPTIMAL:
                        portfolio.settle()
                if search.makespan <= target:
                    portfolio.settle()
                return answer

            searching = portfolio.start("rcmax-search", second_lane, low_priority=True)
            portfolio.join()
            solutions.append(peer.answer())
            second_answer = searching.answer()
            if second_answer is not None:
                solutions.append(second_answer)
        else:
            improve(budget.part(share=SEARCH_SHARE) if budget.limited
                    else budget.part(UNLIMITED_SEARCH_S))
            if search.makespan > target:
                solutions.append(branch_and_cut())
    gpu, lanes_used = search.gpu, "LP rounding, pair search"
    if solutions:
        lanes_used += "".join(f" || {s.solver} branch-and-cut" for s in solutions)
    if certain:
        # Branch-and-cut's bounds, and the LP's (when branch-and-cut was not waited for).
        for proven in [*(s.bound for s in solutions), *relaxed]:
            if proven is not None:
                # Every load is a whole number of ticks.
                bound = max(bound, release + math.ceil(proven - 1e-6) * scale.tick_s
                            - scale.slack_s)
    for solution in solutions:
        if solution.values is not None:
            found = model.decode(solution.values)
            if (found >= 0).all() and _largest_load(ticks, found) < _largest_load(ticks, gpu):
                gpu = found
    logger.info("cp: R||Cmax search %d ticks, branch-and-cut %s, after %.2f s",
                search.makespan, [s.objective for s in solutions], budget.elapsed())
    job, types, gpus, start_s, end_s = back_to_back(instance, gpu)
    objective = time_objective(instance, job, types, end_s)
    found_plan = Result(status=plan_status(objective, bound), objective=objective,
                        bound=bound, solver=f"{name}; {lanes_used}", job=job, gpu_type=types,
                        gpus=gpus, start=start_s, end=end_s)
    best = better(instance, found_plan, start)
    # The lanes' plan stands unless the start's is strictly better (a tie keeps theirs).
    if best.objective != found_plan.objective:
        return with_bound(instance, start, bound, name, f"{origin} kept")
    return dataclasses.replace(best, status=plan_status(objective, best.bound))
