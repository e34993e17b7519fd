"""gpuplan run against Slurm's own backfill, live, on identical emulated clusters (issue 47).

Usage (as root, with Debian's slurm-wlm, slurmdbd, munge and mariadb-server):
    python scripts/bench_live.py [--seeds 11,12,13] [--jobs 40] [--parallel 4]
        [--series static,failure,drift,static-improve] [--limit 10] [--improve 0]
        [--port 21817] [--work /tmp/gpuplan_bench_live]
        [--out docs/results/live.md] [--render-only]

Each batch is generated from its seed (:func:`make_batch`; seeds never used while gpuplan
was developed): ``--jobs`` sleep jobs on 2 x 8 A100 + 2 x 4 L4 (24 GPUs), gangs of 1, 2, 4
or 8 GPUs on one node (8 only on A100), A100 durations of 30-150 s and L4 about twice
that (a job's own ratio, 1.7-2.3), a fifth of the jobs A100-only, a fifth depending on an
earlier job, weights 1-5. Each job's command sleeps for the duration of the GPU type it
landed on (it reads ``SLURMD_NODENAME``), so the cluster behaves as the instance says.

Each run gets an emulated cluster of its own (``gpuplan export slurm-conf --emulate``: a
real ``slurmctld`` and one ``slurmd`` per node, backfill with ``bf_interval=1``), started
empty; the runs of one batch go on side by side, ``--parallel`` batches at a time.

- **Slurm's backfill** (a careful user): every job is submitted at once, in the batch's
  order, with ``sbatch --nodes=1 --gres=gpu:N`` (``gpu:A100:N`` for an A100-only job),
  ``--time`` the longest of its allowed types' durations times 1.5 plus a minute (the
  same margin as gpuplan's), ``--dependency=afterok`` on its predecessors and
  ``--requeue``; Slurm schedules them.
- **gpuplan run**: ``gpuplan run BATCH --method cp --time-limit L`` plans the batch and
  carries the plan out (its makespan counts from the moment the command starts, planning
  and the 2 s lead included); with ``--improve S``, ``gpuplan run --improve S`` goes on
  improving the plan of the jobs that start S seconds or more later while the first run.

Series: ``static`` (the batch as generated, once with the makespan objective and once
with weighted completion; Slurm's run serves both, its submission does not depend on the
objective), ``failure`` (node ``a100-0`` fails a third of the way through Slurm's
makespan of the static batch: its ``slurmd`` is killed and the node set DOWN; Slurm
requeues the jobs it killed, gpuplan re-plans), ``drift`` (each job's sleep drawn
uniformly within 30% of the instance's duration, the same draw in both runs; the plan
is judged against a plan made knowing the true durations, by ``cp`` with the same limit).

Measured per run, from each job's start and end as ``scontrol show job`` gives them:
makespan, mean and weighted completion time (sum w C / sum w, from the batch's start), GPU
idle share (GPU-seconds up and idle over those up, to the makespan), for gpuplan the
planned makespan and start errors (plan in force against the actual start), and Slurm's
own start estimates (``squeue --start``, taken 20 s into its run, for jobs then pending)
against its actual starts, beside gpuplan's first plan against its run's. Each gpuplan
run log is checked by ``gpuplan check`` (it must verify). Rows are kept in ``--work``
(one JSON per run) and the page is rewritten after every run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan.exporters.base import limit_s
from gpuplan.harness.bench import write_results
from gpuplan.live.cluster import parse_jobs
from gpuplan.live.runlog import plan_at
from gpuplan.live.state import RunState

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"
GPUPLAN = str(Path(sys.executable).parent / "gpuplan")
NODES = {"a100-0": ("A100", 8), "a100-1": ("A100", 8), "l4-0": ("L4", 4), "l4-1": ("L4", 4)}
FAILED_NODE = "a100-0"
#: The time margin of both sides' --time (gpuplan's --time-margin).
MARGIN = 0.5
#: Seconds into Slurm's run at which squeue --start is read.
ESTIMATE_AT_S = 20.0
#: The first port of the emulated clusters; each takes 1000 (the controller's, then its
#: nodes' from 100 above it).
FIRST_PORT = 21817


def make_batch(seed: int, jobs: int, objective: str, drift: bool) -> tuple[dict[str, Any],
                                                                          dict[str, float]]:
    """The batch's instance document and each job's drift factor (1 without drift)."""
    rng = random.Random(seed)
    docs = []
    factors = {}
    for k in range(jobs):
        gang = rng.choices([1, 2, 4, 8], weights=[3, 2.5, 3, 1.5])[0]
        a100 = rng.randint(30, 150)
        only_a100 = gang == 8 or rng.random() < 0.2
        duration = {"A100": a100} if only_a100 else {
            "A100": a100, "L4": round(a100 * rng.uniform(1.7, 2.3))}
        job: dict[str, Any] = {"id": f"j{k:03d}", "gpus": gang, "duration_s": duration,
                               "weight": rng.randint(1, 5)}
        if k >= 5 and rng.random() < 0.2:
            job["depends_on"] = [f"j{rng.randrange(max(0, k - 12), k):03d}"]
        factors[job["id"]] = rng.uniform(0.7, 1.3) if drift else 1.0
        job["command"] = _command(duration, factors[job["id"]])
        docs.append(job)
    document = {
        "name": f"live-s{seed}-{objective}{'-drift' if drift else ''}",
        "description": f"bench_live.py batch, seed {seed}: {jobs} sleep jobs on 2 x 8 A100 "
        "and 2 x 4 L4; each sleeps its duration on the type it lands on"
        + (" times its drift factor" if drift else ""),
        "gpu_types": [{"id": "A100", "capacity": {"memory_gib": 80}},
                      {"id": "L4", "capacity": {"memory_gib": 24}}],
        "nodes": [{"id": node, "gpus": {gpu_type: count}}
                  for node, (gpu_type, count) in NODES.items()],
        "jobs": docs, "objective": objective}
    return document, factors


def _command(duration: dict[str, int], factor: float) -> str:
    cases = " ".join(f"{t.lower()}-*) sleep {round(d * factor)};;" for t, d in duration.items())
    return f"case $SLURMD_NODENAME in {cases} esac"


class Emulated:
    """One emulated cluster of the batch's fleet, started in its own folder."""

    def __init__(self, root: Path, name: str, port: int, instance: Path) -> None:
        self.folder = root / name
        shutil.rmtree(self.folder, ignore_errors=True)
        _check(GPUPLAN, "export", "slurm-conf", "--instance", str(instance), "--emulate",
               str(self.folder), "--port", str(port), "--cluster-name", name, "-o",
               str(self.folder))
        _check(str(self.folder / "start.sh"))
        self.env = {**os.environ, "SLURM_CONF": str(self.folder / "slurm.conf"), "TZ": "UTC"}

    def run(self, *command: str, check: bool = True) -> str:
        """A Slurm command against this cluster; its output."""
        done = subprocess.run(command, env=self.env, capture_output=True, text=True,
                              timeout=120, check=False)
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)}: {done.stderr}")
        return done.stdout

    def fail_node(self) -> float:
        """Kill the failed node's slurmd and set it DOWN; the wall time it happened."""
        # Its pid file, not its name: every cluster here has a node of that name.
        pid = int((self.folder / "run" / f"slurmd-{FAILED_NODE}.pid").read_text())
        os.kill(pid, signal.SIGKILL)
        when = time.time()
        self.run("scontrol", "update", f"nodename={FAILED_NODE}", "state=down",
                 "reason=bench_live")
        return when

    def jobs(self) -> dict[str, Any]:
        """Every job of the cluster, by Slurm id."""
        return parse_jobs(self.run("scontrol", "-o", "-d", "show", "job", check=False),
                          "scontrol")

    def stop(self) -> None:
        """Stop the controller and every slurmd of this cluster."""
        self.run("scontrol", "shutdown", check=False)


