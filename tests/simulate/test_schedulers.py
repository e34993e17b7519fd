"""The classic schedulers (fifo, sjf, srtf, las) on small hand-checked traces.

Every time below is worked out by hand; each trace is run through ``simulate``, so the
verifier checks the run log.

Unless a test says otherwise the cluster is one node of GPUs of one type ``A``, each job
runs ``duration`` seconds on it, and resumes pay no overhead.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import GAVEL, instance_from

from gpuplan.core.errors import InputError
from gpuplan.core.instance import Instance
from gpuplan.core.result import EventKind
from gpuplan.core.schedule import Schedule
from gpuplan.simulate import Mode, RunSpec, SimulationConfig, simulate
from gpuplan.simulate.policies import PLACEMENTS, SCHEDULERS
from gpuplan.simulate.workload import gavel_workload_instance

#: A job by id: (GPUs, seconds on A, arrival s, preemptible).
Jobs = dict[str, tuple[int, float, float, bool]]


def one_node(gpus: int, jobs: Jobs) -> Instance:
    """One node of ``gpus`` GPUs of type A, and the jobs."""
    return instance_from({
        "name": "trace",
        "gpu_types": [{"id": "A", "capacity": {"memory_gib": 16}}],
        "nodes": [{"id": "n1", "gpus": {"A": gpus}}],
        "jobs": [{"id": job, "gpus": gang, "demand": {"memory_gib": 1},
                  "duration_s": {"A": seconds}, "release_s": arrival,
                  "preemptible": preemptible}
                 for job, (gang, seconds, arrival, preemptible) in jobs.items()],
        "objective": "weighted-completion",
    })


def run(instance: Instance, scheduler: str, *, restart_s: float = 0.0,
        mode: Mode = Mode.EVENT, placement: str = "best-fit", **options: Any) -> Schedule:
    """The verified run log of ``scheduler`` on ``instance`` (no migration overhead)."""
    config = SimulationConfig(mode=mode, round_s=100.0, restart_overhead_s=restart_s,
                              migration_overhead_s=0.0)
    schedule = simulate(instance, RunSpec(scheduler=scheduler, placement=placement,
                                          config=config, options=options))
    assert schedule.verification is not None and schedule.verification.ok
    return schedule


def intervals(schedule: Schedule) -> dict[str, list[tuple[float, float]]]:
    """Each job's segments as (start, end), in time order, to a microsecond."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for segment in sorted(schedule.segments, key=lambda s: s.start_s):
        spans.setdefault(segment.job, []).append(
            (round(segment.start_s, 6), round(segment.end_s, 6)))
    return spans


def starts(schedule: Schedule) -> dict[str, float]:
    """When each job first starts."""
    return {job: spans[0][0] for job, spans in intervals(schedule).items()}


def test_fifo_backfills_a_job_that_fits_but_never_overtakes_one_that_fits() -> None:
    """FIFO never lets a later arrival start before an earlier one that fits.

    On 2 GPUs, when ``first`` (2 GPUs) ends at 100, the earliest waiting arrival ``mid``
    (2 GPUs, 500 s) starts, not the shorter later ones that would fit as well. At 600
    ``one`` (1 GPU) starts; ``two`` (2 GPUs) does not fit beside it, so the later
    ``late`` (1 GPU) is backfilled on the other GPU; ``two`` starts when both are done.
    """
    schedule = run(one_node(2, {"first": (2, 100, 0, False), "mid": (2, 500, 10, False),
                                "one": (1, 50, 20, False), "two": (2, 10, 30, False),
                                "late": (1, 20, 40, False)}), "fifo")
    assert starts(schedule) == {"first": 0, "mid": 100, "one": 600, "late": 600,
                                "two": 650}


def test_fifo_lets_a_small_job_start_while_the_head_does_not_fit() -> None:
    """FIFO backfills a later job that fits while the head of the queue does not.

    On 3 GPUs, ``head`` (2 GPUs) waits for ``first`` to end at 100, but the later
    ``small`` (1 GPU) fits on the third GPU and starts at once on arrival.
    """
    schedule = run(one_node(3, {"first": (2, 100, 0, False), "head": (2, 100, 10, False),
                                "small": (1, 50, 20, False)}), "fifo")
    assert starts(schedule) == {"first": 0, "head": 100, "small": 20}


