"""Replays of Microsoft's ITP trace (all ten clusters) under gpuplan's cluster policies.

Usage:
    nice -n 19 python scripts/bench_itp.py [--fleets a100,mixed] [--clusters 01,...,10]
        [--policies fifo,sjf,srtf,las,gavel-fifo,gavel-las,gavel-ftf]
        [--types A100=1,V100=0.5,K80=0.2] [--timeout 900] [--no-check]
        [--work /tmp/gpuplan_bench_itp] [--out docs/results/itp_replays.md]
        [--render-only | --retry-failed]

The trace (``../shared/benchmarks/gpu-traces/microsoft-itp/``, microsoft/elasticflow-traces,
MIT licence) is read in ElasticFlow's variant, the one with deadlines: its jobs are those of
the raw trace, row for row (the script checks it), plus ElasticFlow's ``deadline`` column.
Each cluster's file is converted with ``gpuplan convert itp-elasticflow`` (ElasticFlow's
cluster size, the converter's default; the deadlines become soft due dates) and each
replay is one ``gpuplan simulate INSTANCE --policy P -o RUN.json`` process, which verifies
the run log (the verifier and the run-record checks) before it writes it; the script then
checks every log again with ``gpuplan check INSTANCE RUN.json`` (unless ``--no-check``,
not counted in the replay's seconds) and reads the log:

- jobs, mean / median / p95 JCT, mean queueing delay and utilisation: the run log's
  ``run.metrics`` (:func:`gpuplan.simulate.metrics.run_metrics`, over every job);
- the deadline-met share (ElasticFlow's "deadline satisfactory ratio"): jobs whose last
  segment ends by their ``due_s``, over all jobs, and the longest queueing delay, from the
  log's segments (the metrics hold neither);
- wall seconds of the ``gpuplan simulate`` process (start-up, reading the instance,
  simulation, verification, writing the log) and the simulation's own seconds (the log's
  ``wall_time_s``: simulation and verification).

Fleets: ``a100``, ElasticFlow's sizes, one type (the trace names none); ``mixed``, the
same nodes split evenly among the types of ``--types`` (speeds relative to the first,
on which the trace's durations are taken), the converter's ``--types`` rule. fifo, sjf,
srtf and las run in event mode; the Gavel policies in round mode (360 s rounds, Gavel's).
All with gpuplan's default overheads (30 s restore on every resume, 60 s more on other
GPUs) and best-fit placement. Points run one at a time, so their seconds are their own;
run the script under ``nice -n 19`` on a shared machine. Each command runs under a small
launcher process that reports its own wall and CPU seconds and peak resident memory, and
each log is read in a process of its own, so the benchmark stays small. The results file
is rewritten after every point; ``--render-only`` rewrites it from the rows kept in
``--work``, and ``--retry-failed`` runs again only the points that failed there (a
transient failure), keeping the others and saying which were run again.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan.core.files import write_text_atomic

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT.parent / "shared" / "benchmarks" / "gpu-traces" / "microsoft-itp"
RESULTS = ROOT / "docs" / "results"

CLUSTERS = tuple(f"{k:02d}" for k in range(1, 11))
#: Policies in table order: gpuplan's event-mode ones, then Gavel's (round mode).
POLICIES = ("fifo", "sjf", "srtf", "las", "gavel-fifo", "gavel-las", "gavel-ftf")
#: The issue's target: these five on the ten clusters in at most TARGET_S seconds.
TARGET_POLICIES = ("fifo", "sjf", "srtf", "las", "gavel-las")
TARGET_S = 300.0
#: The three-type fleet's types and speeds relative to A100 (roughly: V100 half an A100
#: for training, K80 a fifth).
MIXED_TYPES = "A100=1,V100=0.5,K80=0.2"
FLEETS = ("a100", "mixed")
FLEET_LABEL = {"a100": "one type (A100), ElasticFlow's sizes",
               "mixed": "three types, ElasticFlow's sizes split evenly"}

#: ElasticFlow's deadline satisfactory ratio on the ten clusters (ASPLOS'23, Fig. 8b, from
#: its artifact; see the trace's README), for reference: another simulator, elastic jobs.
ELASTICFLOW_PUBLISHED = {
    "EDF": (.182, .228, .095, .007, .375, .105, .046, .252, .800, .769),
    "Tiresias": (.478, .470, .401, .120, .420, .466, .346, .373, .468, .473),
    "ElasticFlow": (.788, .822, .455, .631, .832, .607, .665, .896, .938, .981),
}


@dataclass(frozen=True)
class Point:
    """One replay: a fleet, a cluster and a policy."""

    fleet: str
    cluster: str
    policy: str

    @property
    def name(self) -> str:
        return f"{self.fleet} c{self.cluster} {self.policy}"


def gpuplan_command() -> str:
    """The ``gpuplan`` executable of this interpreter's environment (else the one on PATH)."""
    beside = Path(sys.executable).with_name("gpuplan")
    found = str(beside) if beside.exists() else shutil.which("gpuplan")
    if found is None:
        sys.exit("gpuplan's command is not installed beside this Python nor on PATH")
    return found


def simulate_args(point: Point, instance: Path, run: Path) -> list[str]:
    """``gpuplan simulate``'s arguments for the point (after the executable)."""
    args = ["simulate", str(instance), "--policy", point.policy]
    if point.policy.startswith("gavel-"):
        args += ["--mode", "round"]
    return [*args, "-o", str(run)]


