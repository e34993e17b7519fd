"""``gpuplan export-model``: write the assignment MILP as an LP or MPS file."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from gpuplan.backends.pyomo import write_model
from gpuplan.cli.common import (
    Commands,
    ExitCode,
    console,
    file_of,
    objective,
    read,
    reading_parser,
)
from gpuplan.core.errors import InputError
from gpuplan.core.files import check_output, write_bytes_atomic
from gpuplan.models.assignment import AssignmentModel


def register(commands: Commands) -> None:
    """Add ``export-model``."""
    parser = commands.add_parser(
        "export-model", help="write the assignment MILP as an LP or MPS file",
        parents=[reading_parser("--input-format")],
        description="Build the assignment MILP of a static-objective instance and write it "
        "through Pyomo's LP or MPS writer, for any solver.",
    )
    parser.add_argument("instance")
    parser.add_argument("--format", dest="model_format", choices=["lp", "mps"], default="lp",
                        help="the model file's format (default: lp)")
    parser.add_argument("--objective", type=objective, metavar="NAME")
    parser.add_argument("-o", "--output", required=True, metavar="FILE")
    parser.set_defaults(run=export_model)


def export_model(args: argparse.Namespace) -> int:
    """Build the model and write it atomically."""
    target = check_output(args.output, [file_of(args.instance)])
    instance = read(args, args.instance, args.objective)
    if not AssignmentModel.supports(instance.objective):
        raise InputError(
            "--objective", "", f"export-model writes the assignment MILP, which has no "
            f"{instance.objective.value!r} objective; choose a static objective"
        )
    program = AssignmentModel.build(instance).program
    try:
        # Pyomo writes in place; write into a private folder, then move the whole file.
        with tempfile.TemporaryDirectory() as folder:
            written = Path(folder) / f"model.{args.model_format}"
            write_model(program, str(written), args.model_format)
            write_bytes_atomic(target, written.read_bytes())
    except OSError as exc:
        raise InputError(args.output, "", f"cannot write the model: {exc}") from None
    console.print(
        f"wrote {args.output}: {program.n_cols} columns, {program.n_rows} rows "
        f"({args.model_format.upper()})", markup=False,
    )
    return ExitCode.OK
