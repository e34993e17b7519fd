"""Building blocks the methods share: LNS, plan encodings, LP rounding, round plans, bounds."""
