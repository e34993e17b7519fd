"""Tests of gpuplan.methods."""
