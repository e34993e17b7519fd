"""Sphinx configuration of gpuplan's documentation site.

Build it (into a folder outside the repository) with::

    .venv/bin/python -m sphinx -W --keep-going -b html docs /tmp/gpuplan-docs

The pages are Markdown (myst-parser); the API reference comes from the docstrings
(autodoc + napoleon, numpy style); the tables of methods, backends, simulator parts and
sharing policies, and the JSON Schemas, are generated from the code by the local extension
``docs/_ext/gpuplan_docs.py``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
if importlib.util.find_spec("gpuplan") is None:  # not installed: use the checkout
    sys.path.insert(0, str(ROOT))

from gpuplan import __version__  # noqa: E402

project = "gpuplan"
author = "the gpuplan developers"
copyright = "gpuplan developers, MIT licence"
release = __version__
version = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "gpuplan_docs",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "**/.ipynb_checkpoints"]

# Markdown: heading anchors for links such as formats/instance.md#limits.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# Docstrings are numpydoc with Sphinx roles.
napoleon_google_docstring = False
napoleon_numpy_docstring = True
# Attributes as :ivar: fields, so they never describe an attribute twice beside autodoc's.
napoleon_use_ivar = True
autodoc_member_order = "bysource"
# gpuplan.rl needs the optional extra; without it its pages are built from mocks.
autodoc_mock_imports = [name for name in ("gymnasium", "stable_baselines3", "sb3_contrib",
                                          "torch")
                        if importlib.util.find_spec(name) is None]
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "signature"

# Flags are written --flag: never turn "--" into a dash.
smartquotes = False
nitpicky = False
suppress_warnings: list[str] = []

# furo comes with the test extra; Sphinx's default theme otherwise.
html_theme = "furo" if importlib.util.find_spec("furo") is not None else "alabaster"
html_title = f"gpuplan {release}"
html_static_path = ["_static"]
html_css_files = ["gpuplan.css"]
