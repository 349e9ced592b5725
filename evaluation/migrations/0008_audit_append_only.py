"""PostgreSQL keeps what was spent and what was reported as it was recorded, as it keeps labels
(annotation/0007_label_append_only):

- a report snapshot is never rewritten (any UPDATE refused);
- a judge's call, once it has ended (replied, refused by the server or lost), is final;
- a judge run's and a batch's spend (prompt and completion tokens, calls, cost) never goes down:
  the counters only add what was spent (a cost may differ from its last value by the rounding
  of a sum, a billionth of it). One writer may lower a run's totals: the recount of its batches
  and calls (``accounting.sync_counters``), which says so for its own transaction
  (``SET LOCAL attest.recount = 'on'``). A run's totals count calls still in flight at their
  estimate, and that estimate gives way to the server's usage, or to nothing for a request the
  server refused; the rows the recount reads stay as the other triggers keep them.

Deleting them stays possible, as it must when a campaign is deleted (the admin's confirmation
lists what goes); the admin edits none of them. A later data migration that must rewrite such
rows disables the trigger explicitly around its work, in the open. See docs/judge.md.
"""

from django.db import migrations

# One statement per execute: server-side binding refuses several commands in one.
CREATE = [
    """
    CREATE OR REPLACE FUNCTION evaluation_snapshot_append_only() RETURNS trigger AS $$
    BEGIN
        RAISE EXCEPTION 'report snapshots are kept as they were: UPDATE of snapshot % refused', OLD.id
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'A new report is a new snapshot; the history keeps every one.';
    END;
    $$ LANGUAGE plpgsql
    """,
    """
    CREATE OR REPLACE FUNCTION evaluation_llmcall_final() RETURNS trigger AS $$
    BEGIN
        IF OLD.outcome <> 'sent' THEN
            RAISE EXCEPTION 'a judge call that has ended is final: UPDATE of call % (%) refused',
                OLD.id, OLD.outcome
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END;
    $$ LANGUAGE plpgsql
    """,
    """
    CREATE OR REPLACE FUNCTION evaluation_spend_only_grows() RETURNS trigger AS $$
    BEGIN
        IF TG_TABLE_NAME = 'evaluation_judgerun'
            AND current_setting('attest.recount', true) IS NOT DISTINCT FROM 'on' THEN
            RETURN NEW;
        END IF;
        IF NEW.prompt_tokens < OLD.prompt_tokens
            OR NEW.completion_tokens < OLD.completion_tokens
            OR NEW.calls < OLD.calls
            OR NEW.cost < OLD.cost - 1e-9 * greatest(1.0, abs(OLD.cost)) THEN
            RAISE EXCEPTION 'spend only grows: % of % % refused (cost % to %, tokens % + % to % + %)',
                TG_OP, TG_TABLE_NAME, OLD.id, OLD.cost, NEW.cost,
                OLD.prompt_tokens, OLD.completion_tokens, NEW.prompt_tokens, NEW.completion_tokens
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END;
    $$ LANGUAGE plpgsql
    """,
    "DROP TRIGGER IF EXISTS evaluation_snapshot_append_only ON evaluation_reportsnapshot",
    """
    CREATE TRIGGER evaluation_snapshot_append_only
        BEFORE UPDATE ON evaluation_reportsnapshot
        FOR EACH ROW EXECUTE FUNCTION evaluation_snapshot_append_only()
    """,
    "DROP TRIGGER IF EXISTS evaluation_llmcall_final ON evaluation_llmcall",
    """
    CREATE TRIGGER evaluation_llmcall_final
        BEFORE UPDATE ON evaluation_llmcall
        FOR EACH ROW EXECUTE FUNCTION evaluation_llmcall_final()
    """,
    "DROP TRIGGER IF EXISTS evaluation_judgerun_spend ON evaluation_judgerun",
    """
    CREATE TRIGGER evaluation_judgerun_spend
        BEFORE UPDATE ON evaluation_judgerun
        FOR EACH ROW EXECUTE FUNCTION evaluation_spend_only_grows()
    """,
    "DROP TRIGGER IF EXISTS evaluation_judgebatch_spend ON evaluation_judgebatch",
    """
    CREATE TRIGGER evaluation_judgebatch_spend
        BEFORE UPDATE ON evaluation_judgebatch
        FOR EACH ROW EXECUTE FUNCTION evaluation_spend_only_grows()
    """,
]
DROP = [
    "DROP TRIGGER IF EXISTS evaluation_snapshot_append_only ON evaluation_reportsnapshot",
    "DROP TRIGGER IF EXISTS evaluation_llmcall_final ON evaluation_llmcall",
    "DROP TRIGGER IF EXISTS evaluation_judgerun_spend ON evaluation_judgerun",
    "DROP TRIGGER IF EXISTS evaluation_judgebatch_spend ON evaluation_judgebatch",
    "DROP FUNCTION IF EXISTS evaluation_snapshot_append_only()",
    "DROP FUNCTION IF EXISTS evaluation_llmcall_final()",
    "DROP FUNCTION IF EXISTS evaluation_spend_only_grows()",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                # No parameters: the "%" of RAISE are PL/pgSQL's, not placeholders.
                schema_editor.execute(statement, None)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0007_primary_judge"),
    ]

    operations = [migrations.RunPython(_run(CREATE), _run(DROP), elidable=False)]
