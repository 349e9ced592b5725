"""How far raters can be trusted: agreement between two raters (``agreement``: Cohen's kappa) and
among several (``krippendorff``), the correlation of repeated answers to one question (``icc``),
a judge against the human labels (``judge_alignment``) and its confidence recalibrated on them
(``calibration``)."""