def test_sjf_starts_the_shortest_waiting_job() -> None:
    """SJF starts the shortest waiting job.

    On the first FIFO trace: at 100 the shortest waiting job ``two`` (10 s) starts
    ahead of the earlier ``mid`` (500 s); at 110 ``late`` (20 s) then ``one`` (50 s)
    start, and ``mid`` (2 GPUs) waits until both are done at 160.
    """
    schedule = run(one_node(2, {"first": (2, 100, 0, False), "mid": (2, 500, 10, False),
                                "one": (1, 50, 20, False), "two": (2, 10, 30, False),
                                "late": (1, 20, 40, False)}), "sjf")
    assert starts(schedule) == {"first": 0, "two": 100, "late": 110, "one": 110,
                                "mid": 160}


def test_sjf_does_not_preempt_a_running_job() -> None:
    """SJF is non-preemptive.

    A 10 s job arriving at 5 waits for the 1000 s job to end.
    """
    schedule = run(one_node(1, {"long": (1, 1000, 0, True), "short": (1, 10, 5, True)}),
                   "sjf")
    assert intervals(schedule) == {"long": [(0, 1000)], "short": [(1000, 1010)]}


def test_srtf_preempts_a_long_job_which_resumes_paying_the_restore() -> None:
    """SRTF preempts a long job for a short arrival; the long one resumes paying the restore.

    On 1 GPU, ``short`` (100 s) arriving at 200 preempts ``long`` (1000 s, 800 s
    left); ``long`` resumes at 300 on its own GPU, pays the 30 s restore and ends at
    300 + 30 + 800 = 1130.
    """
    schedule = run(one_node(1, {"long": (1, 1000, 0, True), "short": (1, 100, 200, True)}),
                   "srtf", restart_s=30.0)
    assert intervals(schedule) == {"long": [(0, 200), (300, 1130)], "short": [(200, 300)]}
    resumed = [s for s in schedule.segments if s.job == "long" and s.start_s == 300]
    assert resumed[0].restore_s == 30 and resumed[0].migrate_s == 0
    kinds = [(e.time_s, e.kind) for e in schedule.events if e.job == "long"]
    assert kinds == [(0, EventKind.START), (200, EventKind.PREEMPT),
                     (300, EventKind.RESUME), (1130, EventKind.COMPLETE)]


@pytest.mark.parametrize(("scheduler", "options"), [
    ("srtf", {}), ("las", {"thresholds": [0.01]})])
def test_a_non_preemptible_job_is_never_preempted(scheduler: str,
                                                  options: dict[str, Any]) -> None:
    """A job that is not preemptible is never preempted.

    A 10 s job arriving at 200 would preempt the 1000 s job under SRTF, and under LAS
    (the long job has left the top queue at 36 GPU-s), but that job is not preemptible:
    it runs whole, and the short job waits for it.
    """
    schedule = run(one_node(1, {"long": (1, 1000, 0, False), "short": (1, 10, 200, True)}),
                   scheduler, restart_s=30.0, **options)
    assert intervals(schedule) == {"long": [(0, 1000)], "short": [(1000, 1010)]}
    assert not any(e.kind is EventKind.PREEMPT for e in schedule.events)


def test_las_runs_the_least_served_job_and_demotes_at_each_threshold() -> None:
    """LAS runs the least served job and demotes each job exactly at its threshold.

    Tiresias' LAS on 1 GPU, queues split at 100 and 250 GPU-s, 30 s restore; ``a`` and
    ``b`` run 300 s each, arriving at 0 and 50.

    - 0: ``a`` starts; at 50 ``b`` joins the top queue behind the running ``a``.
    - 100: ``a`` reaches 100 GPU-s and drops to queue 1; ``b`` (0 GPU-s) preempts it.
    - 200: ``b`` drops to queue 1, behind ``a``, which was there first: ``a`` resumes,
      pays 30 s, works from 230 and reaches 250 GPU-s at 380.
    - 380: ``a`` drops to queue 2; ``b`` (queue 1) resumes, works from 410, reaches
      250 GPU-s at 560.
    - 560: ``b`` drops to queue 2 behind ``a``, which resumes and does its last 50 s
      from 590 to 640; ``b`` then resumes and does its last 50 s from 670 to 720.
    """
    schedule = run(one_node(1, {"a": (1, 300, 0, True), "b": (1, 300, 50, True)}), "las",
                   restart_s=30.0, thresholds=[100 / 3600, 250 / 3600])
    assert intervals(schedule) == {"a": [(0, 100), (200, 380), (560, 640)],
                                   "b": [(100, 200), (380, 560), (640, 720)]}


