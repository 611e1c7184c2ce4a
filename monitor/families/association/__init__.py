"""The association-test family: embedding association tests (WEAT on words, SEAT on
sentences), an effect size d per test with a permutation p and a bootstrap interval.

Everything particular to this family lives in this folder; ``family.py`` declares it (``FAMILY``).
"""

NAME = "association-test"  # ``FAMILY.name``: the family its comparisons and measures name
