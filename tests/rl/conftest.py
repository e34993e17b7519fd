"""The RL tests need the optional extra; without it they skip, saying how to install it."""

from __future__ import annotations

import pytest

from gpuplan.rl import INSTALL, missing

if missing():
    pytest.skip(f"the optional extra 'rl' is not installed ({', '.join(missing())}): "
                f"{INSTALL}", allow_module_level=True)
