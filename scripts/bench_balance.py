"""Benchmark the allocation policies of ``--method balance`` at Gavel's scale.

Usage:
    python scripts/bench_balance.py [--gavel ../shared/benchmarks/gpu-traces/gavel]
        [--repeats 3] [--partitions 8] [--library instances/library] [--seeds 1,2,3]
        [--time-limit 10] [--part gavel,operator] [--out docs/results/balance.md]
        [--page docs/benchmarks.md]

Jobs are sampled as Gavel's generator does (gang sizes 1/2/4/8, job types and run times
from Gavel's measured throughputs, ``synthetic_trace``) on equal numbers of V100, P100 and
K80 GPUs in 8-GPU servers. The first table times the policy's solve alone (HiGHS on 2
threads, the median of ``--repeats`` runs) from the built instance: it measures the
allocation program, which makes no plan, so it is its own loop. Variants: "exact" (one LP,
QP or LP sequence), "space sharing" (pairs at Gavel's measured co-located throughputs,
priced in by column generation) and "POP-K" (K parts; "loss vs exact" is how much worse
its value is than the exact one). The second table is the rounded plans of the 700-job
instance through the ``gpuplan bench`` harness, each verified.

The last table plans the operator batches of ``instances/library`` (``operator-150-s<seed>``
for makespan, ``-weighted`` for weighted completion, and the tight, chains and sharing
variants for makespan) with every time-share policy and with greedy, through the harness
at ``--time-limit`` seconds on 2 threads. For the makespan policy on a makespan batch the
"fluid value" is the allocation LP's makespan (jobs between their heads and tails, whole
jobs on the types they fit), a lower bound on every plan that runs one job per GPU at a
time (the round plans and greedy's; not on plans that share a GPU by compute shares),
and the ratio is the round plan's makespan over it. For the other policies it is the
policy's own value (fairness, throughput, spend), with no ratio.

Only the results file is written; ``--page`` also refreshes the tables a page quotes.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
from pathlib import Path
from typing import Any

from gpuplan.core.budget import Budget
from gpuplan.core.instance import Instance
from gpuplan.core.settings import Context, RunSettings
from gpuplan.harness.bench import load_suite, markdown, parse_method, run_bench, write_results
from gpuplan.models.allocation import Policy, ThroughputData
from gpuplan.parts.allocation import AllocationOptions, solve_policy
from gpuplan.readers.gavel import (
    PRICES,
    read_pair_speeds,
    read_throughputs,
    synthetic_trace,
    trace_document,
)
from gpuplan.readers.instance_file import build_instance, parse_document

ROOT = Path(__file__).resolve().parent.parent
#: The page that quotes this script's results tables; refreshed after each run.
PAGE = ROOT / "docs" / "benchmarks.md"
DEFAULT_GAVEL = ROOT.parent / "shared" / "benchmarks" / "gpu-traces" / "gavel"


def gavel_document(gavel: Path, jobs: int, gpus_per_type: int, seed: int) -> dict[str, Any]:
    """``jobs`` Gavel-generated jobs on ``gpus_per_type`` GPUs of each of the three types.

    The instance carries Gavel's measured pair speeds, used when space sharing is on.
    """
    source = gavel / "simulation_throughputs.json"
    throughputs = read_throughputs(source)
    return trace_document(
        synthetic_trace(throughputs, jobs, seed=seed), throughputs,
        dict.fromkeys(("v100", "p100", "k80"), gpus_per_type), 8, PRICES,
        name=f"gavel_{jobs}x{3 * gpus_per_type}", pair_speeds=read_pair_speeds(source))


def gavel_instance(gavel: Path, jobs: int, gpus_per_type: int, seed: int) -> Instance:
    """:func:`gavel_document`, validated."""
    document = gavel_document(gavel, jobs, gpus_per_type, seed)
    return build_instance(parse_document(document, "<generated>"), "<generated>")


#: The rounded plans benchmarked on the 700-job instance.
PLANNED = ["balance:policy=makespan", "balance:policy=max-min-fairness",
           "balance:policy=max-min-fairness:space_sharing=true"]


def loss(policy: Policy, exact: float | None, split: float | None) -> str:
    """How much worse the partitioned value is, in % of the exact one."""
    if exact is None or split is None:
        return "-"
    worse = (exact - split) if policy in MAXIMISED else (split - exact)
    return f"{100 * worse / abs(exact):.2f}%"


#: Policies whose value is maximised (the others are minimised).
MAXIMISED = (Policy.MAX_MIN_FAIRNESS, Policy.MAX_THROUGHPUT)

#: The policies with a round-based plan (quadratic places whole jobs).
TIME_SHARE: list[Policy] = [p for p in Policy if p is not Policy.QUADRATIC]

#: Operator batches per seed: file name pattern and the policies planned on it.
OPERATOR: list[tuple[str, list[Policy]]] = [
    ("operator-150-s{seed}", TIME_SHARE),
    ("operator-150-s{seed}-weighted", TIME_SHARE),
    ("operator-tight-150-s{seed}", [Policy.MAKESPAN]),
    ("operator-chains-150-s{seed}", [Policy.MAKESPAN]),
    ("operator-sharing-150-s{seed}", [Policy.MAKESPAN])]


def fluid(row: dict[str, Any], policy: Policy) -> tuple[float | None, str]:
    """A balance row's fluid value and what it is, read off its solver column.

    The makespan policy's value on a makespan batch, a bound; else the policy's own value
    (in its own unit: no ratio to the plan's objective).
    """
    found = re.search(rf"; {policy.value} ([-+.\de]+)", str(row.get("solver", "")))
    value = float(found[1]) if found else None
    if policy is Policy.MAKESPAN and row.get("objective_kind") == "makespan":
        return value, "LP makespan, bound (one job per GPU)"
    return value, f"{policy.value} value"


def operator_table(library: Path, seeds: list[int], time_limit: float) -> list[str]:
    """The operator batches' rows: fluid value, round plan, ratio, greedy, seconds."""
    lines = ["| instance | objective | policy | fluid value | fluid value is | round plan | "
             "ratio | greedy | status | seconds |",
             "|---|---|---|---:|---|---:|---:|---:|---|---:|"]
    settings = RunSettings(time_limit_s=time_limit, threads=2)
    for seed in seeds:
        for pattern, policies in OPERATOR:
            path = library / f"{pattern.format(seed=seed)}.json"
            if not path.exists():
                print(f"skipped: {path} is missing", flush=True)
                continue
            specs = ["greedy", *(f"balance:policy={p.value}" for p in policies)]
            rows = run_bench(load_suite(str(path), ROOT), [parse_method(m) for m in specs],
                             settings)
            greedy = rows[0].get("objective")
            for policy, row in zip(policies, rows[1:], strict=True):
                value, what = fluid(row, policy)
                # A plan the method replaced by greedy's (time, deadlines) is no round plan.
                fell_back = "plan instead" in str(row.get("solver", ""))
                planned = None if fell_back else row.get("objective")
                status = "greedy's plan instead" if fell_back else row["status"]
                ratio = (f"{planned / value:.3f}" if planned is not None and value
                         and what.startswith("LP") else "-")
                lines.append(
                    f"| {row['instance']} | {row.get('objective_kind', '-')} | {policy.value} "
                    f"| {_number(value)} | {what} | {_number(planned)} | {ratio} "
                    f"| {_number(greedy)} | {status} | {row.get('seconds', 0.0):.2f} |")
                print(lines[-1], flush=True)
    return lines


def _number(value: float | None) -> str:
    """A table cell: six significant digits, or - for none."""
    return "-" if value is None else f"{value:.6g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gavel", type=Path, default=DEFAULT_GAVEL)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--library", type=Path, default=ROOT / "instances" / "library")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--part", default="gavel,operator")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "balance.md")
    parser.add_argument("--page", type=Path, default=None)
    args = parser.parse_args()
    parts = args.part.split(",")
    lines: list[str] = []
    if "gavel" in parts:
        lines += gavel_tables(args)
    if "operator" in parts:
        lines += ["", "## Operator batches: round plans against their fluid value", "",
                  f"`{args.time_limit:g}` s per plan on 2 threads; the fluid value and the "
                  "ratio are explained in the script's docstring.", "",
                  *operator_table(args.library, [int(s) for s in args.seeds.split(",")],
                                  args.time_limit)]
    write_results(args.out, "# Allocation policies\n\nWritten by "
                  "`python scripts/bench_balance.py`.\n\n" + "\n".join(lines).lstrip("\n")
                  + "\n", args.page)


