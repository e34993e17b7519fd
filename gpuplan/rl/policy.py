"""Policy networks and policy folders: weights plus a JSON description, loaded safely.

The ordering and placement policies score each row of their observation (a waiting job,
a candidate GPU) with one small network shared by all rows, RLScheduler's kernel: a
policy that does not depend on where a job sits in the window, and learns from few
samples. The critic reads the rows' mean hidden features. :class:`KernelPolicy` is that
network as a MaskablePPO policy.

A policy folder holds ``policy.json`` (:class:`PolicyDescription`: what environment, its
window and features, the network's sizes, how it was trained) and ``weights.pt``, the
tensors alone, read with ``torch.load(weights_only=True)``: a folder from elsewhere is
data, and a file holding anything but tensors (a crafted pickle) is refused, never run.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from torch import nn

from gpuplan.core.errors import InputError, json_path, validation_message
from gpuplan.core.files import (
    parse_json,
    read_bytes,
    read_text,
    write_bytes_atomic,
    write_text_atomic,
)

#: The file names of a policy folder.
DESCRIPTION_FILE, WEIGHTS_FILE = "policy.json", "weights.pt"
#: The format tag of ``policy.json``.
FORMAT = "gpuplan-rl-policy/1"


class JobKernel(nn.Module):
    """Scores rows with one shared network; the critic reads their mean hidden features.

    Parameters
    ----------
    rows, features
        The observation's shape.
    hidden
        Widths of the shared layers (RLScheduler's kernel: 32, 16, 8).
    """

    def __init__(self, rows: int, features: int, hidden: Sequence[int]) -> None:
        super().__init__()
        self.rows, self.features = rows, features
        layers: list[nn.Module] = []
        width = features
        for size in hidden:
            layers += [nn.Linear(width, size), nn.ReLU()]
            width = size
        self.shared = nn.Sequential(*layers)
        self.score = nn.Linear(width, 1)
        self.critic = nn.Sequential(nn.Linear(width + features, 64), nn.ReLU(),
                                    nn.Linear(64, 32), nn.ReLU())
        self.latent_dim_pi = rows
        self.latent_dim_vf = 32

    def _hidden(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rows = obs.reshape(-1, self.rows, self.features)
        return rows, self.shared(rows)

    def forward_actor(self, obs: torch.Tensor) -> torch.Tensor:
        """One logit per row."""
        _, hidden = self._hidden(obs)
        logits: torch.Tensor = self.score(hidden).squeeze(-1)
        return logits

    def forward_critic(self, obs: torch.Tensor) -> torch.Tensor:
        """The critic's latent from the rows' mean features."""
        rows, hidden = self._hidden(obs)
        latent: torch.Tensor = self.critic(torch.cat([hidden.mean(dim=1), rows.mean(dim=1)],
                                                     dim=-1))
        return latent

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Actor and critic latents."""
        return self.forward_actor(obs), self.forward_critic(obs)


class KernelPolicy(MaskableActorCriticPolicy):
    """MaskablePPO's actor-critic with :class:`JobKernel` (logits straight from the kernel)."""

    def __init__(self, *args: Any, hidden: Sequence[int] = (32, 16, 8),
                 **kwargs: Any) -> None:
        self.hidden = tuple(hidden)
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        shape = self.observation_space.shape
        assert shape is not None and len(shape) == 2
        # SB3 declares an MlpExtractor; any module with its two forwards and latent sizes
        # serves.
        self.mlp_extractor = JobKernel(shape[0], shape[1], self.hidden)  # type: ignore[assignment]

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        # The kernel's scores are the logits: no layer mixes rows.
        self.action_net = nn.Identity()
        kernel = self.mlp_extractor
        assert isinstance(kernel, JobKernel)
        # A near-uniform first policy, as SB3 initialises its action layer.
        nn.init.orthogonal_(kernel.score.weight, gain=0.01)
        nn.init.zeros_(kernel.score.bias)
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1),  # type: ignore[call-arg]
                                              **self.optimizer_kwargs)


