"""Tampered run logs against the verifier and the run checker: every one caught, none valid refused.

Usage:
    python scripts/bench_run_checks.py [--seeds 10] [--out docs/results/run_checks.md]

Valid logs: every registered scheduler in every mode it works in, with best-fit placement,
on seeded random workloads (``generate_document``: 16 preemptible jobs with gangs of 1-4 GPUs on
three nodes of four GPUs of three types, arrivals over an hour), 20 s restore and 10 s
migration overheads, 600 s rounds. Each must pass the verifier and
:func:`~gpuplan.simulate.check.check_run`, as ``gpuplan check`` runs them.

Then each kind of tampering is applied to every log it applies to (a log without
preemptions cannot lose a preempt event), the log is written and read back as a file, and
the metrics are recomputed from the tampered log where the kind says so (a forger who
knows the metrics are checked): the tampered log counts as caught when the verifier or
the checker reports anything.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpuplan.core.instance import Instance  # noqa: E402
from gpuplan.core.schedule import Schedule  # noqa: E402
from gpuplan.core.settings import RunSettings  # noqa: E402
from gpuplan.harness.bench import write_results  # noqa: E402
from gpuplan.readers.generate import generate_document  # noqa: E402
from gpuplan.readers.instance_file import build_instance, parse_document  # noqa: E402
from gpuplan.simulate import RunSpec, SimulationConfig, simulate  # noqa: E402
from gpuplan.simulate.check import check_run  # noqa: E402
from gpuplan.simulate.metrics import run_metrics, utilisation_by_type  # noqa: E402
from gpuplan.simulate.policies import SCHEDULERS  # noqa: E402
from gpuplan.verify import verify_schedule  # noqa: E402

Document = dict[str, Any]
#: Changes a log in place; False when the kind does not apply to it.
Tamper = Callable[[Document], bool]


def _events_of(document: Document, kind: str) -> list[Document]:
    return [e for e in document["events"] if e["kind"] == kind]


def _set_run(field: str, value: Any) -> Tamper:
    def change(document: Document) -> bool:
        if document["run"][field] == value:
            return False
        document["run"][field] = value
        return True
    return change


def _relabel_non_preemptive(document: Document) -> bool:
    if not _events_of(document, "preempt"):
        return False
    document["run"]["scheduler"] = "fifo"
    document["run"]["options"] = {}
    return True


def _drop_overheads(document: Document) -> bool:
    paid = [s for s in document["segments"] if s["restore_s"] or s["migrate_s"]]
    for segment in paid:
        segment["restore_s"] = segment["migrate_s"] = 0.0
    return bool(paid)


def _drop_overheads_and_record(document: Document) -> bool:
    if not _drop_overheads(document):
        return False
    document["run"]["restart_overhead_s"] = document["run"]["migration_overhead_s"] = 0.0
    return True


def _double_restore(document: Document) -> bool:
    paid = [s for s in document["segments"] if s["restore_s"]]
    for segment in paid:
        segment["restore_s"] *= 2
    return bool(paid)


def _drop_events(document: Document) -> bool:
    document["events"] = []
    return True


def _drop_one(kind: str) -> Tamper:
    def change(document: Document) -> bool:
        found = _events_of(document, kind)
        if not found:
            return False
        document["events"].remove(found[0])
        return True
    return change


def _migrations_as_resumes(document: Document) -> bool:
    moved = _events_of(document, "migrate")
    for event in moved:
        event["kind"] = "resume"
    for segment in document["segments"]:
        segment["migrated_from"] = None
        segment["migrate_s"] = 0.0
    document["run"]["migration_overhead_s"] = 0.0
    return bool(moved)


def _claim_no_migrations(document: Document) -> bool:
    metrics = document["run"]["metrics"]
    if not metrics.get("migrations_per_job"):
        return False
    metrics["migrations_per_job"] = 0.0
    return True


#: Kind -> (what is done, the change, whether the forger recomputes the metrics).
KINDS: dict[str, tuple[str, Tamper, bool]] = {
    "relabelled non-preemptive": ("a log with preemptions relabelled `fifo`",
                                  _relabel_non_preemptive, True),
    "unknown scheduler": ("`run.scheduler` set to `oracle`", _set_run("scheduler", "oracle"),
                          False),
    "unknown placement": ("`run.placement` set to `magic`", _set_run("placement", "magic"),
                          False),
    "unknown admission": ("`run.admission` set to `vip`", _set_run("admission", "vip"), False),
    "unknown mode": ("`run.mode` set to `banana`", _set_run("mode", "banana"), False),
    "unknown option": ("`run.options` given `oracle_power: 9`",
                       _set_run("options", {"oracle_power": 9}), False),
    "overheads removed": ("every segment's restore and migration set to 0",
                          _drop_overheads, True),
    "overheads removed from the record too": (
        "the same, and the record's overheads 0", _drop_overheads_and_record, True),
    "restores doubled": ("every restore doubled", _double_restore, True),
    "events removed": ("every event removed", _drop_events, True),
    "a preempt event removed": ("the first preempt event removed", _drop_one("preempt"), True),
    "a migrate event removed": ("the first migrate event removed", _drop_one("migrate"), True),
    "migrations relabelled resumes": (
        "migrate events made resume events, `migrated_from` and migration overheads removed",
        _migrations_as_resumes, True),
    "metrics claim no migrations": ("`migrations_per_job` set to 0 in the metrics",
                                    _claim_no_migrations, False),
}


def workload(seed: int) -> Instance:
    """16 preemptible jobs, gangs of 1-4 GPUs, three nodes of four GPUs, over an hour."""
    document = generate_document(jobs=16, nodes=3, seed=seed, gpus_per_node=4,
                                 arrival_window_s=3600.0, objective="weighted-completion")
    for job in document["jobs"]:
        job["preemptible"] = True
    return build_instance(parse_document(document, "<generated>"), "<generated>")


def valid_logs(seeds: int) -> list[tuple[str, Instance, Schedule]]:
    """Every scheduler in every mode on every seed: (label, instance, log)."""
    logs = []
    for seed in range(seeds):
        instance = workload(seed).online()
        for name, cls in SCHEDULERS.items():
            for mode in sorted(cls.modes):
                config = SimulationConfig(mode=mode, round_s=600.0, restart_overhead_s=20.0,
                                          migration_overhead_s=10.0)
                schedule = simulate(instance, RunSpec(
                    scheduler=name, config=config, seed=seed,
                    settings=RunSettings(time_limit_s=5.0, threads=1)))
                logs.append((f"{name} {mode.value} seed {seed}", instance, schedule))
    return logs


def said(instance: Instance, schedule: Schedule) -> list[str]:
    """What the verifier and the run checker report of a log."""
    verification = verify_schedule(instance, schedule)
    if not verification.ok:
        return [str(v) for v in verification.violations]
    return check_run(instance, schedule)


def with_recomputed_metrics(instance: Instance, document: Document) -> Document:
    """The log's metrics as its (tampered) segments and events give them."""
    try:
        schedule = Schedule.model_validate_json(json.dumps(document))
        result = schedule.to_result(instance)
        window = (document["run"]["window"][0], document["run"]["window"][1])
        document["run"]["metrics"] = run_metrics(instance, result, window)
        document["run"]["utilisation_by_type"] = utilisation_by_type(instance, result, window)
    except Exception:
        pass
    return document


