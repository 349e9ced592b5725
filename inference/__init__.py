"""The statistics on arrays, without Django: estimators and their intervals, the designs' maths.

One module per family, as ``ppi_py`` is laid out: arrays in, an ``intervals.Interval`` out. Both
apps call it; it imports neither (``tests/test_layers.py``).
"""
