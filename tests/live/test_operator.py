"""The operator's decisions, on a cluster that records them (DryRun) instead of Slurm."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from gpuplan import read_instance
from gpuplan.core.settings import RunSettings
from gpuplan.live.cluster import DryRun
from gpuplan.live.operator import Operator, OperatorOptions
from gpuplan.live.state import JobRecord, RunState
from tests.conftest import DATA

TINY = DATA / "live" / "tiny.json"


def _operator(tmp_path: Path, improve_s: float = 0.0) -> tuple[Operator, DryRun]:
    instance = read_instance(TINY)
    state = RunState(instance=str(TINY), instance_name=instance.name,
                     epoch=datetime.now(UTC), slurm_conf=None, method="cp",
                     time_limit_s=1.0, tolerance_s=5.0,
                     jobs={job: JobRecord() for job in instance.job_ids})
    cluster = DryRun(None)
    operator = Operator(instance, cluster, tmp_path, state,
                        OperatorOptions(lead_s=0.0, improve_s=improve_s),
                        RunSettings(time_limit_s=1), None, lambda line: None)
    return operator, cluster


def test_the_first_plan_submits_every_job_with_its_dependencies(tmp_path: Path) -> None:
    """One sbatch per job; p5 and p7 wait (afterok) for their predecessors' Slurm jobs."""
    operator, cluster = _operator(tmp_path)
    operator.start(None, "")
    assert sum(a.startswith("sbatch") for a in cluster.actions) == 8
    for job, before in (("p5", "p2"), ("p7", "p3")):
        (attempt,) = operator.state.jobs[job].attempts
        assert attempt.dependency == [operator.state.jobs[before].attempts[0].slurm_id]


def test_improving_keeps_the_jobs_that_start_meanwhile_and_touches_nothing_else(
        tmp_path: Path) -> None:
    """--improve re-plans only the jobs the first plan starts after its seconds.

    The jobs starting within them keep their slots in the plan in force (so their starts
    count as the plan's), and no Slurm job is changed when the plan stays the same.
    """
    operator, cluster = _operator(tmp_path, improve_s=4.0)
    operator.start(None, "")
    first = {s.job: s for s in operator.state.plans[0].slots}
    submitted = len(cluster.actions)
    operator.step()
    assert len(operator.state.plans) == 2
    second = operator.state.plans[1]
    assert second.reason == "improving the first plan"
    slots = {s.job: s for s in second.slots}
    assert slots.keys() == first.keys()
    for job, slot in first.items():
        if slot.start_s >= second.at_s + 4.0:
            assert slots[job].start_s >= second.at_s + 4.0 - 1e-6
    early = [job for job, slot in first.items() if slot.start_s <= 0.0]
    assert early and all(slots[job] == first[job] for job in early)
    # Nothing moved that did not have to: every change in Slurm is a move the record names.
    changed = cluster.actions[submitted:]
    assert len([a for a in changed if "StartTime" in a or a.startswith("scancel")]) \
        == len(second.moved) + len(second.resubmitted)
    operator.step()
    assert len(operator.state.plans) == 2  # improved once
