"""Estimators of a rate and their intervals: the human labels alone and the judge's alone
(``means``), PPI++ (``ppi``), under unequal inclusion probabilities (``weighted_ppi``), with several
judges (``multi_ppi``), shrunk across themes (``shrinkage``), looked at after every batch
(``sequential``), and means with a bootstrap over questions (``bootstrap``)."""
