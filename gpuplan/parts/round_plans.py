"""Round-based plans that realise an allocation's time shares on whole GPUs (Gavel's rounds).

Time is cut into rounds of ``round_s`` seconds. At the start of each round every runnable
job (released, its predecessors done, not finished) is ranked, per type it may use, by how
far it lags its share: ``share[j, t] / received[j, t]``, where ``received`` is the share of
its time so far that it spent on ``t`` (Gavel's priority). Pairs are taken in that order
and each job gets whole GPUs of one type on one node for the round, preferring the GPUs it
held last round (no needless migration). Types the allocation gave no share come last, so
that no GPU idles while a job could use it. A job that is not preemptible keeps its GPUs
from its first round until it ends. A job that finishes inside a round ends there; its
GPUs idle until the next round, as in Gavel, unless only such jobs run: then the round
ends at the first of their ends or of the releases, and the GPUs freed are dealt at once.

**Time-varying shares.** Given a ``reallocate`` callback, the shares are solved again
for what is left whenever the ready jobs or the jobs holding their GPUs change (a job
ends, is released or unblocked, or starts without preemption), as Gavel re-solves its
policy; the plan follows the latest shares, and the tracking error compares each round
with the shares of then.

**Jobs in one piece.** A job that is not preemptible is started, not time-shared: it
starts only on a type where, followed by its successors' shortest runs, it ends by the
shares' horizon and by its deadline (run whole on a slow type it would outlast the
plan), preferring the type doing most of its work under the shares, the jobs needing the
largest share of the time first, and those whose deadline's latest start is near before
all (:meth:`_Following.starts`). A job with a deadline, or the first other job, that
finds no room *reserves* the GPUs where it would end first (EASY backfilling): later
jobs may take them only if done by the time it starts; a job with a deadline that waits
for its release reserves too once its latest start is near. A deadline is read as the
latest end that lets every successor meet its own (:func:`_latest_ends`).

With space sharing, pair columns are ranked with the jobs by their own share over the
share of rounds they received; a chosen pair's two jobs hold one gang over the same
interval, each at its colocation speed, and each of the two segments names the other as
its partner. Every segment states the share of its job's work it does.

The realised shares differ from the allocation by a *tracking error*: per job, half the sum
over types of ``|realised - share|`` over the rounds it was runnable, counting time on a
type alone or paired (0 is perfect, 1 is disjoint), reported as mean and maximum. A job
that runs in one piece is far from any share below 1 by nature (it runs all the time or
not at all), so its error measures timing, not tracking.

**Bounded work.** A plan has at most :data:`MAX_ROUNDS` rounds (:class:`TooManyRoundsError`
otherwise). Rounds that must repeat the last one are not planned one by one: when no job
ended in a round, no pair could run, and either every runnable job ran on the only type
its share names (or, with no share, wherever it ran) or only jobs that keep their GPUs
ran, the next rounds are the same until a job ends or one is released, and they are
planned in one step. Rounds in which nothing can run are skipped to the next release.
Given a budget, planning that has not ended when its time is spent stops and returns
None: no partial plan.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpuplan.core.budget import Budget
from gpuplan.core.errors import InputError, setting
from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.models.allocation import PairColumns, chain_windows

#: Gavel's round length in seconds (its simulator's default).
GAVEL_ROUND_S = 360.0
#: A preemptible job with a deadline whose slack (its latest start on its fastest type,
#: less the round's start) is at most this many rounds runs before every other job, on a
#: type where it still ends in time: its share, spread to its deadline, left nothing to
#: spare, and rounds lost to contention would make it late.
URGENT_ROUNDS = 2.0
#: Most rounds a round-based plan may have. A round in which jobs contend for GPUs costs
#: more to plan the more jobs and GPUs it has (measured), and this many keep the planning
#: of even a large batch within a long time limit; rounds that repeat the last one are
#: planned in one step and cost next to nothing.
MAX_ROUNDS = 100_000


#: Seconds each segment of a plan costs after the solve: its translation to a schedule,
#: verification and writing (measured on plans of tens and hundreds of thousands of
#: segments). Counted against the time limit while rounds are planned.
SEGMENT_COST_S = 3e-5


def busy_time(instance: Instance) -> float:
    """Seconds any plan spends running jobs, at least (idle waits for releases aside).

    The larger of the longest dependency chain at the shortest run times and the total
    shortest work over every GPU (divided by the largest gain of space sharing).
    """
    shortest = instance.min_duration
    chain = np.array(shortest, dtype=float)
    if any(instance.predecessors):
        for j in instance.topological_order.tolist():
            before = instance.predecessors[j]
            if before:
                chain[j] = shortest[j] + max(float(chain[p]) for p in before)
    area = float((instance.gang * shortest).sum()) / (instance.n_gpus * instance.pair_gain)
    return max(float(chain.max(initial=0.0)), area)


def _round_up(value: float) -> float:
    """``value`` rounded up to three significant digits."""
    if not value > 0:
        return value
    unit = 10.0 ** (math.floor(math.log10(value)) - 2)
    return math.ceil(value / unit) * unit


def _count(value: float) -> str:
    """A round count for a message: digits with separators, or a power of ten."""
    return f"{math.ceil(value):,}" if value < 1e12 else f"{value:.3g}"


def check_round(instance: Instance, round_s: float) -> None:
    """``--round`` must cover the plan in at most :data:`~gpuplan.parts.round_plans.MAX_ROUNDS`.

    The plan's rounds run jobs for :func:`busy_time` seconds at least, so more than
    ``MAX_ROUNDS`` rounds of ``round_s`` are certain when ``busy_time / round_s`` exceeds
    it; checked before any work.

    Raises
    ------
    InputError
        Naming ``--round``, with the shortest round that could work.
    """
    # Every job takes a round at least, and a round runs gangs on each GPU once (twice
    # when jobs may share): however long the rounds, this many are needed.
    per_round = instance.n_gpus * (2 if instance.class_ids else 1)
    least_rounds = float(instance.gang.sum()) / per_round
    if least_rounds > MAX_ROUNDS:
        raise InputError(setting("method"), "", f"balance plans in at most {MAX_ROUNDS:,} rounds, "
                         f"each running at most {per_round:,} GPUs' worth of gangs; the "
                         f"{instance.n_jobs:,} jobs need {_count(least_rounds)} rounds at "
                         f"least whatever `round_s` is; use `method` greedy or cp")
    busy = busy_time(instance)
    if busy / round_s > MAX_ROUNDS:
        least = _round_up(busy / MAX_ROUNDS)
        while busy / least > MAX_ROUNDS:
            least = _round_up(math.nextafter(least, math.inf))
        raise InputError(setting("round_s"), "", f"{_count(busy / round_s)} rounds of "
                         f"{round_s:g} s would be needed to cover the plan's horizon of at least "
                         f"{busy:g} s (a round-based plan has at most {MAX_ROUNDS:,} rounds); "
                         f"use `round_s` of at least {least:g}")


def too_many(error: TooManyRoundsError, round_s: float) -> str:
    """The ``--round`` message of a plan that ran out of rounds.

    The rounds still needed are estimated from the share of the work done, with a
    tenth more for the tail, and never less than twice the rounds tried.
    """
    least = _round_up(round_s * max(2.0, 1.1 / max(error.done, 1e-9)))
    return (f"the round-based plan needs more than {MAX_ROUNDS:,} rounds of {round_s:g} s "
            f"(they covered {error.covered_s:g} s and {error.done:.1%} of the work); use "
            f"--round of at least {least:g}, or --method greedy or cp")


@dataclass(frozen=True)
class Residual:
    """What is left of a batch part way through a round-based plan: an allocation's input.

    Attributes
    ----------
    now
        The time in seconds.
    jobs
        ``(K,)`` the unfinished jobs, ready or not (waiting for a release or a
        predecessor).
    remaining
        ``(K,)`` share of each one's work left, in ``(0, 1]``.
    held
        ``(K,)`` the type each job runs on when it holds its GPUs until it ends (started,
        not preemptible); -1 where it may take any type.
    """

    now: float
    jobs: IntArray
    remaining: FloatArray
    held: IntArray


#: Given a :class:`Residual`, the ``(J, T)`` shares to follow from now on (0 for the
#: jobs not in it), or None to keep following the last ones.
Reallocate = Callable[[Residual], FloatArray | None]


class TooManyRoundsError(Exception):
    """A round-based plan needs more than :data:`MAX_ROUNDS` rounds.

    Parameters
    ----------
    rounds
        Rounds planned when the limit was reached.
    covered_s
        Seconds of plan those rounds covered.
    done
        Share of the jobs' work those rounds did.
    """

    def __init__(self, rounds: int, covered_s: float, done: float) -> None:
        self.rounds = rounds
        self.covered_s = covered_s
        self.done = done
        super().__init__(f"{rounds} rounds cover {covered_s:g} s of the plan and "
                         f"{done:.1%} of the work")


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
    partner
        The segment that shares each segment's GPUs over its interval (space sharing),
        -1 for none.
    tracking_error
        ``(J,)`` per job, see the module docstring.
    rounds
        Rounds planned (those planned in one step count one by one).
    """

    job: IntArray
    gpu_type: IntArray
    start: FloatArray
    end: FloatArray
    gpus: tuple[IntArray, ...]
    work: FloatArray
    partner: IntArray
    tracking_error: FloatArray
    rounds: int


