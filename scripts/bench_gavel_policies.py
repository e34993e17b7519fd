"""Gavel's own policy classes and gpuplan's allocation LPs on identical inputs.

Usage:
    python scripts/bench_gavel_policies.py [--gavel-env /tmp/gavelenv]
        [--gavel-src /tmp/gavelsrc/scheduler] [--repeats 3] [--sizes 256,2048]
        [--out docs/results/gavel_policies.md]

Gavel's side runs in a virtual environment of its own, never in gpuplan's (gpuplan does not
depend on cvxpy), from a checkout of Gavel's ``scheduler`` directory::

    python3 -m venv /tmp/gavelenv
    /tmp/gavelenv/bin/pip install cvxpy==1.5.3 ecos "numpy<2.3" psutil
    mkdir -p /tmp/gavelsrc
    git -C /work/.mirror/stanford-futuredata+gavel/repo archive HEAD scheduler \\
        ':(exclude)scheduler/traces' | tar -x -C /tmp/gavelsrc

(the traces are left out: one of them is not in the mirror; newer numpy refuses Gavel's
``float()`` of one-element arrays). Without that environment the
script says so and times gpuplan alone, on jobs drawn by gpuplan's copy of Gavel's
generator.

Inputs are those of Gavel's own runtime benchmark (``scripts/microbenchmarks/
sweep_policy_runtimes.py``): ``n`` jobs from Gavel's job generator (multi-GPU jobs; with
priorities, 20% of the jobs at weight 5), ``n / 4`` GPUs of each of v100, p100 and k80.
This script runs itself in Gavel's environment (``--worker``) to draw the jobs and time
Gavel's policies there (``get_allocation``, cvxpy with ECOS, Gavel's default), and hands
the jobs, the allocations' throughputs and the seconds back as JSON. gpuplan solves the
same jobs (``solve_policy``, HiGHS on one thread, as ECOS runs), and both allocations are
scored by gpuplan's definition of the policy's value (Gavel's normalisation, ``--fair-share
gpus``): "agreement" is the relative difference of the two values. Gavel's makespan policy
(``min_total_duration_perf``) bisects to within 5%, so its value may be up to 5% above the
optimum. Space sharing (Gavel's ``max_min_fairness_packed``) lists every pair of jobs, and
runs up to 256 jobs only. Seconds are medians of ``--repeats`` runs and include
building each program.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_GAVEL = ROOT.parent / "shared" / "benchmarks" / "gpu-traces" / "gavel"
TYPES = ("v100", "p100", "k80")

#: (gpuplan policy, space sharing, Gavel's policy name in ``utils.get_policy``).
POLICIES = [
    ("max-min-fairness", False, "max_min_fairness_perf"),
    ("finish-time-fairness", False, "finish_time_fairness_perf"),
    ("makespan", False, "min_total_duration_perf"),
    ("max-min-fairness", True, "max_min_fairness_packed"),
]

#: Space sharing runs up to this many jobs: Gavel lists every pair (and its flattening
#: of 2,048 jobs asks for 25.6 GiB).
PACKED_UP_TO = 256


NOTES = """Agreement is the relative difference of the two values, both scored by gpuplan's
definition (Gavel's normalisation). Gavel's makespan policy bisects to within 5%, so its
value is above the optimum by up to that. Gavel's space-sharing policy
(`max_min_fairness_packed`) fails on today's cvxpy (its reshape of a sparse product);
gpuplan's space-sharing value is shown alone. POP-8 rows are gpuplan's partitioned solve
(Gavel has none here); their loss is against gpuplan's exact value.
"""


def gavel_worker(request: dict[str, Any]) -> dict[str, Any]:
    """Gavel's side, run in Gavel's environment: its jobs, allocations and seconds.

    Imports Gavel's modules from the checkout (the working directory), which only its
    environment has; this function imports nothing of gpuplan's.
    """
    sys.path.insert(0, str(Path.cwd()))
    sys.path.insert(0, str(Path.cwd() / "scripts" / "microbenchmarks"))
    import warnings

    # Gavel's environment only (see the module docstring): not gpuplan's dependencies.
    import cvxpy  # type: ignore[import-not-found]
    import ecos  # type: ignore[import-not-found]
    import utils  # type: ignore[import-not-found]
    from job_id_pair import JobIdPair  # type: ignore[import-not-found]
    from sweep_policy_runtimes import generate_input  # type: ignore[import-not-found]

    # cvxpy's notice that ECOS is no longer its default: ECOS is what Gavel asks for.
    warnings.filterwarnings("ignore", category=FutureWarning)

    oracle = utils.read_all_throughputs_json_v2("simulation_throughputs.json")
    n = request["jobs"]
    spec = dict.fromkeys(TYPES, n // 4)
    answer: dict[str, Any] = {"results": {}, "versions": f"cvxpy {cvxpy.__version__}, ecos "
                              f"{ecos.__version__}, numpy {np.__version__}"}
    for name in request["policies"]:
        tput, jobs, scale = generate_input(n, spec, name, oracle, True, request["priorities"],
                                           seed=request["seed"])
        answer["jobs"] = [[jobs[i].job_type, jobs[i].scale_factor, jobs[i].priority_weight,
                           jobs[i].total_steps] for i in range(n)]
        singles = [JobIdPair(i, None) for i in range(n)]
        weights = {k: jobs[k[0]].priority_weight for k in singles}
        steps = {k: jobs[k[0]].total_steps for k in singles}
        seconds, done = [], np.zeros(n)
        try:
            for _ in range(request["repeats"]):
                policy = utils.get_policy(name, solver="ECOS")
                began = time.perf_counter()
                if name.startswith("max_min"):
                    allocation = policy.get_allocation(tput, scale, weights, spec)
                elif name.startswith("finish_time"):
                    allocation = policy.get_allocation(tput, scale, weights, dict.fromkeys(
                        singles, 0.0), steps, spec)
                else:
                    allocation = policy.get_allocation(tput, scale, steps, spec)
                seconds.append(time.perf_counter() - began)
        except (ValueError, TypeError) as error:
            # Gavel's code against today's cvxpy/numpy: said in the table, not fatal.
            answer["results"][name] = {"error": f"{type(error).__name__}: {error}"}
            continue
        for key, shares in allocation.items():
            for worker, share in shares.items():
                speeds = tput[key][worker]
                if key.is_pair():
                    for k, job in enumerate(key.singletons()):
                        done[job[0]] += share * speeds[k]
                else:
                    done[key[0]] += share * speeds
        answer["results"][name] = {"seconds": seconds, "throughput": done.tolist()}
    return answer


def run_gavel(env: Path, src: Path, request: dict[str, Any]) -> dict[str, Any] | None:
    """Gavel's side in its environment, or None (with a message) when it is not set up."""
    python = env / "bin" / "python"
    if not python.exists() or not (src / "policies").is_dir():
        print(f"Gavel's side skipped: no {python} or no {src}/policies (see the module "
              "docstring for the setup); gpuplan alone, on gpuplan's copy of Gavel's "
              "generator", file=sys.stderr)
        return None
    with tempfile.TemporaryDirectory() as tmp:
        asked, told = Path(tmp) / "request.json", Path(tmp) / "answer.json"
        asked.write_text(json.dumps(request))
        subprocess.run([str(python), str(Path(__file__).resolve()), "--worker", str(asked),
                        str(told)], cwd=src, check=True, stdout=subprocess.DEVNULL)
        answer: dict[str, Any] = json.loads(told.read_text())
        return answer


def main() -> None:
    """Draw the inputs, solve each policy on both sides, write the table."""
    # gpuplan is imported here, not at the top: the worker runs in Gavel's environment.
    from gpuplan.core.budget import Budget
    from gpuplan.core.settings import Context
    from gpuplan.harness.bench import write_results
    from gpuplan.models.allocation import (
        Colocation,
        FairShare,
        Policy,
        ThroughputData,
        throughput_value,
    )
    from gpuplan.parts.allocation import AllocationOptions, solve_policy
    from gpuplan.readers.gavel import read_pair_speeds, read_throughputs, synthetic_trace

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gavel", type=Path, default=DEFAULT_GAVEL)
    parser.add_argument("--gavel-env", type=Path, default=Path("/tmp/gavelenv"))
    parser.add_argument("--gavel-src", type=Path, default=Path("/tmp/gavelsrc/scheduler"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default="256,2048")
    parser.add_argument("--out", type=Path,
                        default=ROOT / "docs" / "results" / "gavel_policies.md")
    args = parser.parse_args()
    source = args.gavel / "simulation_throughputs.json"
    oracle = read_throughputs(source)
    pair_speeds = read_pair_speeds(source)
    sizes = [int(s) for s in args.sizes.split(",")]

    def inputs(n: int, priorities: bool, packed: bool) -> tuple[ThroughputData, list[Any]]:
        """Gavel's jobs (or gpuplan's draw of them) as ThroughputData, and the jobs."""
        if answer is not None:
            jobs = answer["jobs"]
        else:
            rng = np.random.default_rng(2)
            jobs = [[j.job_type, j.scale_factor,
                     5.0 if priorities and rng.random() < 0.2 else 1.0, j.total_steps]
                    for j in synthetic_trace(oracle, n, seed=2)]
        keys = [(job_type, int(scale)) for job_type, scale, _, _ in jobs]
        steps = np.array([job[3] for job in jobs], dtype=float)
        rate = np.array([[max(oracle[t].get(key, 0.0), 0.0) for t in TYPES]
                         for key in keys]) / steps[:, None]
        colocation = None
        if packed:
            classes = sorted(set(keys))
            speed = np.zeros((len(classes), len(classes), len(TYPES)))
            for t, worker in enumerate(TYPES):
                for (a, b), value in pair_speeds[worker].items():
                    if a in classes and b in classes:
                        speed[classes.index(a), classes.index(b), t] = value
            colocation = Colocation(np.array([classes.index(k) for k in keys]), speed)
        data = ThroughputData(
            rate=rate, gang=np.array([k[1] for k in keys]),
            gpus=np.full(len(TYPES), float(n // 4)),
            weight=np.array([job[2] for job in jobs], dtype=float), release=np.zeros(n),
            deadline=np.full(n, np.inf), price_per_hour=np.zeros(len(TYPES)),
            colocation=colocation)
        return data, jobs

    lines = ["| jobs | priorities | policy | variant | gpuplan value | Gavel value | "
             "agreement | gpuplan s | Gavel s | speed-up |",
             "|---:|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for n in sizes:
        for priorities in (False, True):
            chosen = [p for p in POLICIES if not p[1] or n <= PACKED_UP_TO]
            answer = run_gavel(args.gavel_env, args.gavel_src, {
                "jobs": n, "seed": 2, "priorities": priorities, "repeats": args.repeats,
                "policies": [p[2] for p in chosen]})
            exact: dict[str, float] = {}
            for policy_name, packed, gavel_name in chosen:
                policy = Policy(policy_name)
                data, jobs = inputs(n, priorities, packed)
                variants: list[tuple[str, dict[str, Any]]] = [
                    ("space sharing" if packed else "exact", {"space_sharing": packed})]
                if policy is Policy.MAX_MIN_FAIRNESS and not packed:
                    variants.append(("POP-8", {"partitions": 8}))
                for variant, extra in variants:
                    runs = [solve_policy(data, AllocationOptions(policy=policy.value, **extra),
                                         Context(Budget(), threads=1))
                            for _ in range(args.repeats)]
                    ours = runs[0].value
                    seconds = statistics.median(r.seconds for r in runs)
                    theirs, their_s, agree, speed_up = "-", "-", "-", "-"
                    if variant == "exact":
                        exact[policy.value] = float(ours or 0.0)
                    result = None if answer is None else answer["results"][gavel_name]
                    if result is not None and "error" in result:
                        theirs = f"failed ({result['error'][:60]})"
                    elif result is not None and variant != "POP-8":
                        steps = np.array([job[3] for job in jobs], dtype=float)
                        value = throughput_value(data, policy,
                                                 np.array(result["throughput"]) / steps,
                                                 FairShare.GPUS)
                        median_s = statistics.median(result["seconds"])
                        theirs, their_s = f"{value:.6g}", f"{median_s:.4f}"
                        agree = f"{abs(float(ours or 0.0) - value) / abs(value):.1e}"
                        speed_up = f"{median_s / seconds:.1f}x"
                    elif variant == "POP-8":
                        lost = 100 * (exact[policy.value] - float(ours or 0.0)) / exact[
                            policy.value]
                        # Adding 0.0 turns a rounded -0.0 into 0.0.
                        agree = f"{round(lost, 2) + 0.0:.2f}% below exact"
                    lines.append(f"| {n} | {'20% at 5' if priorities else 'none'} | "
                                 f"{policy.value} | {variant} | {float(ours or 0.0):.6g} | "
                                 f"{theirs} | {agree} | {seconds:.4f} | {their_s} | "
                                 f"{speed_up} |")
                    print(lines[-1], flush=True)
    versions = (f"Gavel's side: {answer['versions']}, ECOS." if answer is not None
                else "Gavel's side not run (no environment).")
    write_results(args.out, "# Gavel's policies side by side\n\nWritten by "
                  "`python scripts/bench_gavel_policies.py` (see its docstring for the "
                  f"setup and what is measured). {versions} gpuplan: HiGHS, 1 thread.\n\n"
                  + "\n".join(lines) + "\n\n" + NOTES, None)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        request = json.loads(Path(sys.argv[2]).read_text())
        Path(sys.argv[3]).write_text(json.dumps(gavel_worker(request)))
    else:
        main()
