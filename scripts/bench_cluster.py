"""Measure plans the cluster can execute: whole GPUs, node CPUs, multi-node gangs, racks.

Usage:
    python scripts/bench_cluster.py [--part all|exclusive|cpu|gangs|racks|speed]
        [--time-limit 60] [--seeds 3] [--quick-limit 2] [--before cbf1141]

Each part writes its results file under ``docs/results/`` and refreshes the tables
``docs/benchmarks.md`` quotes (section "Plans the cluster can execute"):

- ``exclusive`` (cluster_exclusive.md): every registered method on every shipped instance
  (``instances/*.json``, the library, the scenarios) and on generated ones
  (``generate --nodes``, ``--library racks``), each under its own objective where the
  method plans it, at ``--quick-limit`` seconds: how many plans put two jobs on one GPU
  that is held whole, counted from the segments alone (not by the verifier); then, for
  every plan with two jobs running at once on GPUs held whole, the copy with one of them
  moved onto the other's GPU, and whether ``gpuplan check``'s verifier reports it.
- ``cpu`` (cluster_cpu.md): ``generate --library racks --jobs 200`` (16 nodes, CPUs
  bind) for ``--seeds`` seeds, and the same batches on a mixed fleet (``mixed_document``:
  racks of 192-core and of 48-core nodes, jobs asking 4-32 cores a GPU): greedy, and cp
  at ``--time-limit``; value, bound, gap.
- ``gangs`` (cluster_gangs.md): 500 jobs drawn from Microsoft's ITP trace
  (``../shared/benchmarks/gpu-traces/microsoft-itp/raw-traces.tar.gz``, all ten
  clusters) with its gang sizes (1-64 GPUs, by stratified sampling: each size's share of
  the trace, at least one; jobs over 24 h, or over 6 h, left out), on 256 A100s (32 nodes
  of 8, racks of 4 nodes: 32 GPUs), gangs of 16 and 32 bound to one rack, every job
  released at 0, for the makespan: cp at ``--time-limit``, greedy, and a Kueue-like first
  fit (``gpuplan simulate --policy fifo --placement first-fit``: in trace order, each job
  on the first nodes with room).
- ``racks`` (cluster_racks.md): the NVL72 scenario (``scripts/make_scenarios.py``) for
  ``--seeds`` seeds of its arrivals: racks the single-GPU jobs touch under greedy, beside
  the least that can hold them (the most running at once over 72) and a first fit and a
  best fit by node (Kueue-like), and when the 64-GPU gang starts.
- ``speed`` (cluster_speed.md): planning times on the existing benchmarks, this code
  against the commit ``--before`` (the last before issue 45), each measured in a fresh
  interpreter, best of three: greedy on the operator batches and Gavel's instances, cp's
  time to prove R||Cmax optima, milp on OR-Library GAP, best-fit decreasing on the
  10,000-job packing instance, and a 10,000-job simulation.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan import RunSettings, Schedule, plan, read_instance, verify_schedule
from gpuplan.core.errors import InputError
from gpuplan.core.instance import Instance
from gpuplan.core.schedule import ViolationKind
from gpuplan.harness.bench import write_results
from gpuplan.harness.library import racks_document
from gpuplan.methods import METHODS
from gpuplan.readers.generate import generate_document
from gpuplan.readers.instance_file import instance_from_data
from gpuplan.simulate.run import RunSpec, simulate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_scenarios import nvl72_racks

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"
ITP = ROOT.parent / "shared" / "benchmarks" / "gpu-traces" / "microsoft-itp" / "raw-traces.tar.gz"


# -- exclusive ----------------------------------------------------------------------------

def shipped() -> list[tuple[str, Instance]]:
    """Every shipped instance, and the generated ones, by name."""
    paths = sorted((ROOT / "instances").glob("*.json"))
    paths += sorted((ROOT / "instances" / "library").glob("*.json"))
    paths += sorted((ROOT / "instances" / "scenarios").glob("*.json"))
    paths.append(ROOT / "instances" / "scenarios" / "kueue-4329" / "batch.json")
    found = [(str(p.relative_to(ROOT)), read_instance(p)) for p in paths]
    for name, document in (("generate --jobs 100 --nodes 8", generate_document(100, 8, seed=0)),
                           ("generate --library racks --jobs 200", racks_document(200, 1))):
        found.append((name, instance_from_data(document, name)))
    return found


def shared_pairs(instance: Instance, schedule: Schedule) -> list[tuple[int, int]]:
    """Pairs of segments holding one GPU held whole at once (declared partners aside)."""
    segments = schedule.segments
    static = instance.objective.is_static
    by_gpu: dict[str, list[int]] = {}
    for k, s in enumerate(segments):
        if instance.shared[instance.type_index[s.gpu_type]]:
            continue
        for g in s.gpu_ids:
            by_gpu.setdefault(g, []).append(k)
    pairs = []
    for mine in by_gpu.values():
        for a_pos, a in enumerate(mine):
            for b in mine[a_pos + 1:]:
                sa, sb = segments[a], segments[b]
                overlap = static or (sa.start_s < sb.end_s and sb.start_s < sa.end_s)
                partners = sa.partner == sb.job and sb.partner == sa.job
                if overlap and not partners:
                    pairs.append((a, b))
    return pairs


def tampered(instance: Instance, schedule: Schedule) -> Schedule | None:
    """The plan with one job moved onto the GPU of another running at once; None if none."""
    segments = list(schedule.segments)
    static = instance.objective.is_static
    for a, sa in enumerate(segments):
        if len(sa.gpu_ids) != 1 or instance.shared[instance.type_index[sa.gpu_type]]:
            continue
        for b, sb in enumerate(segments):
            if b == a or sb.gpu_type != sa.gpu_type or sa.gpu_ids[0] in sb.gpu_ids:
                continue
            if static or (sa.start_s < sb.end_s and sb.start_s < sa.end_s):
                segments[a] = sa.model_copy(update={"gpu_ids": [sb.gpu_ids[0]],
                                                    "node": sb.gpu_ids[0].split("/")[0]})
                return schedule.model_copy(update={"segments": segments})
    return None


def exclusive_part(limit: float) -> str:
    """Plans that share a GPU held whole (none expected), and tampered copies caught."""
    rows = []
    plans = shared = copies = caught = refused = 0
    reasons: Counter[tuple[str, str]] = Counter()
    for name, instance in shipped():
        for method_name, method in METHODS.items():
            if instance.objective not in method.objectives:
                continue
            try:
                schedule = plan(instance, method_name,
                                settings=RunSettings(time_limit_s=limit, seed=0))
            except InputError as error:
                refused += 1
                missing = sorted(instance.features - method.features(instance.objective))
                # Else the method's own check, as "method 'x' plans ... only".
                reasons[(method_name, str(missing[0]) if missing else
                         error.message.split(" (")[0].split(", and")[0])] += 1
                continue
            if not schedule.status.has_plan:
                continue
            plans += 1
            found = shared_pairs(instance, schedule)
            shared += bool(found)
            copy = tampered(instance, schedule)
            if copy is not None:
                copies += 1
                kinds = {v.kind for v in verify_schedule(instance, copy).violations}
                caught += ViolationKind.EXCLUSIVE in kinds or ViolationKind.CAPACITY in kinds
            if found:
                rows.append(f"| {name} | {method_name} | {len(found)} |")
    lines = ["| plans made | refused (a feature the method does not plan) | plans that put "
             "two jobs on a GPU held whole | tampered copies | caught by the verifier |",
             "|---:|---:|---:|---:|---:|",
             f"| {plans} | {refused} | {shared} | {copies} | {caught} |", ""]
    lines += ["| refused by | why (the first feature it does not plan) | instances |",
              "|---|---|---:|",
              *(f"| {m} | {f} | {n} |" for (m, f), n in sorted(reasons.items())), ""]
    if rows:
        lines += ["| instance | method | pairs |", "|---|---|---:|", *rows, ""]
    return "\n".join(lines)


# -- cpu ----------------------------------------------------------------------------------

#: The mixed fleet of the cpu part: cores of the racks' nodes, alternating by rack (two
#: server generations), and the cores per GPU jobs ask for (4-6: language models; 24-32:
#: data-heavy input pipelines), with their probabilities.
MIXED_NODE_CORES = (192, 48)
MIXED_JOB_CORES = ((4, 6, 24, 32), (0.35, 0.25, 0.2, 0.2))


def mixed_document(seed: int) -> dict[str, Any]:
    """``racks_document(200, seed)`` on nodes of two generations, jobs asking 4-32 cores."""
    document = racks_document(200, seed)
    document["name"] += "-mixed"
    for n, node in enumerate(document["nodes"]):
        node["resources"]["cpu_milli"] = MIXED_NODE_CORES[(n // 4) % 2] * 1000
    rng = np.random.default_rng(100 + seed)
    for job in document["jobs"]:
        cores = int(rng.choice(MIXED_JOB_CORES[0], p=MIXED_JOB_CORES[1]))
        job["node_demand"]["cpu_milli"] = min(cores * min(job["gpus"], 8) * 1000,
                                              max(MIXED_NODE_CORES) * 1000)
    return document


def cpu_part(limit: float, seeds: int) -> str:
    """cp against greedy on racks batches where node CPUs bind, on one node kind or two."""
    lines = ["| instance | greedy | cp | bound | cp gap % | cp below greedy % | cp seconds |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for make in (lambda seed: racks_document(200, seed), mixed_document):
        for seed in range(1, seeds + 1):
            document = make(seed)
            instance = instance_from_data(document, document["name"])
            greedy = plan(instance, "greedy")
            began = time.perf_counter()
            cp = plan(instance, "cp", settings=RunSettings(time_limit_s=limit, seed=0))
            seconds = time.perf_counter() - began
            assert greedy.objective is not None and cp.objective is not None
            bound = max(cp.bound or 0.0, greedy.bound or 0.0)
            lines.append(f"| {instance.name} | {greedy.objective:g} | {cp.objective:g} | "
                         f"{bound:g} | {100 * (cp.objective - bound) / cp.objective:.2f} | "
                         f"{100 * (greedy.objective - cp.objective) / greedy.objective:.2f}"
                         f" | {seconds:.1f} |")
    return "\n".join(lines) + "\n"


# -- gangs --------------------------------------------------------------------------------

#: The ITP fleet: nodes, GPUs per node, nodes per rack; the longest jobs kept, in hours
#: (a batch of every job up to 24 h is set by its longest job; up to 6 h, by packing).
ITP_NODES, ITP_GPUS, ITP_RACK_NODES, ITP_CAPS_H = 32, 8, 4, (24, 6)


def itp_jobs(n: int, seed: int, cap_s: int) -> list[tuple[int, int, int]]:
    """``n`` (submission, gang, seconds) of the ITP trace, its gang-size mix kept."""
    rows: list[tuple[int, int, int]] = []
    with tarfile.open(ITP) as archive:
        for member in sorted(archive.getnames()):
            if not member.endswith(".csv"):
                continue
            handle = archive.extractfile(member)
            assert handle is not None
            for row in csv.DictReader(io.TextIOWrapper(handle, encoding="utf-8")):
                seconds = int(float(row["duration"]))
                if seconds <= cap_s:
                    rows.append((int(float(row["submission_time"])), int(row["num_gpu"]),
                                 seconds))
    table = np.array(rows, dtype=np.int64)
    sizes, counts = np.unique(table[:, 1], return_counts=True)
    share = counts / counts.sum() * n
    quota = np.maximum(1, np.floor(share)).astype(int)
    # Largest remainders first, to exactly n.
    for k in np.argsort(-(share - np.floor(share)), kind="stable")[:n - int(quota.sum())]:
        quota[k] += 1
    rng = np.random.default_rng(seed)
    picked = np.concatenate([rng.choice(np.flatnonzero(table[:, 1] == size), size=int(q),
                                        replace=False) for size, q in zip(sizes, quota,
                                                                          strict=True)])
    chosen = table[np.sort(picked)]
    chosen = chosen[np.lexsort((chosen[:, 2], chosen[:, 0]))]
    return [(int(s), int(g), int(d)) for s, g, d in chosen]


def itp_document(n: int = 500, seed: int = 0, cap_h: int = 24) -> dict[str, Any]:
    """The ITP batch on 256 A100s in racks of 32 GPUs (see the module)."""
    jobs = []
    for k, (_, gang, seconds) in enumerate(itp_jobs(n, seed, cap_h * 3600)):
        job: dict[str, Any] = {"id": f"itp{k:03d}", "gpus": gang, "duration_s": seconds}
        if gang > ITP_GPUS:
            job["gpus_per_node"] = ITP_GPUS
            if gang <= ITP_GPUS * ITP_RACK_NODES:
                job["topology"] = {"required": "rack"}
        jobs.append(job)
    return {
        "name": f"itp-{n}-s{seed}-{cap_h}h",
        "topology": {"levels": ["rack"]},
        "gpu_types": [{"id": "A100", "capacity": {"memory_gib": 80}}],
        "nodes": [{"id": f"a{i:02d}", "gpus": {"A100": ITP_GPUS},
                   "topology": {"rack": f"r{i // ITP_RACK_NODES}"}} for i in range(ITP_NODES)],
        "jobs": jobs,
        "objective": "makespan",
    }


def gangs_part(limit: float) -> str:
    """cp, greedy and a Kueue-like first fit on the ITP batches."""
    lines = ["| batch (jobs up to) | gangs (jobs x GPUs) | GPU-h | longest job h | plan | "
             "makespan h | bound h | gap % | gangs across racks | seconds | verified |",
             "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---|"]
    for cap in ITP_CAPS_H:
        document = itp_document(cap_h=cap)
        instance = instance_from_data(document, document["name"])
        gangs = Counter(int(g) for g in instance.gang)
        mix = ", ".join(f"{count} x {size}" for size, count in sorted(gangs.items()))
        gpu_hours = int((instance.gang * instance.min_duration).sum()) // 3600
        head = (f"| {cap} h | {mix} | {gpu_hours} | {instance.min_duration.max() / 3600:.1f} "
                "| ")
        rows: list[tuple[str, Schedule, float]] = []
        for name, method, seconds in (("cp", "cp", limit), ("greedy", "greedy", None)):
            began = time.perf_counter()
            schedule = plan(instance, method,
                            settings=RunSettings(time_limit_s=seconds, seed=0))
            rows.append((name, schedule, time.perf_counter() - began))
        began = time.perf_counter()
        run = simulate(instance.online(), RunSpec(scheduler="fifo", placement="first-fit"))
        rows.append(("Kueue-like first fit", run, time.perf_counter() - began))
        bound = max(s.bound or 0.0 for _, s, _ in rows[:2])
        for name, schedule, seconds in rows:
            value = max(s.end_s for s in schedule.segments)
            verification = schedule.verification
            assert verification is not None and verification.topology is not None
            across = sum(1 for span in verification.topology.spans if len(span.domains) > 1)
            lines.append(f"{head}{name} | {value / 3600:.2f} | {bound / 3600:.2f} | "
                         f"{100 * (value - bound) / value:.2f} | {across} | {seconds:.1f} | "
                         f"{'yes' if verification.ok else 'NO'} |")
            head = "| | | | | "
    return "\n".join(lines) + "\n"


# -- racks --------------------------------------------------------------------------------

def racks_part(seeds: int) -> str:
    """Racks the single-GPU jobs touch, and the gang's start, in the NVL72 scenario."""
    lines = ["| arrivals seed | most running at once | least racks (bound) | greedy racks | "
             "greedy gang start s | first fit racks | first fit gang start s | best fit "
             "racks | best fit gang start s |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for seed in range(72, 72 + seeds):
        document = json.loads(nvl72_racks(seed)["nvl72-racks.json"])
        instance = instance_from_data(document, f"nvl72-{seed}")
        rack = {n["id"]: n["topology"]["rack"] for n in document["nodes"]}
        single = ~np.array([j.startswith("pretrain") for j in instance.job_ids])
        greedy = plan(instance, "greedy")
        spans = {s.job: (s.start_s, s.end_s) for s in greedy.segments}
        times = np.array([spans[j] for j in np.array(instance.job_ids)[single]])
        start, end = times[:, 0], times[:, 1]
        events = np.r_[start, end]
        order = np.lexsort((np.r_[np.ones(start.size), -np.ones(end.size)], events))
        most = int(np.cumsum(np.r_[np.ones(start.size), -np.ones(end.size)][order]).max())
        cells = [str(seed), str(most), str(math.ceil(most / 72))]
        for schedule in (greedy,
                         simulate(instance, RunSpec(scheduler="fifo", placement="first-fit")),
                         simulate(instance, RunSpec(scheduler="fifo", placement="best-fit"))):
            touched = {rack[s.node] for s in schedule.segments if s.job.startswith("single")}
            gang = next(s for s in schedule.segments if s.job.startswith("pretrain"))
            cells += [str(len(touched)), f"{gang.start_s:g}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# -- speed --------------------------------------------------------------------------------

SPEED = r'''
import json, sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, sys.argv[1])
root = Path(sys.argv[2])
new = sys.argv[3] == "new"
from gpuplan import RunSettings, plan, read_instance
from gpuplan.readers.instance_file import instance_from_data
from gpuplan.readers.orlib_gap import gap_documents
from gpuplan.readers.gavel import read_throughputs
from gpuplan.readers.generate import gavel_document
from gpuplan.simulate.run import RunSpec, simulate
sys.path.insert(0, str(root / "scripts"))
import bench_greedy, bench_cp

def best(run, repeat=3):
    times = []
    for _ in range(repeat):
        began = time.perf_counter(); run(); times.append(time.perf_counter() - began)
    return min(times)

def document(doc):
    if not new:
        for t in doc["gpu_types"]:
            t.pop("sharing", None)
    return doc

out = {}
for name in ("library/operator-2000-s1.json", "library/operator-500-s1.json",
             "gavel_cluster_500.json", "gavel_makespan.json"):
    path = root / "instances" / name
    text = json.loads(path.read_text())
    instance = instance_from_data(document(text), name)
    out[f"greedy {name}"] = best(lambda: plan(instance, "greedy"))
for seed in range(3):
    instance = instance_from_data(bench_cp.rcmax_document("uniform", 10, 100, seed), "r")
    out[f"cp R||Cmax uniform 10x100 seed {seed} (to optimal)"] = best(
        lambda: plan(instance, "cp", settings=RunSettings(time_limit_s=60, seed=0)), 1)
for k in (1, 2, 3):
    (doc,) = gap_documents(f"{root}/tests/data/benchmarks/gap/orlib/gap12.txt#{k}", "min")
    instance = instance_from_data(document(doc), f"gap12#{k}")
    out[f"milp gap12 #{k} (to optimal)"] = best(
        lambda: plan(instance, "milp", settings=RunSettings(time_limit_s=60, seed=0)), 1)
from gpuplan import ObjectiveKind
packing = instance_from_data(document(bench_greedy.make_document(10000, 1000, 0)), "p")
packing = packing.with_objective(ObjectiveKind.MAX_WEIGHT)
out["greedy packing 10000x1000 (best-fit decreasing, max-weight)"] = best(
    lambda: plan(packing, "greedy"))
work = gavel_document(read_throughputs(root / "tests/data/benchmarks/gpu-traces/gavel/"
                                       "simulation_throughputs.json"),
                      {"v100": 36, "p100": 36, "k80": 36}, 10000, 3.0, seed=0)
workload = instance_from_data(work, "gavel")
out["simulate fifo 10,000 Gavel jobs"] = best(lambda: simulate(workload, RunSpec()), 1)
print(json.dumps(out))
'''


def speed_part(before: str) -> str:
    """Planning times of this code against the commit ``before``, best of three each."""
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree),
                        before], check=True, capture_output=True)
        try:
            times = {}
            for label, source in (("before", tree), ("new", ROOT)):
                done = subprocess.run([sys.executable, "-c", SPEED, str(source), str(ROOT),
                                       label], capture_output=True, text=True, check=True,
                                      env={**os.environ, "PYTHONHASHSEED": "0"})
                times[label] = json.loads(done.stdout)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(tree)], check=True, capture_output=True)
    lines = [f"| run | before ({before}) s | now s | ratio |", "|---|---:|---:|---:|"]
    for run, old in times["before"].items():
        now = times["new"][run]
        lines.append(f"| {run} | {old:.3f} | {now:.3f} | {now / old:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="all",
                        choices=("all", "exclusive", "cpu", "gangs", "racks", "speed"))
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--quick-limit", type=float, default=2.0)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--before", default="cbf1141")
    args = parser.parse_args()
    parts = {
        "exclusive": lambda: exclusive_part(args.quick_limit),
        "cpu": lambda: cpu_part(args.time_limit, args.seeds),
        "gangs": lambda: gangs_part(args.time_limit),
        "racks": lambda: racks_part(args.seeds),
        "speed": lambda: speed_part(args.before),
    }
    for name, run in parts.items():
        if args.part not in ("all", name):
            continue
        began = time.perf_counter()
        text = run()
        out = RESULTS / f"cluster_{name}.md"
        write_results(out, f"# {name}\n\n`python scripts/bench_cluster.py --part {name}`"
                      f" ({time.perf_counter() - began:.0f} s)\n\n{text}", PAGE)
        print(f"wrote {out}")
        print(text)


if __name__ == "__main__":
    main()