#: Above any free count: marks groups too small for a gang.
_NO_ROOM = np.iinfo(np.int64).max


class _Fleet:
    """The GPUs by (node, type) group, with each round's free GPUs.

    A gang takes the GPUs it held last round when they are free, else the lowest-numbered
    free GPUs of the group (one node, one type) with the fewest free GPUs that still holds
    it, keeping big blocks for big gangs. Work per take is one group's GPUs, not the fleet.
    """

    def __init__(self, instance: Instance) -> None:
        n_types = instance.n_types
        group = instance.gpu_node.astype(np.int64) * n_types + instance.gpu_type
        ids, self.group_of = np.unique(group, return_inverse=True)
        order = np.argsort(self.group_of, kind="stable")
        self.size = np.bincount(self.group_of, minlength=ids.size)
        bounds = np.r_[0, np.cumsum(self.size)]
        self.members = [order[bounds[g]:bounds[g + 1]] for g in range(ids.size)]
        # Groups of each type by node (ids are node-major, so np.unique sorted them).
        kind = ids % n_types
        self.of_type = [np.flatnonzero(kind == t) for t in range(n_types)]
        self.largest = np.array([self.size[g].max(initial=0) for g in self.of_type])
        self.n_gpus = instance.n_gpus
        self.free = np.ones(self.n_gpus, dtype=bool)
        self.group_free = self.size.copy()

    def reset(self) -> None:
        """Every GPU free, for a new round."""
        self.free[:] = True
        self.group_free[:] = self.size

    def hold(self, gpus: IntArray) -> None:
        """Mark a gang's GPUs (one group) busy for the round."""
        self.free[gpus] = False
        self.group_free[self.group_of[gpus[0]]] -= gpus.size

    def take(self, k: int, t: int, last: IntArray | None,
             usable: np.ndarray | None = None) -> IntArray | None:
        """``k`` free GPUs of type ``t`` on one node (``last``, GPUs of ``t``, if free).

        ``usable``: the GPUs the gang may take, free ones that no reservation keeps from
        it (None: every free GPU).
        """
        mask = self.free if usable is None else usable
        if last is not None and mask[last].all():
            return last
        groups = self.of_type[t]
        counts = (self.group_free[groups] if usable is None
                  else np.array([int(mask[self.members[g]].sum()) for g in groups]))
        fits = counts >= k
        if not fits.any():
            return None
        g = int(groups[np.argmin(np.where(fits, counts, _NO_ROOM))])
        members = self.members[g]
        picked: IntArray = members[mask[members]][:k]
        return picked

    def earliest(self, k: int, t: int, free_at: FloatArray) -> tuple[float, IntArray] | None:
        """When ``k`` GPUs of type ``t`` on one node are free first, and which, or None.

        ``free_at``: when each GPU is free, as far as the jobs holding it say.
        """
        best: tuple[float, IntArray] | None = None
        for g in self.of_type[t].tolist():
            members = self.members[g]
            if members.size < k:
                continue
            first = members[np.argsort(free_at[members], kind="stable")[:k]]
            when = float(free_at[first].max())
            if best is None or when < best[0]:
                best = (when, first)
        return best


