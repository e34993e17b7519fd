"""Write the operator batches of ``instances/library/`` and its README.

Usage:
    python scripts/make_library.py [--out instances/library] [--check]

Every file is written by the ``gpuplan generate --library operator`` command the README
lists for it (:mod:`gpuplan.harness.library`), then read back as any instance file is and
planned by ``greedy``: a file whose greedy plan does not place every job (under a
time-based objective: meets every deadline) stops the script. ``--check`` writes
nothing and says which committed files differ from what the generator makes now (a
change of the generator, or of list scheduling, which sets the deadlines).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
from pathlib import Path

from gpuplan import RunSettings, plan, read_instance
from gpuplan.cli import main as gpuplan
from gpuplan.harness.library import VARIANTS, command, library_name

ROOT = Path(__file__).resolve().parent.parent
#: The library: (jobs, seed, variant, objective) of every file.
LIBRARY = [
    *((150, seed, "base", objective) for objective in
      ("makespan", "weighted-completion", "tardiness", "max-weight") for seed in (1, 2, 3)),
    *((150, seed, variant, "makespan") for variant in ("tight", "chains", "sharing")
      for seed in (1, 2, 3)),
    *((jobs, 1, "base", "makespan") for jobs in (10, 50, 500, 2000)),
]
README = """# The instance library

Operator-like GPU batches, seeded and documented (docs/library.md): a fleet of A100-80GB,
H100 and L4 nodes; jobs with gangs of 1/2/4/8 GPUs, per-GPU memory and compute shares,
per-type run times, dependencies, deadlines (feasible by construction: greedy meets them
all), due dates, releases and weights. `best_known.csv` holds each file's best known value
and best proven bound with the method that found it, as `scripts/bench_library.py`
records them; `gpuplan bench instances/library` measures gaps against it.

Written by `python scripts/make_library.py`; each file by the command listed.

| file | jobs | variant | objective | GPUs A100/H100/L4 | deadlines | dependent | command |
|---|---:|---|---|---|---:|---:|---|
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "instances" / "library")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; list the files that differ from the generator's")
    args = parser.parse_args()
    if args.check:
        with tempfile.TemporaryDirectory() as scratch:
            differ = [name for name in _write(Path(scratch))
                      if (Path(scratch) / name).read_bytes()
                      != (args.out / name).read_bytes()]
        print("differ:", ", ".join(differ) if differ else "none")
        sys.exit(1 if differ else 0)
    args.out.mkdir(parents=True, exist_ok=True)
    _write(args.out)


def _write(out: Path) -> list[str]:
    """Generate, check and list every library file in ``out``; return the file names."""
    lines, names = [README], []
    for jobs, seed, variant, objective in LIBRARY:
        name = library_name(jobs, seed, variant, objective) + ".json"
        path = out / name
        run = command(jobs, seed, variant, objective)
        if gpuplan([*run.split()[1:], "-o", str(path)]) != 0:
            raise SystemExit(f"{run} failed")
        _check_greedy(path)
        document = json.loads(path.read_text())
        gpus: collections.Counter[str] = collections.Counter()
        for node in document["nodes"]:
            gpus.update(node["gpus"])
        fleet = "/".join(str(gpus[t]) for t in ("A100-80GB", "H100", "L4"))
        with_deadline = sum("deadline_s" in job for job in document["jobs"])
        dependent = sum("depends_on" in job for job in document["jobs"])
        lines.append(f"| `{name}` | {jobs} | {variant} | {objective} | {fleet} | "
                     f"{with_deadline} | {dependent} | `{run} -o {name}` |\n")
        names.append(name)
    lines.append("\nVariants: " + "; ".join(f"**{name}**: {v.description}"
                                              for name, v in VARIANTS.items()) + ".\n")
    (out / "README.md").write_text("".join(lines))
    return names


def _check_greedy(path: Path) -> None:
    """Stop unless greedy's verified plan places every job (meeting every deadline)."""
    instance = read_instance(path)
    schedule = plan(instance, "greedy", {}, RunSettings(time_limit_s=600))
    if not schedule.status.has_plan or (schedule.unplaced and not instance.objective.is_static):
        raise SystemExit(f"{path}: greedy finds no plan meeting every deadline "
                         f"({len(schedule.unplaced)} jobs unplaced)")
    print(f"{path.name}: greedy {schedule.objective:g}, bound {schedule.bound}", flush=True)


if __name__ == "__main__":
    main()
