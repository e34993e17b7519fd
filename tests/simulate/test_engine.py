"""The simulator's engine on small hand-checked runs, each verified through ``simulate``.

The schedulers and placements here are tiny test-local classes registered for one test
(the real policies are tested on their own), so every number below follows from the
engine's rules alone: grants in the decision's order, restore overhead on every resume,
migration overhead on a move, locked jobs never stopped, rounds in round mode.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from conftest import instance_from

from gpuplan.core.errors import InputError
from gpuplan.core.instance import Instance, IntArray
from gpuplan.core.options import NoOptions
from gpuplan.core.schedule import Schedule, Segment, ViolationKind
from gpuplan.simulate import Mode, RunSpec, SimulationConfig, SimulationError, simulate
from gpuplan.simulate.policies import PLACEMENTS, SCHEDULERS
from gpuplan.simulate.policy import ClusterView, Decision, PolicyContext, View
from gpuplan.verify import verify_schedule

Decide = Callable[[View], Decision]
Wakeup = Callable[[View], float | None]
Document = dict[str, Any]


# -- test-local policy parts ---------------------------------------------------------


def in_arrival_order(view: View) -> Decision:
    """FIFO: the active jobs as the view lists them."""
    return Decision(view.jobs)


def shortest_remaining(view: View) -> Decision:
    """SRTF: the least remaining seconds (on the fastest type) first."""
    return Decision(view.jobs[np.argsort(view.remaining_s(view.jobs), kind="stable")])


def register_scheduler(monkeypatch: pytest.MonkeyPatch, decide: Decide, *,
                       preemptive: bool = True, wakeup: Wakeup | None = None,
                       seen: list[View] | None = None) -> str:
    """Register a scheduler deciding with ``decide`` for this test; its name.

    Every view it is shown is appended to ``seen`` (copied: the engine's arrays are only
    valid during the call).
    """
    stops = preemptive

    class Scripted:
        name: ClassVar[str] = "test-scripted"
        description: ClassVar[str] = "decides as the test says"
        options_type: ClassVar[type[Any]] = NoOptions
        modes: ClassVar[frozenset[Mode]] = frozenset(Mode)
        preemptive: ClassVar[bool] = stops
        # Held to no order or preemption promise: the tests script both.
        preempts_to_start: ClassVar[bool] = False

        @classmethod
        def fixed_order(cls, instance: Instance) -> IntArray | None:
            del instance
            return None

        def __init__(self, context: PolicyContext) -> None:
            del context

        def decide(self, view: View) -> Decision:
            if seen is not None:
                seen.append(_copied(view))
            return decide(view)

        def wakeup(self, view: View) -> float | None:
            return None if wakeup is None else wakeup(view)

    monkeypatch.setitem(SCHEDULERS, Scripted.name, Scripted)
    return Scripted.name


def _copied(view: View) -> View:
    return View(now=view.now, instance=view.instance, jobs=view.jobs.copy(),
                waiting=view.waiting.copy(), remaining=view.remaining.copy(),
                attained=view.attained.copy(), received=view.received.copy(),
                running_type=view.running_type.copy(), locked=view.locked.copy(),
                first_start=view.first_start.copy(), work_start=view.work_start.copy(),
                down_until=view.down_until.copy(), gpus=list(view.gpus),
                free=view.free.copy(), largest=view.largest.copy(),
                total=view.total.copy(), round_s=view.round_s)


def lowest_free(cluster: ClusterView, job: int, gpu_type: int) -> IntArray | None:
    """The lowest free GPUs of the type on the first node with enough of them."""
    need = int(cluster.instance.gang[job])
    for node in np.flatnonzero(cluster.free[:, gpu_type] >= need).tolist():
        gpus: IntArray = cluster.free_gpus(node, gpu_type)[:need]
        return gpus
    return None


def sticky(cluster: ClusterView, job: int, gpu_type: int) -> IntArray | None:
    """The job's previous GPUs when they are free and of the type, else the lowest free."""
    before = cluster.previous[job]
    if (before is not None and (cluster.owner[before] < 0).all()
            and (cluster.instance.gpu_type[before] == gpu_type).all()):
        return before
    return lowest_free(cluster, job, gpu_type)


