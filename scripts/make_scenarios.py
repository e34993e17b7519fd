"""Write the cluster scenarios of ``instances/scenarios/`` (docs/guide/scenarios.md).

Usage:
    python scripts/make_scenarios.py [--out instances/scenarios] [--check]

Each scenario is a case users of Kueue and Volcano reported, as gpuplan instance files:

- ``kueue-4329/``: 8 free GPUs as 4 + 4 on two nodes do not fit an 8-GPU gang (Kueue
  issue 4329): ``batch.json`` (two 4-GPU evaluations and the gang, planned from scratch),
  ``running.json`` (the evaluations already running on one node each, a verified plan)
  and ``arrival.yaml`` (the gang arriving at 600 s, a changes file for ``gpuplan
  replan``).
- ``kueue-5243.json``: four 8-GPU nodes full with a 6-GPU and two 1-GPU jobs each; an
  8-GPU gang of weight 10 arrives at 600 s (Kueue issue 5243), for ``gpuplan simulate
  --policy replan``.
- ``nvl72-racks.json``: an NVL72-like fleet (33 racks of 18 nodes of 4 GPUs, nodes listed
  by name, which does not follow racks), 1,500 single-GPU jobs arriving over an hour, and a
  64-GPU gang bound to one rack at 90 minutes (Kueue PR 10406, rack fragmentation).

Every file is read back and checked as gpuplan reads it; ``--check`` writes nothing and
says which committed files differ from what this script makes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan import Schedule, Segment, Status, read_instance, verify_schedule
from gpuplan.readers.instance_file import instance_from_data

ROOT = Path(__file__).resolve().parent.parent

#: NVL72: racks, nodes per rack (compute trays), GPUs per node; the single-GPU jobs, the
#: window they arrive in, their run times (log-uniform, whole minutes), the gang.
NVL_RACKS, NVL_NODES, NVL_GPUS = 33, 18, 4
NVL_JOBS, NVL_ARRIVALS_S, NVL_RUN_S = 1500, 3600.0, (2 * 3600.0, 6 * 3600.0)
NVL_GANG, NVL_GANG_AT_S, NVL_GANG_RUN_S = 64, 5400.0, 4 * 3600.0


def kueue_4329() -> dict[str, str]:
    """Two 4-GPU evaluations and an 8-GPU gang on two 8-GPU nodes."""
    fleet = {
        "gpu_types": [{"id": "A100-80GB", "capacity": {"memory_gib": 80},
                       "cost_per_hour": 3.67}],
        "nodes": [{"id": "n1", "gpus": {"A100-80GB": 8}}, {"id": "n2", "gpus": {"A100-80GB": 8}}],
    }
    evaluations = [
        {"id": "eval-a", "gpus": 4, "duration_s": 7200},
        {"id": "eval-b", "gpus": 4, "duration_s": 10800},
    ]
    gang = {"id": "train-8", "gpus": 8, "duration_s": 3600, "weight": 5, "release_s": 600}
    batch = {"name": "kueue-4329",
             "description": "Kueue issue 4329: two 4-GPU jobs and an 8-GPU gang on two 8-GPU "
                            "nodes. Planned together, the 4-GPU jobs share a node and the gang "
                            "starts on arrival; see docs/guide/scenarios.md.",
             **fleet, "jobs": [*evaluations, gang], "objective": "weighted-completion"}
    running_instance = {"name": "kueue-4329-running",
                        "description": "Kueue issue 4329: the two 4-GPU jobs already run on "
                                       "a node each (running.json); the gang arrives at 600 s "
                                       "(arrival.yaml); see docs/guide/scenarios.md.",
                        **fleet, "jobs": evaluations, "objective": "weighted-completion"}
    instance_text = _json(running_instance)
    running = _running_plan(running_instance, {"eval-a": "n1", "eval-b": "n2"})
    arrival = ("# Kueue issue 4329: the 8-GPU gang arrives while 4 GPUs of each node are busy.\n"
               "jobs_added:\n"
               "  - {id: train-8, gpus: 8, duration_s: 3600, weight: 5}\n")
    return {"kueue-4329/batch.json": _json(batch), "kueue-4329/instance.json": instance_text,
            "kueue-4329/running.json": running, "kueue-4329/arrival.yaml": arrival}


def _running_plan(document: dict[str, Any], where: dict[str, str]) -> str:
    """A verified plan running each job from 0 on the first GPUs of its node."""
    instance = instance_from_data(document, "kueue-4329/instance.json")
    segments = []
    for job in document["jobs"]:
        node = where[job["id"]]
        segments.append(Segment(job=job["id"], node=node, gpu_type="A100-80GB",
                                gpu_ids=[f"{node}/{k}" for k in range(job["gpus"])],
                                start_s=0.0, end_s=float(job["duration_s"]), work=1.0))
    ends = sum(float(job["duration_s"]) for job in document["jobs"])
    schedule = Schedule(instance=instance.name, objective_kind=instance.objective.value,
                        status=Status.FEASIBLE, objective=ends, bound=None, gap=None,
                        method="hand", solver="the jobs as they run", wall_time_s=0.0, seed=0,
                        gpuplan_version="scenario", segments=segments, unplaced=[])
    verification = verify_schedule(instance, schedule)
    assert verification.ok, verification.violations
    return schedule.model_copy(update={"verification": verification}).to_json()


def kueue_5243() -> dict[str, str]:
    """Four full 8-GPU nodes (a 6-GPU and two 1-GPU jobs each) and an 8-GPU gang."""
    jobs: list[dict[str, Any]] = [
        {"id": f"fill-6-{n}", "gpus": 6, "duration_s": 8 * 3600, "preemptible": True}
        for n in range(4)]
    jobs += [{"id": f"small-{k}", "duration_s": 8 * 3600, "preemptible": True}
             for k in range(8)]
    jobs.append({"id": "train-8", "gpus": 8, "duration_s": 3600, "weight": 10,
                 "release_s": 600, "preemptible": True})
    document = {
        "name": "kueue-5243",
        "description": "Kueue issue 5243: four 8-GPU nodes, each full with a 6-GPU and two "
                       "1-GPU jobs; an 8-GPU gang of weight 10 arrives at 600 s. Making room "
                       "for it stops the jobs of one node; see docs/guide/scenarios.md.",
        "gpu_types": [{"id": "A100-80GB", "capacity": {"memory_gib": 80}}],
        "nodes": [{"id": f"n{n}", "gpus": {"A100-80GB": 8}} for n in range(1, 5)],
        "jobs": jobs,
        "objective": "weighted-completion",
    }
    return {"kueue-5243.json": _json(document)}


def nvl72_racks(seed: int = 72) -> dict[str, str]:
    """An NVL72-like fleet, single-GPU jobs arriving over an hour, a 64-GPU gang later."""
    rng = np.random.default_rng(seed)
    n_nodes = NVL_RACKS * NVL_NODES
    # Node names do not follow racks (hosts are named as they were bought, not where they
    # sit), so a placement by name scatters over racks.
    rack_of = rng.permutation(np.repeat(np.arange(NVL_RACKS), NVL_NODES))
    nodes = [{"id": f"gb200-{n:03d}", "gpus": {"GB200": NVL_GPUS},
              "topology": {"rack": f"nvl72-{int(rack_of[n]):02d}"}} for n in range(n_nodes)]
    release = np.sort(np.round(rng.uniform(0.0, NVL_ARRIVALS_S, NVL_JOBS) / 10.0) * 10.0)
    run = np.round(np.exp(rng.uniform(np.log(NVL_RUN_S[0]), np.log(NVL_RUN_S[1]),
                                      NVL_JOBS)) / 60.0) * 60.0
    jobs: list[dict[str, Any]] = [
        {"id": f"single-{k:04d}", "duration_s": float(run[k]), "release_s": float(release[k])}
        for k in range(NVL_JOBS)]
    jobs.append({"id": "pretrain-64", "gpus": NVL_GANG, "gpus_per_node": NVL_GPUS,
                 "duration_s": NVL_GANG_RUN_S, "release_s": NVL_GANG_AT_S, "weight": 10,
                 "topology": {"required": "rack"}})
    document = {
        "name": "nvl72-racks",
        "description": f"Kueue PR 10406: {NVL_RACKS} NVL72 racks of {NVL_NODES} nodes x "
                       f"{NVL_GPUS} GB200 (nodes named apart from their racks); {NVL_JOBS} "
                       "single-GPU jobs over the first hour; a 64-GPU gang bound to one rack "
                       "at 90 minutes. Written by scripts/make_scenarios.py; see "
                       "docs/guide/scenarios.md.",
        "topology": {"levels": ["rack"]},
        "gpu_types": [{"id": "GB200", "capacity": {"memory_gib": 186}}],
        "nodes": nodes,
        "jobs": jobs,
        "objective": "weighted-completion",
    }
    return {"nvl72-racks.json": _json(document)}


def _json(document: dict[str, Any]) -> str:
    """A document as a JSON file's text, one job or node a line."""
    lines = ["{"]
    items = list(document.items())
    for k, (key, value) in enumerate(items):
        end = "," if k < len(items) - 1 else ""
        if key in ("jobs", "nodes") and isinstance(value, list):
            rows = [f"    {json.dumps(row)}" for row in value]
            lines.append(f'  "{key}": [\n' + ",\n".join(rows) + f"\n  ]{end}")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}{end}")
    return "\n".join(lines) + "\n}\n"


def main() -> int:
    """Write (or check) every scenario file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "instances" / "scenarios")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; say which files differ from what is made")
    args = parser.parse_args()
    files = {**kueue_4329(), **kueue_5243(), **nvl72_racks()}
    differ = []
    for name, text in files.items():
        path = args.out / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                differ.append(name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if name.endswith(".json") and "running" not in name:
            read_instance(path)
        print(f"wrote {path}")
    if differ:
        print("differ: " + ", ".join(differ))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
