"""Exported plans on a real Slurm: accepted by sbatch, run where and when the plan says.

The clusters are emulated on this machine (every slurmd on localhost, fake GPU device
files) from the slurm.conf that ``gpuplan export slurm-conf --emulate`` writes;
``.ci/slurm-up`` starts one per fleet and ``GPUPLAN_SLURM_CLUSTERS`` names their folder.
Without it these tests skip, saying so; under CI (``GPUPLAN_REQUIRE_SLURM=1``) they fail.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gpuplan import Instance, read_instance
from gpuplan.core.schedule import Schedule
from gpuplan.readers.slurm import SACCT_COMMAND, read_sacct
from gpuplan.verify import verify_schedule
from tests.conftest import DATA, INSTANCES, Gpuplan
from tests.exporters.live_slurm import SLURM, LiveRuns, Slurm, on

pytestmark = pytest.mark.slurm

#: How late after its --begin (or its predecessor's end) a job may start: the emulated
#: clusters look at pending jobs every second (SchedulerParameters in their slurm.conf).
GRANULARITY_S = 5


@pytest.fixture
def slurm(clusters: Path) -> Callable[[str], Slurm]:
    """``slurm(fleet)(command...)`` runs a Slurm command against that fleet's cluster."""
    return lambda fleet: on(clusters, fleet)


def _campus(gpuplan: Gpuplan, folder: Path) -> Path:
    instance = folder / "campus.json"
    clusters = INSTANCES / "clusters"
    assert gpuplan("import", "slurm", clusters / "slurm.conf", clusters / "gres.conf",
                   "--jobs", clusters / "jobs.yaml", "-o", instance).code == 0
    return instance


#: (fleet, method, export flags): every method that plans the fleet's instance, once each
#: kind of plan: greedy everywhere, CP-SAT's chains of segments (the round-based
#: policy's are alike; scripts/bench_export.py runs every method), and multi-node gangs
#: within racks (--switches, --nodes, --ntasks-per-node, --cpus-per-task, --mem) with jobs
#: sharing a GPU by shards.
PLANS = [("quickstart", "greedy", ()), ("gavel_makespan", "greedy", ()),
         ("gavel_makespan", "cp", ()),
         ("gavel_cluster_500", "greedy", ()), ("campus", "cp", ()),
         ("racks", "greedy", ("--gpu-sharing", "shard")),
         ("racks", "cp", ("--gpu-sharing", "shard"))]


@pytest.mark.parametrize(("fleet", "method", "flags"), PLANS)
def test_every_exported_script_is_accepted(gpuplan: Gpuplan, slurm: Callable[[str], Slurm],
                                           tmp_path: Path, fleet: str, method: str,
                                           flags: tuple[str, ...]) -> None:
    """Slurm's sbatch --test-only takes every script: nodes, GPU types and counts, times.

    Scripts that ask Slurm for the same things are checked once (a plan in thousands of
    segments asks for a few dozen different things), the longest --time of them;
    scripts/bench_export.py checks every script.
    """
    if fleet == "campus":
        instance = _campus(gpuplan, tmp_path)
    else:
        instance = SLURM / "racks.json" if fleet == "racks" else INSTANCES / f"{fleet}.json"
    plan, out = tmp_path / "plan.json", tmp_path / "out"
    solved = gpuplan("solve", instance, "--method", method, "--time-limit", "1", "-o", plan)
    assert solved.code == 0, solved.out + solved.err
    epoch = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    exported = gpuplan("export", "slurm", plan, "--instance", instance, "-o", out,
                       "--rehearse", "true", "--epoch", epoch, *flags)
    assert exported.code == 0, exported.err
    # Scripts asking for the same node, GPUs and memory are one ask; of those, the one
    # with the longest --time (D-HH:MM:SS sorts as text) stands for them.
    asks: dict[str, tuple[str, Path]] = {}
    for script in sorted((out / "jobs").glob("*.sbatch")):
        text = script.read_text()
        lines = re.findall(r"^#SBATCH (--(?!job-name|begin|time).*)$", text, re.MULTILINE)
        limit = re.findall(r"^#SBATCH --time=(.*)$", text, re.MULTILINE)[0].zfill(12)
        key = "\n".join(lines)
        asks[key] = max(asks.get(key, (limit, script)), (limit, script))
    run = slurm(fleet)
    rejected = {}
    for _, script in asks.values():
        tested = run("sbatch", "--test-only", script)
        if tested.returncode != 0:
            rejected[script.name] = tested.stderr.strip()
    assert rejected == {}
    if len(asks) == len(list((out / "jobs").glob("*.sbatch"))) <= 100:
        assert run(out / "submit.sh", "--test-only").returncode == 0


