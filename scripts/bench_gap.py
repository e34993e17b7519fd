"""Benchmark gpuplan's assignment methods, and the peers a user would write instead, on GAP sets.

Usage:
    python scripts/bench_gap.py [--sets gap1-12,chu-beasley,yagiura] [--time-limit 10]
        [--methods greedy,lp,milp,milp-cpsat,peer-highs,peer-cpsat] [--only NAME,...]
        [--out docs/results/gap.md]

Sets (from ../shared/benchmarks/gap/known_values.csv):
- gap1-12: the 60 OR-Library problems, solved both as minimisation and as maximisation;
- chu-beasley: gapa..gapd (types A-D, 5-20 agents x 100-200 jobs), minimisation;
- yagiura: types C, D, E up to 80 x 1600, minimisation.

The peers are the textbook model (x_ij binary, each job once, each agent's capacity) handed
straight to HiGHS (highspy) and to CP-SAT with the same time limit and 2 threads, default
settings otherwise. Their answers go through gpuplan's verifier like every gpuplan result.
Writes one row per (instance, sense, method) to --out and prints a summary per set and type.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time
from collections import defaultdict
from pathlib import Path

import highspy
import numpy as np
from ortools.sat.python import cp_model

from gpuplan.instance import Instance
from gpuplan.planning import plan, to_schedule
from gpuplan.readers import read_instance
from gpuplan.schedule import Status
from gpuplan.solvers import SolveOptions
from gpuplan.solvers.assignment import static_result
from gpuplan.solvers.base import Result
from gpuplan.solvers.highs import new_highs
from gpuplan.verify import verify_schedule

ROOT = Path(__file__).resolve().parent.parent
GAP = ROOT.parent / "shared" / "benchmarks" / "gap"
METHODS = ["greedy", "lp", "milp", "milp-cpsat", "peer-highs", "peer-cpsat"]


def problems(sets: list[str]) -> list[dict[str, str]]:
    """Rows of known_values.csv for the chosen sets, one per (instance, sense)."""
    chosen = []
    with (GAP / "known_values.csv").open() as handle:
        for row in csv.DictReader(handle):
            file = row["file"]
            if file.startswith("orlib/gap") and file[9:].split(".")[0].isdigit():
                family = "gap1-12"
            elif file.startswith("orlib/gap"):
                family = "chu-beasley"
            else:
                family = "yagiura"
            if family not in sets:
                continue
            senses = ["min", "max"] if family == "gap1-12" else ["min"]
            for sense in senses:
                best = row["opt_max"] if sense == "max" else row["best_known_min"]
                chosen.append({"family": family, "name": row["instance"], "sense": sense,
                               "spec": f"{GAP / file}#{row['index_in_file']}",
                               "best": best, "type": row["instance"][0]})
    return chosen


def _textbook(instance: Instance) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GAP data back from the instance: c (or profit), a and b, agent-major."""
    values = instance.assignment_value.T  # (m, n)
    demand = instance.demand[:, :, 0].T
    capacity = instance.capacity[:, 0]
    return values, demand, capacity


def peer_highs(instance: Instance, limit: float) -> tuple[Result, str]:
    """The textbook GAP model on HiGHS with default settings."""
    c, a, b = _textbook(instance)
    m, n = c.shape
    highs = new_highs(SolveOptions(time_limit_s=limit, threads=2))
    highs.setOptionValue("mip_rel_gap", 1e-4)
    inf = highspy.kHighsInf
    columns = m * n
    highs.addVars(columns, np.zeros(columns), np.ones(columns))
    highs.changeColsIntegrality(columns, np.arange(columns, dtype=np.int32),
                                np.array([highspy.HighsVarType.kInteger] * columns))
    highs.changeColsCost(columns, np.arange(columns, dtype=np.int32), c.ravel().astype(float))
    if instance.objective.sense == "max":
        highs.changeObjectiveSense(highspy.ObjSense.kMaximize)
    for j in range(n):
        highs.addRow(1.0, 1.0, m, (np.arange(m) * n + j).astype(np.int32), np.ones(m))
    for i in range(m):
        highs.addRow(-inf, float(b[i]), n, (i * n + np.arange(n)).astype(np.int32),
                     a[i].astype(float))
    highs.run()
    info = highs.getInfo()
    found = info.primal_solution_status == highspy.SolutionStatus.kSolutionStatusFeasible
    x = np.asarray(highs.getSolution().col_value).reshape(m, n) if found else None
    optimal = highs.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return _peer_result(instance, x, optimal, float(info.mip_dual_bound)), "highs (textbook)"


