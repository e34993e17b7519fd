"""Tests of the ``gpuplan`` command line, one module per command.

A package, so that its conftest does not shadow the shared one.
"""
