"""gpuplan simulate --policy edf|tiresias|elasticflow|optimizer: elastic jobs over time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DATA, Gpuplan

from gpuplan.core.schedule import RunSummary, Schedule

TRACE = DATA / "itp" / "elasticflow" / "195job.csv"
ELASTIC = Path(__file__).parents[2] / "instances" / "elastic.json"


@pytest.fixture
def instance(gpuplan: Gpuplan, tmp_path: Path) -> Path:
    """The 30-job excerpt of ElasticFlow's trace, converted with --deadlines."""
    converted = gpuplan("convert", "itp", TRACE, "--deadlines", "-o", tmp_path)
    assert converted.code == 0, converted.err
    (path,) = tmp_path.glob("*.json")
    return path


@pytest.mark.parametrize("policy", ["edf", "tiresias", "elasticflow", "optimizer"])
def test_each_policy_writes_a_log_check_accepts(gpuplan: Gpuplan, instance: Path,
                                                tmp_path: Path, policy: str) -> None:
    """The log is verified, states the ratio, and gpuplan check accepts it again."""
    out = tmp_path / f"{policy}.json"
    ran = gpuplan("simulate", instance, "--policy", policy, "-o", out)
    assert ran.code == 0, ran.err
    assert "deadlines met" in ran.err
    run = Schedule.read(out).run
    assert run is not None and run.scheduler == policy
    assert 0 < run.metrics["deadline_ratio"] <= 1
    assert gpuplan("check", instance, out).code == 0


def test_metrics_only_writes_the_summary(gpuplan: Gpuplan, instance: Path,
                                         tmp_path: Path) -> None:
    """--metrics-only keeps the verified summary, not the segments."""
    out = tmp_path / "summary.json"
    ran = gpuplan("simulate", instance, "--policy", "optimizer", "--time-limit", "0.5",
                  "--metrics-only", "-o", out)
    assert ran.code == 0, ran.err
    summary = RunSummary.read(out)
    assert summary.run is not None and "solves" in summary.run.metrics


@pytest.mark.parametrize(("flags", "named"), [
    (["--placement", "first-fit"], "--placement"),
    (["--mode", "round"], "--mode"),
    (["--restart-overhead", "5"], "--restart-overhead"),
    (["--periods", "3"], "--periods"),
    (["--time-limit", "1"], "--time-limit"),
    (["--thresholds", "1,2"], "--thresholds"),
    (["--plot", "pictures"], "--plot"),
])
def test_a_flag_the_elastic_policy_does_not_take_is_refused(
        gpuplan: Gpuplan, instance: Path, tmp_path: Path, flags: list[str],
        named: str) -> None:
    """The elasticflow policy takes --slot only: any other part's flag is exit 2 naming it."""
    out = tmp_path / "run.json"
    ran = gpuplan("simulate", instance, "--policy", "elasticflow", *flags, "-o", out)
    assert ran.code == 2
    assert named in ran.err and "does not take" in ran.err
    assert not out.exists()


def test_an_elastic_flag_with_a_rigid_policy_is_refused(gpuplan: Gpuplan) -> None:
    """--periods is the optimizer's: fifo refuses it, naming it."""
    ran = gpuplan("simulate", DATA / "valid_small.json", "--policy", "fifo", "--periods", "3")
    assert ran.code == 2 and "--periods" in ran.err


def test_a_rigid_policy_refuses_elastic_jobs(gpuplan: Gpuplan, instance: Path) -> None:
    """Fifo does not choose GPU counts: exit 2 naming an elastic job and the policies.

    The message names the policies that do choose counts.
    """
    ran = gpuplan("simulate", instance, "--policy", "fifo")
    assert ran.code == 2
    assert "elastic" in ran.err and "elasticflow" in ran.err


def test_the_example_instance_runs_under_the_optimizer(gpuplan: Gpuplan) -> None:
    """instances/elastic.json, README's example, runs and meets deadlines."""
    ran = gpuplan("simulate", ELASTIC, "--policy", "optimizer")
    assert ran.code == 0, ran.err
    assert "deadlines met" in ran.err


def test_check_refuses_a_ratio_the_log_does_not_give(gpuplan: Gpuplan, instance: Path,
                                                     tmp_path: Path) -> None:
    """A run log whose record claims more deadlines met than its segments show is exit 1."""
    out = tmp_path / "run.json"
    assert gpuplan("simulate", instance, "--policy", "elasticflow", "-o", out).code == 0
    log = json.loads(out.read_text())
    log["run"]["metrics"]["deadline_ratio"] = 1.0
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(log))
    checked = gpuplan("check", instance, tampered)
    assert checked.code == 1
    assert "deadline_ratio" in checked.out + checked.err