def test_las_counts_service_in_gpu_seconds() -> None:
    """LAS counts service in GPU-seconds (Tiresias' two dimensions).

    A 2-GPU job reaches a 100 GPU-s threshold in 50 s, not 100 s. On 2 GPUs
    ``wide`` (2 GPUs) starts at 0 and drops to queue 1 at 50, when ``narrow`` (1 GPU,
    arrived at 10, 0 GPU-s) preempts it; ``narrow`` drops at 150, behind ``wide``,
    which resumes.
    """
    schedule = run(one_node(2, {"wide": (2, 400, 0, True), "narrow": (1, 400, 10, True)}),
                   "las", thresholds=[100 / 3600])
    assert intervals(schedule)["wide"][:2] == [(0, 50), (150, 500)]
    assert intervals(schedule)["narrow"] == [(50, 150), (500, 800)]


@pytest.mark.parametrize(("starvation", "x", "y"), [
    (0, [(0, 100), (200, 1050)], [(100, 200), (1050, 1950)]),
    (1, [(t, t + 100) for t in range(0, 1800, 200)] + [(1800, 1850)],
     [(t, t + 100) for t in range(100, 1800, 200)] + [(1850, 1950)])])
def test_las_promotes_a_starved_job_to_the_top_queue(
        starvation: float, x: list[tuple[float, float]], y: list[tuple[float, float]]) -> None:
    """LAS promotes a starved job back to the top queue (``--starvation``).

    On 1 GPU, one threshold at 100 GPU-s; ``x`` (950 s) and ``y`` (1000 s) arrive at
    0 and 50. Both are in queue 1 by 200, where ``x`` (there first) runs on.

    Without promotion ``x`` runs to its end (1050) and ``y`` waits. With ``--starvation 1``
    a waiting job that has waited as long as it has run since it last entered the top
    queue goes back to it: ``y`` at 300 (ran 100-200, waited 200-300), preempting ``x``
    at a time when nothing arrives or ends; then ``x`` at 400 (waited 100-200 and
    300-400, ran 200 s) and so on, in turns of 100 s until ``x`` ends at 1850.
    """
    schedule = run(one_node(1, {"x": (1, 950, 0, True), "y": (1, 1000, 50, True)}), "las",
                   thresholds=[100 / 3600], starvation=starvation)
    assert intervals(schedule) == {"x": x, "y": y}


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("scheduler", ["fifo", "sjf", "srtf", "las"])
def test_gangs_stay_on_one_node_and_one_type(scheduler: str, mode: Mode,
                                             placement: str) -> None:
    """Gangs stay whole, on one node and one type, under every scheduler and placement.

    On two nodes mixing two types, every segment of every job, in either mode and with
    either placement, holds exactly its gang of GPUs, all on one node and of one type,
    and every job completes.
    """
    kinds = ("A", "B")
    instance = instance_from({
        "name": "mixed",
        "gpu_types": [{"id": kind, "capacity": {"memory_gib": 16}} for kind in kinds],
        "nodes": [{"id": "n1", "gpus": {"A": 4, "B": 2}}, {"id": "n2", "gpus": {"A": 2,
                                                                               "B": 4}}],
        "jobs": [{"id": f"j{k}", "gpus": (1, 2, 4, 1, 2)[k % 5], "demand": {"memory_gib": 1},
                  "duration_s": {"A": 100.0 + 37 * k, "B": 150.0 + 23 * k},
                  "release_s": 13.0 * k, "preemptible": k % 7 != 3}
                 for k in range(24)],
        "objective": "weighted-completion",
    })
    schedule = run(instance, scheduler, restart_s=10.0, mode=mode, placement=placement,
                   **({"thresholds": [0.05, 0.1], "starvation": 2} if scheduler == "las"
                      else {}))
    gang = dict(zip(instance.job_ids, instance.gang.tolist(), strict=True))
    for segment in schedule.segments:
        assert len(segment.gpu_ids) == gang[segment.job]
        assert {gpu.split("/")[0] for gpu in segment.gpu_ids} == {segment.node}
        assert {instance.gpu_type[instance.gpu_index[g]] for g in segment.gpu_ids} == {
            instance.type_index[segment.gpu_type]}
    done = {e.job for e in schedule.events if e.kind is EventKind.COMPLETE}
    assert done == set(instance.job_ids)


def test_every_scheduler_is_registered_for_both_modes() -> None:
    """The four schedulers are registered, each for both modes.

    ``gpuplan simulate --policy`` offers fifo, sjf, srtf and las, each in both modes;
    only srtf and las preempt.
    """
    for name in ("fifo", "sjf", "srtf", "las"):
        assert SCHEDULERS[name].modes == frozenset(Mode)
    assert {name for name in ("fifo", "sjf", "srtf", "las")
            if SCHEDULERS[name].preemptive} == {"srtf", "las"}