def convert_args(fleet: str, csv_path: Path, outdir: Path, types: str) -> list[str]:
    """``gpuplan convert``'s arguments for a cluster's ElasticFlow file on a fleet."""
    args = ["convert", "itp-elasticflow", str(csv_path), "-o", str(outdir)]
    return args + (["--types", types] if fleet == "mixed" else [])


# -- the trace ------------------------------------------------------------------------------

def _members(archive: Path) -> dict[str, bytes]:
    """The ``clusterNN.csv`` files of an archive, by name."""
    found: dict[str, bytes] = {}
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar.getmembers():
            name = Path(member.name).name
            if member.isfile() and name.startswith("cluster") and name.endswith(".csv"):
                handle = tar.extractfile(member)
                if handle is not None:
                    found[name] = handle.read()
    return found


def _rows(data: bytes) -> list[tuple[str, str, str, str]]:
    """``(job_id, submission_time, duration, num_gpu)`` of every row."""
    reader = csv.DictReader(io.StringIO(data.decode("utf-8")))
    return [(r["job_id"], r["submission_time"], r["duration"], r["num_gpu"]) for r in reader]


def extract(work: Path, clusters: Sequence[str]) -> dict[str, bool]:
    """Write ElasticFlow's cluster files under ``work/elasticflow``; whether each matches raw.

    A cluster matches when its rows have the raw trace's job ids, submission times,
    durations and gang sizes, in the same order.
    """
    flow = _members(TRACE / "elasticflow-traces.tar.gz")
    raw = _members(TRACE / "raw-traces.tar.gz")
    folder = work / "elasticflow"
    folder.mkdir(parents=True, exist_ok=True)
    same = {}
    for cluster in clusters:
        name = f"cluster{cluster}.csv"
        (folder / name).write_bytes(flow[name])
        same[cluster] = _rows(flow[name]) == _rows(raw[name])
    return same


# -- running ---------------------------------------------------------------------------------

@dataclass
class Exit:
    """How a child process ended: exit code, wall and CPU seconds, peak memory, stderr."""

    code: int
    wall_s: float
    cpu_s: float
    peak_mib: float
    stderr: str
    killed: bool


#: Runs a command (``argv[2:]``) and writes its exit, wall and CPU seconds and peak memory
#: to ``argv[1]``. A small process of its own, so that the peak is the command's: a child
#: forked from the (larger) benchmark would report the benchmark's resident memory as its
#: peak (Linux keeps the high-water mark across exec).
LAUNCHER = """
import json, os, sys, time
began = time.perf_counter()
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
code = os.waitstatus_to_exitcode(status)
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "wall_s": time.perf_counter() - began,
               "cpu_s": usage.ru_utime + usage.ru_stime,
               "peak_mib": usage.ru_maxrss / 1024}, out)
sys.exit(code if code >= 0 else 128 - code)
"""


def run_process(command: Sequence[str], timeout: float, errors: Path) -> Exit:
    """Run a command to its end (killed after ``timeout`` seconds), with its own rusage."""
    usage = errors.with_suffix(".usage.json")
    usage.unlink(missing_ok=True)
    began = time.perf_counter()
    with errors.open("w", encoding="utf-8") as stream:
        child = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(usage), *command],
                                 stdout=subprocess.DEVNULL, stderr=stream,
                                 start_new_session=True)
    try:
        child.wait(timeout)
        killed = False
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        killed = True
    wall = time.perf_counter() - began
    stderr = errors.read_text(encoding="utf-8", errors="replace")
    if killed or not usage.exists():
        return Exit(child.returncode, wall, float("nan"), float("nan"), stderr, killed)
    got = json.loads(usage.read_text(encoding="utf-8"))
    return Exit(int(got["code"]), float(got["wall_s"]), float(got["cpu_s"]),
                float(got["peak_mib"]), stderr, False)


@dataclass
class Cluster:
    """What a converted instance holds: size, load and what its deadlines allow."""

    fleet: str
    cluster: str
    jobs: int
    nodes: int
    gpus: int
    types: str
    largest_gang: int
    span_d: float
    gpu_h: float
    offered_load: float
    attainable: float
    convert_s: float
    matches_raw: bool


def describe(fleet: str, cluster: str, document: dict[str, Any], types: str,
             convert_s: float, matches_raw: bool) -> Cluster:
    """The instance's size; its offered load and the best deadline-met share possible.

    Offered load: GPU-time the jobs need on the reference type over the fleet's capacity
    in reference GPUs (each GPU counted at its type's speed) times the arrivals' span.
    Attainable: the share of jobs whose due date is at least their run time on their
    fastest type after their arrival, the most a policy that keeps each job's gang (no
    elastic scaling) can meet.
    """
    speeds = {"A100": 1.0}
    if fleet == "mixed":
        speeds = {}
        for k, part in enumerate(types.split(",")):
            name, _, speed = part.partition("=")
            speeds[name] = float(speed) if speed else 1.0 if k == 0 else float("nan")
    jobs = document["jobs"]
    release = np.array([float(j["release_s"]) for j in jobs])
    gang = np.array([int(j["gpus"]) for j in jobs])
    fastest = np.array([min(j["duration_s"].values()) if isinstance(j["duration_s"], dict)
                        else float(j["duration_s"]) for j in jobs])
    due = np.array([float(j["due_s"]) for j in jobs])
    per_type: dict[str, int] = {}
    for node in document["nodes"]:
        for type_id, count in node["gpus"].items():
            per_type[type_id] = per_type.get(type_id, 0) + int(count)
    capacity = sum(count * speeds[t] for t, count in per_type.items())
    span = float(release.max() - release.min())
    return Cluster(
        fleet=fleet, cluster=cluster, jobs=len(jobs), nodes=len(document["nodes"]),
        gpus=sum(per_type.values()),
        types=" + ".join(f"{count // 8} {t}" for t, count in per_type.items()),
        largest_gang=int(gang.max()), span_d=span / 86400,
        gpu_h=float((gang * fastest).sum()) / 3600,
        offered_load=float((gang * fastest).sum()) / (capacity * max(span, 1.0)),
        attainable=float((due - release >= fastest - 1e-9).mean()),
        convert_s=convert_s, matches_raw=matches_raw)


