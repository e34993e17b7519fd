"""ElasticFlow's deadline experiment (ASPLOS'23, Fig. 6b and Fig. 8b) under gpuplan's simulator.

Usage:
    nice -n 19 python scripts/bench_elastic.py [--traces 195job,cluster01,...,cluster10]
        [--policies edf,tiresias,elasticflow,optimizer] [--workers 2] [--time-limit S]
        [--ef-scheduler DIR --ef-python PY [--ef-timeout S] [--ef-traces ...]
         [--ef-elasticflow 195job,cluster10]]
        [--work /tmp/gpuplan_bench_elastic] [--out docs/results/elastic.md] [--render-only]

Each trace of ``../shared/benchmarks/gpu-traces/microsoft-itp/elasticflow-traces.tar.gz``
(Microsoft's ITP trace as ElasticFlow used it: arrival, iterations, model, batch size,
absolute deadline, GPUs asked for) is read as ``gpuplan convert itp TRACE --deadlines``
reads it (:func:`gpuplan.readers.itp.itp_elastic_document`: elastic jobs, ElasticFlow's
A100 throughput tables, its cluster sizes, 8 GPUs a node) and replayed under each policy
by :func:`gpuplan.simulate.elastic.simulate_elastic`, which verifies the run log before it
returns it. Slots are 60 s, ElasticFlow's for its simulations, and 240 s for ``195job.csv``,
the slot of ElasticFlow's testbed run (its own simulator gives the published EDF ratio
exactly with it). Every (trace, policy) point runs in a worker process of its own (``--workers``
at once: the whole table on the 2 cores of the reference machine) and is kept in
``--work`` as JSON, so ``--render-only`` rewrites the table without running anything.

Reported per point: the deadline satisfactory ratio (jobs done by their deadline over all
jobs, a declined job counting as missed: ElasticFlow's measure), the jobs declined, the
mean JCT of the jobs that ran (arrival to end), the wall seconds of the point (reading,
simulation, verification) and, for the optimizer, the distribution of its decisions' and
MILP solves' seconds. The bound is the share of jobs that could meet their deadline alone
on the whole cluster (:func:`gpuplan.simulate.elastic.run.alone_bound`): no policy does
better. The published ratios are ElasticFlow's (README of the data folder). The mean JCT
of the jobs both ``elasticflow`` and ``optimizer`` ran compares the two on equal jobs.

With ``--ef-scheduler`` (the ``ElasticFlow/scheduler`` folder of a checkout of
pkusys/ElasticFlow) and ``--ef-python`` (a Python with its requirements), ElasticFlow's
own simulator runs on the same files as its ``run_fig8b.sh`` runs it (``--scheme elastic
--simulation True --scheduling_slot 60 --gpu_type A100``, 240 s for ``195job.csv``, the
cluster spec of the trace's size; its gRPC stubs need ``make rpc`` with a current
protobuf), policies ``edf`` and ``dlas-gpu`` (Tiresias) on ``--ef-traces`` and
``ef-accessctrl`` (ElasticFlow) on ``--ef-elasticflow`` (it takes hours on the larger
clusters), each under ``--ef-timeout`` seconds, after gpuplan's runs and outside their wall
time; its ratio is read from its ``final_result.csv``.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
import tarfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan.harness.bench import write_results

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "benchmarks.md"
DATA = ROOT.parent / "shared" / "benchmarks" / "gpu-traces" / "microsoft-itp"
TRACES = ("195job", *(f"cluster{k:02d}" for k in range(1, 11)))
POLICIES = ("edf", "tiresias", "elasticflow", "optimizer")
#: ElasticFlow's names for the policies it has, and the cluster spec of each trace.
EF_POLICIES = {"edf": "edf", "tiresias": "dlas-gpu", "elasticflow": "ef-accessctrl"}
EF_SPECS = {"195job": "n16g8", "cluster10": "n32g8",
            **{f"cluster{k:02d}": "n64g8" for k in (1, 2, 3, 5, 6)},
            **{f"cluster{k:02d}": "n128g8" for k in (4, 7, 8, 9)}}
#: ElasticFlow's scheduling slot per trace: its testbed ran the 195-job trace with 240 s
#: (with it its simulator gives the published EDF ratio exactly), its simulations 60 s.
SLOT_S = {"195job": 240.0}
#: Published deadline satisfactory ratios (ElasticFlow, Fig. 6b testbed and Fig. 8b).
PUBLISHED = {
    "edf": dict(zip(TRACES, (.0872, .182, .228, .095, .007, .375, .105, .046, .252, .800,
                             .769), strict=True)),
    "tiresias": dict(zip(TRACES, (.4564, .478, .470, .401, .120, .420, .466, .346, .373,
                                  .468, .473), strict=True)),
    "elasticflow": dict(zip(TRACES, (.6667, .788, .822, .455, .631, .832, .607, .665, .896,
                                     .938, .981), strict=True)),
}


def extract(work: Path) -> Path:
    """The ElasticFlow traces, unpacked once into ``work/traces``."""
    folder = work / "traces"
    if not (folder / "195job.csv").exists():
        folder.mkdir(parents=True, exist_ok=True)
        with tarfile.open(DATA / "elasticflow-traces.tar.gz") as archive:
            for member in archive.getmembers():
                name = Path(member.name).name
                if member.isfile() and name.endswith(".csv"):
                    source = archive.extractfile(member)
                    assert source is not None
                    (folder / name).write_bytes(source.read())
    return folder


def run_point(trace: Path, policy: str, time_limit: float | None) -> dict[str, Any]:
    """One verified replay; its row and each job's completion (NaN: never ran)."""
    from gpuplan.core.settings import RunSettings
    from gpuplan.readers.instance_file import instance_from_data
    from gpuplan.readers.itp import itp_elastic_document
    from gpuplan.simulate.elastic import ElasticSpec, simulate_elastic
    from gpuplan.simulate.elastic.run import alone_bound, completion

    began = time.perf_counter()
    instance = instance_from_data(itp_elastic_document(trace), str(trace))
    spec = ElasticSpec(policy=policy, options={"slot_s": SLOT_S.get(trace.stem, 60.0)},
                       settings=RunSettings(time_limit_s=time_limit))
    log = simulate_elastic(instance, spec)
    assert log.run is not None and log.verification is not None and log.verification.ok
    done = completion(instance, log.result)
    return {"trace": trace.stem, "policy": policy, "jobs": instance.n_jobs,
            "gpus": instance.n_gpus, "bound": alone_bound(instance) / instance.n_jobs,
            "metrics": log.run.metrics, "solver_s": log.run.solver_s,
            "seconds": time.perf_counter() - began,
            "completion": [None if np.isnan(x) else float(x) for x in done],
            "release": instance.release.tolist()}


