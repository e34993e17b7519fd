"""Re-planning after changes: residual work, least disruption, and the four commands."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import DATA, Gpuplan

from gpuplan.core.errors import InputError
from gpuplan.core.instance import Outage
from gpuplan.core.schedule import Schedule, ViolationKind
from gpuplan.core.settings import RunSettings
from gpuplan.hybrid.replan import changed_instances, replan, whatif
from gpuplan.planning import plan
from gpuplan.readers.changes import Changes
from gpuplan.readers.instance_file import instance_from_data
from gpuplan.verify import verify_schedule

#: Two one-GPU nodes; A and C on n0 one after the other, B on n1.
DOCUMENT: dict[str, Any] = {
    "name": "two-nodes",
    "gpu_types": [{"id": "t", "capacity": {"memory_gib": 16}}],
    "nodes": [{"id": "n0", "gpus": {"t": 1}}, {"id": "n1", "gpus": {"t": 1}}],
    "jobs": [{"id": name, "gpus": 1, "duration_s": 1000, "demand": {"memory_gib": 8},
              "preemptible": True} for name in ("A", "B", "C")],
    "objective": "makespan",
}


def _previous() -> Schedule:
    """The plan A on n0 [0, 1000], B on n1 [0, 1000], C on n0 [1000, 2000], verified."""
    instance = instance_from_data(DOCUMENT, "two-nodes")
    segments = [{"job": job, "node": node, "gpu_type": "t", "gpu_ids": [f"{node}/0"],
                 "start_s": start, "end_s": start + 1000}
                for job, node, start in (("A", "n0", 0.0), ("B", "n1", 0.0), ("C", "n0", 1000.0))]
    draft = Schedule.from_json(json.dumps({
        "instance": "two-nodes", "objective_kind": "makespan", "status": "feasible",
        "objective": 2000.0, "bound": None, "gap": None, "method": "hand", "solver": "hand",
        "wall_time_s": 0.0, "seed": 0, "gpuplan_version": "0", "segments": segments,
        "unplaced": []}), "previous.json")
    verification = verify_schedule(instance, draft)
    assert verification.ok
    return draft.model_copy(update={"verification": verification})


def _replan(changes: dict[str, Any], at: float, method: str = "greedy") -> Any:
    parsed = Changes.parse(changes, "changes.yaml")
    before, changed = changed_instances(DOCUMENT, "two-nodes.json", parsed, at, "changes.yaml")
    return replan(before, changed, _previous(), at, parsed, method,
                  RunSettings(time_limit_s=2), sources=("previous.json", "changes.yaml"))


def test_an_unchanged_world_gives_back_the_previous_plan() -> None:
    """With no change the previous plan comes back as it is, with nothing moved.

    Broken, a re-plan on a quiet cluster would shuffle jobs for nothing.
    """
    done = _replan({}, 500.0)
    assert done.schedule == _previous() and done.disruption.unchanged == 3
    assert not done.disruption.moved and not done.disruption.stopped


def test_a_failed_node_stops_its_job_which_keeps_its_work_and_pays_restore_and_move() -> None:
    """Hand-computed: n1 fails at 500 s; B did half its work and goes on after C on n0.

    B pays 30 s restore and 60 s migration, and moves (it runs in two pieces now); C keeps
    its slot and A, done, is unchanged. The plan ends at 2000 + 500 + 90 s, and the
    verifier accepts the whole plan (no work done twice).
    """
    done = _replan({"down": [{"node": "n1"}]}, 500.0)
    schedule = done.schedule
    assert schedule is not None and schedule.verification is not None
    assert schedule.verification.ok
    assert schedule.objective == pytest.approx(2590.0)
    hurt = done.disruption
    assert (hurt.stopped, hurt.migrated, hurt.moved, hurt.unchanged) == (["B"], ["B"], ["B"], 2)
    assert hurt.overhead_s == pytest.approx(90.0)
    b = [s for s in schedule.segments if s.job == "B"]
    assert [(s.start_s, s.end_s) for s in b] == [(0.0, 500.0), (2000.0, 2590.0)]
    assert (b[1].restore_s, b[1].migrate_s, b[1].migrated_from) == (30.0, 60.0, ["n1/0"])
    a = next(s for s in schedule.segments if s.job == "A")
    assert (a.start_s, a.end_s, a.gpu_ids) == (0.0, 1000.0, ["n0/0"])
    assert len([s for s in schedule.segments if s.job == "A"]) == 1
    kinds = [(e.kind.value, e.time_s) for e in schedule.events if e.job == "B"]
    assert kinds == [("start", 0.0), ("preempt", 500.0), ("migrate", 2000.0),
                     ("complete", 2590.0)]


def test_cp_replans_with_a_cap_on_moves_and_the_plan_verifies() -> None:
    """Cp with at most one move gives a verified plan that moves at most one job."""
    parsed = Changes.parse({"down": [{"node": "n1"}]}, "changes.yaml")
    before, changed = changed_instances(DOCUMENT, "two-nodes.json", parsed, 500.0, "c")
    done = replan(before, changed, _previous(), 500.0, parsed, "cp",
                  RunSettings(time_limit_s=2), max_changes=1)
    assert done.schedule is not None and done.schedule.verification is not None
    assert done.schedule.verification.ok and len(done.disruption.moved) <= 1


@pytest.mark.parametrize("method", ["greedy", "cp"])
def test_a_rack_fleet_replans_with_its_gangs_and_node_resources(method: str) -> None:
    """A node of a running 2-node gang fails: the plan of what is left verifies whole.

    The jobs that run on keep their nodes' CPUs and memory (held in the residual), the
    stopped gang starts again on two nodes of one rack, and the merged plan (history and
    all) passes the verifier on the changed instance.
    """
    document = json.loads((DATA / "racks_small.json").read_text())
    instance = instance_from_data(document, "racks_small.json")
    previous = plan(instance, "cp", settings=RunSettings(time_limit_s=5, seed=0))
    gang = next(s for s in previous.segments if s.job == "train-rack")
    at = gang.start_s + 600.0
    failed = gang.gpu_ids[-1].split("/")[0]
    parsed = Changes.parse({"down": [{"node": failed}]}, "changes.yaml")
    before, changed = changed_instances(document, "racks_small.json", parsed, at, "c")
    done = replan(before, changed, previous, at, parsed, method, RunSettings(time_limit_s=2))
    assert done.schedule is not None and done.schedule.verification is not None
    assert done.schedule.verification.ok, done.schedule.verification.violations
    assert "train-rack" in done.disruption.stopped
    again = [s for s in done.schedule.segments if s.job == "train-rack" and s.start_s >= at]
    assert again and failed not in {g.split("/")[0] for g in again[0].gpu_ids}


@pytest.mark.parametrize(("changes", "at", "where", "says"), [
    ({"down": [{"node": "n9"}]}, 500.0, "down[0].node", "unknown node 'n9'"),
    ({"jobs_removed": [{"job": "B"}]}, 500.0, "jobs_removed[0].running", "runs at 500"),
    ({"jobs_changed": [{"job": "A", "duration_s": 10}]}, 1500.0, "jobs_changed[0].duration_s",
     "was done"),
    ({"jobs_changed": [{"job": "Z", "weight": 2}]}, 500.0, "jobs_changed[0].job",
     "unknown job 'Z'"),
])
def test_bad_changes_name_the_file_the_field_and_the_problem(
        changes: dict[str, Any], at: float, where: str, says: str) -> None:
    """Each bad change is an InputError naming the changes file and the entry."""
    with pytest.raises(InputError) as caught:
        _replan(changes, at)
    assert caught.value.source == "changes.yaml" and caught.value.path == where
    assert says in caught.value.message


def test_a_schedule_of_another_instance_is_refused() -> None:
    """A previous plan made for another instance is refused, naming its file."""
    other = _previous().model_copy(update={"instance": "elsewhere"})
    parsed = Changes.parse({"down": [{"node": "n1"}]}, "c")
    before, changed = changed_instances(DOCUMENT, "two-nodes.json", parsed, 500.0, "c")
    with pytest.raises(InputError, match="not 'two-nodes'") as caught:
        replan(before, changed, other, 500.0, parsed, sources=("previous.json", "c"))
    assert caught.value.source == "previous.json"


def test_planners_keep_off_held_gpus_and_the_verifier_catches_a_plan_that_does_not() -> None:
    """A GPU held until 5000 s gets no job before then; a plan that uses it is flagged."""
    instance = instance_from_data(DOCUMENT, "two-nodes")
    held = Outage(np.array([0]), 0.0, 5000.0, "n0 in maintenance")
    blocked = dataclasses.replace(instance, outages=(held,))
    for method in ("greedy", "cp", "sa"):
        schedule = plan(blocked, method, settings=RunSettings(time_limit_s=1, seed=1))
        assert all(s.start_s >= 5000.0 for s in schedule.segments if s.gpu_ids == ["n0/0"])
    verification = verify_schedule(blocked, _previous())
    assert {v.kind for v in verification.violations} == {ViolationKind.OUTAGE}


def test_lost_work_needs_a_failure_at_the_segment_end() -> None:
    """A segment may lose work only where one of its GPUs fails as it ends."""
    previous = _previous()
    lossy = previous.model_copy(update={"segments": [
        s.model_copy(update={"lost": 0.5}) if s.job == "B" else s for s in previous.segments]})
    instance = instance_from_data(DOCUMENT, "two-nodes")
    verification = verify_schedule(instance, lossy)
    assert any("no GPU of it fails then" in v.message for v in verification.violations)


def test_the_four_commands_on_the_quickstart(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """Replan writes a verified plan that diff compares; eta and whatif answer.

    Broken, README's hybrid walk-through would fail for a user.
    """
    instance = Path("instances/quickstart.json")
    previous, new = tmp_path / "plan.json", tmp_path / "new.json"
    assert gpuplan("solve", instance, "--objective", "makespan", "-o", previous).code == 0
    changes = tmp_path / "changes.yaml"
    changes.write_text("down:\n  - node: dgx-b\n")
    done = gpuplan("replan", instance, previous, "--changes", changes, "--at", "3600",
                   "--method", "greedy", "-o", new, "--objective", "makespan")
    assert done.code == 2 and "--objective" in done.err
    done = gpuplan("replan", instance, previous, "--changes", changes, "--at", "3600",
                   "--method", "cp", "--time-limit", "5", "-o", new, "--json")
    assert done.code == 0, done.err
    assert "disruption" in json.loads(done.out)
    assert Schedule.read(new).verification is not None
    compared = gpuplan("diff", previous, new, "--json")
    assert compared.code == 0 and json.loads(compared.out)["unchanged"] >= 0
    first = Schedule.read(new).segments[0].job
    assert json.loads(gpuplan("eta", instance, new, first, "--json").out)["start_s"] == 0.0
    grown = gpuplan("whatif", instance, "--add-gpus", "L4:4", "--json")
    assert grown.code == 0 and "makespan_s" in json.loads(grown.out)
    stray = tmp_path / "stray.yaml"
    stray.write_text("down:\n  - node: nowhere\n")
    refused = gpuplan("replan", instance, previous, "--changes", stray, "--at", "3600",
                      "-o", tmp_path / "none.json")
    assert refused.code == 2 and "down[0].node" in refused.err
    assert not (tmp_path / "none.json").exists()
    early = gpuplan("replan", instance, previous, "--changes", changes, "--at", "-5",
                    "-o", tmp_path / "none.json")
    assert early.code == 2 and "--at" in early.err
    other = tmp_path / "other.json"
    other.write_text(previous.read_text().replace('"quickstart"', '"elsewhere"'))
    foreign = gpuplan("replan", instance, other, "--changes", changes, "--at", "3600",
                      "-o", tmp_path / "none.json")
    assert foreign.code == 2 and "other.json" in foreign.err and "instance" in foreign.err
    assert not (tmp_path / "none.json").exists()


def test_replan_and_diff_count_the_same_moves(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """Replan's moved and unchanged are diff's of the same two plans, at the same tolerance.

    A node of the quickstart fails for half an hour: some jobs move, a running one is
    stopped and runs in two pieces. Broken, the summary said "unchanged: no" and "moved
    5" where diff said 12 unchanged and 6 moved.
    """
    instance = Path("instances/quickstart.json")
    previous, new = tmp_path / "plan.json", tmp_path / "new.json"
    assert gpuplan("solve", instance, "-o", previous).code == 0
    changes = tmp_path / "changes.yaml"
    changes.write_text("down:\n  - node: dgx-b\n    for_s: 1800\n")
    for tolerance in ("60", "0"):
        done = gpuplan("replan", instance, previous, "--changes", changes, "--at", "3600",
                       "--method", "greedy", "--same-start-s", tolerance, "-o", new, "--json")
        assert done.code == 0, done.err
        hurt = json.loads(done.out)["disruption"]
        compared = json.loads(gpuplan("diff", previous, new, "--same-start-s", tolerance,
                                      "--json").out)
        assert hurt["moved"] and hurt["stopped"][0] in hurt["moved"]
        assert (sorted(hurt["moved"]), hurt["unchanged"]) == (compared["moved"],
                                                               compared["unchanged"])
        assert hurt["unchanged"] + len(hurt["moved"]) == 20


@pytest.mark.parametrize(("node", "at"), [("dgx-a", 5000.0), ("dgx-b", 2000.0),
                                          ("edge-1", 8000.0)])
def test_work_done_before_the_change_stays_as_it_ran(node: str, at: float) -> None:
    """Finished segments stay as they were; a job running on GPUs that stay up goes on.

    Broken, a re-plan would redo finished work or move jobs the failure did not touch.
    """
    document = json.loads(Path("instances/quickstart.json").read_text())
    instance = instance_from_data(document, "quickstart")
    previous = plan(instance, "greedy")
    changes = Changes.parse({"down": [{"node": node, "for_s": 600}]}, "c")
    before, changed = changed_instances(document, "quickstart", changes, at, "c")
    done = replan(before, changed, previous, at, changes, "greedy")
    assert done.schedule is not None and done.schedule.verification is not None
    assert done.schedule.verification.ok
    new = {(s.job, s.start_s, s.end_s, tuple(s.gpu_ids)) for s in done.schedule.segments}
    for s in previous.segments:
        if s.end_s <= at:
            assert (s.job, s.start_s, s.end_s, tuple(s.gpu_ids)) in new
        elif s.start_s < at and not any(g.startswith(f"{node}/") for g in s.gpu_ids):
            assert any(job == s.job and start == s.start_s and end > at and gpus == tuple(
                s.gpu_ids) for job, start, end, gpus in new), s.job


def test_a_static_objective_has_no_time_to_replan_at() -> None:
    """An assignment objective is refused with what to do instead."""
    document = {**DOCUMENT, "objective": "min-gpus"}
    parsed = Changes.parse({"down": [{"node": "n1"}]}, "c")
    before, changed = changed_instances(document, "two-nodes.json", parsed, 500.0, "c")
    with pytest.raises(InputError, match="places the batch at once"):
        replan(before, changed, _previous(), 500.0, parsed)


def _most_held(schedule: Schedule, prefix: str) -> int:
    """The most GPUs the jobs whose id starts with ``prefix`` hold at one instant."""
    mine = [s for s in schedule.segments if s.job.startswith(prefix)]
    return max(sum(len(s.gpu_ids) for s in mine if s.start_s <= t < s.end_s)
               for t in {s.start_s for s in mine})


def test_a_replan_counts_running_jobs_against_their_account(gpuplan: Gpuplan,
                                                            tmp_path: Path) -> None:
    """quotas.json's l1 fails at 600 s while nlp-1 and nlp-2 hold nlp's 4 GPUs to 3600 s.

    With moves free, a plan that did not count them would start nlp-3 on a2's idle A100s
    at once; the re-plan keeps nlp at its limit (nlp-3 waits for them), stays in the
    partitions (the stopped vision jobs restart on l2), and verifies whole.
    """
    instance = DATA / "quotas.json"
    previous, new = tmp_path / "plan.json", tmp_path / "new.json"
    assert gpuplan("solve", instance, "--method", "greedy", "-o", previous).code == 0
    changes = tmp_path / "changes.yaml"
    changes.write_text("down:\n  - node: l1\n")
    done = gpuplan("replan", instance, previous, "--changes", changes, "--at", "600",
                   "--method", "cp", "--move-s", "0", "--time-limit", "5", "-o", new,
                   "--json")
    assert done.code == 0, done.err
    assert json.loads(done.out)["disruption"]["stopped"] == ["vision-1", "vision-2"]
    schedule = Schedule.read(new)
    assert schedule.verification is not None and schedule.verification.ok
    assert _most_held(schedule, "nlp") <= 4 and _most_held(schedule, "vision") <= 2
    starts = {s.job: s.start_s for s in schedule.segments}
    assert starts["nlp-3"] >= 3600.0
    assert {s.node for s in schedule.segments
            if s.job in ("vision-1", "vision-2") and s.start_s >= 600} == {"l2"}


def test_whatif_removes_a_node_from_its_partitions_too(gpuplan: Gpuplan) -> None:
    """Removing l2 of quotas.json plans the infer partition on l1 alone.

    Removing both of its nodes is exit 2 naming --remove-node, the partition and the
    jobs that could not run. Broken, whatif said "unknown node" of a partition.
    """
    instance = DATA / "quotas.json"
    fewer = whatif(json.loads(instance.read_text()), str(instance), [], ["l2"], "greedy")
    assert fewer.changed.verification is not None and fewer.changed.verification.ok
    assert {s.node for s in fewer.changed.segments
            if s.job in ("vision-1", "vision-2")} == {"l1"}
    none = gpuplan("whatif", instance, "--remove-node", "l1", "--remove-node", "l2",
                   "--method", "greedy")
    assert none.code == 2
    assert ("error: --remove-node: that removes every node of partition 'infer' (l1, l2), "
            "and its jobs run only there: vision-1, vision-2 could not run"
            in " ".join(none.err.split()))
