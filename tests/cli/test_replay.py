"""gpuplan replay fgd|time: verified replays, their tables, and the flags it refuses."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from conftest import DATA, Gpuplan

from gpuplan import Schedule, verify_schedule
from gpuplan.sharing.policies import POLICIES

NODES = DATA / "openb" / "nodes.csv"
PODS = DATA / "openb" / "pods.csv"


def test_replay_writes_verified_runs_and_tables(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """Every (policy, seed) gets a verified schedule; the tables list each run and the means."""
    ran = gpuplan("replay", "fgd", PODS, "--nodes", NODES, "--policy",
                  "best-fit,fgd", "--seeds", "1,2", "-o", tmp_path, "--workers", "1")
    assert ran.code == 0, ran.err
    assert "4 replays, 4 verified" in ran.err
    runs = sorted((tmp_path / "pods").glob("*.json"))
    assert [p.name for p in runs] == ["best-fit-1.json", "best-fit-2.json", "fgd-1.json",
                                      "fgd-2.json"]
    schedule = Schedule.read(runs[0])
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.method == "replay:best-fit"
    with (tmp_path / "results.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["policy"], r["seed"], r["status"]) for r in rows] == [
        ("best-fit", "1", "ok"), ("best-fit", "2", "ok"), ("fgd", "1", "ok"), ("fgd", "2", "ok")]
    # The objective is the GPU milli allocated at the end, as the verifier recounts it.
    assert schedule.objective == schedule.verification.objective > 0
    assert (tmp_path / "allocation.png").stat().st_size > 0
    assert "pods,policy,seed,curve,0,1," in (tmp_path / "curves.csv").read_text()


def test_a_replay_schedule_is_checked_on_the_inflated_pods(tmp_path: Path) -> None:
    """The written end state verifies against the replay's inflated instance."""
    from gpuplan.harness.replay import replay_schedule
    from gpuplan.readers.openb import read_openb
    from gpuplan.sharing.replay import replay

    result = replay(read_openb(NODES, PODS), "fgd", 7)
    schedule = replay_schedule(result)
    assert verify_schedule(result.instance, schedule).ok
    # Inflated copies are jobs of their own; failed pods are listed as unplaced.
    assert len(schedule.segments) + len(schedule.unplaced) == result.instance.n_jobs > 4


@pytest.mark.parametrize(("flags", "words"), [
    (["--mode", "round"], "unrecognized arguments: --mode round"),
    (["--placement", "first-fit"], "unrecognized arguments: --placement first-fit"),
    (["--time-limit", "3"], "unrecognized arguments: --time-limit 3"),
    (["--progress"], "unrecognized arguments: --progress"),
    (["--seed", "1", "--seeds", "1:3"], "argument --seeds: not allowed with argument --seed"),
    (["--policy", "fgd,bestfit"], "unknown sharing policy 'bestfit'"),
    (["--seeds", "0:100000000000"], "at most 10000 seeds"),
])
def test_replay_refuses_flags_it_does_not_take(gpuplan: Gpuplan, tmp_path: Path,
                                               flags: list[str], words: str) -> None:
    """A flag the replay does not take is exit 2 naming it, and nothing is written."""
    ran = gpuplan("replay", "fgd", PODS, "--nodes", NODES, "-o", tmp_path / "out", *flags)
    assert ran.code == 2 and words in ran.err, ran.err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_replay_flags_belong_to_replay(gpuplan: Gpuplan) -> None:
    """--nodes given to simulate is exit 2, not ignored."""
    ran = gpuplan("simulate", DATA / "valid_small.json", "--nodes", NODES)
    assert ran.code == 2 and "unrecognized arguments: --nodes" in ran.err


