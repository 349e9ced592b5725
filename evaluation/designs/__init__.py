"""Human samples chosen with the judge's help (the annotators' side cannot read the judge): the
sample by the judge's confidence (``active``), its budget split across themes and verdicts
(``budget_split``), and the anytime mode's batches and per-theme status (``anytime``). Their
inclusion probabilities are ``inference.designs.inclusion``'s; the estimates read them through
``evaluation.estimates.weights``.
"""