def test_partitions_accounts_and_qos_reach_slurm_and_slurm_holds_the_limits(
        gpuplan: Gpuplan, slurm: Callable[[str], Slurm], tmp_path: Path) -> None:
    """Slurm takes every script of the quotas plan with its partition, account and QOS.

    And the cluster that export slurm-conf wrote (its partitions, accounts.sh run by
    start.sh, AccountingStorageEnforce) holds them: a job of another partition's nodes, an
    unknown account or QOS is refused, and an account's or QOS's jobs beyond its GPU limit
    wait (AssocGrpGRES, QOSGrpGRES) while the first runs.
    """
    instance, plan, out = DATA / "quotas.json", tmp_path / "plan.json", tmp_path / "out"
    assert gpuplan("solve", instance, "--method", "cp", "--time-limit", "1", "-o", plan).code == 0
    epoch = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert gpuplan("export", "slurm", plan, "--instance", instance, "-o", out, "--rehearse",
                   "true", "--epoch", epoch).code == 0
    ops = _directives(out / "jobs")["ops-2"]
    assert {"--partition=mixed", "--account=ops", "--qos=urgent"} <= ops
    run = slurm("quotas")
    tested = run(out / "submit.sh", "--test-only")
    assert tested.returncode == 0, tested.stderr
    for wrong in (["--partition=infer", "--nodelist=a1"], ["--account=nobody"],
                  ["--qos=nobody"]):
        assert run("sbatch", "--test-only", *wrong, "--wrap", "true").returncode == 1, wrong
    held = {}
    ids = []
    for flags, limit in ((["--account=vision", "--gres=gpu:L4:2", "--nodelist=l1"], ""),
                         (["--account=vision", "--gres=gpu:L4:2", "--nodelist=l2"],
                          "AssocGrpGRES"),
                         (["--account=ops", "--qos=urgent", "--gres=gpu:A100:2",
                           "--nodelist=a1"], ""),
                         (["--account=ops", "--qos=urgent", "--gres=gpu:A100:1",
                           "--nodelist=a2"], "QOSGrpGRES")):
        submitted = run("sbatch", "--parsable", "--time=1", f"--chdir={tmp_path}", *flags,
                        "--wrap", "sleep 30")
        assert submitted.returncode == 0, submitted.stderr
        ids.append(submitted.stdout.strip())
        held[ids[-1]] = limit
    try:
        until = time.monotonic() + 10
        while True:
            listed = run("squeue", "-h", "-o", "%i %T %r", "-j", ",".join(ids)).stdout
            states = {i: (state, reason) for i, state, reason in
                      (line.split(maxsplit=2) for line in listed.splitlines())}
            if all(states.get(i, ("",))[0] == ("PENDING" if r else "RUNNING")
                   for i, r in held.items()) or time.monotonic() > until:
                break
            time.sleep(0.5)
        assert states == {i: ("PENDING", r) if r else ("RUNNING", "None")
                          for i, r in held.items()}
    finally:
        run("scancel", *ids)