def plan_rounds(instance: Instance, share: FloatArray, round_s: float,
                pairs: PairColumns | None = None,
                pair_share: FloatArray | None = None,
                budget: Budget | None = None,
                segment_cost_s: float = 0.0,
                reallocate: Reallocate | None = None,
                wide_first: bool = True) -> RoundPlan | None:
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
    budget
        Planning that has not ended when its time is spent stops and returns None; None:
        no limit.
    segment_cost_s
        Seconds each segment will cost after planning (translation, verification,
        writing); counted against ``budget``.
    reallocate
        Called at the start of a round when the ready jobs or the jobs holding their GPUs
        changed since the last call (a job ended, was released or unblocked, or started
        without preemption), with what is left: the shares it returns are followed from
        then on (without pairs). None: ``share`` throughout.
    wide_first
        Jobs in one piece start by their share of the GPUs (gang times time share), else
        by their share of the time (:meth:`_Following.starts`).

    Raises
    ------
    TooManyRoundsError
        If the plan needs more than :data:`MAX_ROUNDS` rounds.
    """
    planner = _RoundPlanner(instance, share, round_s, pairs, pair_share, reallocate,
                            wide_first)
    while (planner.remaining > 0).any():
        if planner.rounds >= MAX_ROUNDS:
            raise TooManyRoundsError(planner.rounds, planner.now,
                                     1.0 - float(planner.remaining.mean()))
        if budget is not None and budget.left() < len(planner.segments) * segment_cost_s:
            return None
        ready = planner.ready()
        if not ready.any():
            planner.skip_to_release()
            continue
        planner.follow(ready)
        chosen = planner.choose(ready)
        ended, ran = planner.run(chosen, ready)
        if not ended and not chosen.both.any():
            planner.repeat(chosen, ready, ran)
    return planner.plan()


#: One gang's run in a round: its jobs (two when space-shared), their speeds, its type and
#: its GPUs.
_Run = tuple[tuple[int, ...], tuple[float, ...], int, IntArray]


class _Segments:
    """The plan's segments as they grow.

    A job's run continued on the same GPUs, type and partner extends its open segment;
    any other run opens a new one.
    """

    def __init__(self, n_jobs: int) -> None:
        self.job: list[int] = []
        self.gpu_type: list[int] = []
        self.start: list[float] = []
        self.end: list[float] = []
        self.work: list[float] = []
        self.partner: list[int] = []
        #: The partner's segment of a space-shared segment (-1 for none).
        self.mate: list[int] = []
        self.gpus: list[IntArray] = []
        #: Each job's segment that its next run may extend (-1 for none).
        self.open = np.full(n_jobs, -1)

    def __len__(self) -> int:
        return len(self.job)

    def record(self, j: int, t: int, now: float, stop: float, done: float, partner: int,
               gpus: IntArray) -> None:
        """Job ``j`` ran on ``gpus`` (type ``t``) from ``now`` to ``stop``, doing ``done``."""
        k = int(self.open[j])
        if k >= 0 and self.gpu_type[k] == t and self.end[k] == now \
                and self.partner[k] == partner and (
                    self.gpus[k] is gpus or np.array_equal(self.gpus[k], gpus)):
            self.end[k] = stop
            self.work[k] += done
            return
        self.open[j] = len(self.job)
        self.job.append(j)
        self.gpu_type.append(t)
        self.start.append(now)
        self.end.append(stop)
        self.work.append(done)
        self.partner.append(partner)
        self.mate.append(-1)
        self.gpus.append(gpus)

    def pair(self, a: int, b: int) -> None:
        """The open segments of ``a`` and ``b`` share a gang: each names the other."""
        first, second = int(self.open[a]), int(self.open[b])
        self.mate[first], self.mate[second] = second, first

    def extend(self, j: int, span: float, work: float) -> None:
        """Job ``j``'s open segment goes on for ``span`` more seconds, doing ``work``."""
        k = int(self.open[j])
        self.end[k] += span
        self.work[k] += work


