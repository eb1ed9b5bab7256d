"""A/B(/C) comparisons: the same seeded traffic on each arm, verdicts with confidence."""