def _directives(folder: Path) -> dict[str, set[str]]:
    """Each job's ``#SBATCH`` lines in the scripts of an export's ``jobs/``, by job name."""
    found = {}
    for script in folder.glob("*.sbatch"):
        lines = set(re.findall(r"^#SBATCH (.*)$", script.read_text(), re.MULTILINE))
        name = next(line for line in lines if line.startswith("--job-name="))
        found[name.removeprefix("--job-name=")] = lines
    return found


def _wait_until_done(run: Slurm, ids: list[str], seconds: float) -> str:
    """The sacct -P rows of the jobs, once none is pending or running."""
    until = time.monotonic() + seconds
    while True:
        rows = run("bash", "-c", SACCT_COMMAND.replace("IDS", ",".join(ids))).stdout
        states = [line.split("|")[2] for line in rows.splitlines()[1:]]
        if len(states) == len(ids) and not any(
                s in ("PENDING", "RUNNING", "REQUEUED") for s in states):
            return rows
        assert time.monotonic() < until, f"still running after {seconds} s:\n{rows}"
        time.sleep(1)


def _as_ran(instance: Instance, ran: Schedule) -> Instance:
    """The instance with each job's duration as it ran, after checking it is the estimate.

    Slurm records whole seconds, so a job may show one second more or less. The rest of the
    verifier's checks (capacity, gangs, types, dependencies) then hold what ran to the
    plan's rules.
    """
    duration = instance.duration.copy()
    for j, job in enumerate(instance.job_ids):
        ran_s = sum(s.end_s - s.start_s for s in ran.segments if s.job == job)
        t = next(instance.type_index[s.gpu_type] for s in ran.segments if s.job == job)
        assert abs(ran_s - duration[j, t]) <= 1, f"{job} ran {ran_s} s"
        duration[j, :] = ran_s
    return dataclasses.replace(instance, duration=duration)


def test_a_plan_of_sleep_jobs_runs_as_planned(
        gpuplan: Gpuplan, slurm: Callable[[str], Slurm], tmp_path: Path,
        live_runs: LiveRuns) -> None:
    """A plan of sleep jobs runs to COMPLETED where and when it says.

    The sleepers plan, and a paused job's chain of segments on the campus cluster: each
    job on its planned node and GPU type, none before its --begin, each within the
    scheduler's granularity of its plan, after its predecessors (the verifier checks what
    ran); gpuplan import sacct and diff find no job moved or late.
    """
    quick, campus = slurm("sleepers"), slurm("paused")
    sleepers, paused = SLURM / "sleepers.json", SLURM / "paused.json"
    if isinstance(live_runs, Exception):
        raise live_runs
    assert live_runs is not None
    (epoch, ids), (epoch_p, ids_p) = live_runs["sleepers"], live_runs["paused"]
    rows = _wait_until_done(quick, ids, 90)
    rows_p = _wait_until_done(campus, ids_p, 60)
    for text, count in ((rows, 7), (rows_p, 3)):
        states = [line.split("|")[2] for line in text.splitlines()[1:]]
        assert states == ["COMPLETED"] * count, text
    for name, text, instance_file, zero, plan_file in (
            ("sleepers", rows, sleepers, epoch, SLURM / "sleepers_plan.json"),
            ("paused", rows_p, paused, epoch_p, SLURM / "paused_plan.json")):
        (tmp_path / f"{name}.txt").write_text(text)
        instance = read_instance(instance_file)
        ran = read_sacct(tmp_path / f"{name}.txt", instance, zero)
        planned = Schedule.read(plan_file)
        assert verify_schedule(_as_ran(instance, ran), ran).ok, text
        assert len(ran.segments) == len(planned.segments)
        for want, got in zip(sorted(planned.segments, key=lambda s: (s.job, s.start_s)),
                             sorted(ran.segments, key=lambda s: (s.job, s.start_s)),
                             strict=True):
            assert (got.job, got.node, got.gpu_type) == (want.job, want.node, want.gpu_type)
            assert want.start_s <= got.start_s <= want.start_s + GRANULARITY_S, text
    outcome = gpuplan("import", "sacct", tmp_path / "sleepers.txt", "--instance", sleepers,
                      "--epoch", epoch.isoformat(), "-o", tmp_path / "ran.json")
    # Exit 1 when a job ran a second longer than its estimate, which is reported.
    assert outcome.code in (0, 1), outcome.err
    violations = json.loads((tmp_path / "ran.json").read_text())["verification"]["violations"]
    assert {v["kind"] for v in violations} <= {"duration"}
    diff = gpuplan("diff", SLURM / "sleepers_plan.json", tmp_path / "ran.json",
                   "--same-start-s", str(GRANULARITY_S), "--json")
    assert diff.code == 0
    changes = json.loads(diff.out)
    assert (changes["moved"], changes["later"], changes["unchanged"]) == ([], [], 7)


