"""Stratified samples of units for human annotation.

- :mod:`.design`: the design itself (K-means within each theme, m units per cluster, inclusion
  probabilities, top-ups), plain numpy and scikit-learn on ids and arrays, no database;
- :mod:`.draws`: loads the units of a criterion's level, embeds their texts
  (:mod:`annotation.sampling.embeddings`), runs the design and stores one
  :class:`~annotation.models.SampleItem` per drawn unit, inline and in one transaction;
- :mod:`.background`: the same for big campaigns, in a worker: a pending sample is recorded,
  ``annotation.jobs`` enqueues ``annotation.draw_sample`` after commit, and the task claims the
  sample (pending -> running) and records done or failed;
- :mod:`.staleness`: when a pending or running sample's run has died;
- :mod:`.reading`: a sample as JSON and per theme, for people to read.

A worker killed in the middle of a draw leaves its sample running. Nothing can tell a dead run
from a slow one except time: Celery kills a task at its hard time limit, so a run claimed longer
ago than that (plus a margin for clocks) is dead. Such a stale sample can be claimed again (the
redelivered task waits until then) and run again from the manager's page
(``annotation.jobs.request_top_up``). The claim's time is also its token: a run whose claim was
taken over writes nothing.

A top-up never discards a unit drawn before: labels live on units, so every label already made
still belongs to the sample; the kept items get their new cluster, cluster size and inclusion
probability in place.
"""