def main() -> None:
    """Make the valid logs, tamper with them, count what is caught, write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "run_checks.md")
    args = parser.parse_args()
    logs = valid_logs(args.seeds)
    refused = [(label, said(instance, schedule)) for label, instance, schedule in logs]
    refused = [(label, problems) for label, problems in refused if problems]
    for label, problems in refused:
        print(f"valid log refused: {label}: {problems[:3]}", flush=True)
    rows = [f"| valid logs (every scheduler x mode x seed) | - | {len(logs)} | "
            f"{len(logs) - len(refused)} pass | {len(refused)} refused |"]
    missed_any = bool(refused)
    for kind, (what, change, recompute) in KINDS.items():
        tried = caught = 0
        for label, instance, schedule in logs:
            document = json.loads(schedule.to_json())
            if not change(document):
                continue
            if recompute:
                document = with_recomputed_metrics(instance, document)
            tried += 1
            try:
                forged = Schedule.model_validate_json(json.dumps(document))
            except ValueError:
                caught += 1  # refused on reading: the file is not a schedule
                continue
            if said(instance, forged):
                caught += 1
            else:
                print(f"missed: {kind}: {label}", flush=True)
        missed_any |= caught < tried
        rows.append(f"| {kind} | {what}{' (metrics recomputed)' if recompute else ''} | "
                    f"{tried} | {caught} caught | {tried - caught} missed |")
    table = ("| tampering | what is changed | logs | caught | missed |\n"
             "|---|---|---:|---:|---:|\n" + "\n".join(rows) + "\n")
    command = " ".join(["python scripts/bench_run_checks.py", *sys.argv[1:]])
    write_results(args.out, "\n".join([
        "# Tampered run logs against the verifier and the run checker (issue 32)", "",
        f"Written by `{command}`: {len(logs)} valid logs ({args.seeds} seeds x every "
        "scheduler x mode); each kind of tampering applied to every log it applies to.", "",
        table]))
    print(table)
    sys.exit(1 if missed_any else 0)


if __name__ == "__main__":
    main()
