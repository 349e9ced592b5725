"""The maths of sampling designs: inclusion probabilities (``inclusion``), the split of a human
budget across themes (``allocation``) and the plan of several judges and human labels at least
cost (``judge_allocation``)."""
