"""Measure gpuplan export: every method's plans exported, accepted by a real Slurm, and speed.

Usage:
    python scripts/bench_export.py [--limit 10] [--jobs 10000]
        [--out docs/results/export.md]

Two tables:

1. Every method on every shipped instance (``instances/*.json``, the campus fleet
   imported from ``instances/clusters/slurm.conf`` under ``jobs.yaml``, and the racks
   fleet of the live tests, ``tests/data/slurm/racks.json``: multi-node gangs in racks,
   node CPUs and memory, a sharing L4), solved with ``--time-limit``: the plan exported
   to Slurm (``--rehearse true``; shards for a fleet with a sharing GPU type), and every
   script of it submitted to ``sbatch --test-only`` on the emulated cluster of its fleet
   (started by ``.ci/slurm-up``, named by ``GPUPLAN_SLURM_CLUSTERS``; without it the
   column says so); then exported to Kueue and Volcano (time-slicing for a sharing type),
   every manifest checked against the projects' CRD schemas and ``kubernetes-validate``
   (``tests/exporters/k8s_schemas.py``), or refused with its reason.
2. Export time of a ``gpuplan generate --jobs N`` plan (greedy), each exporter through the
   library, the plan's verification included, best of three; written to disk and to a
   tmpfs (see :func:`speed_table`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpuplan import read_instance
from gpuplan.core.options import build_options
from gpuplan.core.schedule import Schedule, parse_epoch
from gpuplan.exporters import EXPORTERS
from gpuplan.exporters.base import check_plan, write_files
from gpuplan.harness.bench import write_results
from gpuplan.methods import METHODS

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.exporters.k8s_schemas import documents, manifest_errors  # noqa: E402

PAGE = ROOT / "docs" / "benchmarks.md"
GPUPLAN = str(Path(sys.executable).parent / "gpuplan")
EPOCH = "2026-12-08T20:00:00+00:00"
#: The emulated cluster of each fleet (a folder of GPUPLAN_SLURM_CLUSTERS, .ci/slurm-up).
CLUSTER_OF = {"quickstart": "quickstart", "gavel_makespan": "makespan",
              "gavel_cluster_500": "cluster500", "gavel_cluster_500_long": "cluster500",
              "campus": "campus", "racks": "racks"}
#: The export flags that give jobs sharing a GPU to Slurm and to Kubernetes.
SHARDS = ("--gpu-sharing", "shard")
TIME_SLICING = ("--gpu-sharing", "time-slicing", "--replicas", "4")


def run(*command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command, its output kept."""
    return subprocess.run(list(command), capture_output=True, text=True, env=env, check=False)


def last_line(done: subprocess.CompletedProcess[str]) -> str:
    """The last line the command printed, for a refusal's reason."""
    lines = (done.stderr + done.stdout).strip().splitlines()
    if not lines:
        return "-"
    # The message without the file or flag (and job) it names, to its first ';'.
    message = lines[-1].removeprefix("error: ").split(": ", 1)[-1].split(";")[0]
    if message.startswith("segments of job"):
        message = message.split(": ", 1)[-1]
    return message


def test_only(out: Path, fleet: str) -> str:
    """``submit.sh --test-only`` on the fleet's emulated cluster: accepted of all."""
    clusters = os.environ.get("GPUPLAN_SLURM_CLUSTERS")
    if not clusters:
        return "no Slurm"
    env = {**os.environ, "SLURM_CONF": str(Path(clusters) / CLUSTER_OF[fleet] / "slurm.conf")}
    scripts = sorted((out / "jobs").glob("*.sbatch"))
    done = run(str(out / "submit.sh"), "--test-only", env=env)
    rejected = done.stderr.count("rejected: ")
    return f"{len(scripts) - rejected} of {len(scripts)}"


def kubernetes(plan: Path, instance: Path, folder: Path, target: str,
               flags: tuple[str, ...]) -> str:
    """Export to ``target``; manifests passing the schemas, or the refusal."""
    out = folder / target
    done = run(GPUPLAN, "export", target, str(plan), "--instance", str(instance), "-o",
               str(out), "--epoch", EPOCH, "--rehearse", "true", *flags)
    if done.returncode != 0:
        return f"refused (exit {done.returncode}): {last_line(done)}"
    found = documents(out)
    bad = sum(1 for _, m in found if manifest_errors(m))
    return f"{len(found) - bad} of {len(found)} valid"


