"""Every validation defect has its own bad file, a message that locates it, and exit code 2."""

from __future__ import annotations

import pytest
from conftest import DATA, run_cli

from gpuplan import InputError, read_instance

BAD = DATA / "bad"

#: file name -> (JSON path, words the message must contain)
EXPECTED: dict[str, tuple[str, str]] = {
    "malformed_json.json": ("", "malformed JSON at line 33, column 3"),
    "malformed_yaml.yaml": ("", "malformed YAML at line 3, column 4"),
    "missing_jobs.json": ("jobs", "required field is missing"),
    "missing_duration.json": ("jobs[2].duration_s (job 'eval')", "required field is missing"),
    "unknown_field.json": ("jobs[1].gpu_count (job 'train')", "unknown field"),
    "wrong_type_gang_string.json": ("jobs[1].gpus (job 'train')", "valid integer"),
    "wrong_type_gang_bool.json": ("jobs[1].gpus (job 'train')", "valid integer"),
    "negative_release.json": ("jobs[3].release_s (job 'sweep-a')", "greater than or equal to 0"),
    "zero_duration.json": ("jobs[0].duration_s.A100 (job 'prep')", "greater than 0"),
    "zero_capacity.json": ("gpu_types[1].capacity.memory_gib (GPU type 'L4')", "greater than 0"),
    "zero_gang.json": ("jobs[0].gpus (job 'prep')", "greater than 0"),
    "nan_demand.json": ("jobs[0].demand.memory_gib (job 'prep')", "finite number"),
    "empty_jobs.json": ("jobs", "at least 1 item"),
    "duplicate_job_id.json": ("jobs[3].id", "duplicate id 'prep' (also jobs[0])"),
    "duplicate_gpu_type_id.json": ("gpu_types[1].id", "duplicate id 'A100'"),
    "duplicate_node_id.json": ("nodes[1].id", "duplicate id 'n1'"),
    "unknown_type_in_node.json": ("nodes[1].gpus.H100", "unknown GPU type 'H100'"),
    "unknown_type_in_duration.json": ("jobs[0].duration_s.V100", "unknown GPU type 'V100'"),
    "unknown_allowed_type.json": ("jobs[4].allowed_types[0]", "unknown GPU type 'T4'"),
    "unknown_dependency.json": ("jobs[2].depends_on[0]", "unknown job 'trian'"),
    "unknown_resource.json": ("jobs[0].demand.vram_gib", "unknown resource 'vram_gib'"),
    "mismatched_resources.json": ("gpu_types[1].capacity", "every GPU type names the same"),
    "dependency_cycle.json": ("jobs", "dependency cycle: 'prep' -> 'train' -> 'eval' -> 'prep'"),
    "self_dependency.json": ("jobs", "dependency cycle: 'sweep-a' -> 'sweep-a'"),
    "job_fits_no_type.json": (
        "jobs[2].demand.memory_gib",
        "job 'eval' fits no GPU type: it needs memory_gib 96 per GPU, the largest capacity "
        "among its types is 80 (A100)",
    ),
    "job_fits_no_type_mixed.json": (
        "jobs[0].demand",
        "A100 lacks compute (1.5 > 1), L4 lacks memory_gib (30 > 24)",
    ),
    "no_duration_for_allowed_types.json": ("jobs[1].duration_s", "none of its allowed GPU types"),
    "gang_too_large.json": (
        "jobs[3].gpus",
        "needs a gang of 6 GPUs on one node, but no node has more than 4",
    ),
    "unknown_objective.json": ("objective.kind", "unknown objective 'fastest'"),
    "deadline_before_release.json": ("jobs[3].deadline_s", "not after release 50 s"),
    "cost_missing.json": ("jobs[0].cost", "needs the cost of job 'prep' on GPU type 'L4'"),
    "unsupported_format_version.json": ("format_version", "unsupported format version 2"),
}


def test_every_bad_file_has_an_expectation() -> None:
    """A bad file without an expected message would test nothing: keep the table complete."""
    assert sorted(p.name for p in BAD.iterdir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_file_message(name: str) -> None:
    """The library error names the file, the JSON path and the problem."""
    path, words = EXPECTED[name]
    with pytest.raises(InputError) as caught:
        read_instance(BAD / name)
    error = caught.value
    assert error.source == str(BAD / name)
    assert error.path == path
    assert words in error.message
    assert str(error).startswith(f"{BAD / name}: ")


@pytest.mark.parametrize("name", ["dependency_cycle.json", "malformed_json.json", "zero_gang.json"])
def test_bad_file_cli_exit_code(name: str) -> None:
    """Through the CLI a bad file gives exit code 2 and one clear line, never a traceback."""
    for command in ("validate", "solve"):
        result = run_cli(command, BAD / name)
        assert result.returncode == 2
        assert "Traceback" not in result.stderr
        assert result.stderr.startswith(f"error: {BAD / name}: ")
        assert EXPECTED[name][1] in result.stderr


def test_missing_file() -> None:
    """A file that does not exist is bad input, named as such."""
    with pytest.raises(InputError, match="file not found"):
        read_instance(DATA / "no_such_file.json")