def run_elasticflow(trace: Path, policy: str, args: argparse.Namespace,
                    work: Path) -> dict[str, Any]:
    """ElasticFlow's own simulator on the same file; its ratio, or why there is none."""
    log = work / "ef-logs" / f"{trace.stem}-{policy}"
    shutil.rmtree(log, ignore_errors=True)
    log.mkdir(parents=True)
    command = [args.ef_python, "scheduler.py",
               f"--cluster_spec=cluster_specs/{EF_SPECS[trace.stem]}.csv", "--print",
               "--scheme=elastic", f"--trace_file={trace}",
               f"--schedule={EF_POLICIES[policy]}", f"--log_path={log}",
               "--simulation=True", f"--scheduling_slot={SLOT_S.get(trace.stem, 60.0):g}",
               "--gpu_type=A100"]
    began = time.perf_counter()
    try:
        subprocess.run(command, cwd=args.ef_scheduler, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=args.ef_timeout, check=True)
    except subprocess.TimeoutExpired:
        return {"trace": trace.stem, "policy": policy, "ef": None,
                "why": f"not done in {args.ef_timeout:g} s"}
    except subprocess.CalledProcessError as exc:
        return {"trace": trace.stem, "policy": policy, "ef": None,
                "why": f"exit {exc.returncode}"}
    with open(log / "final_result.csv", newline="") as handle:
        ratio = float(next(csv.DictReader(handle))["ddl_satis_ratio"])
    return {"trace": trace.stem, "policy": policy, "ef": ratio,
            "seconds": time.perf_counter() - began,
            "command": f"cd {args.ef_scheduler} && {' '.join(command[:1] + command[1:])}"}


def _key(row: dict[str, Any]) -> str:
    return f"{row['trace']}-{row['policy']}" + ("-ef" if "ef" in row else "")