def elsewhere(cluster: ClusterView, job: int, gpu_type: int) -> IntArray | None:
    """The highest free GPUs not held by the job before, so a resume always moves."""
    need = int(cluster.instance.gang[job])
    previous = cluster.previous[job]
    before = set(() if previous is None else previous.tolist())
    for node in np.flatnonzero(cluster.free[:, gpu_type] >= need).tolist()[::-1]:
        free = [g for g in cluster.free_gpus(node, gpu_type).tolist()[::-1] if g not in before]
        if len(free) >= need:
            return np.array(sorted(free[:need]), dtype=np.int64)
    return None


def register_placement(monkeypatch: pytest.MonkeyPatch,
                       place: Callable[[ClusterView, int, int], IntArray | None]) -> str:
    """Register a placement picking GPUs with ``place`` for this test; its name."""

    class Picking:
        name: ClassVar[str] = "test-picking"
        description: ClassVar[str] = "places as the test says"
        options_type: ClassVar[type[Any]] = NoOptions

        def __init__(self, context: PolicyContext) -> None:
            del context

        def place(self, cluster: ClusterView, job: int, gpu_type: int) -> IntArray | None:
            return place(cluster, job, gpu_type)

    monkeypatch.setitem(PLACEMENTS, Picking.name, Picking)
    return Picking.name


# -- instances and runs ----------------------------------------------------------------


def cluster(nodes: dict[str, dict[str, int]], jobs: list[Document]) -> Instance:
    """An instance with types A and B (B is slower in the jobs below), makespan objective."""
    return instance_from({
        "name": "engine",
        "gpu_types": [{"id": "A", "capacity": {"memory_gib": 16}},
                      {"id": "B", "capacity": {"memory_gib": 16}}],
        "nodes": [{"id": node, "gpus": gpus} for node, gpus in nodes.items()],
        "jobs": jobs,
        "objective": "makespan",
    })


def job(name: str, duration: float | dict[str, float], release: float = 0.0,
        **fields: Any) -> Document:
    """A preemptible one-GPU job unless ``fields`` say otherwise."""
    return {"id": name, "duration_s": duration, "release_s": release, "preemptible": True,
            **fields}


def run(monkeypatch: pytest.MonkeyPatch, instance: Instance, decide: Decide = shortest_remaining,
        *, mode: Mode = Mode.EVENT, round_s: float = 100.0, restart: float = 0.0,
        migration: float = 0.0, preemptive: bool = True,
        place: Callable[[ClusterView, int, int], IntArray | None] = sticky,
        wakeup: Wakeup | None = None, seen: list[View] | None = None) -> Schedule:
    """Simulate ``instance`` with test-local parts; the verified run log."""
    spec = RunSpec(
        scheduler=register_scheduler(monkeypatch, decide, preemptive=preemptive,
                                     wakeup=wakeup, seen=seen),
        placement=register_placement(monkeypatch, place),
        config=SimulationConfig(mode, round_s, restart, migration))
    schedule = simulate(instance, spec)
    assert schedule.verification is not None and schedule.verification.ok
    return schedule


def segments(schedule: Schedule, name: str) -> list[Segment]:
    """The job's segments in start order."""
    return [s for s in schedule.segments if s.job == name]


def completion(schedule: Schedule, name: str) -> float:
    """When the job's last segment ends."""
    return max(s.end_s for s in segments(schedule, name))


def events(schedule: Schedule, name: str) -> list[tuple[str, float, list[str]]]:
    """The job's events as (kind, time, GPUs)."""
    return [(e.kind.value, e.time_s, e.gpu_ids) for e in schedule.events if e.job == name]


#: One GPU: ``long`` (100 s) runs from 0; ``short`` (50 s) arrives at 30, when ``long``
#: has 70 s left, so a shortest-remaining-first scheduler preempts ``long`` for it.
ONE_GPU = {"n": {"A": 1}}


