"""The pair family: a stereotype / anti-stereotype pair decided per item (Indian-BhED,
CrowS-derived pairs, Indic-Bias identity pairs, judged generations).

``spec.py`` declares it and ``compare.py`` is its drift comparator. The rest of its code
(its metrics, planners, report sections and CLI tables) still lives in the rooms, where
the monitor began with it; it moves here piece by piece, as the association and
choice-QA families did.
"""