def read_log(instance_path: Path, run: Path) -> dict[str, Any]:
    """The row of a verified run log: its metrics, deadline-met share, longest queueing.

    Run in a process of its own (``--read-log``) by :func:`run_point`: a log of hundreds of
    MB would leave the benchmark's own process that large.
    """
    instance = json.loads(instance_path.read_text(encoding="utf-8"))
    log = json.loads(run.read_text(encoding="utf-8"))
    if not log["verification"]["ok"]:
        raise RuntimeError(f"{run}: the log's verification is not ok")
    finish: dict[str, float] = {}
    start: dict[str, float] = {}
    for segment in log["segments"]:
        job = segment["job"]
        finish[job] = max(finish.get(job, -np.inf), float(segment["end_s"]))
        start[job] = min(start.get(job, np.inf), float(segment["start_s"]))
    jobs = instance["jobs"]
    met = sum(finish[j["id"]] <= float(j["due_s"]) + 1e-6 for j in jobs)
    waited = max(start[j["id"]] - float(j["release_s"]) for j in jobs)
    return {"metrics": log["run"]["metrics"], "deadline_met": met / len(jobs),
            "max_queueing_h": waited / 3600, "sim_s": float(log["wall_time_s"]),
            "segments": len(log["segments"]), "method": log["method"]}


def _gist(stderr: str) -> str:
    """What a failed command said: a traceback's last line, else its first 1,500 characters."""
    text = stderr.strip()
    if "Traceback" in text:
        return text.splitlines()[-1]
    return text[:1500]


@dataclass
class Outcome:
    """A point's row, or why it has none."""

    point: Point
    row: dict[str, Any] | None
    error: str = ""


def run_point(point: Point, instance_path: Path, work: Path, executable: str, timeout: float,
              check: bool) -> Outcome:
    """Replay one point with ``gpuplan simulate``, check its log, read the row."""
    runs = work / "runs" / point.fleet
    runs.mkdir(parents=True, exist_ok=True)
    run = runs / f"c{point.cluster}_{point.policy}.json"
    run.unlink(missing_ok=True)
    errors = run.with_suffix(".stderr")
    done = run_process([executable, *simulate_args(point, instance_path, run)], timeout, errors)
    if done.killed:
        return Outcome(point, None, f"stopped after {timeout:g} s")
    if done.code != 0:
        return Outcome(point, None, f"simulate exit {done.code}: {_gist(done.stderr)}")
    row: dict[str, Any] = {"wall_s": done.wall_s, "cpu_s": done.cpu_s,
                           "peak_mib": done.peak_mib}
    reader = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--read-log",
                             str(instance_path), str(run)], capture_output=True, text=True,
                            check=False)
    if reader.returncode != 0:
        return Outcome(point, None, f"reading the log: {_gist(reader.stderr)}")
    row.update(json.loads(reader.stdout))
    if row["method"] != f"simulate:{point.policy}":
        return Outcome(point, None, f"the log's method is {row['method']!r}")
    if check:
        checked = run_process([executable, "check", str(instance_path), str(run)], timeout,
                              errors.with_suffix(".check.stderr"))
        if checked.code != 0:
            return Outcome(point, None, f"check exit {checked.code}: {_gist(checked.stderr)}")
        row["check_s"] = checked.wall_s
    return Outcome(point, row)


# -- the results file ------------------------------------------------------------------------

