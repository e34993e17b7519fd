"""Every validation defect has its own bad file, a message that locates it, and exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DATA, run_cli

from gpuplan import InputError, read_instance
from gpuplan.cli import main

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
    "zero_duration.json": ("jobs[0].duration_s.A100 (job 'prep')",
                           "greater than or equal to 0.001"),
    "zero_capacity.json": ("gpu_types[1].capacity.memory_gib (GPU type 'L4')", "greater than 0"),
    "zero_gang.json": ("jobs[0] (job 'prep')", "gpus is 0 (a CPU-only job)"),
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
    # The all-types key of a bare number is no GPU type a file may name.
    "all_types_key.json": ("jobs[0].duration_s (job 'prep')", "'*' is not a GPU type id"),
    "all_types_gpu_type.json": ("gpu_types[1].id (GPU type '*')", "may not be a GPU type id"),
    # Ranges: float seconds must resolve every plan, and counts keep arrays small.
    "duration_too_long.json": ("jobs[3].duration_s.L4 (job 'sweep-a')",
                               "less than or equal to 1000000000"),
    "release_too_late.json": ("jobs[3].release_s (job 'sweep-a')",
                              "less than or equal to 1000000000"),
    "weight_too_large.json": ("jobs[1].weight (job 'train')", "less than or equal to 1000000000"),
    "node_too_many_gpus.json": ("nodes[0].gpus.A100 (node 'n1')",
                                "less than or equal to 100000"),
    "fleet_too_large.json": ("nodes", "the nodes hold 120000 GPUs; gpuplan plans at most 100000"),
    "huge_integer.json": ("jobs[1].gpus (job 'train')", "less than or equal to 100000"),
    "integer_too_long.json": ("", "integer at line 47, column 14 has more than 100 digits"),
    "duplicate_key.json": ("jobs[1]", "key 'gpus' is given 2 times in one object (2 and 4)"),
    "yaml_alias.yaml": ("", "YAML at line 2, column 10: aliases (*a0) are not allowed"),
    "duplicate_key.yaml": ("", "YAML at line 40, column 3: key 'weight' is given twice in one "
                           "mapping (lines 30 and 40)"),
    # The cluster's shape: multi-node gangs, topology, whole GPUs.
    "gpus_per_node_not_divisor.json": ("jobs[1].gpus_per_node (job 'train-fleet')",
                                       "gpus 12 is not a multiple of gpus_per_node 8"),
    "gpus_per_node_cpu_only.json": ("jobs[6].gpus_per_node (job 'preprocess')",
                                    "a CPU-only job (gpus 0) has no GPUs to spread"),
    "too_few_nodes.json": ("jobs[1].gpus_per_node", "needs 5 nodes with 8 GPUs of one type "
                           "(gpus 40, gpus_per_node 8), but only 4 node(s) hold 8 GPUs"),
    "gang_larger_than_domain.json": ("jobs[1].topology.required",
                                     "requires its gang within one 'rack' (required) and needs "
                                     "4 nodes with 8 GPUs"),
    "unlabelled_node.json": ("jobs[0].topology.required",
                             "node 'b2' holds GPUs it may use and is in no 'rack'"),
    "unknown_topology_level.json": ("nodes[0].topology.pod", "unknown topology level 'pod'"),
    "preferred_without_slowdown.json": ("jobs[2].topology (job 'tune')",
                                        "preferred and spread_slowdown go together"),
    "load_balance_of_whole_gpus.json": ("gpu_types[0].sharing",
                                        "GPU type 'H100' is held whole"),
    # Partitions, accounts and their GPU limits.
    "unknown_partition.json": ("jobs[4].partition", "unknown partition 'inference' "
                               "(partitions: train, infer, mixed)"),
    "partition_unknown_node.json": ("partitions.infer[1]", "unknown node 'l3'"),
    "partition_node_twice.json": ("partitions.train[2]", "node 'a1' is listed twice in "
                                  "partition 'train'"),
    "unknown_qos.json": ("jobs[8].qos", "unknown QOS 'high' (QOS: urgent)"),
    "unknown_account.json": ("jobs[6].account", "unknown account 'vison' (accounts: nlp, "
                             "vision, ops)"),
    "gang_over_limit.json": ("jobs[6].account", "job 'vision-3' needs 2 GPUs at once, but "
                             "its account 'vision' lets its jobs hold at most 1 at a time "
                             "(accounts.vision.gpus): no plan can run it"),
    "partition_too_small.json": ("jobs[3].partition", "job 'nlp-4' runs in partition 'mixed' "
                                 "(nodes l1, l2), where no node has 4 GPU(s) of a type it may "
                                 "use"),
    # Elastic jobs: their counts, speed tables, work and due dates.
    "elastic_missing_count.json": ("jobs[0].elastic.speed.A100.8", "job 'resnet50-b128' has "
                                   "no speed for 8 GPUs of A100"),
    "elastic_zero_speed.json": ("jobs[1].elastic.speed.A100.16 (job 'bert-b64')",
                                "greater than 0"),
    "elastic_reference_not_a_count.json": ("jobs[3].gpus", "job 'vgg16-b64' asks for 6 GPUs "
                                           "(its reference count), which is not one of its "
                                           "elastic GPU counts (1, 2, 4, 8, 16)"),
    "elastic_count_without_layout.json": ("jobs[0].elastic.gpus", "may run on 12 GPUs, but "
                                          "no node layout holds 12 GPUs"),
    "elastic_due_before_release.json": ("jobs[4].due_s", "job 'gpt2-b128' is due at 800 s, "
                                        "before its release at 900 s"),
    "elastic_with_duration.json": ("jobs[0].duration_s (job 'resnet50-b128')",
                                   "leave duration_s out"),
    "elastic_work_twice.json": ("jobs[1].elastic (job 'bert-b64')",
                                "give the job's work as work (iterations) or as work_s"),
    "elastic_unknown_count.json": ("jobs[5].elastic.speed.A100.16",
                                   "'16' is not one of its GPU counts (1, 2, 4, 8)"),
    "elastic_zero_work.json": ("jobs[1].elastic.work (job 'bert-b64')", "greater than 0"),
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


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_bad_file_is_exit_2_in_the_cli(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Each bad file, through the command line's own entry, is exit 2 and one located line."""
    assert main(["validate", str(BAD / name)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {BAD / name}: ") and EXPECTED[name][1] in err
    assert "Traceback" not in err and "internal error" not in err


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_deep_nesting_is_bad_input(tmp_path: Path, suffix: str) -> None:
    """A 100,000-deep nested document is exit-2 input, not a crash of the parser."""
    path = tmp_path / f"deep{suffix}"
    path.write_text('{"jobs": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(InputError, match="nested more than 64 levels deep"):
        read_instance(path)


def test_nesting_past_the_limit_names_where(tmp_path: Path) -> None:
    """Nesting the JSON parser copes with but past the format's limit is refused with its path."""
    path = tmp_path / "deep.json"
    path.write_text('{"jobs": [' + "[" * 80 + "]" * 80 + "]}")
    with pytest.raises(InputError, match="nested more than 64") as caught:
        read_instance(path)
    assert caught.value.path.startswith("jobs[0][0]")


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
