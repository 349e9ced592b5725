"""One question each about the assistant, its retrieval, its judge or the people: automatic
metrics (``automatic``), stability across repetitions (``stability``), versions compared
(``comparison``), citation precision beside recall (``citations``), the judge's calibration
(``calibration``), evidence coverage and retrieval ranking (``evidence``, ``coverage``,
``retrieval``), and the annotators at a glance (``annotators``, ``annotator_stats``).
"""
