"""The human annotation workflow: modes and stages, the work queue with leases, labels and undo.

- :mod:`annotation.workflow.rules`: stages per mode, slots per stage, roles, WorkflowError.
- :mod:`annotation.workflow.state`: the final label and a unit's state, derived from the
  append-only label history.
- :mod:`annotation.workflow.queue`: ``next_unit`` under an expiring lease, ``skip``, progress.
- :mod:`annotation.workflow.labels`: ``submit_label`` (idempotent by request key), ``undo_last``.

Nothing here reads the judge's output: the ``evaluation`` app sits above this one.
"""

from __future__ import annotations

from annotation.workflow.labels import submit_label, undo_last
from annotation.workflow.queue import Queue, StageProgress, my_queues, next_unit, skip, stage_progress
from annotation.workflow.rules import STAGE_ROLE, WorkflowError, capacity, stages_for
from annotation.workflow.state import CurrentLabel, Status, UnitState, final_labels, unit_state, unit_states

__all__ = [
    "STAGE_ROLE",
    "CurrentLabel",
    "Queue",
    "StageProgress",
    "Status",
    "UnitState",
    "WorkflowError",
    "capacity",
    "final_labels",
    "my_queues",
    "next_unit",
    "skip",
    "stage_progress",
    "stages_for",
    "submit_label",
    "undo_last",
    "unit_state",
    "unit_states",
]
