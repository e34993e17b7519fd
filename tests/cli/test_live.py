"""``gpuplan run``'s refusals: each a clear message and exit 2, with nothing submitted."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import DATA, Gpuplan

TINY = DATA / "live" / "tiny.json"


def test_a_plan_of_another_instance_is_refused(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--plan made for another instance: exit 2 naming both, and no run folder."""
    plan = tmp_path / "plan.json"
    assert gpuplan("solve", DATA / "valid_small.json", "-o", plan).code == 0
    done = gpuplan("run", TINY, "--plan", plan, "-o", tmp_path / "run", "--dry-run")
    assert done.code == 2
    assert "plans instance" in done.err + done.out and "live-tiny" in done.err + done.out
    assert not (tmp_path / "run").exists()


def test_flags_that_do_not_go_together_are_refused(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """No folder, --speedup without --rehearse, --resume with an instance: exit 2 each."""
    assert gpuplan("run", TINY).code == 2
    done = gpuplan("run", TINY, "-o", tmp_path / "run", "--speedup", "10")
    assert done.code == 2 and "--rehearse" in done.err + done.out
    done = gpuplan("run", TINY, "--resume", tmp_path)
    assert done.code == 2 and "--resume" in done.err + done.out
    assert not (tmp_path / "run").exists()


def test_a_static_objective_has_nothing_to_carry_out(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A batch placed at once (max-weight) has no times for Slurm: exit 2."""
    document = json.loads(TINY.read_text())
    document["objective"] = "max-weight"
    path = tmp_path / "static.json"
    path.write_text(json.dumps(document))
    done = gpuplan("run", path, "-o", tmp_path / "run")
    assert done.code == 2 and "time-based objective" in done.err + done.out


def test_an_unreachable_cluster_is_refused_before_anything(gpuplan: Gpuplan,
                                                            tmp_path: Path) -> None:
    """A slurm.conf whose controller does not answer (or no Slurm here): exit 2, no folder."""
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=nowhere\nSlurmctldHost=localhost\nSlurmctldPort=1\n"
                    "AuthType=auth/munge\n")
    done = gpuplan("run", TINY, "-o", tmp_path / "run", "--slurm-conf", conf)
    assert done.code == 2
    assert "Slurm" in done.err + done.out
    assert not (tmp_path / "run").exists()


def test_a_dry_run_prints_the_submissions_and_writes_nothing(gpuplan: Gpuplan,
                                                             tmp_path: Path) -> None:
    """--dry-run plans and lists one sbatch per job, and leaves no folder."""
    done = gpuplan("run", TINY, "-o", tmp_path / "run", "--dry-run", "--time-limit", "1")
    assert done.code == 0, done.err + done.out
    text = done.err + done.out
    assert text.count("sbatch --parsable --no-requeue") == 8
    assert "--dependency=afterok:dry-" in text
    assert not (tmp_path / "run").exists()