def peer_cpsat(instance: Instance, limit: float) -> tuple[Result, str]:
    """The textbook GAP model on CP-SAT with default settings and 2 workers."""
    c, a, b = _textbook(instance)
    m, n = c.shape
    model = cp_model.CpModel()
    x = [[model.new_bool_var(f"x{i}_{j}") for j in range(n)] for i in range(m)]
    for j in range(n):
        model.add_exactly_one(x[i][j] for i in range(m))
    for i in range(m):
        model.add(sum(int(a[i, j]) * x[i][j] for j in range(n)) <= int(b[i]))
    objective = sum(int(c[i, j]) * x[i][j] for i in range(m) for j in range(n))
    if instance.objective.sense == "max":
        model.maximize(objective)
    else:
        model.minimize(objective)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = limit
    solver.parameters.num_workers = 2
    code = solver.solve(model)
    found = code in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    values = (np.array([[solver.value(x[i][j]) for j in range(n)] for i in range(m)])
              if found else None)
    return (_peer_result(instance, values, code == cp_model.OPTIMAL,
                         solver.best_objective_bound), "cpsat (textbook)")


def _peer_result(instance: Instance, x: np.ndarray | None, optimal: bool,
                 bound: float) -> Result:
    if x is None:
        return static_result(instance, {}, Status.NO_SOLUTION, None, bound, "peer", "none")
    agent = x.argmax(axis=0)
    # One GPU per agent in converted GAP instances: GPU index = agent index.
    placed = {j: np.array([int(agent[j])]) for j in range(instance.n_jobs)}
    value = float(instance.assignment_value[np.arange(instance.n_jobs), agent].sum())
    status = Status.OPTIMAL if optimal else Status.FEASIBLE
    return static_result(instance, placed, status, value, bound, "peer", "none")


def run(problem: dict[str, str], method: str, limit: float) -> dict[str, object]:
    """Solve one problem with one method; time it and verify the answer."""
    instance = read_instance(problem["spec"], file_format="orlib-gap",
                             sense=problem["sense"])  # type: ignore[arg-type]
    started = time.perf_counter()
    if method.startswith("peer-"):
        result, solver = (peer_highs if method == "peer-highs" else peer_cpsat)(instance, limit)
        seconds = time.perf_counter() - started
        schedule = to_schedule(instance, result, method, seconds, 0)
        verified = verify_schedule(instance, schedule).ok
    else:
        backend = "cpsat" if method == "milp-cpsat" else "highs"
        options = SolveOptions(time_limit_s=limit, threads=2, backend=backend)
        schedule = plan(instance, method.split("-")[0], options)
        seconds = time.perf_counter() - started
        verified = schedule.verification is not None and schedule.verification.ok
        solver = schedule.solver
    best = float(problem["best"]) if problem["best"] else None
    gap = None
    if schedule.objective is not None and best:
        gap = abs(schedule.objective - best) / best * 100
    return {
        **problem, "method": method, "status": schedule.status.value,
        "objective": schedule.objective, "bound": schedule.bound, "gap_pct": gap,
        "seconds": round(seconds, 2), "verified": verified and schedule.status.has_plan,
        "solver": solver,
    }


def read_rows(path: Path) -> list[dict[str, object]]:
    """Rows of a results file written by this script, with the fields the summary needs."""
    rows: list[dict[str, object]] = []
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != 10 or not line.startswith("| ") or cells[0] == "instance":
            continue
        name, sense, method, status, objective, best, gap, bound, seconds, verified = cells
        family = ("gap1-12" if "-" in name else
                  "chu-beasley" if len(name) <= 6 and name[1:3] in ("05", "10", "20")
                  and name[3:] in ("100", "200") and name[0] in "abcd" else "yagiura")
        rows.append({
            "family": family, "name": name, "sense": sense, "type": name[0],
            "best": None if best == "-" else best, "method": method, "status": status,
            "objective": None if objective == "-" else float(objective),
            "bound": None if bound == "-" else float(bound),
            "gap_pct": None if gap == "-" else float(gap), "seconds": float(seconds),
            "verified": verified == "yes",
        })
    return rows