@dataclass
class _Round:
    """What one round decided: its runs (pinned ones first) and the pairs it could run."""

    runs: list[_Run]
    n_pinned: int
    both: np.ndarray


class _RoundPlanner:
    """The state of a round-based plan as it is made, and its steps (see :func:`plan_rounds`)."""

    def __init__(self, instance: Instance, share: FloatArray, round_s: float,
                 pairs: PairColumns | None, pair_share: FloatArray | None,
                 reallocate: Reallocate | None, wide_first: bool) -> None:
        n_jobs, n_types = instance.n_jobs, instance.n_types
        self.instance, self.round_s = instance, round_s
        self.reallocate, self.wide_first = reallocate, wide_first
        self.fleet = _Fleet(instance)
        self.duration = np.where(instance.eligible, instance.duration, np.inf)
        self.gang = instance.gang.tolist()
        fits = instance.eligible & (instance.gang[:, None] <= self.fleet.largest[None, :])
        if not fits.any(axis=1).all():
            j = int(np.flatnonzero(~fits.any(axis=1))[0])
            raise RuntimeError(f"job {instance.job_ids[j]!r} fits on no node of its types")
        self.remaining = np.ones(n_jobs)
        self.finish = np.full(n_jobs, np.inf)
        self.received = np.zeros((n_jobs, n_types))
        self.alone = np.zeros((n_jobs, n_types))
        self.active = np.zeros(n_jobs)
        if pairs is None or pair_share is None:
            pairs, pair_share = PairColumns(*(np.zeros(0, dtype=np.int64),) * 3), np.zeros(0)
        keep = pair_share > 1e-9
        self.pair_a, self.pair_b = pairs.a[keep], pairs.b[keep]
        self.pair_t, self.pair_share = pairs.gpu_type[keep], pair_share[keep]
        self.pair_got = np.zeros(self.pair_a.size)
        self.pair_active = np.zeros(self.pair_a.size)
        self.speed_a, self.speed_b = _pair_speeds(instance, self.pair_a, self.pair_b,
                                                  self.pair_t)
        paired = np.zeros((n_jobs, n_types))
        np.add.at(paired, (self.pair_a, self.pair_t), self.pair_share)
        np.add.at(paired, (self.pair_b, self.pair_t), self.pair_share)
        self.rate = np.where(np.isfinite(self.duration), 1.0 / self.duration, 0.0)
        tail = chain_windows(instance, np.arange(n_jobs))[1]
        self.following = _Following.of(share, paired, self.rate, self.remaining, 0.0, tail)
        # Seconds of each job on each type that the shares followed asked for so far.
        self.targeted = np.zeros((n_jobs, n_types))
        self.held: list[IntArray | None] = [None] * n_jobs
        self.pinned = np.zeros(n_jobs, dtype=bool)
        self.preemptible = instance.preemptible.tolist()
        # Types with no share rank after every shared one, fastest first.
        self.fallback = -1.0 - self.duration / self.duration.max(
            initial=1.0, where=np.isfinite(self.duration))
        self.deadline = _latest_ends(instance)
        self.segments = _Segments(n_jobs)
        # Unfinished predecessors per job; a job that ends in a round is done by the next.
        self.blocking = np.array([len(p) for p in instance.predecessors], dtype=np.int64)
        self.now, self.rounds = 0.0, 0
        self.last_state: tuple[np.ndarray, np.ndarray] | None = None

    def ready(self) -> np.ndarray:
        """The jobs that may run this round: released, unblocked, not done."""
        ready: np.ndarray = ((self.remaining > 0) & (self.instance.release <= self.now)
                             & (self.blocking == 0))
        return ready

    def skip_to_release(self) -> None:
        """Nothing can run: jump to the round of the next release."""
        release = self.instance.release
        later = release[(release > self.now) & (self.remaining > 0)]
        if later.size == 0:
            raise RuntimeError("round-based planning is stuck: no job can become ready")
        first = float(later.min())
        jump = math.ceil(first / self.round_s) * self.round_s
        self.now = jump if jump >= first else jump + self.round_s
        self.segments.open[:] = -1

    def follow(self, ready: np.ndarray) -> None:
        """Re-solve the shares when the ready or pinned jobs changed since the last round."""
        if self.reallocate is None:
            return
        if self.last_state is not None and not (
                np.array_equal(ready, self.last_state[0])
                and np.array_equal(self.pinned, self.last_state[1])):
            self.following = _reallocated(self.reallocate, self.following, self.instance,
                                          self.held, self.pinned, self.remaining, self.rate,
                                          self.now)
        self.last_state = (ready, self.pinned.copy())

    def choose(self, ready: np.ndarray) -> _Round:
        """The round's runs: pinned jobs keep their GPUs, the others are taken by rank."""
        instance, fleet, n_types = self.instance, self.fleet, self.instance.n_types
        fleet.reset()
        self.free_of_type = np.bincount(instance.gpu_type, minlength=n_types).tolist()
        self.free_total = fleet.n_gpus
        runs: list[_Run] = []
        for pin in np.flatnonzero(self.pinned & ready).tolist():
            gpus = self.held[pin]
            assert gpus is not None
            self._hold(gpus)
            runs.append(((pin,), (1.0,), int(instance.gpu_type[gpus[0]]), gpus))
        n_pinned = len(runs)
        priority, rank_class, fresh = self._rank(ready)
        both = ready[self.pair_a] & ready[self.pair_b]
        pair_priority = np.where(both, self.pair_share / np.maximum(
            self.pair_got / np.maximum(self.pair_active, 1e-12), 1e-9), -np.inf)
        # One ranking of single (job, type) entries, then pairs, highest first.
        ranked = np.r_[priority.ravel(), pair_priority]
        classes = np.r_[rank_class.ravel(), np.ones(pair_priority.size)]
        candidates = np.flatnonzero(np.isfinite(ranked))
        order = candidates[np.lexsort((-ranked[candidates], -classes[candidates]))]
        # When each GPU is free, as far as the jobs given it so far say, and the end a
        # job's run must keep to on each (the reservation, see the module docstring).
        free_at = np.full(fleet.n_gpus, self.now)
        for (pin,), _, t, gpus in runs:
            free_at[gpus] = self.now + float(self.remaining[pin]) * float(self.duration[pin, t])
        keep_to = np.full(fleet.n_gpus, np.inf)
        reserved = self._reserve_coming(ready, fresh, free_at, keep_to)
        if self.free_total > 0:
            self._take(order, priority, rank_class, runs, free_at, keep_to, reserved)
        return _Round(runs, n_pinned, both)

    def _hold(self, gpus: IntArray) -> None:
        """A gang's GPUs are busy this round."""
        self.fleet.hold(gpus)
        self.free_of_type[int(self.instance.gpu_type[gpus[0]])] -= gpus.size
        self.free_total -= gpus.size

    def _rank(self, ready: np.ndarray) -> tuple[FloatArray, FloatArray, IntArray]:
        """Each (job, type) entry's rank class and priority, and the jobs to start whole.

        Jobs rank by how far they lag their share (Gavel's priority); jobs in one piece by
        :meth:`_Following.starts`; movable jobs near their deadline first.
        """
        instance, following = self.instance, self.following
        n_jobs, n_types = instance.n_jobs, instance.n_types
        pinned = self.pinned
        lag = np.where(ready[:, None] & instance.eligible & ~pinned[:, None],
                       following.share / np.maximum(
                           self.alone / np.maximum(self.active[:, None], 1e-12), 1e-9),
                       -np.inf)
        priority = np.where(following.has_share, lag,
                            np.where(np.isfinite(lag), self.fallback, -np.inf))
        rank_class = np.ones((n_jobs, n_types))
        fresh = np.flatnonzero(ready & ~pinned & ~instance.preemptible)
        if fresh.size:
            rank_class[fresh], priority[fresh] = following.starts(
                fresh, self.duration[fresh], self.deadline[fresh],
                instance.gang[fresh].astype(float) if self.wide_first else np.ones(fresh.size),
                self.now)
        _urgent_first(rank_class, priority, ready & ~pinned & instance.preemptible,
                      self.remaining, self.duration, self.deadline, self.now,
                      URGENT_ROUNDS * self.round_s)
        # Entries whose gang exceeds what is left of their type after the pinned jobs
        # cannot be served this round.
        room = np.array(self.free_of_type)
        priority[(instance.gang[:, None] > room[None, :]) & (rank_class < 2)] = -np.inf
        return priority, rank_class, fresh

    def _reserve_coming(self, ready: np.ndarray, fresh: IntArray, free_at: FloatArray,
                        keep_to: FloatArray) -> bool:
        """Reserve GPUs for jobs in one piece with a deadline whose latest start is near.

        Jobs with a deadline that wait for their release or predecessors, and whose latest
        start comes before a job starting now could end, reserve first: GPUs that only
        jobs ending by that latest start (or their earliest start, their head, if later)
        may take. Whether any was reserved.
        """
        instance, remaining = self.instance, self.remaining
        coming = np.flatnonzero((remaining > 0) & ~ready & np.isfinite(self.deadline)
                                & ~instance.preemptible)
        latest = self.deadline[coming] - instance.min_duration[coming]
        near = latest <= self.now + float(instance.min_duration[fresh].max(initial=0.0))
        if not near.any():
            return False
        unfinished = np.flatnonzero(remaining > 0)
        head = np.zeros(instance.n_jobs)
        head[unfinished] = chain_windows(instance, unfinished, remaining[unfinished],
                                         self.now)[0]
        for j, last in zip(coming[near].tolist(), latest[near].tolist(), strict=True):
            start = max(self.now + float(head[j]), last)
            in_time = instance.eligible[j] & (start + self.duration[j] <= self.deadline[j])
            _reserve(self.fleet, self.gang[j], np.flatnonzero(
                in_time if in_time.any() else instance.eligible[j]),
                start, float(remaining[j]) * self.duration[j], free_at, keep_to)
        return True

    def _take(self, order: IntArray, priority: FloatArray, rank_class: FloatArray,
              runs: list[_Run], free_at: FloatArray, keep_to: FloatArray,
              reserved: bool) -> None:
        """Give GPUs to the entries in rank order until none is free; appends to ``runs``."""
        instance, fleet = self.instance, self.fleet
        n_types = instance.n_types
        n_single = instance.n_jobs * n_types
        gpu_type, gang, free_of_type = instance.gpu_type, self.gang, self.free_of_type
        chosen = self.pinned.tolist()
        easy = False
        types = np.arange(n_types)
        for flat in order.tolist():
            if flat < n_single:
                j, t = divmod(flat, n_types)
                if chosen[j]:
                    continue
                members: tuple[int, ...] = (j,)
                speeds: tuple[float, ...] = (1.0,)
            else:
                p = flat - n_single
                j, b, t = int(self.pair_a[p]), int(self.pair_b[p]), int(self.pair_t[p])
                if chosen[j] or chosen[b] or free_of_type[t] < gang[j]:
                    continue
                members, speeds = (j, b), (float(self.speed_a[p]), float(self.speed_b[p]))
            whole = not self.preemptible[j]
            until = self.now + (float(self.remaining[j]) * float(self.duration[j, t]) if whole
                                else self.round_s)
            last = self.held[j]
            gpus = None if free_of_type[t] < gang[j] else fleet.take(
                gang[j], t, last if last is not None and int(gpu_type[last[0]]) == t
                else None, fleet.free & (keep_to >= until) if reserved else None)
            if gpus is None:
                # A job with a deadline that finds no room reserves the GPUs where it
                # ends first, and so does the first other job on its main type; later
                # jobs may use them only if done by then.
                if whole and (rank_class[j, t] == 3 or (rank_class[j, t] == 2 and not easy)):
                    _reserve(fleet, gang[j], np.flatnonzero(
                        np.isfinite(priority[j]) if rank_class[j, t] == 3 else t == types),
                        self.now, float(self.remaining[j]) * self.duration[j], free_at,
                        keep_to)
                    easy |= rank_class[j, t] == 2
                    reserved = True
                continue
            free_at[gpus] = until
            for m in members:
                chosen[m] = True
            self._hold(gpus)
            runs.append((members, speeds, t, gpus))
            if len(members) == 2:
                self.pair_got[flat - n_single] += 1.0
            if self.free_total == 0:
                break

    def run(self, chosen: _Round, ready: np.ndarray) -> tuple[bool, np.ndarray]:
        """Play the round out: work done, segments, jobs ended; whether one ended, who ran."""
        instance, remaining, now = self.instance, self.remaining, self.now
        span = _round_length(instance, chosen.runs, remaining, self.duration, now,
                             self.round_s)
        end_of_round = now + span
        self.pair_active[chosen.both] += 1.0
        ran = np.zeros(instance.n_jobs, dtype=bool)
        ended = False
        for members, speeds, t, gpus in chosen.runs:
            # A shared gang runs until the round ends or one of its jobs is done.
            left = [float(remaining[j]) * float(self.duration[j, t]) / v
                    for j, v in zip(members, speeds, strict=True)]
            length = min(span, *left)
            stop = now + length
            for j, v, need in zip(members, speeds, left, strict=True):
                ran[j] = True
                done = length * v / float(self.duration[j, t])
                # Done when what is left is float noise of the job's whole run time.
                if need - length <= 1e-9 * max(1.0, float(self.duration[j, t]) / v):
                    done = float(remaining[j])
                remaining[j] -= done
                self.received[j, t] += length
                if len(members) == 1:
                    self.alone[j, t] += length
                partner = sum(members) - j if len(members) == 2 else -1
                self.segments.record(j, t, now, stop, done, partner, gpus)
                self.held[j] = gpus
                if not self.preemptible[j]:
                    self.pinned[j] = True
                if remaining[j] <= 0:
                    remaining[j] = 0.0
                    self.finish[j] = stop
                    self.pinned[j] = False
                    ended = True
                    for s in instance.successors[j]:
                        self.blocking[s] -= 1
            if len(members) == 2:
                # A pair's two segments begin, grow and end together: each names the other.
                self.segments.pair(*members)
        self.segments.open[~ran] = -1
        finish = self.finish[ready]
        step = np.minimum(span, np.where(np.isfinite(finish), finish, end_of_round) - now)
        self.active[ready] += step
        self.targeted[ready] += self.following.target[ready] * step[:, None]
        self.now = end_of_round
        self.rounds += 1
        return ended, ran

    def repeat(self, chosen: _Round, ready: np.ndarray, ran: np.ndarray) -> None:
        """Plan in one step the next rounds that repeat this one (see the module docstring)."""
        runs = chosen.runs
        ranked_runs = runs[chosen.n_pinned:]
        if ranked_runs:
            if not ran[ready].all():
                return
            following = self.following
            steady = all(not self.preemptible[j] or (following.one_type[j] and (
                following.has_share[j, t] or not following.has_share[j].any()))
                for (j,), _, t, _ in ranked_runs)
            if not steady:
                return
        repeat = _repeats(self.instance, runs, self.remaining, self.duration, ready,
                          self.blocking, self.now, self.round_s)
        repeat = min(repeat, MAX_ROUNDS - self.rounds)
        if repeat <= 0:
            return
        span = repeat * self.round_s
        for (j,), _, t, _ in runs:
            work = span / float(self.duration[j, t])
            self.remaining[j] -= work
            self.received[j, t] += span
            self.alone[j, t] += span
            self.segments.extend(j, span, work)
        self.active[ready] += span
        self.targeted[ready] += self.following.target[ready] * span
        self.now += span
        self.rounds += repeat

    def plan(self) -> RoundPlan:
        """The plan made, with each job's tracking error."""
        error = (0.5 * np.abs(self.received - self.targeted).sum(axis=1)
                 / np.maximum(self.active, 1e-12))
        segments = self.segments
        return RoundPlan(job=np.array(segments.job, dtype=np.int64),
                         gpu_type=np.array(segments.gpu_type, dtype=np.int64),
                         start=np.array(segments.start, dtype=float),
                         end=np.array(segments.end, dtype=float), gpus=tuple(segments.gpus),
                         work=np.array(segments.work, dtype=float),
                         partner=np.array(segments.mate, dtype=np.int64),
                         tracking_error=error, rounds=self.rounds)


