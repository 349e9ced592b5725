"""Round trips with the annotation tools teams already run, and two more exports.

- ``records``: what an imported file says, tool-neutral (labels, predictions, where they are).
- ``vocabulary``: choice names (``yes``/``no``, ``supported``/``unsupported``...) to 0/1 and back.
- ``label_studio``, ``argilla``: each tool's JSON read into records, and a campaign written out.
- ``loading``: records checked against a campaign and written, all or nothing.
- ``ares``: a report with the keys ARES gives its results; ``parquet``: units and labels as Parquet.
"""