def gavel_tables(args: argparse.Namespace) -> list[str]:
    """The policy solves and the rounded plans at Gavel's scale (the first three tables)."""
    lines = ["## Policy solves (the allocation program, no plan)", "",
             "| instance | policy | variant | status | value | seconds (median) | "
             "loss vs exact |", "|---|---|---|---|---:|---:|---:|"]
    exact_policies = [p for p in Policy]
    pop = [Policy.MAX_MIN_FAIRNESS, Policy.MAKESPAN, Policy.MAX_THROUGHPUT, Policy.MIN_COST,
           Policy.FINISH_TIME_FAIRNESS]
    variants: list[tuple[int, int, Policy, str, dict[str, Any]]] = []
    for policy in exact_policies:
        variants.append((2048, 512, policy, "exact", {}))
    variants.append((2048, 512, Policy.MAX_MIN_FAIRNESS, "space sharing",
                     {"space_sharing": True}))
    for policy in pop:
        variants.append((2048, 512, policy, f"POP-{args.partitions}",
                         {"partitions": args.partitions}))
    for policy in (Policy.MAKESPAN, Policy.MAX_MIN_FAIRNESS):
        variants.append((700, 32, policy, "exact", {}))
    variants.append((700, 32, Policy.MAX_MIN_FAIRNESS, "space sharing",
                     {"space_sharing": True}))
    instances: dict[tuple[int, int], Instance] = {}
    exact: dict[tuple[int, int, Policy], float | None] = {}
    for jobs, per_type, policy, variant, extra in variants:
        if (jobs, per_type) not in instances:
            instances[(jobs, per_type)] = gavel_instance(args.gavel, jobs, per_type, seed=0)
        instance = instances[(jobs, per_type)]
        data = ThroughputData.from_instance(instance)
        options = AllocationOptions(policy=policy.value, **extra)
        # HiGHS on 2 threads, without a time limit: a budget of its own per run.
        runs = [solve_policy(data, options, Context(Budget(), threads=2))
                for _ in range(args.repeats)]
        seconds = statistics.median(r.seconds for r in runs)
        value = runs[0].value
        if variant == "exact":
            exact[(jobs, per_type, policy)] = value
        lost = (loss(policy, exact.get((jobs, per_type, policy)), value)
                if variant.startswith("POP") else "-")
        lines.append(f"| {instance.name} | {policy.value} | {variant} | {runs[0].status.value} "
                     f"| {'-' if value is None else f'{value:.6g}'} | {seconds:.3f} | {lost} |")
        print(lines[-1], flush=True)
    # Rounded plans go through the bench harness: every one is verified.
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gavel_700x96.json"
        path.write_text(json.dumps(gavel_document(args.gavel, 700, 32, seed=0)))
        rows = run_bench(load_suite(str(path), ROOT), [parse_method(m) for m in PLANNED],
                         RunSettings(threads=2))
    lines += ["", "## Rounded plans (the `gpuplan bench` harness)", "",
              "The value is the plan's makespan; the policy's value and the tracking error "
              "are in the solver column of each row.", "", markdown(rows),
              "| method | solver |", "|---|---|",
              *(f"| {r['method']} | {r.get('solver', r.get('error'))} |" for r in rows)]
    return lines


if __name__ == "__main__":
    main()
