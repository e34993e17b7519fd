"""gpuplan run on a real Slurm: a plan carried out through Ctrl-C, a resume and a failed node."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import DATA, run_cli

TINY = DATA / "live" / "tiny.json"
FAILED = "a100-0"

pytestmark = pytest.mark.slurm


def _env(cluster: Path) -> dict[str, str]:
    return {**os.environ, "SLURM_CONF": str(cluster / "slurm.conf"), "TZ": "UTC"}


def _gpuplan(*args: str | Path, env: dict[str, str]) -> subprocess.Popen[str]:
    # SIGINT as a terminal gives it, even where the test runs in the background (ignored).
    return subprocess.Popen([str(Path(sys.executable).parent / "gpuplan"), *map(str, args)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _alive(cluster: Path) -> bool:
    """Whether the cluster's slurmd of the failing node runs.

    By its pid file: other emulated clusters on this machine have nodes of the same name.
    """
    try:
        os.kill(int((cluster / "run" / f"slurmd-{FAILED}.pid").read_text()), 0)
    except (OSError, ValueError):
        return False
    return True


@pytest.fixture
def node_back(clusters: Path) -> Iterator[None]:
    """Whatever the test does to node a100-0, it is up and idle afterwards."""
    live_cluster = clusters / "live"
    yield
    env = _env(live_cluster)
    if not _alive(live_cluster):
        subprocess.run(["slurmd", "-N", FAILED], env=env, check=True)
    until = time.monotonic() + 60
    while time.monotonic() < until:
        state = subprocess.run(["sinfo", "-h", "-n", FAILED, "-o", "%T"], env=env, text=True,
                               capture_output=True, check=False).stdout.strip()
        if state == "idle":
            return
        if state.startswith("down"):
            subprocess.run(["scontrol", "update", f"nodename={FAILED}", "state=resume"],
                           env=env, capture_output=True, check=False)
        time.sleep(0.5)
    pytest.fail(f"node {FAILED} did not come back")


def test_a_plan_runs_through_ctrl_c_a_resume_and_a_failed_node(
        clusters: Path, tmp_path: Path, node_back: None) -> None:
    """Ctrl-C, a resume, a failed node and a job added: all complete, the log verifies.

    Ctrl-C leaves the jobs queued (exit 130); the resumed run re-plans around the failed
    node within 5 s, touching only pending jobs, and runs the job added to the instance
    file.
    """
    live_cluster = clusters / "live"
    env = _env(live_cluster)
    folder = tmp_path / "run"
    batch = tmp_path / "batch.json"
    batch.write_text(TINY.read_text())
    first = _gpuplan("run", batch, "-o", folder, "--time-limit", "2", "--lead", "2",
                     "--watch", "true", env=env)
    until = time.monotonic() + 60
    while not (folder / "state.json").exists() and time.monotonic() < until:
        time.sleep(0.1)
    first.send_signal(signal.SIGINT)
    output, _ = first.communicate(timeout=30)
    assert first.returncode == 130, output
    state = json.loads((folder / "state.json").read_text())
    assert state["interrupted"] and len(state["plans"]) == 1
    ids = [r["attempts"][0]["slurm_id"] for r in state["jobs"].values()]
    queued = subprocess.run(["squeue", "-h", "-j", ",".join(ids), "-o", "%i"], env=env,
                            text=True, capture_output=True, check=True).stdout.split()
    assert queued, "Ctrl-C left no job queued"

    second = _gpuplan("run", "--resume", folder, "--watch", "true", "--improve", "1", env=env)
    # The node fails 3 s into the batch, while the first jobs run on it.
    epoch = datetime.fromisoformat(state["epoch"]).timestamp()
    time.sleep(max(0.0, epoch + 3.0 - time.time()))
    pid = int((live_cluster / "run" / f"slurmd-{FAILED}.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    subprocess.run(["scontrol", "update", f"nodename={FAILED}", "state=down",
                    "reason=gpuplan-test"], env=env, check=True)
    # A job added to the instance file while the batch runs is planned and run too.
    document = json.loads(batch.read_text())
    document["jobs"].append({"id": "late", "gpus": 2, "duration_s": {"A100": 3, "L4": 6},
                             "command": "sleep 3"})
    batch.write_text(json.dumps(document))
    output, _ = second.communicate(timeout=180)
    assert second.returncode == 0, output
    state = json.loads((folder / "state.json").read_text())
    assert state["finished"] and not state["interrupted"]
    assert all(r["outcome"] == "completed" for r in state["jobs"].values())
    assert "late" in state["jobs"]
    failure = [p for p in state["plans"] if f"node {FAILED} takes no new job" in p["reason"]]
    assert failure and failure[0]["applied_after_s"] <= 5.0
    # Only jobs that had not started may be moved; the others keep their Slurm jobs.
    started = {job for job, r in state["jobs"].items()
               if r["attempts"][0]["start_s"] is not None
               and r["attempts"][0]["start_s"] <= failure[0]["at_s"]}
    assert not set(failure[0]["moved"]) & started
    assert any(a["ran_on"] == [FAILED] and a["state"] == "NODE_FAIL"
               for r in state["jobs"].values() for a in r["attempts"]) or not started
    checked = run_cli("check", batch, folder / "state.json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