def test_a_plan_with_gangs_racks_and_shards_runs_as_planned(
        slurm: Callable[[str], Slurm], tmp_path: Path, live_runs: LiveRuns) -> None:
    """The racks plan runs on the emulated cluster with topology.conf and shards, as planned.

    Each 2- and 4-node gang runs on its planned nodes, all at once; the two jobs planned
    on the one L4 run on it at the same time (by shards); a CPU-only job runs on its node;
    none before its --begin, each within the scheduler's granularity of its plan; what ran
    reads back (import sacct) as a schedule that verifies.
    """
    run = slurm("racks")
    if isinstance(live_runs, Exception):
        raise live_runs
    assert live_runs is not None
    epoch, ids = live_runs["racks"]
    rows = _wait_until_done(run, ids, 90)
    states = [line.split("|")[2] for line in rows.splitlines()[1:]]
    assert states == ["COMPLETED"] * 6, rows
    (tmp_path / "racks.txt").write_text(rows)
    instance = read_instance(SLURM / "racks.json")
    ran = {s.job: s for s in read_sacct(tmp_path / "racks.txt", instance, epoch).segments}
    planned = {s.job: s for s in Schedule.read(SLURM / "racks_plan.json").segments}
    for job, want in planned.items():
        got = ran[job]
        assert {g.split("/")[0] for g in got.gpu_ids} == {g.split("/")[0] for g in
                                                          want.gpu_ids}, rows
        assert (got.node, len(got.gpu_ids)) == (want.node, len(want.gpu_ids)), rows
        assert want.start_s <= got.start_s <= want.start_s + GRANULARITY_S, rows
    together = ran["infer-1"], ran["infer-2"]
    assert max(s.start_s for s in together) < min(s.end_s for s in together), rows
    schedule = read_sacct(tmp_path / "racks.txt", instance, epoch)
    assert verify_schedule(_as_ran(instance, schedule), schedule).ok, rows


def test_switches_keep_a_gang_under_one_leaf_switch(
        gpuplan: Gpuplan, slurm: Callable[[str], Slurm], tmp_path: Path) -> None:
    """With topology.conf loaded, Slurm takes the gang's --switches=1 script as exported.

    The same script with its nodes moved to two racks is refused: the exported
    --switches=1 holds a gang within a leaf switch (a rack).
    """
    epoch = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert gpuplan("export", "slurm", SLURM / "racks_plan.json", "--instance",
                   SLURM / "racks.json", "-o", tmp_path, "--epoch", epoch,
                   "--gpu-sharing", "shard").code == 0
    script = tmp_path / "jobs" / "1-gang.sbatch"
    assert "#SBATCH --switches=1" in script.read_text()
    run = slurm("racks")
    accepted = run("sbatch", "--test-only", script)
    assert accepted.returncode == 0, accepted.stderr
    assert "on nodes h[3-4]" in accepted.stderr
    spread = tmp_path / "spread.sbatch"
    spread.write_text(script.read_text().replace("--nodelist=h3,h4", "--nodelist=h2,h3"))
    assert run("sbatch", "--test-only", spread).returncode != 0