def _fmt(value: object, digits: int = 6) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="gap1-12,chu-beasley,yagiura")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--only", default="", help="comma-separated instance names")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "gap.md")
    parser.add_argument(
        "--keep", type=Path,
        help="a previous results file: its rows for (problem, method) pairs not run now are kept",
    )
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    methods = args.methods.split(",")
    chosen = [p for p in problems(args.sets.split(",")) if not only or p["name"] in only]
    now = {(p["name"], p["sense"], m) for p in chosen for m in methods}
    rows = [] if args.keep is None else [
        r for r in read_rows(args.keep) if (r["name"], r["sense"], r["method"]) not in now
    ]
    for problem in chosen:
        for method in methods:
            row = run(problem, method, args.time_limit)
            rows.append(row)
            print(f"{row['name']:>10} {row['sense']} {method:>11} {row['status']:>11} "
                  f"obj {_fmt(row['objective'])} best {row['best']} gap "
                  f"{_fmt(row['gap_pct'], 3)}% {row['seconds']} s", flush=True)
    header = ("| instance | sense | method | status | objective | best known | gap % | "
              "bound | seconds | verified |\n|---|---|---|---|---:|---:|---:|---:|---:|---|")
    lines = [header] + [
        f"| {r['name']} | {r['sense']} | {r['method']} | {r['status']} | {_fmt(r['objective'])}"
        f" | {r['best'] or '-'} | {_fmt(r['gap_pct'], 3)} | {_fmt(r['bound'])} | "
        f"{r['seconds']} | {'yes' if r['verified'] else 'no'} |"
        for r in rows
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        f"# GAP results (time limit {args.time_limit:g} s, 2 threads)\n\n"
        "Written by `python scripts/bench_gap.py`.\n\n" + "\n".join(lines) + "\n"
    )
    summary: dict[tuple[str, str, str], list[dict[str, object]]] = defaultdict(list)
    for r in rows:
        group = r["type"].upper() if r["family"] != "gap1-12" else f"gap1-12 {r['sense']}"
        summary[(str(r["family"]), group, str(r["method"]))].append(r)
    print("\n| set | type | method | problems | verified | mean gap % | max gap % | "
          "proven optimal | mean s | max s |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for (family, group, method), items in summary.items():
        gaps = [float(i["gap_pct"]) for i in items if i["gap_pct"] is not None]
        seconds = [float(i["seconds"]) for i in items]
        print(f"| {family} | {group} | {method} | {len(items)} | "
              f"{sum(bool(i['verified']) for i in items)} | "
              f"{_fmt(statistics.mean(gaps), 3) if gaps else '-'} | "
              f"{_fmt(max(gaps), 3) if gaps else '-'} | "
              f"{sum(i['status'] == 'optimal' for i in items)} | "
              f"{statistics.mean(seconds):.2f} | {max(seconds):.2f} |")

    print_versus_peers(rows)


def print_versus_peers(rows: list[dict[str, object]]) -> None:
    """Per method: on how many problems it ends worse (or better) than each peer."""
    by_problem: dict[tuple[str, str], dict[str, dict[str, object]]] = defaultdict(dict)
    for r in rows:
        by_problem[(str(r["name"]), str(r["sense"]))][str(r["method"])] = r
    print("\n| method | versus | problems | worse | better | equal |")
    print("|---|---|---:|---:|---:|---:|")
    methods = sorted({str(r["method"]) for r in rows if not str(r["method"]).startswith("peer")})
    for method in methods:
        for peer in ("peer-highs", "peer-cpsat"):
            worse = better = equal = 0
            for (_, sense), results in by_problem.items():
                if method not in results or peer not in results:
                    continue
                mine, theirs = results[method]["objective"], results[peer]["objective"]
                sign = -1.0 if sense == "max" else 1.0
                if mine is None or (
                    theirs is not None and sign * float(mine) > sign * float(theirs) + 1e-6
                ):
                    worse += 1
                elif theirs is None or sign * float(mine) < sign * float(theirs) - 1e-6:
                    better += 1
                else:
                    equal += 1
            total = worse + better + equal
            print(f"| {method} | {peer} | {total} | {worse} | {better} | {equal} |")


if __name__ == "__main__":
    main()
