"""The emulated Slurm clusters of the live tests: where they are, and plans submitted to them.

``.ci/slurm-up`` starts one cluster per fleet (from the slurm.conf that ``gpuplan export
slurm-conf --emulate`` writes) and ``GPUPLAN_SLURM_CLUSTERS`` names their folder.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gpuplan.cli import main
from tests.conftest import DATA

SLURM = DATA / "slurm"
#: The emulated cluster (a folder of GPUPLAN_SLURM_CLUSTERS) that holds each fleet.
CLUSTER_OF = {"quickstart": "quickstart", "sleepers": "quickstart",
              "gavel_makespan": "makespan", "gavel_cluster_500": "cluster500",
              "gavel_cluster_500_long": "cluster500", "campus": "campus", "paused": "campus",
              "racks": "racks", "live": "live", "quotas": "quotas"}

Slurm = Callable[..., subprocess.CompletedProcess[str]]
#: The live plans submitted (each: its epoch and Slurm job ids), why they could not be,
#: or None without clusters.
LiveRuns = dict[str, tuple[datetime, list[str]]] | Exception | None


def cluster_folder() -> tuple[Path | None, str]:
    """The folder of the running clusters, or None and why there is none."""
    folder = os.environ.get("GPUPLAN_SLURM_CLUSTERS")
    if not folder:
        return None, ("no Slurm: set GPUPLAN_SLURM_CLUSTERS to the folder .ci/slurm-up "
                      "started the emulated clusters in")
    if not all((Path(folder) / name / "slurm.conf").exists()
               for name in set(CLUSTER_OF.values())):
        return None, (f"GPUPLAN_SLURM_CLUSTERS={folder} lacks a cluster of "
                      f"{sorted(set(CLUSTER_OF.values()))}")
    return Path(folder), ""


def on(clusters: Path, fleet: str) -> Slurm:
    """A runner of commands against the fleet's cluster (SLURM_CONF set, times in UTC)."""
    env = {**os.environ, "SLURM_CONF": str(clusters / CLUSTER_OF[fleet] / "slurm.conf"),
           "TZ": "UTC"}

    def run(*command: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(c) for c in command], env=env, text=True,
                              capture_output=True, timeout=300)
    return run


def submit(run: Slurm, plan: Path, instance: Path, out: Path, lead_s: int,
           *flags: str) -> tuple[datetime, list[str]]:
    """Export the plan to start ``lead_s`` from now, submit it; the epoch and job ids."""
    epoch = (datetime.now(UTC) + timedelta(seconds=lead_s)).replace(microsecond=0)
    code = main(["export", "slurm", str(plan), "--instance", str(instance), "-o", str(out),
                 "--epoch", epoch.isoformat(), *flags])
    if code != 0:
        raise RuntimeError(f"export slurm {plan} exited {code}")
    submitted = run(out / "submit.sh")
    if submitted.returncode != 0:
        raise RuntimeError(f"{out}/submit.sh: {submitted.stderr}")
    ids = [line.split(",")[2] for line in (out / "job-ids.csv").read_text().splitlines()[1:]]
    return epoch, ids


def submit_live_plans(clusters: Path, folder: Path) -> dict[str, tuple[datetime, list[str]]]:
    """The sleepers, paused and racks plans, submitted; each: its epoch and job ids.

    The racks plan (multi-node gangs within racks and blocks, two jobs sharing an L4 by
    shards, a CPU-only job) runs on the cluster with topology.conf and shards.
    """
    return {
        "sleepers": submit(on(clusters, "sleepers"), SLURM / "sleepers_plan.json",
                           SLURM / "sleepers.json", folder / "sleepers", 4),
        "paused": submit(on(clusters, "paused"), SLURM / "paused_plan.json",
                         SLURM / "paused.json", folder / "paused", 4, "--rehearse", "true"),
        "racks": submit(on(clusters, "racks"), SLURM / "racks_plan.json",
                        SLURM / "racks.json", folder / "racks", 4, "--gpu-sharing", "shard"),
    }
