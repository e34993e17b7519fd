"""The types every layer shares, importing nothing above them.

Instances, results, objectives, run settings and option declarations, budgets and
limits, statuses and tolerances, errors, the schedule format and the file helpers.
"""