def render(rows: dict[str, dict[str, Any]], args: argparse.Namespace, wall: float | None,
           ) -> str:
    """The results as Markdown."""
    lines = ["# ElasticFlow's deadline experiment in gpuplan's elastic simulator", "",
             "Written by `python scripts/bench_elastic.py` "
             f"(`--workers {args.workers}`"
             + (f", `--time-limit {args.time_limit:g}`" if args.time_limit else "")
             + "); every run log verified. Ratio = jobs done by their deadline / all jobs "
             "(declined = missed), gpuplan's in bold; in brackets ElasticFlow's own "
             "simulator on the same file (`-`: not run or not done in its time) and "
             "ElasticFlow's published figure (Fig. 6b testbed for 195job, Fig. 8b for the "
             "clusters); bound = share of jobs that could meet their deadline alone.", ""]
    shown = [p for p in args.policies if p in PUBLISHED]
    lines += ["| trace | jobs | GPUs | bound | "
              + " | ".join(f"{p} (EF sim, pub.)" for p in shown)
              + (" | optimizer |" if "optimizer" in args.policies else " |"),
              "|" + "---|" * (4 + len(shown) + ("optimizer" in args.policies))]
    for trace in args.traces:
        first = next((rows[f"{trace}-{p}"] for p in args.policies
                      if f"{trace}-{p}" in rows), None)
        if first is None:
            continue
        cells = [trace, str(first["jobs"]), str(first["gpus"]), f"{first['bound']:.3f}"]
        for policy in shown:
            row = rows.get(f"{trace}-{policy}")
            ef = rows.get(f"{trace}-{policy}-ef", {}).get("ef")
            cells.append("-" if row is None else
                         f"**{row['metrics']['deadline_ratio']:.3f}** "
                         f"({'-' if ef is None else f'{ef:.3f}'}, "
                         f"{PUBLISHED[policy][trace]:.3f})")
        if "optimizer" in args.policies:
            row = rows.get(f"{trace}-optimizer")
            cells.append("-" if row is None else
                         f"**{row['metrics']['deadline_ratio']:.3f}**")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| trace | policy | declined | mean JCT h | GPU-h held | decisions | s |",
              "|---|---|---|---|---|---|---|"]
    for trace in args.traces:
        for policy in args.policies:
            row = rows.get(f"{trace}-{policy}")
            if row is not None:
                m = row["metrics"]
                lines.append(f"| {trace} | {policy} | {m['declined']:.0f} | "
                             f"{m['mean_jct_h']:.2f} | {m['held_gpu_h']:.0f} | "
                             f"{m['decisions']:.0f} | {row['seconds']:.0f} |")
    lines += ["", "## gpuplan's optimizer against ElasticFlow", "",
              "| trace | EF ratio | optimizer ratio | gain (pp) | EF mean JCT h | optimizer "
              "mean JCT h | both ran: EF / optimizer JCT h |", "|" + "---|" * 7]
    gains = []
    for trace in args.traces:
        ef, opt = rows.get(f"{trace}-elasticflow"), rows.get(f"{trace}-optimizer")
        if ef is None or opt is None:
            continue
        a, b = ef["metrics"], opt["metrics"]
        both = [k for k, (x, y) in enumerate(zip(ef["completion"], opt["completion"],
                                                  strict=True)) if x is not None and
                y is not None]
        release = np.asarray(ef["release"])[both]
        jct_ef = (np.asarray([ef["completion"][k] for k in both]) - release).mean() / 3600
        jct_opt = (np.asarray([opt["completion"][k] for k in both]) - release).mean() / 3600
        gain = 100 * (b["deadline_ratio"] - a["deadline_ratio"])
        if trace != "195job":
            gains.append(gain)
        lines.append(f"| {trace} | {a['deadline_ratio']:.3f} | {b['deadline_ratio']:.3f} | "
                     f"{gain:+.1f} | {a['mean_jct_h']:.2f} | {b['mean_jct_h']:.2f} | "
                     f"{jct_ef:.2f} / {jct_opt:.2f} ({len(both)} jobs) |")
    if gains:
        lines += ["", f"Mean gain over the {len(gains)} clusters: {np.mean(gains):+.1f} "
                  "percentage points."]
    opt_rows = [rows[f"{t}-optimizer"] for t in args.traces if f"{t}-optimizer" in rows]
    if opt_rows:
        lines += ["", "## The optimizer's decisions", "",
                  "| trace | decisions | p50 ms | p99 ms | max ms | MILP solves | solve p50 "
                  "ms | solve max ms |", "|" + "---|" * 8]
        for row in opt_rows:
            m = row["metrics"]
            lines.append(f"| {row['trace']} | {m['decisions']:.0f} | "
                         f"{m['decision_p50_s'] * 1e3:.2f} | {m['decision_p99_s'] * 1e3:.1f} | "
                         f"{m['decision_max_s'] * 1e3:.0f} | {m.get('solves', 0):.0f} | "
                         f"{m.get('solve_p50_s', 0) * 1e3:.1f} | "
                         f"{m.get('solve_max_s', 0) * 1e3:.0f} |")
    ef_rows = [row for key, row in rows.items() if key.endswith("-ef")]
    if ef_rows:
        lines += ["", "## ElasticFlow's own simulator", "", "| trace | policy | ratio | s |",
                  "|---|---|---|---|"]
        for row in sorted(ef_rows, key=lambda r: (r["trace"], r["policy"])):
            shown = row["why"] if row["ef"] is None else f"{row['ef']:.4f}"
            lines.append(f"| {row['trace']} | {EF_POLICIES[row['policy']]} | {shown} | "
                         f"{row.get('seconds', 0):.0f} |")
        commands = [row["command"] for row in ef_rows if row.get("command")]
        if commands:
            lines += ["", "Command (one of them): `" + commands[0] + "`"]
    if wall is not None:
        lines += ["", f"Whole table (gpuplan's runs, {args.workers} workers): {wall:.0f} s "
                  "wall."]
    return "\n".join(lines) + "\n"


