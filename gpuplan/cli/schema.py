"""``gpuplan schema``: print the JSON Schema of the instance or the schedule format."""

from __future__ import annotations

import argparse
import json
import sys

from pydantic import BaseModel

from gpuplan.cli.common import Commands, ExitCode
from gpuplan.core.schedule import Schedule
from gpuplan.readers.changes import Changes
from gpuplan.readers.instance_file import InstanceDocument

#: The published formats by name.
FORMATS: dict[str, type[BaseModel]] = {
    "instance": InstanceDocument, "schedule": Schedule, "changes": Changes}


def register(commands: Commands) -> None:
    """Add ``schema``."""
    parser = commands.add_parser(
        "schema", help="print the JSON Schema of a file format",
        description="Print the JSON Schema of the instance, schedule or changes format.",
    )
    parser.add_argument("which", choices=list(FORMATS))
    parser.set_defaults(run=schema)


def schema(args: argparse.Namespace) -> int:
    """Print the schema on stdout."""
    model = FORMATS[args.which]
    sys.stdout.write(json.dumps(model.model_json_schema(), indent=2) + "\n")
    return ExitCode.OK