def preempted_pair(**long: Any) -> Instance:
    """``long`` and ``short`` on one GPU (see :data:`ONE_GPU`)."""
    return cluster(ONE_GPU, [job("long", 100, **long), job("short", 50, release=30)])


# -- runs whole, preemption, resume, migration ------------------------------------------


def test_job_run_whole_completes_after_its_duration(monkeypatch: pytest.MonkeyPatch) -> None:
    """A job alone runs whole from its arrival: one segment, start and complete events.

    If this broke, a run's completion times (every JCT) would be off from the start.
    """
    schedule = run(monkeypatch, cluster({"n": {"A": 2}}, [job("a", 100, release=10)]),
                   restart=30, migration=60)
    (only,) = segments(schedule, "a")
    assert (only.start_s, only.end_s, only.restore_s, only.migrate_s) == (10, 110, 0, 0)
    assert events(schedule, "a") == [("start", 10, ["n/0"]), ("complete", 110, ["n/0"])]
    assert schedule.objective == 110


def test_preempted_job_resumes_paying_the_restart_overhead(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``long`` is preempted at 30 and resumes on its GPU at 80, paying 30 s of restore.

    It completes at 80 + 30 + 70 = 180, exactly the overhead later than the 150 of a run
    without it; the resume on the same GPU is a resume event with no migration overhead.
    """
    paid = run(monkeypatch, preempted_pair(), restart=30, migration=60)
    free = run(monkeypatch, preempted_pair())
    assert completion(paid, "short") == completion(free, "short") == 80
    assert completion(paid, "long") == 180
    assert completion(paid, "long") - completion(free, "long") == 30
    first, second = segments(paid, "long")
    assert (first.start_s, first.end_s) == (0, 30) and first.work == pytest.approx(0.3)
    assert (second.start_s, second.restore_s, second.migrate_s) == (80, 30, 0)
    assert second.migrated_from is None and second.work == pytest.approx(0.7)
    assert [kind for kind, *_ in events(paid, "long")] == [
        "start", "preempt", "resume", "complete"]
    assert events(paid, "long")[2] == ("resume", 80, ["n/0"])


def test_resume_on_other_gpus_is_a_migration(monkeypatch: pytest.MonkeyPatch) -> None:
    """A resume on another GPU is a migrate event naming where the job came from.

    ``short`` takes both GPUs from 30 to 80 (a gang of 2); ``long`` resumes at 80 on the
    other GPU and pays restore and migration: 80 + 30 + 60 + 70 = 240.
    """
    instance = cluster({"n": {"A": 2}}, [job("long", 100),
                                         job("short", 50, release=30, gpus=2)])
    schedule = run(monkeypatch, instance, restart=30, migration=60, place=elsewhere)
    first, second = segments(schedule, "long")
    assert first.gpu_ids == ["n/1"] and second.gpu_ids == ["n/0"]
    assert second.migrated_from == ["n/1"]
    assert (second.start_s, second.restore_s, second.migrate_s) == (80, 30, 60)
    assert completion(schedule, "long") == 240
    assert events(schedule, "long")[2] == ("migrate", 80, ["n/0"])
    same = run(monkeypatch, instance, restart=30, migration=60, place=sticky)
    assert completion(same, "long") == 180
    assert events(same, "long")[2] == ("resume", 80, ["n/0"])


def test_zero_overheads_give_the_fluid_completion(monkeypatch: pytest.MonkeyPatch) -> None:
    """With Gavel's free preemption, a preempted and migrated job loses no time.

    ``long`` runs 30 s, waits 50 s for ``short`` and runs its last 70 s: it completes at
    150, whether it resumes in place or moves, as if its work flowed without a pause.
    """
    instance = cluster({"n": {"A": 2}}, [job("long", 100),
                                         job("short", 50, release=30, gpus=2)])
    for place in (sticky, elsewhere):
        schedule = run(monkeypatch, instance, place=place)
        assert completion(schedule, "long") == 150
        assert sum(s.work or 0 for s in segments(schedule, "long")) == pytest.approx(1)
    moved = run(monkeypatch, instance, place=elsewhere)
    assert segments(moved, "long")[1].migrated_from is not None


def test_job_paying_its_overhead_is_not_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    """``tiny`` (10 s) arrives at 90 while ``long`` still restores (80 to 110).

    Shortest-remaining-first would run ``tiny``, but ``long`` is locked until its restore
    is paid: it keeps the GPU to 110, when the end of the overhead is a decision of its
    own and ``tiny`` runs (110 to 120) rather than after ``long``'s whole run. If the lock
    broke, a job could pay its overhead again and again without ever running; without the
    decision, ``tiny`` would wait 90 s for nothing.
    """
    seen: list[View] = []
    instance = cluster(ONE_GPU, [job("long", 100), job("short", 50, release=30),
                                 job("tiny", 10, release=90)])
    schedule = run(monkeypatch, instance, restart=30, seen=seen)
    at_90 = next(v for v in seen if v.now == 90)
    assert at_90.locked[0] and at_90.running_type[0] == 0
    assert 110 in [v.now for v in seen]
    paid = segments(schedule, "long")[1]
    assert (paid.start_s, paid.end_s, paid.restore_s, paid.work) == (80, 110, 30, 0)
    assert segments(schedule, "tiny")[0].start_s == 110
    assert completion(schedule, "long") == 220


def test_non_preemptible_job_is_never_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    """A preemptive scheduler cannot stop a job that is not preemptible.

    ``long`` runs 0 to 100 in one piece; ``short`` waits and runs 100 to 150.
    """
    schedule = run(monkeypatch, preempted_pair(preemptible=False), restart=30)
    assert [(s.start_s, s.end_s) for s in segments(schedule, "long")] == [(0, 100)]
    assert [(s.start_s, s.end_s) for s in segments(schedule, "short")] == [(100, 150)]
    assert not any(e.kind.value == "preempt" for e in schedule.events)


def test_non_preemptive_scheduler_never_stops_anyone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A non-preemptive scheduler only orders waiting jobs, even when it ranks them first."""
    schedule = run(monkeypatch, preempted_pair(), preemptive=False, restart=30)
    assert [(s.start_s, s.end_s) for s in segments(schedule, "long")] == [(0, 100)]
    assert [(s.start_s, s.end_s) for s in segments(schedule, "short")] == [(100, 150)]
    assert not any(e.kind.value in ("preempt", "resume", "migrate") for e in schedule.events)


def test_gangs_start_and_stop_together(monkeypatch: pytest.MonkeyPatch) -> None:
    """A gang holds all its GPUs on one node and one type, and moves them all at once.

    ``pair`` (2 GPUs) starts on A; at 30 ``hog`` (2 GPUs, A only) takes the A GPUs, and
    ``pair`` moves to the two B GPUs of one node in the same instant (another type, so a
    migration: 30 + 30 + 60 + 70 on B, where it takes 100 s too, = 190).
    """
    instance = cluster(
        {"n1": {"A": 2, "B": 1}, "n2": {"B": 2}},
        [job("pair", {"A": 100, "B": 100}, gpus=2), job("hog", {"A": 50}, release=30, gpus=2)])
    schedule = run(monkeypatch, instance, restart=30, migration=60, place=lowest_free)
    for segment in schedule.segments:
        assert len(segment.gpu_ids) == 2
        assert all(g.startswith(segment.node + "/") for g in segment.gpu_ids)
    first, second = segments(schedule, "pair")
    assert (first.gpu_type, first.gpu_ids) == ("A", ["n1/0", "n1/1"])
    assert (second.gpu_type, second.node, second.start_s) == ("B", "n2", 30)
    assert second.migrated_from == ["n1/0", "n1/1"]
    assert completion(schedule, "pair") == 190
    assert events(schedule, "pair")[1:3] == [("preempt", 30, ["n1/0", "n1/1"]),
                                             ("migrate", 30, ["n2/0", "n2/1"])]


def test_gang_split_over_nodes_takes_its_next_type(monkeypatch: pytest.MonkeyPatch) -> None:
    """A gang whose preferred type has room only split over nodes starts on its next type.

    Nodes n1 and n2 hold 6 A GPUs each and n3 4 B GPUs; ``p`` and ``q`` take 4 A GPUs on
    each A node, leaving 2 + 2 free. ``g`` (4 GPUs, 100 s on A, 200 s on B) cannot have
    A on one node, so it starts on B at once rather than waiting for A.
    """
    instance = cluster({"n1": {"A": 6}, "n2": {"A": 6}, "n3": {"B": 4}}, [
        job("p", {"A": 1000}, gpus=4), job("q", {"A": 1000}, gpus=4),
        job("g", {"A": 100, "B": 200}, gpus=4)])
    schedule = run(monkeypatch, instance, in_arrival_order)
    (only,) = segments(schedule, "g")
    assert (only.gpu_type, only.start_s, only.end_s) == ("B", 0, 200)


def test_gpus_a_split_gang_cannot_use_go_to_the_next_job(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A small job starts beside a gang that waits because its GPUs are split over nodes.

    Two nodes of 2 A GPUs; ``a`` and ``b`` hold one GPU on each for 1000 s. At 60 s the
    2-GPU ``c`` comes first in the order and counts the 2 free GPUs, but no node holds
    both; ``d`` (1 GPU), behind it, starts at once instead of waiting for 1000 s.
    """
    instance = cluster({"n1": {"A": 2}, "n2": {"A": 2}}, [
        job("a", {"A": 1000}), job("x", {"A": 50}), job("b", {"A": 1000}),
        job("c", {"A": 100}, release=60, gpus=2), job("d", {"A": 100}, release=60)])
    schedule = run(monkeypatch, instance, in_arrival_order)
    assert segments(schedule, "d")[0].start_s == 60
    assert segments(schedule, "c")[0].start_s == 1000


# -- round mode ------------------------------------------------------------------------


def test_round_mode_decides_only_at_round_boundaries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rounds of 100 s: a mid-round arrival waits for the round's end.

    ``a`` (150 s) runs 0 to 150; ``b`` (30 s) arrives at 50 but waits for a round. As in
    Gavel, the round from 100 ends at 150, when ``a``, the only job in it, completes, and
    ``b`` starts then; the cluster is then idle, so the next round starts when ``c``
    arrives at 1050, not at a boundary of the old grid.
    """
    seen: list[View] = []
    instance = cluster(ONE_GPU, [job("a", 150), job("b", 30, release=50),
                                 job("c", 10, release=1050)])
    schedule = run(monkeypatch, instance, in_arrival_order, mode=Mode.ROUND, seen=seen)
    assert [v.now for v in seen] == [0, 100, 150, 1050]
    assert all(v.round_s == 100 for v in seen)
    assert segments(schedule, "b")[0].start_s == 150
    assert segments(schedule, "c")[0].start_s == 1050


def test_round_mode_gpus_freed_mid_round_stay_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU freed mid-round stays idle until the round ends while another job still runs.

    Two GPUs: ``long`` (250 s) and ``short`` (30 s) start at 0; ``late`` arrives at 10 and
    starts at 100, the round boundary, not at 30 when ``short`` frees its GPU.
    """
    instance = cluster({"n": {"A": 2}}, [job("long", 250), job("short", 30),
                                     job("late", 10, release=10)])
    schedule = run(monkeypatch, instance, in_arrival_order, mode=Mode.ROUND)
    assert segments(schedule, "late")[0].start_s == 100


def test_idle_cluster_jumps_to_the_next_arrival_after_a_move(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A job that moved to a faster type leaves the cluster idle; the next arrival starts at once.

    ``slow`` starts on B (``quick`` holds the A GPU) and moves to A at 100; it completes
    at 190, long before it would have on B (1000). ``late`` arrives at 1050 to an idle
    cluster and must start then, not at 1100, a round after the stopped segment would
    have completed on B.
    """

    def prefer(view: View) -> Decision:
        # ``slow`` runs only on B while ``quick`` runs, then only on A.
        order = view.jobs
        table = np.array([[0, 1] if view.instance.job_ids[j] != "slow" or view.now == 0
                          else [0, -1] for j in order], dtype=np.int64)
        return Decision(order[::-1] if view.now == 0 else order,
                        table[::-1] if view.now == 0 else table)

    instance = cluster({"n1": {"A": 1}, "n2": {"B": 1}}, [
        job("slow", {"A": 100, "B": 1000}), job("quick", {"A": 50}),
        job("late", {"A": 10}, release=1050)])
    schedule = run(monkeypatch, instance, prefer, mode=Mode.ROUND)
    assert [s.gpu_type for s in segments(schedule, "slow")] == ["B", "A"]
    assert completion(schedule, "slow") == 190
    assert segments(schedule, "late")[0].start_s == 1050


def test_round_mode_preempts_only_at_boundaries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under shortest-remaining-first in rounds, ``short`` (arriving at 30) waits for 100.

    ``long`` is preempted at the boundary, not at the arrival: every segment starts and
    ends at a multiple of the round or at a completion.
    """
    schedule = run(monkeypatch, preempted_pair(), mode=Mode.ROUND)
    assert [(s.start_s, s.end_s) for s in segments(schedule, "long")] == [(0, 100)]
    assert segments(schedule, "short")[0].start_s == 100
    schedule = run(monkeypatch, cluster(ONE_GPU, [job("long", 300),
                                                  job("short", 50, release=30)]),
                   mode=Mode.ROUND)
    # ``short`` alone runs 100 to 150, and its round ends when it completes.
    assert [(s.start_s, s.end_s) for s in segments(schedule, "long")] == [(0, 100),
                                                                          (150, 350)]
    assert [(s.start_s, s.end_s) for s in segments(schedule, "short")] == [(100, 150)]


# -- dependencies, wake-ups -------------------------------------------------------------


@pytest.mark.parametrize("mode", list(Mode))
def test_job_never_starts_before_its_predecessors_complete(
        monkeypatch: pytest.MonkeyPatch, mode: Mode) -> None:
    """``after`` depends on ``before``: a free GPU does not start it before 100.

    The scheduler does not even see it until then.
    """
    seen: list[View] = []
    instance = cluster({"n": {"A": 2}}, [job("before", 100),
                                         job("after", 50, depends_on=["before"])])
    schedule = run(monkeypatch, instance, in_arrival_order, mode=mode, seen=seen)
    assert segments(schedule, "after")[0].start_s == 100
    assert all(1 not in v.jobs for v in seen if v.now < 100)


def test_wakeup_makes_event_mode_decide_at_the_asked_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A scheduler asking to decide again at 40 gets a decision then, and its new order runs.

    ``a`` runs first; from 40 on ``b`` comes first, so ``a`` is preempted at 40 although
    nothing arrives or completes then.
    """

    def swap(view: View) -> Decision:
        return Decision(view.jobs if view.now < 40 else view.jobs[::-1])

    seen: list[View] = []
    instance = cluster(ONE_GPU, [job("a", 100), job("b", 100)])
    schedule = run(monkeypatch, instance, swap, seen=seen,
                   wakeup=lambda view: 40.0 if view.now < 40 else None)
    assert [v.now for v in seen][:2] == [0, 40]
    assert [(s.start_s, s.end_s) for s in segments(schedule, "a")] == [(0, 40), (140, 200)]
    assert [(s.start_s, s.end_s) for s in segments(schedule, "b")] == [(40, 140)]


# -- broken policies --------------------------------------------------------------------


def test_scheduler_choosing_an_inactive_job_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Choosing a job that has not arrived is a policy bug, said with the job's id."""
    instance = cluster(ONE_GPU, [job("a", 100), job("b", 100, release=50)])
    everyone = lambda view: Decision(np.arange(view.instance.n_jobs))  # noqa: E731
    with pytest.raises(SimulationError, match="'b', which is not active"):
        run(monkeypatch, instance, everyone)


def test_placement_giving_wrong_gpus_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A placement handing out GPUs of another type (or too many) is a policy bug."""
    instance = cluster({"n": {"A": 1, "B": 1}}, [job("a", {"A": 100})])
    wrong_type = lambda cluster, job, gpu_type: np.array([1])  # noqa: E731
    too_many = lambda cluster, job, gpu_type: np.array([0, 1])  # noqa: E731
    for place in (wrong_type, too_many):
        with pytest.raises(SimulationError, match=r"gave job 'a' GPUs .* not 1 free GPUs"):
            run(monkeypatch, instance, place=place)


@pytest.mark.parametrize("mode", list(Mode))
def test_stuck_run_is_an_error(monkeypatch: pytest.MonkeyPatch, mode: Mode) -> None:
    """A scheduler that starts nothing ends the run with an error naming the waiting jobs."""
    instance = cluster(ONE_GPU, [job("a", 100), job("b", 100, release=500)])
    with pytest.raises(SimulationError, match=r"stuck .* 2 job\(s\) \(a, b\)"):
        run(monkeypatch, instance, lambda view: Decision(view.jobs[:0]), mode=mode)


def test_scheduler_that_only_wakes_is_stuck(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scheduler that asks to wake up forever without starting anything is an error too."""
    instance = cluster(ONE_GPU, [job("a", 100)])
    with pytest.raises(SimulationError, match=r"stuck .* 1 job\(s\) \(a\)"):
        run(monkeypatch, instance, lambda view: Decision(view.jobs[:0]),
            wakeup=lambda view: view.now + 1.0)


# -- the run's instance -----------------------------------------------------------------


def test_deadlines_become_due_dates(monkeypatch: pytest.MonkeyPatch) -> None:
    """Online, a deadline cannot be promised: a late job is tardy, not a broken run."""
    instance = cluster(ONE_GPU, [job("a", 100, deadline_s=150), job("b", 100, due_s=120)])
    online = instance.online()
    assert np.isinf(online.deadline).all()
    assert online.due.tolist() == [150, 120]
    schedule = run(monkeypatch, instance, in_arrival_order)
    assert completion(schedule, "b") == 200


def test_job_that_fits_nowhere_is_an_input_error() -> None:
    """A job eligible on no type is refused before the run, naming it.

    Instance files cannot hold one (the reader refuses it); instances built in code, such
    as a trace on another cluster, can.
    """
    valid = cluster(ONE_GPU, [job("a", 100), job("b-only", 100)])
    eligible = valid.eligible.copy()
    eligible[1] = False
    instance = dataclasses.replace(valid, eligible=eligible)
    with pytest.raises(InputError, match=r"jobs\[1\].*'b-only' can run on no GPU type"):
        simulate(instance, RunSpec())


# -- the run log ------------------------------------------------------------------------


def test_written_run_log_reads_back_and_verifies(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    """The run log written to a file is the same schedule, and `gpuplan check` accepts it."""
    instance = cluster({"n": {"A": 2}}, [job("long", 100),
                                         job("short", 50, release=30, gpus=2)])
    schedule = run(monkeypatch, instance, restart=30, migration=60, place=elsewhere)
    path = tmp_path / "run.json"
    schedule.write(path)
    again = Schedule.read(path)
    assert again == schedule
    assert verify_schedule(instance.online(), again).ok


def _segment(document: Document, name: str, index: int) -> Document:
    found: Document = [s for s in document["segments"] if s["job"] == name][index]
    return found


def _uncharged(document: Document) -> None:
    """The move pays nothing and starts 90 s later, so its work still adds up."""
    moved = _segment(document, "long", 1)
    late = moved["start_s"] + moved["restore_s"] + moved["migrate_s"]
    for event in document["events"]:
        if event["job"] == "long" and event["time_s"] == moved["start_s"]:
            event["time_s"] = late
    moved.update(start_s=late, restore_s=0.0, migrate_s=0.0)


TAMPERING: dict[str, tuple[Callable[[Document], None], ViolationKind]] = {
    "overheads not charged": (_uncharged, ViolationKind.OVERHEAD),
    "work changed": (lambda d: _segment(d, "long", 0).update(work=0.5), ViolationKind.WORK),
    "restore removed": (lambda d: _segment(d, "long", 1).update(restore_s=0.0),
                        ViolationKind.WORK),
    "migration overhead removed": (lambda d: _segment(d, "long", 1).update(migrate_s=0.0),
                                   ViolationKind.WORK),
    "overhead on a first start": (lambda d: _segment(d, "short", 0).update(restore_s=10.0),
                                  ViolationKind.OVERHEAD),
    "overhead outlasting its segment": (lambda d: _segment(d, "long", 1).update(
        restore_s=500.0), ViolationKind.OVERHEAD),
    "segment shortened": (lambda d: _segment(d, "long", 1).update(
        end_s=200.0, work=None), ViolationKind.SEGMENT),
    "migration forgotten": (lambda d: _segment(d, "long", 1).update(migrated_from=None),
                            ViolationKind.MIGRATION),
    "event dropped": (lambda d: d["events"].pop(), ViolationKind.EVENT),
    "event retimed": (lambda d: d["events"][1].update(time_s=31.0), ViolationKind.EVENT),
}


@pytest.mark.parametrize("name", list(TAMPERING))
def test_tampered_run_log_is_caught(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """A run log edited after the run no longer verifies, with the broken rule named.

    If this broke, `gpuplan check` would accept a run log whose work, overheads or
    events the run never had.
    """
    instance = cluster({"n": {"A": 2}}, [job("long", 100),
                                         job("short", 50, release=30, gpus=2)])
    schedule = run(monkeypatch, instance, restart=30, migration=60, place=elsewhere)
    document = json.loads(schedule.to_json())
    change, kind = TAMPERING[name]
    change(document)
    tampered = Schedule.from_json(json.dumps(document), "<tampered>")
    verification = verify_schedule(instance.online(), tampered)
    assert kind in {v.kind for v in verification.violations}, verification.violations


# -- completion at a round boundary -----------------------------------------------------


#: Seconds ``nearly`` runs on A: a round and a hair, so at the first boundary its work
#: left is float noise (below the engine's threshold) and its completion event is due
#: just after the boundary, as on long traces where done_at misses a boundary by an ulp.
NEARLY_S = 100 + 1e-8


@pytest.mark.parametrize("how", ["moved", "displaced"])
def test_job_done_at_a_round_boundary_completes_once(monkeypatch: pytest.MonkeyPatch,
                                                     how: str) -> None:
    """A job whose work is done at a boundary, then stopped by the decision, is not restarted.

    ``nearly`` runs on A in the first round; at 100 the decision either moves it to B
    (``moved``) or puts ``other`` ahead of it on the one A GPU (``displaced``, B still
    free). Stopping it completes it; it must not then start again on B, which would
    complete it twice and drop ``other`` from the active jobs.
    """

    def decide(view: View) -> Decision:
        names = [view.instance.job_ids[j] for j in view.jobs]
        first = "nearly" if view.now == 0 or how == "moved" else "other"
        order = view.jobs[np.argsort([name != first for name in names], kind="stable")]
        if how == "displaced":
            return Decision(order)
        table = np.array([[0, -1] if view.instance.job_ids[j] != "nearly" or view.now == 0
                          else [1, -1] for j in order], dtype=np.int64)
        return Decision(order, table)

    instance = cluster({"n1": {"A": 1}, "n2": {"B": 1}}, [
        job("nearly", {"A": NEARLY_S, "B": 1000}), job("other", {"A": 300})])
    schedule = run(monkeypatch, instance, decide, mode=Mode.ROUND)
    assert [(s.gpu_type, s.start_s, s.end_s) for s in segments(schedule, "nearly")] == [
        ("A", 0, 100)]
    assert [kind for kind, _, _ in events(schedule, "nearly")] == ["start", "complete"]
    assert [(s.start_s, s.end_s) for s in segments(schedule, "other")] == [(100, 400)]