def keep(rows: dict[str, dict[str, Any]], kept: Path, points: list[Any]) -> None:
    """Each point's row as it comes in, kept in ``kept`` as JSON."""
    for future in as_completed(points):
        row = future.result()
        rows[_key(row)] = row
        (kept / f"{_key(row)}.json").write_text(json.dumps(row))
        shown = row.get("metrics", {}).get("deadline_ratio", row.get("ef"))
        print(f"{_key(row)}: {shown} ({row.get('seconds', 0):.0f} s)", flush=True)


def main() -> None:
    """Run the points not kept yet, then write the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", default=",".join(TRACES))
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--time-limit", type=float, default=None,
                        help="seconds per decision's MILP (default: the policy's)")
    parser.add_argument("--ef-scheduler", default=None)
    parser.add_argument("--ef-python", default=None)
    parser.add_argument("--ef-timeout", type=float, default=600.0)
    parser.add_argument("--ef-traces", default=",".join(TRACES),
                        help="traces ElasticFlow's simulator runs EDF and Tiresias on")
    parser.add_argument("--ef-elasticflow", default="195job,cluster10",
                        help="traces ElasticFlow's simulator runs ElasticFlow on (it takes "
                        "hours on the larger clusters)")
    parser.add_argument("--work", default="/tmp/gpuplan_bench_elastic")
    parser.add_argument("--out", default=str(ROOT / "docs" / "results" / "elastic.md"))
    parser.add_argument("--render-only", action="store_true")
    args = parser.parse_args()
    args.traces = args.traces.split(",")
    args.policies = args.policies.split(",")
    work = Path(args.work)
    kept = work / "rows"
    kept.mkdir(parents=True, exist_ok=True)
    rows = {path.stem: json.loads(path.read_text()) for path in kept.glob("*.json")}
    timed = work / "wall.json"
    wall = json.loads(timed.read_text())["wall_s"] if timed.exists() else None
    if not args.render_only:
        folder = extract(work)
        began = time.perf_counter()
        with ProcessPoolExecutor(args.workers) as pool:
            # Largest traces first, so the two workers finish together.
            order = sorted(args.traces, key=lambda t: -(folder / f"{t}.csv").stat().st_size)
            points = [pool.submit(run_point, folder / f"{trace}.csv", policy, args.time_limit)
                      for trace in order for policy in args.policies]
            keep(rows, kept, points)
            wall = time.perf_counter() - began
            (work / "wall.json").write_text(json.dumps({"wall_s": wall,
                                                        "workers": args.workers}))
            if args.ef_scheduler:
                # ElasticFlow's simulator after gpuplan's runs, outside their wall time.
                points = [pool.submit(run_elasticflow, folder / f"{trace}.csv", policy,
                                      args, work)
                          for policy, traces in (("edf", args.ef_traces),
                                                 ("tiresias", args.ef_traces),
                                                 ("elasticflow", args.ef_elasticflow))
                          for trace in traces.split(",")]
                keep(rows, kept, points)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # The tables docs/benchmarks.md quotes from the results file are refreshed with it.
    write_results(out, render(rows, args, wall),
                  PAGE if out.resolve().parent == PAGE.parent / "results" else None)
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
