"""The input of the evaluation pages, checked: report parameters and two campaigns compared
(``reports``), judge runs (``runs``), imports (``imports``), the measures' pages (``measures``)
and the samples drawn by the judge (``designs``); the fields they share (``fields``).

A rule the domain owns (which methods exist, what alpha may be, which judge a name means) is
checked by the domain function, whose error carries its field (``EstimateError.field``); the
form places the message on that field. Numbers are read as sent, never localised.
"""
