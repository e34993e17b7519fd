"""Hybrid scheduling: a plan made offline, adapted as the world changes.

- :mod:`gpuplan.hybrid.residual`: what is left of a plan at time T after changes;
- :mod:`gpuplan.hybrid.replan`: re-plan it with the least disruption (``gpuplan replan``)
  and plan a fleet both ways (``gpuplan whatif``);
- :mod:`gpuplan.hybrid.compare`: what differs between two plans (``gpuplan diff``) and
  when a job runs and what holds it back (``gpuplan eta``).
"""
