"""What a reader gets of the estimates: which judge a report reads (``judge_choice``), the report
read with its provenance (``read``), the release gate (``gate``), and its files for people: the
workbook, CSV and text tables (``exports``, ``categorical_files``) and the SVG charts
(``charts``).
"""