def test_simulate_replay_is_an_alias_that_says_so(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """The old simulate --replay KIND still runs replay KIND for one release, with a notice."""
    ran = gpuplan("simulate", "--replay", "fgd", PODS, "--nodes", NODES, "--policy",
                  "best-fit", "--seed", "1", "-o", tmp_path, "--workers", "1")
    assert ran.code == 0, ran.err
    assert "`gpuplan simulate --replay fgd` is now `gpuplan replay fgd`" in ran.err
    assert (tmp_path / "pods" / "best-fit-1.json").exists()
    # The alias takes replay's flags only: --progress, a simulator flag, is exit 2.
    refused = gpuplan("simulate", "--replay=fgd", PODS, "--nodes", NODES, "-o",
                      tmp_path / "other", "--progress")
    assert refused.code == 2 and "unrecognized arguments: --progress" in refused.err


def test_replay_bad_row_is_exit_2(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A bad pod row is exit 2 naming file, line and field, before any replay runs."""
    ran = gpuplan("replay", "fgd", DATA / "openb" / "bad" / "not_a_number.csv",
                  "--nodes", NODES, "-o", tmp_path, "--seed", "1")
    assert ran.code == 2, ran.err
    assert "not_a_number.csv: line 3: cpu_milli is '4k'" in ran.err


def test_every_registered_policy_replays(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """Every registered sharing policy runs through the same command and verifies."""
    ran = gpuplan("replay", "fgd", PODS, "--nodes", NODES, "--policy",
                  ",".join(POLICIES), "--seed", "3", "-o", tmp_path, "--workers", "1")
    assert ran.code == 0, ran.err
    assert f"{len(POLICIES)} replays, {len(POLICIES)} verified" in ran.err


def test_time_replay_writes_verified_runs(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--replay time writes a verified time-based run per policy and its results table."""
    ran = gpuplan("replay", "time", PODS, "--nodes", NODES, "--policy",
                  "best-fit", "--seed", "0", "--speedup", "10", "-o", tmp_path,
                  "--workers", "1")
    assert ran.code == 0, ran.err
    schedule = Schedule.read(tmp_path / "pods" / "best-fit-0.json")
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.objective_kind == "weighted-completion"
    with (tmp_path / "results.csv").open() as f:
        (row,) = list(csv.DictReader(f))
    # pod-3 asks more CPU than any node has: it fails at once, the other three run.
    assert (row["placed"], row["failed"], row["speedup"]) == ("3.0", "1.0", "10.0")
    assert (tmp_path / "held_share.png").stat().st_size > 0


@pytest.mark.parametrize(("kind", "flag", "value"), [("time", "--ratio", "1.1"),
                                                     ("fgd", "--speedup", "10")])
def test_each_replay_refuses_the_others_setting(gpuplan: Gpuplan, tmp_path: Path, kind: str,
                                                flag: str, value: str) -> None:
    """--ratio belongs to fgd replays and --speedup to time replays: exit 2 otherwise."""
    ran = gpuplan("replay", kind, PODS, "--nodes", NODES, flag, value, "-o",
                  tmp_path)
    assert ran.code == 2 and f"unrecognized arguments: {flag} {value}" in ran.err


def test_time_replay_needs_times(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A pod list without creation and deletion times is exit 2 for a time replay."""
    ran = gpuplan("replay", "time", DATA / "openb" / "pods_short.csv",
                  "--nodes", NODES, "-o", tmp_path / "out")
    assert ran.code == 2 and "has no creation_time and deletion_time" in ran.err
    assert not (tmp_path / "out").exists()


def test_replay_with_migration_counts_moves_and_verifies(gpuplan: Gpuplan,
                                                        tmp_path: Path) -> None:
    """--migrate lets moved pods make room; the end state still verifies, moves are counted."""
    ran = gpuplan("replay", "fgd", PODS, "--nodes", NODES, "--policy",
                  "best-fit", "--seeds", "1:6", "--migrate", "2:0.5", "-o", tmp_path,
                  "--workers", "1")
    assert ran.code == 0, ran.err
    with (tmp_path / "results.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert all(row["status"] == "ok" for row in rows)
    # On this tiny cluster seeds 2 and 5 need moves to place a pod; each moved pod counts.
    assert sum(int(row["moves"]) for row in rows) > 0
    assert all(int(row["moved_pods"]) <= int(row["moves"]) for row in rows)


@pytest.mark.parametrize("value", ["0", "2:1.5", "two"])
def test_migrate_refuses_bad_values(gpuplan: Gpuplan, tmp_path: Path, value: str) -> None:
    """--migrate takes K (1-8) or K:SHARE (0-1): anything else is exit 2."""
    ran = gpuplan("replay", "fgd", PODS, "--nodes", NODES, "--migrate", value,
                  "-o", tmp_path)
    assert ran.code == 2 and "--migrate" in ran.err


def test_time_replay_refuses_migrate(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """Migration is a setting of fgd replays; a time replay refuses it."""
    ran = gpuplan("replay", "time", PODS, "--nodes", NODES, "--migrate", "2",
                  "-o", tmp_path)
    assert ran.code == 2 and "unrecognized arguments: --migrate 2" in ran.err


def test_a_ratio_that_drops_every_pod_is_exit_2(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--ratio below one pod's share of the cluster is refused, naming the least that works."""
    out = tmp_path / "out"
    ran = gpuplan("replay", "fgd", PODS, "--nodes", NODES, "--ratio", "1e-6", "-o", out)
    assert ran.code == 2, ran.err
    assert "--ratio: 1e-06 x the cluster's 7000 milli-GPUs is less than one pod's" in ran.err
    assert "at least 0.286" in ran.err and not out.exists()


@pytest.mark.parametrize("kind", ["fgd", "time"])
def test_a_pod_list_without_gpu_pods_is_exit_2(gpuplan: Gpuplan, tmp_path: Path,
                                               kind: str) -> None:
    """A pod list where no pod asks for a GPU is refused naming the file: nothing to measure."""
    rows = list(csv.DictReader(PODS.open()))
    pods = tmp_path / "cpu.csv"
    with pods.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({**row, "num_gpu": "0", "gpu_milli": "0"} for row in rows)
    ran = gpuplan("replay", kind, pods, "--nodes", NODES, "-o", tmp_path / "out")
    assert ran.code == 2, ran.err
    assert f"{pods}: none of its 4 pods asks for a GPU" in ran.err


def test_a_formula_in_a_pod_list_name_is_not_a_formula_in_the_tables(
        gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A pod list named ``=1+2.csv`` appears as text in results.csv and curves.csv.

    If this broke, opening the tables in a spreadsheet would evaluate the name.
    """
    pods = tmp_path / "=1+2.csv"
    pods.write_bytes(PODS.read_bytes())
    out = tmp_path / "out"
    assert gpuplan("replay", "fgd", pods, "--nodes", NODES, "--policy", "fgd", "--seed",
                   "42", "-o", out, "--workers", "1").code == 0
    for table in ("results.csv", "curves.csv"):
        cells = [row[0] for row in csv.reader((out / table).open())][1:]
        assert cells and all(cell == "'=1+2" for cell in cells), table