class PolicyDescription(BaseModel):
    """``policy.json``: what a policy folder holds.

    Attributes
    ----------
    format
        :data:`FORMAT`.
    env
        ``ordering`` or ``placement``.
    rows, features
        The observation's shape, with the features' names.
    hidden
        Widths of the kernel's shared layers.
    training
        How it was trained (trace, steps, seed, reward, minutes...), for reports.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: str = Field(pattern=f"^{FORMAT}$")
    env: str = Field(pattern="^(ordering|placement)$")
    rows: int = Field(ge=1, le=100_000)
    features: list[str] = Field(min_length=1, max_length=1000)
    hidden: list[int] = Field(min_length=1, max_length=8)
    training: dict[str, Any] = Field(default_factory=dict)


def build_policy(description: PolicyDescription) -> KernelPolicy:
    """A fresh policy of the described shape."""
    shape = (description.rows, len(description.features))
    observation = spaces.Box(0.0, 1.0, shape, dtype=np.float32)
    action = spaces.Discrete(description.rows)
    return KernelPolicy(observation, action, lambda _: 0.0, hidden=description.hidden)


def save_policy(policy: KernelPolicy, description: PolicyDescription, folder: Path) -> None:
    """Write a policy folder: the description and the weights (tensors only), atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save({k: v.detach().cpu() for k, v in policy.state_dict().items()}, buffer)
    write_bytes_atomic(folder / WEIGHTS_FILE, buffer.getvalue())
    write_text_atomic(folder / DESCRIPTION_FILE,
                      json.dumps(description.model_dump(), indent=1) + "\n")


def read_description(folder: Path) -> PolicyDescription:
    """Read and check ``policy.json``.

    Raises
    ------
    InputError
        Naming the file and the field at fault.
    """
    path = folder / DESCRIPTION_FILE
    data = parse_json(read_text(path), str(path))
    try:
        return PolicyDescription.model_validate(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        raise InputError(str(path), json_path(tuple(error["loc"])),
                         validation_message(error)) from None


def load_policy(folder: str | Path, env: str) -> tuple[KernelPolicy, PolicyDescription]:
    """Load a policy folder for an environment, without unpickling anything.

    Raises
    ------
    InputError
        Naming the folder or file: missing, not a regular file (a pipe, a device), too
        large or empty, a description of another environment or of a bad shape, or
        weights that are not tensors of the described network.
    """
    where = Path(folder)
    if not where.is_dir():
        raise InputError(str(folder), "", "not a policy folder (policy.json and weights.pt "
                         "from gpuplan rl train)")
    description = read_description(where)
    if description.env != env:
        raise InputError(str(where / DESCRIPTION_FILE), "env", f"the policy is for the "
                         f"{description.env} environment, not {env}")
    path = where / WEIGHTS_FILE
    # Read as every input is (a pipe or a device refused, the size capped), then parsed
    # from memory: the file torch parses is the one that was checked.
    packed = read_bytes(path)
    if not packed:
        raise InputError(str(path), "", "the file is empty; expected the tensors gpuplan rl "
                         "train saves")
    try:
        state = torch.load(io.BytesIO(packed), map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds; each means "refused"
        raise InputError(str(path), "", "refused: not a file of tensors alone (policy "
                         f"weights are loaded with weights_only=True): {exc}") from None
    policy = build_policy(description)
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor)
                                              for v in state.values()):
        raise InputError(str(path), "", "expected a mapping of tensor names to tensors")
    try:
        policy.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        first = str(exc).splitlines()[0]
        raise InputError(str(path), "", f"the weights do not fit the network policy.json "
                         f"describes: {first}") from None
    policy.set_training_mode(False)
    return policy, description


def row_mask(rows: int, filled: int) -> np.ndarray:
    """The action mask of a window of ``rows`` whose first ``filled`` rows hold a choice."""
    mask = np.zeros(rows, dtype=bool)
    mask[:filled] = True
    return mask


def best_rows(policy: KernelPolicy, obs: np.ndarray, mask: np.ndarray) -> int:
    """The unmasked row of the highest logit (the policy's deterministic choice)."""
    with torch.no_grad():
        kernel = policy.mlp_extractor
        assert isinstance(kernel, JobKernel)
        logits = kernel.forward_actor(torch.as_tensor(obs[None], dtype=torch.float32))[0]
    scores = logits.numpy().astype(np.float64)
    scores[~mask] = -np.inf
    return int(np.argmax(scores))
