"""The pair family: a stereotype / anti-stereotype pair decided per item (Indian-BhED,
CrowS-derived pairs, Indic-Bias identity pairs, judged generations).

``spec.py`` declares it; ``compare.py`` is its drift comparator, ``quality.py`` its
benchmark-data suite, ``table.py`` its ``run`` and ``show`` tables and ``scoring.py`` the
drivers' hooks. The rest of its code (loaders, metrics, planners, report sections, drift
lines) still lives in the rooms,
where the monitor began with it; it moves here piece by piece, as the association and
choice-QA families did.
"""
