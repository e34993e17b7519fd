"""gpuplan rl train and --policy rl:DIR from the command line; the extra's absence."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import pytest
from conftest import BENCHMARKS, Gpuplan

LUBLIN = BENCHMARKS / "hpc-traces" / "lublin_256.swf.gz"


def test_train_then_simulate_with_the_policy(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A trained folder runs under the protocol like a heuristic, every sequence verified."""
    folder = tmp_path / "policy"
    ran = gpuplan("rl", "train", "--env", "ordering", "--trace", LUBLIN, "--steps", "600",
                  "--length", "64", "-o", folder)
    assert ran.code == 0, ran.err
    assert {p.name for p in folder.iterdir()} >= {"policy.json", "weights.pt", "curve.csv"}
    training = json.loads((folder / "policy.json").read_text())["training"]
    assert training["held_out_starts"][:2] == [1981, 2756] and training["steps"] >= 600
    out = tmp_path / "r.json"
    ran = gpuplan("hpc", LUBLIN, "--policy", f"rl:{folder}",
                  "--sequences", "2", "--length", "128", "-o", out)
    assert ran.code == 0, ran.err
    report = json.loads(out.read_text())
    assert report["policy"] == f"rl:{folder}" and all(r["verified"] for r in report["runs"])


def test_crafted_policy_is_exit_2_and_writes_nothing(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A policy folder whose weights are a pickle is refused at the command line."""
    folder = tmp_path / "policy"
    assert gpuplan("rl", "train", "--env", "ordering", "--trace", LUBLIN, "--steps", "100",
                   "--length", "32", "-o", folder).code == 0
    (folder / "weights.pt").write_bytes(pickle.dumps(print))
    out = tmp_path / "r.json"
    ran = gpuplan("hpc", LUBLIN, "--policy", f"rl:{folder}",
                  "-o", out)
    assert ran.code == 2 and "refused" in ran.err and not out.exists()


@pytest.mark.parametrize(("args", "words"), [
    (("--env", "ordering", "--trace", "x.json"), "trains on an SWF trace"),
    (("--env", "ordering", "--trace", str(LUBLIN), "--nodes", "n.csv"),
     "--nodes: is not a flag of --env ordering"),
    (("--env", "placement", "--trace", "p.csv", "--backfill"),
     "--backfill: is not a flag of --env placement"),
    (("--env", "placement", "--trace", "p.csv"), "needs the openb node list"),
])
def test_train_refuses_flags_of_the_other_env(gpuplan: Gpuplan, tmp_path: Path,
                                              args: tuple[str, ...], words: str) -> None:
    """Each environment takes its own flags; others are exit 2, named."""
    ran = gpuplan("rl", "train", *args, "--steps", "10", "-o", tmp_path / "p")
    assert ran.code == 2 and words in ran.err, ran.err


def test_without_the_extra_rl_says_how_to_install(gpuplan: Gpuplan,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """With the extra missing, gpuplan rl and rl:DIR exit 2 naming pip install '.[rl]'."""
    import gpuplan.rl as rl

    monkeypatch.setattr(rl, "missing", lambda: ["torch"])
    ran = gpuplan("rl", "train", "--env", "ordering", "--trace", LUBLIN, "--steps", "10",
                  "-o", "p")
    assert ran.code == 2 and "pip install -e '.[rl]'" in ran.err
    ran = gpuplan("rl")
    assert ran.code == 2 and "optional extra 'rl'" in ran.err
    ran = gpuplan("hpc", LUBLIN, "--policy", "rl:p")
    assert ran.code == 2 and "--policy rl:DIR: needs the optional extra" in ran.err


def test_placement_policy_trains_and_replays_like_fgds(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A trained placement folder replays under gpuplan replay fgd beside FGD, verified."""
    openb = Path(__file__).resolve().parent.parent / "data" / "openb"
    folder = tmp_path / "placement"
    ran = gpuplan("rl", "train", "--env", "placement", "--trace", openb / "pods.csv",
                  "--nodes", openb / "nodes.csv", "--steps", "64", "-o", folder)
    assert ran.code == 0, ran.err
    assert json.loads((folder / "policy.json").read_text())["env"] == "placement"
    out = tmp_path / "replays"
    ran = gpuplan("replay", "fgd", openb / "pods.csv", "--nodes", openb / "nodes.csv",
                  "--policy", f"rl:{folder},fgd", "--seeds", "42:44", "-o", out,
                  "--workers", "1")
    assert ran.code == 0, ran.err
    assert (out / "pods" / "rl-placement-42.json").exists()
    ran = gpuplan("replay", "fgd", openb / "pods.csv", "--nodes", openb / "nodes.csv",
                  "--policy", f"rl:{tmp_path / 'none'}", "-o", tmp_path / "x", "--workers", "1")
    assert ran.code == 2 and "not a policy folder" in ran.err


def test_a_failed_or_stopped_training_leaves_no_folder_it_made(
        gpuplan: Gpuplan, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Training refused on its input, or stopped by Ctrl-C, leaves no empty policy folder.

    The parents it made go too; a folder the user had stays.
    """
    import gpuplan.rl.train as training

    made = tmp_path / "policies" / "p"
    ran = gpuplan("rl", "train", "--env", "ordering", "--trace", tmp_path / "x.json",
                  "--steps", "10", "-o", made)
    assert ran.code == 2 and not (tmp_path / "policies").exists()

    def stopped(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "train", stopped)
    ran = gpuplan("rl", "train", "--env", "ordering", "--trace", LUBLIN, "--steps", "10",
                  "--length", "32", "-o", made)
    assert ran.code == 130 and not (tmp_path / "policies").exists()
    had = tmp_path / "had"
    had.mkdir()
    ran = gpuplan("rl", "train", "--env", "ordering", "--trace", LUBLIN, "--steps", "10",
                  "--length", "32", "-o", had)
    assert ran.code == 130 and had.is_dir()


def test_the_training_table_shows_values_not_python_reprs(gpuplan: Gpuplan,
                                                          tmp_path: Path) -> None:
    """The summary says yes/no, joins lists and words the validation; no None, [..], {..}.

    It used to print the record's Python reprs: False, None, a list and a dict.
    """
    ran = gpuplan("rl", "train", "--env", "ordering", "--trace", LUBLIN, "--steps", "100",
                  "--length", "32", "-o", tmp_path / "policy")
    assert ran.code == 0, ran.err
    assert re.search(r"backfill +│ no ", ran.err), ran.err
    assert re.search(r"held out starts +│ 1981, 2756, 4299", ran.err), ran.err
    assert re.search(r"wall time +│ [0-9.]+ s ", ran.err), ran.err
    assert re.search(r"validation +│ weights from step 128, score [0-9.]+", ran.err), ran.err
    assert not re.search(r"None|False|True|[\[\]{}']", ran.err), ran.err
