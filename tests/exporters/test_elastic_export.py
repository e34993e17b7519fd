"""Exports of elastic jobs: the count the plan chose is the gang; pieces are refused."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Gpuplan

EPOCH = "2026-12-07T06:00:00+00:00"

#: One node of 8 A100; a job that asked for 2 GPUs and scales linearly to 8.
INSTANCE: dict[str, Any] = {
    "gpu_types": [{"id": "A100", "capacity": {"memory_gib": 80}}],
    "nodes": [{"id": "n0", "gpus": {"A100": 8}}],
    "jobs": [{"id": "train", "gpus": 2, "demand": {"memory_gib": 40}, "command": "python train.py",
              "elastic": {"gpus": [1, 2, 4, 8], "work": 8000, "rescale_s": 10,
                          "speed": {"A100": {"1": 10, "2": 20, "4": 40, "8": 80}}}}],
    "objective": "makespan",
}


def _planned(gpuplan: Gpuplan, tmp_path: Path, *flags: str,
             document: dict[str, Any] = INSTANCE) -> tuple[Path, Path]:
    """The instance and greedy's plan of it, written to files."""
    instance = tmp_path / "elastic.json"
    instance.write_text(json.dumps(document))
    plan = tmp_path / "plan.json"
    outcome = gpuplan("solve", instance, "--method", "greedy", "-o", plan, *flags)
    assert outcome.code == 0, outcome.err
    return instance, plan


@pytest.mark.parametrize(("flags", "gpus"), [((), 8), (("--moldable", "false"), 2)])
def test_slurm_asks_for_the_planned_count(gpuplan: Gpuplan, tmp_path: Path,
                                          flags: tuple[str, ...], gpus: int) -> None:
    """The script asks for the GPUs the plan gave the job (8), or its 2 when not moldable."""
    instance, plan = _planned(gpuplan, tmp_path, *flags)
    out = tmp_path / "slurm"
    outcome = gpuplan("export", "slurm", plan, "--instance", instance, "-o", out,
                      "--epoch", EPOCH)
    assert outcome.code == 0, outcome.err
    script = next((out / "jobs").glob("*.sbatch")).read_text()
    assert re.search(rf"^#SBATCH --gres=gpu:A100:{gpus}$", script, re.MULTILINE), script


def test_kueue_asks_for_the_planned_count(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """The Job's pod asks for the 8 GPUs the plan gave the job, not the 2 it asked for."""
    instance, plan = _planned(gpuplan, tmp_path)
    out = tmp_path / "kueue"
    outcome = gpuplan("export", "kueue", plan, "--instance", instance, "-o", out,
                      "--epoch", EPOCH, "--rehearse", "true")
    assert outcome.code == 0, outcome.err
    manifests = "\n".join(p.read_text() for p in out.rglob("*.yaml"))
    assert re.search(r"nvidia\.com/gpu['\"]?: ['\"]?8\b", manifests), manifests


@pytest.mark.parametrize("target", ["slurm", "kueue"])
def test_an_elastic_job_in_pieces_is_refused(gpuplan: Gpuplan, tmp_path: Path,
                                             target: str) -> None:
    """A plan that resizes an elastic job (2 GPUs, then 8) is exit 2 naming the job."""
    paused = {**INSTANCE, "jobs": [{**INSTANCE["jobs"][0], "preemptible": True}]}
    instance, planned = _planned(gpuplan, tmp_path, "--moldable", "false", document=paused)
    document = json.loads(planned.read_text())
    whole = document["segments"][0]
    # 2 GPUs for 210 s (10 s restore, 4000 iterations), then 8 for 60 s (10 s, 4000).
    document["segments"] = [
        {**whole, "end_s": 210.0, "work": 0.5, "restore_s": 10.0},
        {**whole, "gpu_ids": [f"n0/{g}" for g in range(8)], "start_s": 210.0,
         "end_s": 270.0, "work": 0.5, "restore_s": 10.0}]
    document.update(objective=270.0, status="feasible", bound=None, gap=None)
    plan = tmp_path / "pieces.json"
    plan.write_text(json.dumps(document))
    out = tmp_path / "out"
    outcome = gpuplan("export", target, plan, "--instance", instance, "-o", out,
                      "--epoch", EPOCH, "--rehearse", "true")
    assert outcome.code == 2, outcome.err
    assert "elastic job 'train' is planned in 2 pieces" in outcome.err
    assert "on 2, 8 GPUs" in outcome.err
    assert not out.exists() or not any(out.iterdir())