def _f(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


Rows = dict[tuple[str, str, str], Outcome]


def table_clusters(clusters: Sequence[Cluster]) -> str:
    """The converted instances: size, load, attainable deadline share."""
    lines = ["| fleet | cluster | jobs | nodes | GPUs | types (nodes) | largest gang | "
             "arrivals over (days) | GPU-hours (A100) | offered load | deadlines attainable "
             "| same jobs as raw | convert s |",
             "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---:|"]
    for c in clusters:
        lines.append(f"| {c.fleet} | {c.cluster} | {c.jobs:,} | {c.nodes} | {c.gpus:,} | "
                     f"{c.types} | {c.largest_gang} | {c.span_d:.1f} | {c.gpu_h:,.0f} | "
                     f"{c.offered_load:.3f} | {c.attainable:.3f} | "
                     f"{'yes' if c.matches_raw else 'NO'} | {c.convert_s:.1f} |")
    return "\n".join(lines)


def table_replays(rows: Rows, fleet: str, clusters: Sequence[str],
                  policies: Sequence[str], sizes: dict[tuple[str, str], Cluster]) -> str:
    """One fleet's replays: a row per cluster and policy."""
    lines = ["| cluster | policy | jobs | GPUs | mean JCT h | vs fifo | median JCT h | "
             "p95 JCT h | mean queueing h | max queueing h | utilisation | deadline met | "
             "preemptions/job | wall s | sim s | peak MiB | check s |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for cluster in clusters:
        size = sizes.get((fleet, cluster))
        gpus = "-" if size is None else f"{size.gpus:,}"
        base = rows.get((fleet, cluster, "fifo"))
        base_jct = (None if base is None or base.row is None
                    else float(base.row["metrics"]["mean_jct_h"]))
        for policy in policies:
            outcome = rows.get((fleet, cluster, policy))
            if outcome is None:
                continue
            row = outcome.row
            if row is None:
                lines.append(f"| {cluster} | {policy} | - | {gpus} | failed: "
                             f"{_cell(outcome.error)[:120]}… (see Failures) |" + " - |" * 12)
                continue
            m = row["metrics"]
            change = ("-" if base_jct is None
                      else f"{100 * (m['mean_jct_h'] / base_jct - 1):+.1f}%")
            lines.append(
                f"| {cluster} | {policy} | {int(m['jobs']):,} | {gpus} | "
                f"{_f(m['mean_jct_h'])} | {change} | {_f(m['median_jct_h'])} | "
                f"{_f(m['p95_jct_h'])} | {_f(m['mean_queueing_h'], 3)} | "
                f"{_f(row['max_queueing_h'])} | {m['utilisation_share']:.3f} | "
                f"{row['deadline_met']:.3f} | {m['preemptions_per_job']:.3f} | "
                f"{row['wall_s']:.1f} | {row['sim_s']:.1f} | {row['peak_mib']:.0f} | "
                f"{_f(row.get('check_s'), 1)} |")
    return "\n".join(lines)


def table_deadlines(rows: Rows, fleet: str, clusters: Sequence[str],
                    policies: Sequence[str], sizes: dict[tuple[str, str], Cluster]) -> str:
    """Deadline-met share, policies by cluster, beside ElasticFlow's published ratios."""
    head = "| policy | " + " | ".join(f"c{c}" for c in clusters) + " |"
    lines = [head, "|---|" + "---:|" * len(clusters)]
    for policy in policies:
        cells = []
        for cluster in clusters:
            outcome = rows.get((fleet, cluster, policy))
            cells.append("-" if outcome is None or outcome.row is None
                         else f"{outcome.row['deadline_met']:.3f}")
        lines.append(f"| {policy} | " + " | ".join(cells) + " |")
    lines.append("| *attainable without scaling* | " + " | ".join(
        "-" if (fleet, c) not in sizes else f"*{sizes[(fleet, c)].attainable:.3f}*"
        for c in clusters) + " |")
    for name, values in ELASTICFLOW_PUBLISHED.items():
        lines.append(f"| *ElasticFlow paper: {name}* | " + " | ".join(
            f"*{values[int(c) - 1]:.3f}*" for c in clusters) + " |")
    return "\n".join(lines)


def table_times(rows: Rows, fleets: Sequence[str], clusters: Sequence[str],
                policies: Sequence[str]) -> str:
    """Seconds per policy over the clusters, per fleet, and the issue's target."""
    lines = ["| fleet | policy | clusters replayed | wall s (sum) | slowest cluster | "
             "its wall s | sim s (sum) | CPU s (sum) | peak MiB (max) |",
             "|---|---|---:|---:|---|---:|---:|---:|---:|"]
    for fleet in fleets:
        for policy in policies:
            got = [o for c in clusters
                   if (o := rows.get((fleet, c, policy))) is not None and o.row is not None]
            if not got:
                continue
            slowest = max(got, key=lambda o: float(o.row["wall_s"]) if o.row else 0.0)
            assert slowest.row is not None
            lines.append(
                f"| {fleet} | {policy} | {len(got)} of {len(clusters)} | "
                f"{sum(o.row['wall_s'] for o in got if o.row):.1f} | "
                f"c{slowest.point.cluster} | {slowest.row['wall_s']:.1f} | "
                f"{sum(o.row['sim_s'] for o in got if o.row):.1f} | "
                f"{sum(o.row['cpu_s'] for o in got if o.row):.1f} | "
                f"{max(o.row['peak_mib'] for o in got if o.row):.0f} |")
        target = [rows.get((fleet, c, p)) for c in clusters for p in TARGET_POLICIES]
        done = [o for o in target if o is not None and o.row is not None]
        if done:
            total = sum(float(o.row["wall_s"]) for o in done if o.row)
            whole = len(done) == len(CLUSTERS) * len(TARGET_POLICIES)
            verdict = ("" if not whole else
                       " ✓" if total <= TARGET_S else f" ✗ (target {TARGET_S:.0f} s)")
            cpu = sum(float(o.row["cpu_s"]) for o in done if o.row)
            sim = sum(float(o.row["sim_s"]) for o in done if o.row)
            lines.append(f"| {fleet} | **{' + '.join(TARGET_POLICIES)}** | {len(done)} points | "
                         f"**{total:.1f}**{verdict} | | | {sim:.1f} | {cpu:.1f} | |")
    return "\n".join(lines)


def figure(rows: Rows, fleet: str, clusters: Sequence[str], policies: Sequence[str],
           out: Path) -> bool:
    """Mean JCT and deadline-met share by policy per cluster; whether anything was drawn."""
    from matplotlib.figure import Figure

    from gpuplan.exporters.plot import write_figure

    drawn = [p for p in policies if any(
        (o := rows.get((fleet, c, p))) is not None and o.row is not None for c in clusters)]
    if not drawn:
        return False
    fig = Figure(figsize=(11, 6.5))
    top, bottom = fig.subplots(2, 1, sharex=True)
    width = 0.8 / len(drawn)
    x = np.arange(len(clusters))
    for k, policy in enumerate(drawn):
        jct, met = [], []
        offset = x + (k - (len(drawn) - 1) / 2) * width
        for at, cluster in zip(offset, clusters, strict=True):
            outcome = rows.get((fleet, cluster, policy))
            row = None if outcome is None else outcome.row
            jct.append(np.nan if row is None else row["metrics"]["mean_jct_h"])
            met.append(np.nan if row is None else row["deadline_met"])
            if outcome is not None and row is None:
                bottom.text(at, 0.02, "failed", rotation=90, ha="center", va="bottom",
                            fontsize=7)
        top.bar(offset, jct, width, label=policy)
        bottom.bar(offset, met, width, label=policy)
    top.set_yscale("log")
    top.set_ylabel("mean JCT (h, log)")
    top.set_title(f"Microsoft ITP trace, ElasticFlow variant: {FLEET_LABEL[fleet]}")
    bottom.legend(ncol=len(drawn), fontsize=8, loc="upper center")
    bottom.set_ylabel("deadline-met share")
    bottom.set_ylim(0, 1)
    bottom.set_xticks(x, [f"c{c}" for c in clusters])
    bottom.set_xlabel("cluster")
    fig.tight_layout()
    write_figure(fig, out)
    return True


def figure_path(out: Path, fleet: str) -> Path:
    """The plot of a fleet beside the results file: ``itp_replays.png`` for one type."""
    return out.with_name(out.stem + ("" if fleet == "a100" else f"_{fleet}") + ".png")


NOTES = """## Notes

Written from the run above (the tables are regenerated by the script, these words are not).
Two full runs gave the same metrics for all 139 replays that completed; only the seconds
differ.

- **At ElasticFlow's sizes the clusters are lightly loaded**: offered load 0.02-0.48 on
  A100 (Table 1). On the one-type fleet fifo, sjf, srtf and las are within 3% of each
  other in mean JCT on every cluster, identical where no job waits, and meet about as
  many deadlines as can be met ("attainable": about half of ElasticFlow's deadlines,
  U(0.5, 1.5) x the run time after submission, are shorter than the job's run time).
  Utilisation is the offered load. The one queue is on c03 (64-GPU gangs waiting for 8
  free nodes: fifo's longest wait 25.6 h); srtf -2.8% mean JCT there, las the shortest
  waits (it preempts).
- **Gavel's policies are worse than fifo on every one-type cluster**: +3.9% to +38.6%
  mean JCT, deadlines met 0.29-0.37 against 0.45-0.50, the three of them identical on
  seven clusters. Not their allocations (on one type with free GPUs every job gets its
  own) but Gavel's round mechanism, which gpuplan reproduces on purpose
  (`gpuplan/simulate/gavel_rounds.py`, `docs/gavel_protocol.md`): a new job runs only
  after the next allocation recompute, at a round boundary at least 1,920 s after the
  last one (mean queueing 0.27-0.34 h, and 0.42-1.10 h on the idlest clusters c01, c05
  and c10, where fifo's is at most 0.04 h, c03 aside), and when nothing runs the
  clock jumps to the next arrival, so a job arriving in an idle cluster within 1,920 s of
  a recompute waits for the next submission: longest waits 14.3 h (c01), 36.2 h (c05),
  20.3 h (c10). Gavel's generated workloads never idle, so this never shows there; on a
  sparse real trace it dominates, and short jobs' deadlines do not survive it. Read the
  Gavel rows as Gavel's mechanism on this trace, not as its allocation policies.
- **Three types** (a third of the nodes each, A100 1, V100 0.5, K80 0.2: 0.57 of the
  A100 fleet's capacity) raise the loads to 0.03-0.85, and c03 and c04 queue. There srtf
  is best (-14.0% and -5.3% mean JCT against fifo; deadlines met 0.323 and 0.377 against
  0.250 and 0.290), las next (-6.3%, -4.5%); sjf, not preemptive, barely helps.
- **gavel-fifo on three-type c04: +41.0% mean JCT and 1.4% of deadlines met** (fifo:
  29.0%), with 2.59 h mean queueing and 1.13 preemptions per job. From its run log, 76% of
  its jobs run on a K80 at some point (fifo: 6%) and the median job's run spans 2.85x its
  A100 run time (fifo: 1.0x), while the A100s are 96% held (by the large gangs). The log
  passes the verifier and `gpuplan check`; whether gavel-fifo should send the short jobs
  to the slow types this much deserves a look by whoever owns it.
- **Gavel's LP policies time-slice jobs across types**: up to 51 preemptions per job on
  the three-type fleet (c03: gavel-las 51.0, gavel-ftf 37.0; c04: gavel-ftf 35.5), each
  resume paying gpuplan's default 30 s restore and 60 s migration within a 360 s round:
  on c04 gavel-ftf holds 167k of its 1.36M GPU-hours in overheads (12%). Its
  utilisation, 0.861, counts those. Utilisation is GPU-time held over the interval from
  the first arrival to the last completion, so on the three-type fleet it also grows with
  time held on slow types and shrinks with a long tail: sjf's 0.682 against fifo's 0.552
  on c04 is fifo's last completion at 2,191 h against sjf's 1,725 h, not better packing.
- **Speed.** One type, fifo + sjf + srtf + las + gavel-las on the ten clusters: 324 s
  wall against the 300 s target (a first full run: 347 s), 181 s CPU, measured with a
  load average of 4-7 from other work on the two cores (c10 under fifo: 1.7 s wall for
  0.85 s CPU). About 0.8 s CPU of every process is start-up and reading (c10 under fifo
  simulates in 0.04 s), some 40 s of the 181. Slowest policies: las 98 s and gavel-las
  99 s over ten clusters (c07: 24 s and 19 s); gavel-fifo 67 s, gavel-ftf 114 s: on one
  type none of Gavel's policies is slow. On three types gavel-ftf is: 563 s over ten
  clusters, c04 alone 244 s at a 2,967 MiB peak, writing a 565 MB run log (35.5 preemptions a
  job), which `gpuplan check` then takes 196 s to read; gavel-las on c03 68 s at 709 MiB.
- **A bug this benchmark found, fixed** (commit b61c5eb): gavel-las on the three-type c04
  was rejected by the verifier (exit 1, nothing written). A job whose work was done but for
  float noise at a round boundary was moved to another type, completed by the stop, and
  started again for a segment of overhead only; its second completion dropped another job
  from the engine's active list. The point was run again with `--retry-failed`.
- **ElasticFlow's published ratios** come from its own simulator with elastic jobs
  (scaled up to meet deadlines), admission control and its throughput model; they are
  for scale only. Its Tiresias (a 2D-LAS like gpuplan's las) meets 0.35-0.48 of deadlines
  on nine clusters, near las here (0.44-0.50), but 0.120 on c04 against 0.489 here: its
  c04 is far more contended than the trace's 0.48 offered load on 1,024 A100s suggests;
  not investigated.
"""


def shown(rows: Rows) -> tuple[list[str], list[str], list[str]]:
    """The fleets, clusters and policies the rows hold, in table order."""
    return ([f for f in FLEETS if any(k[0] == f for k in rows)],
            [c for c in CLUSTERS if any(k[1] == c for k in rows)],
            [p for p in POLICIES if any(k[2] == p for k in rows)])


def _retried(timing: dict[str, Any]) -> list[str]:
    """A sentence on the points run again by ``--retry-failed``, if any."""
    names = timing.get("retried", [])
    if not names:
        return []
    return ["", f"{len(names)} point(s) failed (or were not run) at first and were run again by "
            f"`{timing.get('retry_command', '--retry-failed')}` (load average "
            f"{timing.get('retry_load_before', '-')} before, "
            f"{timing.get('retry_load_after', '-')} after): {', '.join(names)}. The other "
            "points are those of the first run."]


def render(rows: Rows, clusters_info: Sequence[Cluster], args: argparse.Namespace,
           command: str, timing: dict[str, Any]) -> str:
    """The results file."""
    from gpuplan import __version__

    sizes = {(c.fleet, c.cluster): c for c in clusters_info}
    fleets, clusters, policies = shown(rows)
    example = Point(fleets[0] if fleets else "a100", "04", "las")
    folder = "$WORK"
    parts = [
        "# Microsoft's ITP trace replayed: ten clusters under fifo, sjf, srtf, las and Gavel's "
        "policies",
        "",
        f"Made by `{command}` (gpuplan {__version__}), one point at a time on a 2-core "
        f"machine shared with other work (load average {timing.get('load_before', '-')} "
        f"before, {timing.get('load_after', '-')} after). Script wall time "
        f"{_f(timing.get('script_s'), 0)} s, of which conversions "
        f"{_f(timing.get('convert_s'), 0)} s and `gpuplan check` "
        f"{_f(timing.get('check_s'), 0)} s.",
        *_retried(timing),
        "",
        "## What is replayed, and how",
        "",
        "- **Trace**: Microsoft's ITP trace as ElasticFlow (ASPLOS'23) published it "
        "(`../shared/benchmarks/gpu-traces/microsoft-itp/`, microsoft/elasticflow-traces, "
        "MIT): ten clusters, 69,351 jobs over two months, gangs of 1-64 GPUs. The ElasticFlow "
        "variant (`elasticflow-traces.tar.gz`) is used because it has deadlines; its jobs are "
        "the raw trace's row for row (same job ids, submission times, durations and gang "
        "sizes; column \"same jobs as raw\", checked by the script), so the JCT and queueing "
        "results are those of the raw trace too.",
        "- **Cluster size** (the trace has none): ElasticFlow's, `gpuplan convert`'s default "
        "(`gpuplan.readers.itp.ITP_NODES`): nodes of 8 GPUs; clusters 01, 02, 03, 05, 06: "
        "64 nodes (512 GPUs); 04, 07, 08, 09: 128 nodes (1,024 GPUs); 10: 32 nodes (256 "
        "GPUs). A gang of up to 8 GPUs stays on one node, a larger one takes whole nodes.",
        "- **GPU types** (the trace has none): table `a100` gives every node A100s, the type "
        "on which the durations are taken. Table `mixed` splits the same nodes evenly among "
        f"`--types {args.types}` in that order (the first types take one node more when the "
        "count does not divide: 64 nodes give 22 + 21 + 21, 128 give 43 + 43 + 42, 32 give "
        "11 + 11 + 10); a job runs `duration / speed` on a type and may use any type with "
        "nodes enough for its gang. The speeds are an assumption, not measured.",
        "- **Deadlines**: ElasticFlow's `deadline` column (its submission plus U(0.5, 1.5) "
        "times the duration) is the job's soft due date (`due_s`); a job meets it when its "
        "last segment ends by it, counted over all jobs (ElasticFlow's \"deadline "
        "satisfactory ratio\"). Jobs keep their gang (no elastic scaling), so about half "
        "cannot meet it at all: \"attainable\" is the share whose due date is at least their "
        "run time on their fastest type after their arrival.",
        "- **Policies**: fifo, sjf, srtf, las (Tiresias' 2D-LAS, default thresholds) in "
        "event mode; gavel-fifo, gavel-las, gavel-ftf (Gavel's heterogeneity-aware forms, "
        "which use each type's speed; the agnostic ones are not run) in round mode with "
        "Gavel's 360 s rounds. Every policy: best-fit placement, "
        "gpuplan's default overheads (30 s restore on each resume, 60 s more on other "
        "GPUs), every job preemptible (the preemptive policies may stop them).",
        "- **Metrics**: from each run log's `run.metrics` over all jobs (JCT = completion "
        "- submission; queueing = first start - submission; utilisation = GPU-time held / "
        "GPU-time from the first arrival to the last completion, so it is near the offered "
        "load on these lightly loaded clusters). Deadline met and the longest queueing from "
        "the log's segments. *Offered load*: GPU-time needed on the fastest type over the "
        "fleet's capacity in A100s (each GPU counted at its speed) times the arrivals' span. "
        "*wall s*: the `gpuplan simulate` process (start-up, reading, simulation, "
        "verification, writing the run log); *sim s*: the log's `wall_time_s` (simulation "
        "and verification); *check s*: `gpuplan check` of the log afterwards, not counted.",
        "",
        "Commands, per cluster and fleet (the script runs the same with absolute paths, "
        f"`{folder}` being `--work`):",
        "",
        "```bash",
        f"mkdir -p {folder}/elasticflow && tar xzf ../shared/benchmarks/gpu-traces/"
        f"microsoft-itp/elasticflow-traces.tar.gz -C {folder}/elasticflow",
        "gpuplan " + " ".join(convert_args("a100", Path(f"{folder}/elasticflow/cluster04.csv"),
                                             Path(f"{folder}/a100"), args.types)),
        "gpuplan " + " ".join(convert_args("mixed", Path(f"{folder}/elasticflow/cluster04.csv"),
                                             Path(f"{folder}/mixed"), args.types)),
        "gpuplan " + " ".join(simulate_args(
            example, Path(f"{folder}/a100/itp-elasticflow-cluster04.json"),
            Path(f"{folder}/runs/a100/c04_las.json"))),
        "gpuplan " + " ".join(simulate_args(
            Point("a100", "04", "gavel-las"),
            Path(f"{folder}/a100/itp-elasticflow-cluster04.json"),
            Path(f"{folder}/runs/a100/c04_gavel-las.json"))),
        f"gpuplan check {folder}/a100/itp-elasticflow-cluster04.json "
        f"{folder}/runs/a100/c04_las.json",
        "```",
        "",
        "## Table 1: the clusters as converted",
        "",
        table_clusters(clusters_info),
        "",
        "## Table 2: time per policy over the ten clusters, and the issue's target",
        "",
        f"Target (issue 46): the ten clusters under {', '.join(TARGET_POLICIES)} in at most "
        f"{TARGET_S:.0f} s in all on 2 cores; wall seconds of the `gpuplan simulate` "
        "processes, one at a time.",
        "",
        table_times(rows, fleets, clusters, policies),
    ]
    number = 3
    for fleet in fleets:
        picture = figure_path(args.out, fleet)
        parts += ["", f"## Table {number}: replays, {FLEET_LABEL[fleet]} (`{fleet}`)", "",
                  table_replays(rows, fleet, clusters, policies, sizes), "",
                  f"## Table {number + 1}: deadline-met share, `{fleet}`, beside ElasticFlow's "
                  "published ratios (another simulator with elastic jobs; for scale only)", "",
                  table_deadlines(rows, fleet, clusters, policies, sizes), "",
                  f"![mean JCT and deadline-met share, {fleet}]({picture.name})"]
        number += 2
    failed = [o for o in rows.values() if o.row is None]
    if failed:
        parts += ["", "## Failures", ""]
        parts += [f"- {o.point.name}: {_cell(o.error)}" for o in failed]
    return "\n".join([*parts, "", NOTES])


# -- main ------------------------------------------------------------------------------------

def _list(text: str) -> list[str]:
    return [part for part in text.split(",") if part]


def _save(work: Path, rows: Rows, clusters: Sequence[Cluster], timing: dict[str, Any]) -> None:
    kept = {"rows": [{"point": asdict(o.point), "row": o.row, "error": o.error}
                     for o in rows.values()],
            "clusters": [asdict(c) for c in clusters], "timing": timing}
    write_text_atomic(work / "rows.json", json.dumps(kept, indent=1))


def _load(work: Path) -> tuple[Rows, list[Cluster], dict[str, Any]]:
    kept = json.loads((work / "rows.json").read_text(encoding="utf-8"))
    rows: Rows = {}
    for item in kept["rows"]:
        point = Point(**item["point"])
        rows[(point.fleet, point.cluster, point.policy)] = Outcome(point, item["row"],
                                                                   item["error"])
    return rows, [Cluster(**c) for c in kept["clusters"]], dict(kept["timing"])


def main(argv: Sequence[str] | None = None) -> int:
    """Convert the clusters, replay every point, write the results file and the plots."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fleets", type=_list, default=list(FLEETS),
                        help="a100 (one type), mixed (--types); default: both")
    parser.add_argument("--clusters", type=_list, default=list(CLUSTERS))
    parser.add_argument("--policies", type=_list, default=list(POLICIES))
    parser.add_argument("--types", default=MIXED_TYPES,
                        help=f"the mixed fleet's types and speeds (default: {MIXED_TYPES})")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds after which a replay is stopped")
    parser.add_argument("--no-check", dest="check", action="store_false",
                        help="do not run gpuplan check on each run log")
    parser.add_argument("--work", type=Path, default=Path("/tmp/gpuplan_bench_itp"),
                        help="trace files, instances, run logs and the rows kept")
    parser.add_argument("--out", type=Path, default=RESULTS / "itp_replays.md")
    parser.add_argument("--render-only", action="store_true",
                        help="run nothing: rewrite the results from the rows kept in --work")
    parser.add_argument("--read-log", nargs=2, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--retry-failed", action="store_true",
                        help="run again only the points that failed or are missing in the "
                        "rows kept in --work (e.g. after a transient failure), keeping the rest")
    args = parser.parse_args(argv)
    for name, chosen, known in (("--fleets", args.fleets, FLEETS),
                                ("--clusters", args.clusters, CLUSTERS),
                                ("--policies", args.policies, POLICIES)):
        unknown = sorted(set(chosen) - set(known))
        if unknown or not chosen:
            parser.error(f"{name}: {', '.join(unknown) or 'none given'}; "
                         f"choose from {','.join(known)}")
    command = "nice -n 19 python scripts/bench_itp.py " + " ".join(
        shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))

    def write(rows: Rows, clusters: Sequence[Cluster], timing: dict[str, Any],
              plots: bool = True) -> None:
        if plots:
            fleets, clusters_shown, policies = shown(rows)
            for fleet in fleets:
                figure(rows, fleet, clusters_shown, policies, figure_path(args.out, fleet))
        made_by = str(timing.get("command", command.strip()))
        write_text_atomic(args.out, render(rows, clusters, args, made_by, timing))

    if args.read_log is not None:
        print(json.dumps(read_log(*args.read_log)))
        return 0
    if args.render_only:
        write(*_load(args.work))
        print(f"wrote {args.out}")
        return 0

    began = time.perf_counter()
    executable = gpuplan_command()
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    if args.retry_failed:
        rows, clusters, timing = _load(args.work)
        instances = {(f, c): args.work / f / f"itp-elasticflow-cluster{c}.json"
                     for f in args.fleets for c in args.clusters}
        wanted = [Point(f, c, p) for f in args.fleets for c in args.clusters
                  for p in args.policies
                  if (o := rows.get((f, c, p))) is None or o.row is None]
        timing["retried"] = [*timing.get("retried", []), *(p.name for p in wanted)]
        timing["retry_command"] = command.strip()
        timing["retry_load_before"] = load
    else:
        timing = {"command": command.strip(), "load_before": load}
        args.work.mkdir(parents=True, exist_ok=True)
        same = extract(args.work, args.clusters)
        clusters = []
        instances = {}
        for fleet in args.fleets:
            folder = args.work / fleet
            folder.mkdir(exist_ok=True)
            for cluster in args.clusters:
                source = args.work / "elasticflow" / f"cluster{cluster}.csv"
                done = run_process(
                    [executable, *convert_args(fleet, source, folder, args.types)],
                    args.timeout, folder / f"convert{cluster}.stderr")
                if done.code != 0:
                    sys.exit(f"convert {fleet} cluster{cluster}: exit {done.code}: "
                             f"{done.stderr}")
                path = folder / f"itp-elasticflow-cluster{cluster}.json"
                document = json.loads(path.read_text(encoding="utf-8"))
                instances[(fleet, cluster)] = path
                clusters.append(describe(fleet, cluster, document, args.types,
                                         done.wall_s, same[cluster]))
        timing["convert_s"] = sum(c.convert_s for c in clusters)
        rows = {}
        wanted = [Point(f, c, p) for f in args.fleets for c in args.clusters
                  for p in args.policies]
    spent = float(timing.get("script_s", 0.0))
    for point in wanted:
        outcome = run_point(point, instances[(point.fleet, point.cluster)], args.work,
                            executable, args.timeout, args.check)
        rows[(point.fleet, point.cluster, point.policy)] = outcome
        row = outcome.row
        print(f"  {point.name}: " + (
            f"FAILED {outcome.error}" if row is None else
            f"mean JCT {row['metrics']['mean_jct_h']:.2f} h, deadline met "
            f"{row['deadline_met']:.3f}, {row['wall_s']:.1f} s"), flush=True)
        timing["check_s"] = sum(o.row.get("check_s", 0.0) for o in rows.values()
                                if o.row is not None)
        timing["script_s"] = spent + time.perf_counter() - began
        _save(args.work, rows, clusters, timing)
        write(rows, clusters, timing, plots=False)
    timing["retry_load_after" if args.retry_failed else "load_after"] = " / ".join(
        f"{x:.1f}" for x in os.getloadavg())
    timing["script_s"] = spent + time.perf_counter() - began
    _save(args.work, rows, clusters, timing)
    write(rows, clusters, timing)
    print(f"wrote {args.out} in {time.perf_counter() - began:.0f} s")
    return 0 if all(o.row is not None for o in rows.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
