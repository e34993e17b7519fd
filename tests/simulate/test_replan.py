"""The ``replan`` hook: a registered method plans the residual batch, and the run follows it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import instance_from

from gpuplan.core.errors import InputError
from gpuplan.core.instance import Instance
from gpuplan.core.schedule import Schedule
from gpuplan.core.settings import RunSettings
from gpuplan.planning import plan
from gpuplan.simulate import Mode, RunSpec, SimulationConfig, simulate
from gpuplan.simulate.policies import replan
from gpuplan.simulate.residual import residual_instance


def cluster(jobs: list[dict[str, Any]]) -> Instance:
    """One node with one GPU of type A and one of type B (B twice as slow), and the jobs."""
    return instance_from({
        "name": "replan",
        "gpu_types": [{"id": "A", "capacity": {"memory_gib": 16}},
                      {"id": "B", "capacity": {"memory_gib": 16}}],
        "nodes": [{"id": "n0", "gpus": {"A": 1, "B": 1}}],
        "jobs": jobs,
        "objective": "weighted-completion",
    })


def job(name: str, seconds: float, arrival: float = 0.0, weight: float = 1.0) -> dict[str, Any]:
    """A 1-GPU preemptible job taking ``seconds`` on A and twice that on B."""
    return {"id": name, "gpus": 1, "demand": {"memory_gib": 1},
            "duration_s": {"A": seconds, "B": 2 * seconds}, "release_s": arrival,
            "weight": weight, "preemptible": True}


def test_residual_instance_keeps_only_the_work_left() -> None:
    """The residual batch holds the active jobs with the work they have left.

    A paused job's duration includes its restore; all are released at once.
    """
    instance = cluster([job("a", 100.0), job("b", 50.0), job("c", 10.0)])
    jobs = np.array([2, 0])
    residual = residual_instance(instance, jobs, np.array([0.5, 0.25]), np.array([7.0, 0.0]),
                                 now=40.0)
    assert residual.job_ids == ("c", "a")
    np.testing.assert_allclose(residual.duration, [[12.0, 17.0], [25.0, 50.0]])
    assert (residual.release == 0).all()
    assert residual.predecessors == ((), ())


def test_the_run_follows_the_methods_plan() -> None:
    """The run starts the jobs the method plans at time 0, then and on the planned types.

    Every job is present at time 0 and resumes cost nothing.
    """
    instance = cluster([job("long", 300.0, weight=1.0), job("short", 20.0, weight=1.0),
                        job("heavy", 100.0, weight=10.0)])
    planned = plan(residual_instance(instance, np.arange(3), np.ones(3), np.zeros(3), 0.0),
                   "greedy", settings=RunSettings(time_limit_s=5))
    run = simulate(instance, RunSpec(
        scheduler="replan", options={"replan_method": "greedy"},
        config=SimulationConfig(mode=Mode.EVENT, restart_overhead_s=0,
                                migration_overhead_s=0),
        settings=RunSettings(time_limit_s=5)))
    assert run.verification is not None and run.verification.ok
    first = {s.job: (s.start_s, s.gpu_type) for s in reversed(run.segments)}
    starts_at_zero = {s.job: s.gpu_type for s in planned.segments if s.start_s == 0}
    assert starts_at_zero
    for name, gpu_type in starts_at_zero.items():
        assert first[name] == (0.0, gpu_type)


@pytest.mark.parametrize(("every", "batches"), [(1e9, [2]), (0.0, [2, 3, 4, 3, 2, 1])],
                         ids=["longer-than-the-run", "every-change"])
def test_replan_every_limits_the_calls(monkeypatch: pytest.MonkeyPatch, every: float,
                                       batches: list[int]) -> None:
    """--replan-every longer than the run plans the first batch only; 0 plans each change.

    The method is called once, on a and b, or at every arrival and completion, on the
    jobs then active. With one plan, the later arrivals c and d queue behind a and b in
    arrival order and start as each GPU frees (c at 100 s on A, d at 110 s on A); a plan
    at every change runs them as they arrive. Every job completes either way.
    """
    planned: list[int] = []

    def counted(instance: Instance, *args: Any, **kwargs: Any) -> Schedule:
        planned.append(instance.n_jobs)
        return plan(instance, *args, **kwargs)

    monkeypatch.setattr(replan, "plan", counted)
    instance = cluster([job("a", 100.0), job("b", 100.0), job("c", 10.0, arrival=5.0),
                        job("d", 5.0, arrival=6.0)])
    run = simulate(instance, RunSpec(
        scheduler="replan", options={"replan_method": "greedy", "replan_every": every},
        config=SimulationConfig(mode=Mode.EVENT, restart_overhead_s=0,
                                migration_overhead_s=0)))
    assert run.verification is not None and run.verification.ok
    assert planned == batches
    start = {s.job: s.start_s for s in reversed(run.segments)}
    if every > 0:
        assert (start["c"], start["d"]) == (100.0, 110.0)
    else:
        assert (start["c"], start["d"]) == (5.0, 6.0)
    assert run.run is not None and run.run.metrics["jobs"] == 4


@pytest.mark.parametrize(("options", "flag"), [
    ({"replan_method": "nosuch"}, "`replan_method`"),
    ({"replan_method": "milp"}, "`replan_method`"),
    ({"replan_every": -1.0}, "`replan_every`"),
])
def test_bad_replan_options_name_the_flag(options: dict[str, Any], flag: str) -> None:
    """A bad method or interval is refused before the run, naming the flag.

    That is an unknown method, one that cannot plan the residual objective, or a negative
    interval.
    """
    with pytest.raises(InputError) as caught:
        simulate(cluster([job("a", 10.0)]), RunSpec(scheduler="replan", options=options))
    assert flag in str(caught.value)
