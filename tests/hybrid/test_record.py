"""Re-planning from what Slurm ran and runs: gpuplan import sacct/squeue, then replan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import DATA, Gpuplan

from gpuplan.core.schedule import Schedule
from gpuplan.hybrid.replan import changed_instances, replan
from gpuplan.hybrid.residual import as_ran
from gpuplan.readers import load_data
from gpuplan.readers.changes import Changes

SLURM = DATA / "slurm"
SNAPSHOT = SLURM / "snapshot.json"
#: The snapshot's epoch and when its outputs were taken (tests/data/slurm/README.md).
EPOCH, AT = "2026-12-07T19:29:19+00:00", "61"


def _import(gpuplan: Gpuplan, out: Path, sacct: Path = SLURM / "snapshot_sacct.txt") -> Any:
    return gpuplan("import", "sacct", sacct, "--instance", SNAPSHOT, "--epoch", EPOCH,
                   "--at", AT, "-o", out)


def _by_job(schedule: Schedule) -> dict[str, list[tuple[float, float, tuple[str, ...]]]]:
    found: dict[str, list[tuple[float, float, tuple[str, ...]]]] = {}
    for s in schedule.segments:
        found.setdefault(s.job, []).append((s.start_s, s.end_s, tuple(s.gpu_ids)))
    return found


def test_a_node_fails_under_a_running_plan(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """The user's loop: sacct 61 s into the plan, dgx-b fails, replan from what runs.

    train runs on where it runs, to its planned end; prepare and embed stay done as they
    ran; sweep ran on dgx-b and starts again elsewhere; smoke (failed) runs again whole,
    evaluate and report (waiting) are planned after 61 s; the plan verifies, and replan
    counts its moves as diff does.
    """
    now, new = tmp_path / "now.json", tmp_path / "new.json"
    imported = _import(gpuplan, now)
    assert imported.code == 0, imported.err
    assert f"gpuplan replan {SNAPSHOT} {now} --changes CHANGES.yaml --at 61" in imported.err
    changes = tmp_path / "changes.yaml"
    changes.write_text("down:\n  - node: dgx-b\n")
    done = gpuplan("replan", SNAPSHOT, now, "--changes", changes, "--at", AT, "--method",
                   "greedy", "-o", new, "--json")
    assert done.code == 0, done.err
    before, after = _by_job(Schedule.read(now)), _by_job(Schedule.read(new))
    for job in ("prepare", "embed", "train"):
        assert after[job] == before[job], job
    assert after["train"] == [(11.0, 911.0, tuple(f"dgx-a/{k}" for k in range(8)))]
    restarted = after["sweep"][-1]
    assert restarted[0] >= 61.0 and not any(g.startswith("dgx-b/") for g in restarted[2])
    assert [(end - start) for start, end, _ in after["smoke"]] == [20.0]
    assert all(after[job][0][0] >= 61.0 for job in ("smoke", "evaluate", "report"))
    assert after["evaluate"][0][0] >= 911.0
    verification = Schedule.read(new).verification
    assert verification is not None and verification.ok
    hurt = json.loads(done.out)["disruption"]
    assert hurt["stopped"] == ["sweep"] and hurt["moved"] == ["sweep"]
    compared = json.loads(gpuplan("diff", now, new, "--json").out)
    assert (compared["moved"], compared["unchanged"]) == (hurt["moved"], hurt["unchanged"])
    assert compared["only_b"] == ["evaluate", "report", "smoke"]


def test_with_no_change_the_waiting_jobs_are_still_planned(gpuplan: Gpuplan,
                                                          tmp_path: Path) -> None:
    """A record is no plan: with nothing changed, what waits or failed is planned anyway.

    Broken, replan would hand the record back with three jobs never placed.
    """
    out = tmp_path / "now.json"
    assert _import(gpuplan, out).code == 0
    record = Schedule.read(out)
    document = load_data(SNAPSHOT)
    assert isinstance(document, dict)
    ran, _ = as_ran(document, str(SNAPSHOT), record, 61.0)
    nothing = Changes()
    before, changed = changed_instances(ran, str(SNAPSHOT), nothing, 61.0, "none")
    done = replan(before, changed, record, 61.0, nothing, "greedy")
    assert done.schedule is not None and not done.schedule.unplaced
    assert {s.job for s in done.schedule.segments} == set(before.job_ids)
    assert done.disruption.unchanged == 4 and not done.disruption.moved


def test_done_jobs_take_what_they_took(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """The embed job ran 15 s where the instance says 12: the record and its re-plan still verify.

    The import says so; the changed instance replan writes has embed at 15 s, and the new
    plan checks against it.
    """
    sacct = tmp_path / "sacct.txt"
    sacct.write_text((SLURM / "snapshot_sacct.txt").read_text().replace(
        "2026-12-07T19:29:39|2026-12-07T19:29:51", "2026-12-07T19:29:39|2026-12-07T19:29:54"))
    now, new, written = tmp_path / "now.json", tmp_path / "new.json", tmp_path / "i.json"
    imported = _import(gpuplan, now, sacct)
    assert imported.code == 0, imported.err
    assert "embed took 1.25 times its estimate" in imported.err
    changes = tmp_path / "changes.yaml"
    changes.write_text("jobs_changed:\n  - {job: report, weight: 2}\n")
    done = gpuplan("replan", SNAPSHOT, now, "--changes", changes, "--at", AT, "--method",
                   "greedy", "-o", new, "--write-instance", written)
    assert done.code == 0, done.err
    embed = next(job for job in json.loads(written.read_text())["jobs"] if job["id"] == "embed")
    assert embed["duration_s"] == {"L4": 15.0}
    assert gpuplan("check", written, new).code == 0


def test_squeue_and_the_plan_give_a_state_to_replan_from(gpuplan: Gpuplan,
                                                         tmp_path: Path) -> None:
    """The squeue output lists what runs and waits; the plan says what left the queue did.

    The import needs the plan (exit 2 without it) and reads --at as a time too; its
    record re-plans (edge-1 down for 10 minutes) to a verified plan in which train and
    sweep run on as they run.
    """
    now, new = tmp_path / "now.json", tmp_path / "new.json"
    common = ("import", "squeue", SLURM / "snapshot_squeue.txt", "--instance", SNAPSHOT,
              "--epoch", EPOCH, "--at", "2026-12-07T19:30:20+00:00", "-o", now)
    refused = gpuplan(*common)
    assert refused.code == 2 and "--plan" in refused.err and not now.exists()
    imported = gpuplan(*common, "--plan", SLURM / "snapshot_plan.json")
    assert imported.code == 0, imported.err
    assert "3 done, 2 running, 2 not started" in imported.err
    changes = tmp_path / "changes.yaml"
    changes.write_text("down:\n  - node: edge-1\n    for_s: 600\n")
    done = gpuplan("replan", SNAPSHOT, now, "--changes", changes, "--at", AT, "--method",
                   "greedy", "-o", new)
    assert done.code == 0, done.err
    before, after = _by_job(Schedule.read(now)), _by_job(Schedule.read(new))
    assert (after["train"], after["sweep"]) == (before["train"], before["sweep"])
    verification = Schedule.read(new).verification
    assert verification is not None and verification.ok
