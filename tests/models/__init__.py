"""Tests of gpuplan.models."""
