"""The cluster scenarios users of Kueue reported (instances/scenarios/), as gpuplan plans them.

Each test runs what docs/guide/scenarios.md shows and checks what a user would look at:
where the gang runs, when, and what it costs the other jobs.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from conftest import INSTANCES, run_cli

from gpuplan import RunSettings, Schedule, plan, read_instance
from gpuplan.simulate.run import RunSpec, simulate

SCENARIOS = INSTANCES / "scenarios"


def racks_of(instance_path: Path, schedule: Schedule, prefix: str) -> Counter[str]:
    """How many of the jobs whose id starts with ``prefix`` each rack holds."""
    nodes = json.loads(instance_path.read_text())["nodes"]
    rack = {n["id"]: n["topology"]["rack"] for n in nodes}
    return Counter(rack[s.node] for s in schedule.segments if s.job.startswith(prefix))


def test_kueue_4329_planned_together_the_gang_finds_a_whole_node() -> None:
    """Planned as one batch, the two 4-GPU jobs share a node and the 8-GPU gang starts at once.

    Kueue admits the gang on quota (8 GPUs free) when they are 4 + 4 on two nodes, and it
    never runs; gpuplan never splits them that way.
    """
    schedule = plan(read_instance(SCENARIOS / "kueue-4329" / "batch.json"), "cp",
                    settings=RunSettings(time_limit_s=5, seed=0))
    by_job = {s.job: s for s in schedule.segments}
    assert by_job["eval-a"].node == by_job["eval-b"].node
    assert by_job["train-8"].start_s == 600.0
    assert by_job["train-8"].node != by_job["eval-a"].node


def test_kueue_4329_running_split_the_gang_is_planned_where_it_fits_and_says_when(
        tmp_path: Path) -> None:
    """With 4 GPUs busy on each node, replan puts the gang on the first node to free up.

    ``eta`` then says when it starts and which job holds it back.
    """
    folder = SCENARIOS / "kueue-4329"
    new, changed = tmp_path / "new.json", tmp_path / "changed.json"
    done = run_cli("replan", folder / "instance.json", folder / "running.json", "--changes",
                   folder / "arrival.yaml", "--at", "600", "--method", "cp", "--time-limit",
                   "1", "-o", new, "--write-instance", changed)
    assert done.returncode == 0, done.stderr
    gang = next(s for s in Schedule.read(new).segments if s.job == "train-8")
    assert gang.start_s == 7200.0 and gang.node == "n1"
    eta = run_cli("eta", changed, new, "train-8", "--json")
    assert eta.returncode == 0, eta.stderr
    said = json.loads(eta.stdout)
    assert said["start_s"] == 7200.0
    assert "eval-a" in json.dumps(said)


def test_kueue_5243_room_for_the_gang_stops_the_jobs_of_one_node() -> None:
    """The gang of weight 10 starts on arrival, stopping one node's three jobs, no others.

    Kueue preempted eight 1-GPU jobs on four nodes for it, freeing no node whole; the
    replan policy prices each stop and the engine stops only the jobs on the node it takes.
    """
    instance = read_instance(SCENARIOS / "kueue-5243.json")
    log = simulate(instance, RunSpec(scheduler="replan", options={
        "replan_method": "cp", "replan_disruption": 600.0},
        settings=RunSettings(time_limit_s=2, seed=0)))
    stopped = [e for e in log.events if e.kind.value == "preempt" and e.time_s == 600.0]
    nodes = {g.split("/")[0] for e in stopped for g in e.gpu_ids}
    assert len(stopped) == 3 and len(nodes) == 1
    assert sum(len(e.gpu_ids) for e in stopped) == 8
    gang = next(e for e in log.events if e.job == "train-8" and e.kind.value == "start")
    assert gang.time_s == 600.0 and {g.split("/")[0] for g in gang.gpu_ids} == nodes


def test_nvl72_single_gpu_jobs_fill_the_fewest_racks_and_the_gang_starts_on_arrival() -> None:
    """1,500 single-GPU jobs, all running at once by the end of the first hour, fill 21 racks.

    21 = ceil(1500 / 72) is the fewest racks that hold them (the bound), so 11 racks stay
    whole and the 64-GPU gang bound to a rack starts on arrival. A placement by node name
    (a Kueue-like first fit) touches all 33 racks for the same arrivals, and the gang
    waits for a rack to drain.
    """
    path = SCENARIOS / "nvl72-racks.json"
    instance = read_instance(path)
    planned = plan(instance, "greedy")
    touched = racks_of(path, planned, "single-")
    assert len(touched) == -(-1500 // 72) == 21
    gang = next(s for s in planned.segments if s.job == "pretrain-64")
    assert gang.start_s == 5400.0
    assert planned.verification is not None and planned.verification.topology is not None
    assert planned.verification.topology.free[0].least == 33 - 21 - 1
    first_fit = simulate(instance, RunSpec(scheduler="fifo", placement="first-fit"))
    assert len(racks_of(path, first_fit, "single-")) == 33
    waited = next(s for s in first_fit.segments if s.job == "pretrain-64")
    assert waited.start_s > 5400.0