def methods_table(limit: float, folder: Path) -> list[str]:
    """Every method on every shipped instance: solved, exported, accepted."""
    instances = {path.stem: path for path in sorted((ROOT / "instances").glob("*.json"))}
    clusters = ROOT / "instances" / "clusters"
    instances["campus"] = folder / "campus.json"
    instances["racks"] = ROOT / "tests" / "data" / "slurm" / "racks.json"
    run(GPUPLAN, "import", "slurm", str(clusters / "slurm.conf"), str(clusters / "gres.conf"),
        "--jobs", str(clusters / "jobs.yaml"), "-o", str(instances["campus"]))
    rows = ["| instance | method | plan | segments | Slurm export s | sbatch --test-only "
            "accepted | Kueue | Volcano |", "|---|---|---|---:|---:|---|---|---|"]
    for name, instance in instances.items():
        sharing = bool(read_instance(instance).shared.any())
        for method in METHODS:
            plan = folder / f"{name}-{method}.json"
            solved = run(GPUPLAN, "solve", str(instance), "--method", method, "--time-limit",
                         f"{limit:g}", "-o", str(plan))
            if solved.returncode != 0 or not plan.exists():
                rows.append(f"| {name} | {method} | not planned (exit {solved.returncode}): "
                            f"{last_line(solved)} | | | | | |")
                print(rows[-1], flush=True)
                continue
            schedule = json.loads(plan.read_text())
            out = folder / f"{name}-{method}-slurm"
            began = time.perf_counter()
            exported = run(GPUPLAN, "export", "slurm", str(plan), "--instance", str(instance),
                           "-o", str(out), "--epoch", EPOCH, "--rehearse", "true",
                           *(SHARDS if sharing else ()))
            seconds = time.perf_counter() - began
            accepted = (test_only(out, name) if exported.returncode == 0 else
                        f"refused: {last_line(exported)}")
            where, flags = folder / f"{name}-{method}", TIME_SLICING if sharing else ()
            rows.append(f"| {name} | {method} | {schedule['status']} | "
                        f"{len(schedule['segments'])} | {seconds:.2f} | {accepted} | "
                        f"{kubernetes(plan, instance, where, 'kueue', flags)} | "
                        f"{kubernetes(plan, instance, where, 'volcano', flags)} |")
            print(rows[-1], flush=True)
    return rows


def speed_table(jobs: int, folder: Path) -> list[str]:
    """Seconds to export a plan of ``jobs`` jobs with each exporter, verification included.

    Each run is timed in two parts, building the files (verifying the plan, writing the
    scripts or manifests in memory) and writing them, to this machine's disk and to a
    tmpfs (``/dev/shm``): creating a file on this VM's ext4 costs from 0.03 to 0.5 ms
    with the state of the disk, which 10,000 files turn into seconds.
    """
    instance_file, plan_file = folder / "big.json", folder / "big-plan.json"
    run(GPUPLAN, "generate", "--jobs", str(jobs), "--nodes", str(max(jobs // 40, 1)),
        "--dependencies", "0.1", "--seed", "1", "-o", str(instance_file))
    solved = run(GPUPLAN, "solve", str(instance_file), "--method", "greedy", "-o",
                 str(plan_file))
    assert solved.returncode == 0, solved.stderr
    instance = read_instance(instance_file)
    schedule = Schedule.read(plan_file)
    rows = ["| exporter | jobs | files | build s | write s (disk) | total s (disk) | "
            "write s (tmpfs) | total s (tmpfs) | target <= 5 s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    outs: list[Path] = []
    for name, exporter in EXPORTERS.items():
        flags = {"rehearse": "true"} if exporter.needs_schedule else {}
        options = build_options(exporter.options_type, flags, name)
        build, write = float("inf"), {"disk": float("inf"), "tmpfs": float("inf")}
        written = 0
        for attempt in range(3):
            began = time.perf_counter()
            plan = (check_plan(instance, schedule, str(plan_file),
                               parse_epoch(EPOCH, "epoch"))
                    if exporter.needs_schedule else None)
            files = exporter().files(instance, plan, options)
            build = min(build, time.perf_counter() - began)
            for where, root in (("disk", folder), ("tmpfs", Path("/dev/shm"))):
                # Each into a new folder, as a user exports; all removed at the end, since
                # deleting thousands of files slows the next creations on this disk.
                out = root / f"gpuplan-export-{name}-{attempt}"
                began = time.perf_counter()
                written = len(write_files(files, out, [instance_file]))
                write[where] = min(write[where], time.perf_counter() - began)
                outs.append(out)
        disk, tmpfs = build + write["disk"], build + write["tmpfs"]
        verdict = ("met" if disk <= 5 else f"met on tmpfs, {disk:.1f} s on disk"
                   if tmpfs <= 5 else "MISSED")
        rows.append(f"| {name} | {instance.n_jobs} | {written} | {build:.2f} | "
                    f"{write['disk']:.2f} | {disk:.2f} | {write['tmpfs']:.2f} | "
                    f"{tmpfs:.2f} | {verdict} |")
        print(rows[-1], flush=True)
    for out in outs:
        shutil.rmtree(out)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=10.0)
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "export.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        speed = speed_table(args.jobs, folder)
        methods = methods_table(args.limit, folder)
    clusters = os.environ.get("GPUPLAN_SLURM_CLUSTERS")
    slurm = "no Slurm: the test-only column is empty"
    if clusters:
        conf = str(Path(clusters) / "quickstart" / "slurm.conf")
        slurm = run("sinfo", "--version", env={**os.environ, "SLURM_CONF": conf}
                    ).stdout.strip() or slurm
    write_results(args.out, "# Exporting plans to Slurm, Kueue and Volcano\n\nWritten by "
                  f"`python scripts/bench_export.py --limit {args.limit:g} --jobs {args.jobs}`"
                  f" ({slurm}).\n\n" + "\n".join(speed) + "\n\n" + "\n".join(methods) + "\n",
                  PAGE)


if __name__ == "__main__":
    main()
