"""A criterion's rate per theme and overall: labels and judgments read (``inputs``), design
weights (``weights``), human-only, judge-only and PPI++ per theme (``report``; per category for a
criterion with categories, ``categorical``), the parameters they take (``params``), stored as
dated snapshots (``snapshots``, as JSON by ``codec``); and what the report adds on top: the small
themes shrunk toward the judge (``small_themes``) and what more labels buy (``planning``).
The arithmetic on arrays is ``inference``'s.
"""