@dataclass(frozen=True)
class _Following:
    """The shares a plan follows, and what its rounds read of them.

    Attributes
    ----------
    share
        ``(J, T)`` time shares of jobs alone.
    target
        ``(J, T)`` time share of each job on each type, alone or paired.
    has_share, one_type
        Where a share is positive; jobs whose share names at most one type.
    urgency
        ``(J,)`` each job's share of the time, summed over types: the part of the time
        left it must run to keep to the shares.
    tail
        ``(J,)`` the shortest time each job's successors need after it (seconds).
    horizon
        When the last unfinished job with a share ends at the shares' rates, followed by
        its tail (seconds).
    """

    share: FloatArray
    target: FloatArray
    has_share: np.ndarray
    one_type: np.ndarray
    urgency: FloatArray
    tail: FloatArray
    horizon: float

    @classmethod
    def of(cls, share: FloatArray, paired: FloatArray, rate: FloatArray,
           remaining: FloatArray, now: float, tail: FloatArray) -> _Following:
        """The shares ``share`` (and ``paired``, pairs' per job) followed from ``now``."""
        target = share + paired
        has_share = share > 0
        throughput = (rate * target).sum(axis=1)
        moving = (remaining > 0) & (throughput > 0)
        horizon = now + float((remaining[moving] / throughput[moving] + tail[moving]).max(
            initial=0.0))
        return cls(share, target, has_share, has_share.sum(axis=1) <= 1, target.sum(axis=1),
                   tail, horizon)

    def starts(self, jobs: IntArray, run_time: FloatArray, deadline: FloatArray,
               gang: FloatArray, now: float) -> tuple[FloatArray, FloatArray]:
        """Rank classes and priorities of starting these jobs in one piece on each type.

        A job that will hold its GPUs until it ends runs whole on the type it starts on,
        so it may start only where it would end, followed by its tail, by the shares'
        horizon (run whole on a slow type, it would outlast the plan) and by its latest
        end (its deadline's, see :func:`_latest_ends`); where no type allows that, only
        on the types where it ends first. Of those, the type doing most of its work under
        the shares is its main one (class 2); the others rank after every other entry
        (class 0), by the same priority. Within class 2, the largest share of the GPUs
        first (gang times :attr:`urgency`): wide and long jobs left to the end would leave
        GPUs idle around them. A job whose latest start (latest end less its run on the
        main type) is less than that run away comes before all (class 3, on each type it
        may start on), the latest start first.

        Parameters
        ----------
        jobs
            ``(F,)`` the jobs, ready and not started.
        run_time
            ``(F, T)`` their run times, ``inf`` where they cannot run.
        deadline
            ``(F,)`` their latest ends, ``inf`` where none.
        gang
            ``(F,)`` their gangs (1 each: their share of the time alone).
        now
            The round's start.

        Returns
        -------
        tuple
            ``(F, T)`` rank classes and priorities (``-inf`` where the job does not start).
        """
        rows = np.arange(jobs.size)
        end = now + run_time
        allowed = ((end + self.tail[jobs][:, None] <= self.horizon * (1 + 1e-9))
                   & (end <= deadline[:, None]))
        first = end.min(axis=1, keepdims=True)
        allowed |= ~allowed.any(axis=1, keepdims=True) & (end <= first) & np.isfinite(end)
        work = np.where(allowed, self.share[jobs] / run_time, -1.0)
        main = work.argmax(axis=1)
        run_main = run_time[rows, main]
        due = deadline - run_main <= now + run_main
        urgency = np.where(due, now - (deadline - run_main), gang * self.urgency[jobs])
        classes = np.zeros(run_time.shape)
        classes[rows, main] = 2.0
        classes[due] = np.where(allowed[due], 3.0, 0.0)
        priority = np.where(allowed, urgency[:, None], -np.inf)
        return classes, priority


