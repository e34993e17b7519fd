"""Tests of gpuplan.readers."""
