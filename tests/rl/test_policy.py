"""Policy folders: saved as tensors plus JSON, loaded without ever unpickling code."""

from __future__ import annotations

import json
import os
import pickle
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from core.test_files import at_most, device_as, pipe_in

from gpuplan.core.errors import InputError
from gpuplan.rl.ordering import FEATURES
from gpuplan.rl.policy import (
    DESCRIPTION_FILE,
    FORMAT,
    WEIGHTS_FILE,
    PolicyDescription,
    best_rows,
    build_policy,
    load_policy,
    save_policy,
)

DESCRIPTION = PolicyDescription(format=FORMAT, env="ordering", rows=8, features=list(FEATURES),
                                hidden=[16, 8])


def saved(folder: Path) -> Path:
    """A fresh policy saved in ``folder``."""
    save_policy(build_policy(DESCRIPTION), DESCRIPTION, folder)
    return folder


class _Exploit:
    """Unpickling this would create a file: proof that code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def test_saved_policy_loads_back_with_the_same_choices(tmp_path: Path) -> None:
    """Weights round-trip: the loaded policy picks the same rows."""
    policy = build_policy(DESCRIPTION)
    save_policy(policy, DESCRIPTION, tmp_path)
    loaded, description = load_policy(tmp_path, "ordering")
    assert description == DESCRIPTION
    rng = np.random.default_rng(0)
    for _ in range(20):
        obs = rng.random((8, len(FEATURES))).astype(np.float32)
        mask = rng.random(8) < 0.6
        mask[0] = True
        assert best_rows(loaded, obs, mask) == best_rows(policy, obs, mask)
        assert mask[best_rows(loaded, obs, mask)]


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_a_crafted_pickle_is_refused_and_never_run(tmp_path: Path) -> None:
    """weights.pt holding a pickled callable is refused; the callable never runs."""
    folder = saved(tmp_path / "p")
    marker = tmp_path / "pwned"
    (folder / WEIGHTS_FILE).write_bytes(pickle.dumps({"w": _Exploit(marker)}))
    with pytest.raises(InputError, match="refused"):
        load_policy(folder, "ordering")
    assert not marker.exists()
    torch.save({"w": _Exploit(marker)}, folder / WEIGHTS_FILE)
    marker.unlink(missing_ok=True)
    with pytest.raises(InputError, match="refused"):
        load_policy(folder, "ordering")
    assert not marker.exists()


@pytest.mark.parametrize(("edit", "words"), [
    (lambda d: d.update(env="placement"), "for the placement environment"),
    (lambda d: d.update(rows=0), "rows"),
    (lambda d: d.update(extra=1), "extra"),
    (lambda d: d.update(hidden=[8]), "do not fit the network"),
])
def test_bad_descriptions_are_named(tmp_path: Path, edit: object, words: str) -> None:
    """A description of another env, bad shape or stray key, or mismatched weights: exit 2."""
    folder = saved(tmp_path)
    data = json.loads((folder / DESCRIPTION_FILE).read_text())
    edit(data)  # type: ignore[operator]
    (folder / DESCRIPTION_FILE).write_text(json.dumps(data))
    with pytest.raises(InputError, match=words):
        load_policy(folder, "ordering")


def test_missing_folder_or_weights(tmp_path: Path) -> None:
    """A folder that is not there, or without weights, is named."""
    with pytest.raises(InputError, match="not a policy folder"):
        load_policy(tmp_path / "none", "ordering")
    folder = saved(tmp_path / "p")
    (folder / WEIGHTS_FILE).unlink()
    with pytest.raises(InputError, match="file not found"):
        load_policy(folder, "ordering")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX named pipes")
@pytest.mark.parametrize(("make", "kind"), [(pipe_in, "a pipe"), (device_as, "a device")],
                         ids=["pipe", "dev-zero"])
def test_weights_that_are_a_pipe_or_a_device_are_refused_at_once(
        tmp_path: Path, make: Callable[[Path, str], Path], kind: str) -> None:
    """weights.pt that is a named pipe or /dev/zero is refused before torch opens it.

    torch.load waited for a writer on a pipe for ever, and read /dev/zero until memory ran out.
    """
    folder = saved(tmp_path / "p")
    (folder / WEIGHTS_FILE).unlink()
    weights = make(folder, WEIGHTS_FILE)
    with at_most(5), pytest.raises(InputError) as caught:
        load_policy(folder, "ordering")
    assert str(caught.value) == f"{weights}: not a regular file (it is {kind})"


def test_empty_weights_say_the_file_is_empty(tmp_path: Path) -> None:
    """An empty weights.pt is named as empty, not as a refused pickle."""
    folder = saved(tmp_path / "p")
    weights = folder / WEIGHTS_FILE
    weights.write_bytes(b"")
    with pytest.raises(InputError) as caught:
        load_policy(folder, "ordering")
    assert str(caught.value).startswith(f"{weights}: the file is empty")