def _urgent_first(rank_class: FloatArray, priority: FloatArray, movable: np.ndarray,
                  remaining: FloatArray, duration: FloatArray, deadline: FloatArray,
                  now: float, slack_s: float) -> None:
    """Rank first (class 3) the movable jobs whose deadline leaves at most ``slack_s``.

    Such a job's entries on the types where it still ends by its latest end (or, where
    none does, on its fastest) come before all others, the least slack first; in place.
    """
    jobs = np.flatnonzero(movable & np.isfinite(deadline))
    if jobs.size == 0:
        return
    latest_start = deadline[jobs, None] - remaining[jobs, None] * duration[jobs]
    # -inf on the types the job cannot use (an infinite run time).
    near = latest_start.max(axis=1) - now <= slack_s
    if not near.any():
        return
    jobs, latest_start = jobs[near], latest_start[near]
    allowed = latest_start >= now
    allowed |= ~allowed.any(axis=1, keepdims=True) & (
        latest_start >= latest_start.max(axis=1, keepdims=True))
    allowed &= np.isfinite(latest_start)
    rank_class[jobs] = np.where(allowed, 3.0, rank_class[jobs])
    priority[jobs] = np.where(allowed, now - latest_start, priority[jobs])


def _reallocated(reallocate: Reallocate, following: _Following, instance: Instance,
                 held: list[IntArray | None], pinned: np.ndarray, remaining: FloatArray,
                 rate: FloatArray, now: float) -> _Following:
    """The shares to follow from ``now``: ``reallocate``'s for what is left, or the last."""
    jobs = np.flatnonzero(remaining > 0)
    kept = np.full(jobs.size, -1, dtype=np.int64)
    for k in np.flatnonzero(pinned[jobs]).tolist():
        gpus = held[int(jobs[k])]
        assert gpus is not None
        kept[k] = int(instance.gpu_type[gpus[0]])
    share = reallocate(Residual(now, jobs, remaining[jobs], kept))
    if share is None:
        return following
    return _Following.of(share, np.zeros_like(share), rate, remaining, now, following.tail)


