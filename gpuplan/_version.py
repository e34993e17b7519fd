"""The installed version, in a module of its own so that any module may import it."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("gpuplan")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