@pytest.mark.parametrize(("scheduler", "options", "flag"), [
    ("fifo", {"thresholds": [1.0]}, "`thresholds`"),
    ("srtf", {"starvation": 2}, "`starvation`"),
    ("las", {"thresholds": "2,1"}, "`thresholds`"),
    ("las", {"thresholds": "0.5,x"}, "`thresholds`"),
    ("las", {"thresholds": []}, "`thresholds`"),
    ("las", {"thresholds": [-1.0]}, "`thresholds`"),
    ("las", {"starvation": -1}, "`starvation`"),
    ("las", {"starvation": "often"}, "`starvation`"),
    ("las", {"starvation": float("inf")}, "`starvation`"),
])
def test_a_bad_or_unknown_option_is_an_input_error_naming_the_flag(
        scheduler: str, options: dict[str, Any], flag: str) -> None:
    """A bad or unknown option is an input error naming its flag.

    An option the scheduler does not take, or a LAS option out of range, is an input
    error (exit 2 from the CLI) naming the flag, before anything runs.
    """
    instance = one_node(1, {"only": (1, 10, 0, True)})
    with pytest.raises(InputError) as raised:
        simulate(instance, RunSpec(scheduler=scheduler, options=options))
    assert raised.value.source == flag


def test_las_takes_thresholds_as_text() -> None:
    """``--thresholds 0.9,2`` as the CLI passes it (text) works like the list [0.9, 2]."""
    instance = one_node(1, {"a": (1, 4000, 0, True), "b": (1, 4000, 10, True)})
    assert intervals(run(instance, "las", thresholds="0.9,2")) == intervals(
        run(instance, "las", thresholds=[0.9, 2.0]))


def test_las_round_robin_leaves_no_sliver_segments() -> None:
    """Two jobs swapping at every threshold end exactly, with no sliver segment after.

    ``x`` (1000 s) and ``y`` (1000 s from 50 s) alternate every 100 s; ``x`` is stopped
    at 1900 s with only float noise of its work left, and completes then rather than
    coming back for a resume of about 1e-13 s.
    """
    schedule = run(one_node(1, {"x": (1, 1000, 0, True), "y": (1, 1000, 50, True)}), "las",
                   thresholds=[100 / 3600], starvation=1)
    assert min(s.end_s - s.start_s for s in schedule.segments) > 1.0
    assert max(s.end_s for s in schedule.segments if s.job == "x") == 1900


@pytest.mark.parametrize("policy", ["srtf", "las"])
def test_preemptive_multi_gpu_runs_verify(policy: str) -> None:
    """Preemptive schedulers on Gavel's multi-GPU jobs give run logs the verifier accepts.

    1,500 jobs at 4.8 jobs/h on 36:36:36 in 8-GPU servers: gangs are preempted and resumed,
    some after pauses of float-noise length, each paying the 30 s restore.
    """
    instance = gavel_workload_instance(GAVEL / "simulation_throughputs.json",
                                       {"v100": 36, "p100": 36, "k80": 36}, 1500, 4.8,
                                       gpus_per_node=8, multi_gpu=True)
    schedule = simulate(instance, RunSpec(scheduler=policy))
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.run is not None and schedule.run.metrics["preemptions_per_job"] > 0


def test_a_decision_is_taken_when_an_overhead_ends() -> None:
    """A short job arriving while another pays its restore starts once the restore is paid.

    On 1 GPU, ``mid`` (100 s, at 100) preempts ``long`` (1000 s), which resumes at 200
    and pays its 30 s restore until 230. ``tiny`` (10 s) arrives at 210, while ``long``
    may not be stopped; at 230 it may, and SRTF runs ``tiny`` then rather than after
    ``long``'s whole run.
    """
    schedule = run(one_node(1, {"long": (1, 1000, 0, True), "mid": (1, 100, 100, True),
                                "tiny": (1, 10, 210, True)}), "srtf", restart_s=30.0)
    assert intervals(schedule)["tiny"] == [(230, 240)]
    paid = [s for s in schedule.segments if s.job == "long" and s.start_s == 200]
    assert paid[0].end_s == 230 and paid[0].restore_s == 30 and paid[0].work == 0


def test_jobs_of_whole_seconds_end_on_whole_seconds() -> None:
    """Times are computed from durations, never through a rounded rate.

    200 jobs of 1 to 200 seconds start together on 200 GPUs: each ends exactly at its
    duration, and the two of 97 s, started together, end at the same instant.
    """
    jobs = {f"j{d}": (1, float(d), 0.0, True) for d in range(1, 201)}
    jobs["twin"] = (1, 97.0, 0.0, True)
    schedule = run(one_node(201, jobs), "fifo")
    ends = {s.job: s.end_s for s in schedule.segments}
    assert all(ends[f"j{d}"] == d for d in range(1, 201))
    assert ends["twin"] == ends["j97"] == 97.0
