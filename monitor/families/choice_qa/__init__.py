"""The choice-QA family: multiple-choice questions with an 'unknown' option (BBQ, BharatBBQ).

Everything particular to this family lives in this folder; ``family.py`` declares it (``FAMILY``).
"""

NAME = "choice-qa"  # ``FAMILY.name``: the family its comparisons and measures name