def _reserve(fleet: _Fleet, gang: int, types: IntArray, ready_at: float, run_time: FloatArray,
             free_at: FloatArray, keep_to: FloatArray) -> None:
    """Reserve for a gang the GPUs of ``types`` where it would end first (in place).

    ``free_at`` is when each GPU is free as the jobs holding or reserving it say (the
    reserved GPUs' becomes the gang's end), ``keep_to`` the end that a run on each GPU
    must keep to (the reserved GPUs' becomes the gang's start); ``run_time`` is the
    gang's on each type, from ``ready_at`` at the earliest.
    """
    best: tuple[float, float, IntArray] | None = None
    for t in types.tolist():
        found = fleet.earliest(gang, t, free_at)
        if found is not None:
            start = max(found[0], ready_at)
            end = start + float(run_time[t])
            if best is None or end < best[0]:
                best = (end, start, found[1])
    if best is not None:
        keep_to[best[2]] = np.minimum(keep_to[best[2]], best[1])
        free_at[best[2]] = best[0]


def _latest_ends(instance: Instance) -> FloatArray:
    """``(J,)`` the latest each job may end so that it and its successors meet their deadlines.

    A job's own deadline, or earlier: a successor's latest end less its shortest run time.
    """
    latest = instance.deadline.astype(float)
    if any(instance.predecessors):
        shortest = instance.min_duration
        for j in instance.topological_order[::-1].tolist():
            for q in instance.successors[j]:
                latest[j] = min(latest[j], latest[q] - shortest[q])
    return latest