def _check(*command: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {done.stderr or done.stdout}")


def _measure(document: dict[str, Any], ends: dict[str, tuple[float, float, int]],
             t0: float) -> dict[str, float]:
    """Makespan, mean and weighted completion and GPU idle share, from ``t0``."""
    weights = {j["id"]: j["weight"] for j in document["jobs"]}
    completion = {job: end - t0 for job, (_, end, _) in ends.items()}
    makespan = max(completion.values())
    busy = sum(gang * (end - start) for start, end, gang in ends.values())
    total = sum(weights[j] for j in completion)
    return {"makespan": makespan,
            "mean_completion": float(np.mean(list(completion.values()))),
            "weighted_completion": sum(weights[j] * c for j, c in completion.items()) / total,
            "busy_gpu_s": busy}


def run_slurm(cluster: Emulated, document: dict[str, Any], folder: Path,
              fail_at: float | None) -> dict[str, Any]:
    """Slurm's backfill on the batch, submitted as a careful user would; its figures."""
    folder.mkdir(parents=True, exist_ok=True)
    ids: dict[str, str] = {}
    t0 = time.time()
    for job in document["jobs"]:
        script = folder / f"{job['id']}.sbatch"
        script.write_text(f"#!/bin/bash\n{job['command']}\n")
        types = job["duration_s"]
        gres = f"gpu:{job['gpus']}" if len(types) > 1 else f"gpu:A100:{job['gpus']}"
        minutes = -(-limit_s(max(types.values()), MARGIN) // 60)
        after = [ids[p] for p in job.get("depends_on", [])]
        ids[job["id"]] = cluster.run(
            "sbatch", "--parsable", f"--job-name={job['id']}", "--nodes=1", "--ntasks=1",
            f"--gres={gres}", f"--time={minutes}", "--requeue", f"--chdir={folder}",
            *([f"--dependency=afterok:{':'.join(after)}"] if after else []),
            str(script)).strip().split(";")[0]
    estimates: dict[str, float] = {}
    failed_at = None
    while True:
        time.sleep(1.0)
        now = time.time()
        if not estimates and now - t0 >= ESTIMATE_AT_S:
            for line in cluster.run("squeue", "--start", "-h", "-o", "%j|%S").splitlines():
                name, _, start = line.partition("|")
                if start not in ("N/A", ""):
                    estimates[name] = datetime.fromisoformat(start).replace(
                        tzinfo=UTC).timestamp() - t0
        if fail_at is not None and failed_at is None and now - t0 >= fail_at:
            failed_at = cluster.fail_node() - t0
        seen = cluster.jobs()
        states = [seen[i].state for i in ids.values() if i in seen]
        if len(states) == len(ids) and all(s in ("COMPLETED", "FAILED", "TIMEOUT", "CANCELLED",
                                                 "NODE_FAIL") for s in states):
            break
        if now - t0 > 3600:
            raise RuntimeError("Slurm's run did not end within an hour")
    ends = {}
    bad = []
    for job in document["jobs"]:
        mine = seen[ids[job["id"]]]
        if mine.state != "COMPLETED" or mine.start is None or mine.end is None:
            bad.append(f"{job['id']} {mine.state}")
            continue
        ends[job["id"]] = (mine.start.timestamp(), mine.end.timestamp(), job["gpus"])
    starts = {job: s - t0 for job, (s, _, _) in ends.items()}
    errors = [abs(estimates[j] - starts[j]) for j in estimates if j in starts]
    return {"side": "slurm", **_measure(document, ends, t0), "not_completed": bad,
            "failed_at": failed_at, "estimated": len(errors),
            "estimate_error_p50": float(np.median(errors)) if errors else None,
            "estimate_jobs": sorted(estimates)}


def run_gpuplan(cluster: Emulated, instance: Path, document: dict[str, Any], folder: Path,
                limit: float, improve: float, fail_at: float | None) -> dict[str, Any]:
    """gpuplan run on the batch; its figures, from its run log."""
    shutil.rmtree(folder, ignore_errors=True)
    t0 = time.time()
    process = subprocess.Popen(
        [GPUPLAN, "run", str(instance), "-o", str(folder), "--method", "cp",
         "--time-limit", str(limit), "--improve", str(improve), "--lead", "2",
         "--time-margin", str(MARGIN)],
        env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    failed_at = None
    if fail_at is not None:
        while process.poll() is None and time.time() - t0 < fail_at:
            time.sleep(0.2)
        if process.poll() is None:
            failed_at = cluster.fail_node() - t0
    output, _ = process.communicate(timeout=3600)
    (folder.parent / f"{folder.name}.out").write_text(output)
    if process.returncode != 0:
        raise RuntimeError(f"gpuplan run exited {process.returncode}:\n{output[-3000:]}")
    check = subprocess.run([GPUPLAN, "check", str(instance), str(folder / "state.json")],
                           capture_output=True, text=True, check=False)
    state = json.loads((folder / "state.json").read_text())
    epoch = datetime.fromisoformat(state["epoch"]).timestamp()
    ends = {}
    errors = []
    first = {s["job"]: s["start_s"] for s in state["plans"][0]["slots"]}
    first_errors = []
    for job, record in state["jobs"].items():
        last = record["attempts"][-1]
        gang = next(j["gpus"] for j in document["jobs"] if j["id"] == job)
        ends[job] = (epoch + last["start_s"], epoch + last["end_s"], gang)
        for attempt in record["attempts"]:
            if attempt["start_s"] is not None and attempt["planned_start_s"] is not None:
                errors.append(abs(attempt["start_s"] - attempt["planned_start_s"]))
        if job in first:
            first_errors.append(abs(record["attempts"][0]["start_s"] - first[job])
                                if record["attempts"][0]["start_s"] is not None else 0.0)
    busy_lost = sum(len(a["gpu_ids"]) * (a["end_s"] - a["start_s"])
                    for r in state["jobs"].values() for a in r["attempts"][:-1]
                    if a["start_s"] is not None and a["end_s"] is not None)
    failure_plans = [p for p in state["plans"] if "takes no new job" in p["reason"]]
    measured = _measure(document, ends, t0)
    return {"side": "gpuplan", **measured, "busy_gpu_s": measured["busy_gpu_s"] + busy_lost,
            "from_epoch": max(e for _, e, _ in ends.values()) - epoch,
            "planned_makespan": max(s["end_s"] for s in state["plans"][0]["slots"]),
            "plan_seconds": state["plans"][0]["plan_seconds"],
            "first_method": state["plans"][0]["method"],
            "start_error_p50": float(np.median(errors)), "start_error_max": max(errors),
            "first_plan_error_p50": float(np.median(first_errors)),
            "replans": len(state["plans"]) - 1,
            "moved": sum(len(p["moved"]) for p in state["plans"][1:]),
            "failure_applied_s": failure_plans[0]["applied_after_s"] if failure_plans else None,
            "failure_moved": sorted(failure_plans[0]["moved"]) if failure_plans else [],
            "completed": sum(r["outcome"] == "completed" for r in state["jobs"].values()),
            "by_plan": sum(a["decided_by"] == "plan" for r in state["jobs"].values()
                           for a in r["attempts"]),
            "failed_at": failed_at, "verified": check.returncode == 0,
            "check": check.stdout.strip().splitlines()[-1] if check.stdout else ""}


def oracle(document: dict[str, Any], factors: dict[str, float], folder: Path,
           limit: float) -> float:
    """The makespan cp plans knowing the true (drifted) durations."""
    known = json.loads(json.dumps(document))
    for job in known["jobs"]:
        job["duration_s"] = {t: round(d * factors[job["id"]])
                             for t, d in job["duration_s"].items()}
    path = folder / "oracle.json"
    path.write_text(json.dumps(known))
    plan = folder / "oracle_plan.json"
    _check(GPUPLAN, "solve", str(path), "--method", "cp", "--time-limit", str(limit), "-o",
           str(plan))
    return float(json.loads(plan.read_text())["objective"])


def point(series: str, seed: int, args: argparse.Namespace, slot: int) -> list[dict[str, Any]]:
    """One batch of one series: its runs side by side, each on a cluster of its own."""
    work = Path(args.work)
    folder = work / f"{series}-s{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    drift = series == "drift"
    runs: list[tuple[str, dict[str, Any]]] = [("makespan", make_batch(seed, args.jobs,
                                                                       "makespan", drift)[0])]
    if series.startswith("static"):
        runs.append(("weighted-completion", make_batch(seed, args.jobs,
                                                       "weighted-completion", False)[0]))
    factors = make_batch(seed, args.jobs, "makespan", drift)[1]
    fail_at = None
    if series == "failure":
        static = work / f"static-s{seed}.json"  # Slurm's makespan of the same batch
        base = json.loads(static.read_text()) if static.exists() else None
        fail_at = (base["slurm"]["makespan"] if base else 600.0) / 3
    instances = []
    for objective, document in runs:
        path = folder / f"{objective}.json"
        path.write_text(json.dumps(document, indent=1))
        instances.append((objective, path, document))
    port = args.port + 3000 * slot
    clusters = [Emulated(folder / "clusters", f"{series}{seed}x{k}", port + 1000 * k,
                         instances[0][1]) for k in range(1 + len(instances))]
    results: dict[str, Any] = {}
    try:
        with ThreadPoolExecutor(len(clusters)) as pool:
            slurm = pool.submit(run_slurm, clusters[0], instances[0][2], folder / "slurm",
                                fail_at)
            mine = {objective: pool.submit(run_gpuplan, clusters[k + 1], path, document,
                                           folder / f"gpuplan-{objective}", args.limit,
                                           args.improve, fail_at)
                    for k, (objective, path, document) in enumerate(instances)}
            results["slurm"] = slurm.result()
            for objective, future in mine.items():
                results[f"gpuplan-{objective}"] = future.result()
        if drift:
            results["oracle_makespan"] = oracle(instances[0][2], factors, folder, args.limit)
    finally:
        for cluster in clusters:
            cluster.stop()
    results.update(series=series, seed=seed, jobs=args.jobs, limit=args.limit,
                   improve=args.improve)
    (work / f"{series}-s{seed}.json").write_text(json.dumps(results, indent=1))
    return [results]


def eta_error(state_file: Path, jobs: list[str]) -> float | None:
    """p50 gap between what ``gpuplan eta`` said at ``ESTIMATE_AT_S`` and the actual start.

    For the jobs Slurm's ``squeue --start`` estimated then: the plan in force at that
    second of gpuplan's run (its epoch), against when each started.
    """
    if not state_file.exists():
        return None
    state = RunState.read(state_file)
    plan = plan_at(state, ESTIMATE_AT_S)
    if plan is None:
        return None
    slots = {slot.job: slot.start_s for slot in plan.slots}
    errors = []
    for job in jobs:
        start = state.jobs[job].attempts[-1].start_s
        if job in slots and start is not None:
            errors.append(abs(start - slots[job]))
    return float(np.median(errors)) if errors else None


def _pct(mine: float, theirs: float) -> str:
    return f"{100.0 * (mine - theirs) / theirs:+.1f}%"


def render(work: Path, out: Path, load: str) -> None:
    """The results page from the rows kept in ``work``."""
    rows = {p.stem: json.loads(p.read_text()) for p in sorted(work.glob("*-s*.json"))}
    lines = ["# gpuplan run against Slurm's backfill, live (issue 47)", "",
             "Written by `python scripts/bench_live.py` (see its docstring for the protocol); "
             f"load average when the page was written: {load}. Times in seconds from the "
             "batch's "
             "submission (gpuplan: from the moment `gpuplan run` starts, its planning "
             "included). Every gpuplan run log verified by `gpuplan check`.", ""]
    for series, title in (("static", "Static batches"),
                          ("static-improve", "Static batches, the first plan improved while "
                           "it runs"),
                          ("failure", f"Node {FAILED_NODE} fails a third of the way in"),
                          ("drift", "Durations off by up to 30%")):
        mine = {k: v for k, v in rows.items() if v["series"] == series}
        if not mine:
            continue
        lines += [f"## {title}", "",
                  "| batch | objective | gpuplan run | Slurm makespan | gpuplan makespan | "
                  "vs Slurm | planned | realised from epoch | Slurm mean C | gpuplan mean C | "
                  "Slurm weighted C | gpuplan weighted C | vs Slurm | idle Slurm / gpuplan | "
                  "start error p50 / max | re-plans (moved) | starts by plan | completed | "
                  "verified |", "|---|---|---|" + "---:|" * 16]
        for name, row in mine.items():
            slurm = row["slurm"]
            for key in sorted(k for k in row if k.startswith("gpuplan-")):
                g = row[key]
                idle = (1 - slurm["busy_gpu_s"] / (24 * slurm["makespan"]),
                        1 - g["busy_gpu_s"] / (24 * g["makespan"]))
                how = f"cp {row.get('limit', 10.0):g} s" + (
                    f", --improve {row['improve']:g}" if row.get("improve") else "")
                lines.append(
                    f"| {name} | {key.removeprefix('gpuplan-')} | {how} | "
                    f"{slurm['makespan']:.0f} | "
                    f"{g['makespan']:.0f} | {_pct(g['makespan'], slurm['makespan'])} | "
                    f"{g['planned_makespan']:.0f} | {g['from_epoch']:.0f} | "
                    f"{slurm['mean_completion']:.0f} | {g['mean_completion']:.0f} | "
                    f"{slurm['weighted_completion']:.0f} | {g['weighted_completion']:.0f} | "
                    f"{_pct(g['weighted_completion'], slurm['weighted_completion'])} | "
                    f"{idle[0]:.3f} / {idle[1]:.3f} | {g['start_error_p50']:.1f} / "
                    f"{g['start_error_max']:.1f} | {g['replans']} ({g['moved']}) | "
                    f"{g['by_plan']} | {g['completed']} of {row['jobs']} (Slurm "
                    f"{row['jobs'] - len(slurm['not_completed'])}) | "
                    f"{'yes' if g['verified'] else 'NO'} |")
        lines.append("")
        if series == "failure":
            lines += ["| batch | failed at (Slurm / gpuplan) | re-plan applied after (s) | "
                      "moved by that re-plan |", "|---|---:|---:|---|"]
            for name, row in mine.items():
                g = row["gpuplan-makespan"]
                lines.append(f"| {name} | {row['slurm']['failed_at'] or 0:.0f} / "
                             f"{g['failed_at'] or 0:.0f} | {g['failure_applied_s'] or 0:.2f} | "
                             f"{', '.join(g['failure_moved']) or '-'} |")
            lines.append("")
        if series == "drift":
            lines += ["| batch | gpuplan makespan from epoch | cp knowing the true durations "
                      "| gap |", "|---|---:|---:|---:|"]
            for name, row in mine.items():
                g = row["gpuplan-makespan"]
                lines.append(f"| {name} | {g['from_epoch']:.0f} | {row['oracle_makespan']:.0f}"
                             f" | {_pct(g['from_epoch'], row['oracle_makespan'])} |")
            lines.append("")
    estimates = [(name, row) for name, row in rows.items() if row["series"] == "static"]
    if estimates:
        lines += ["## Start estimates", "",
                  f"Slurm's `squeue --start`, read {ESTIMATE_AT_S:g} s into its run for the "
                  "jobs then pending, against when they started; gpuplan's first plan against "
                  "when its jobs started.", "",
                  "| batch | squeue --start: jobs, p50 error (s) | gpuplan eta on the same "
                  "jobs: p50 error (s) | gpuplan first plan, every job: p50 error (s) |",
                  "|---|---:|---:|---:|"]
        for name, row in estimates:
            s, g = row["slurm"], row["gpuplan-makespan"]
            theirs = s["estimate_error_p50"]
            ours = eta_error(work / name / "gpuplan-makespan" / "state.json",
                             s["estimate_jobs"])
            lines.append(f"| {name} | {s['estimated']}, "
                         f"{'-' if theirs is None else f'{theirs:.1f}'} | "
                         f"{'-' if ours is None else f'{ours:.1f}'} | "
                         f"{g['first_plan_error_p50']:.1f} |")
        lines.append("")
    write_results(out, "\n".join(lines) + "\n", PAGE if out.parent == RESULTS else None)


def main() -> None:
    """Run the series and write the page."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="11,12,13")
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--parallel", type=int, default=3)
    parser.add_argument("--series", default="static,failure,drift")
    parser.add_argument("--limit", type=float, default=10.0)
    parser.add_argument("--improve", type=float, default=0.0,
                        help="gpuplan run --improve S (default: 0, off)")
    parser.add_argument("--work", default="/tmp/gpuplan_bench_live")
    parser.add_argument("--out", default=str(RESULTS / "live.md"))
    parser.add_argument("--port", type=int, default=FIRST_PORT,
                        help="the first emulated cluster's port: give two runs of this "
                        "script on one machine ports 9000 apart (default: %(default)s)")
    parser.add_argument("--render-only", action="store_true")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    if not args.render_only:
        seeds = [int(s) for s in args.seeds.split(",")]
        for series in args.series.split(","):
            chosen = seeds if series.startswith("static") else seeds[:2]
            lock = threading.Lock()
            with ThreadPoolExecutor(args.parallel) as pool:
                futures = [pool.submit(point, series, seed, args, k % args.parallel)
                           for k, seed in enumerate(chosen)]
                for future in futures:
                    future.result()
                    with lock:
                        render(work, Path(args.out), load)
    render(work, Path(args.out), load)


if __name__ == "__main__":
    main()
