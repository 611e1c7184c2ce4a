"""The choice-QA family: multiple-choice questions with an 'unknown' option (BBQ, BharatBBQ).

Everything particular to this family lives in this folder; ``spec.py`` declares it.
"""