def _round_length(instance: Instance,
                  runs: list[tuple[tuple[int, ...], tuple[float, ...], int, IntArray]],
                  remaining: FloatArray, duration: FloatArray, now: float,
                  round_s: float) -> float:
    """The round's length: ``round_s``, or less when only jobs that keep their GPUs run.

    Rounds exist to deal preemptible jobs' GPUs afresh. When every job running holds its
    GPUs until it ends, the round ends at the first of their ends or of the releases
    instead: the GPUs freed then are dealt at once rather than idling to the round's end.
    """
    if not runs or any(instance.preemptible[j] for members, _, _, _ in runs for j in members):
        return round_s
    first = min(float(remaining[j]) * float(duration[j, t]) for (j,), _, t, _ in runs)
    later = instance.release[(instance.release > now) & (remaining > 0)]
    return min(round_s, first, float(later.min(initial=math.inf)) - now)


def _repeats(instance: Instance, runs: list[tuple[tuple[int, ...], tuple[float, ...], int,
                                                   IntArray]],
             remaining: FloatArray, duration: FloatArray, ready: np.ndarray,
             blocking: IntArray, now: float, round_s: float) -> int:
    """Whole rounds after ``now`` in which no running job ends and no job is released.

    One round of margin on each side keeps float rounding from moving an event.
    """
    count = float("inf")
    for (j,), _, t, _ in runs:
        count = min(count, float(remaining[j]) * float(duration[j, t]) / round_s - 1.0)
    # Jobs that wait for their release only (no job ended, so none was unblocked).
    waiting = (remaining > 0) & ~ready & (blocking == 0)
    if waiting.any():
        count = min(count, (float(instance.release[waiting].min()) - now) / round_s - 1.0)
    if not math.isfinite(count):
        return 0
    return max(0, math.floor(count))


def _pair_speeds(instance: Instance, a: IntArray, b: IntArray,
                 t: IntArray) -> tuple[FloatArray, FloatArray]:
    """``(P,)`` the colocation speed of each pair's two jobs."""
    if a.size == 0:
        return np.zeros(0), np.zeros(0)
    cls, speed = instance.job_class, instance.colocation_speed
    return speed[cls[a], cls[b], t], speed[cls[b], cls[a], t]
