"""PostgreSQL keeps a criterion's held-out split as it was made: any UPDATE of its row (its seed,
its share, its date) is refused, as a report snapshot's is (0008_audit_append_only). A changed
seed would move units between the part that chooses a prompt and the part that reports on it,
after the figures of both were seen. Deleting it stays possible, as it must when its criterion
is deleted; a split made afterwards is another one, with its own seed and date, which the judges
page shows."""

from django.db import migrations

# One statement per execute: server-side binding refuses several commands in one.
CREATE = [
    """
    CREATE OR REPLACE FUNCTION evaluation_heldoutsplit_kept() RETURNS trigger AS $$
    BEGIN
        RAISE EXCEPTION 'a held-out split is kept as it was made: UPDATE of split % refused', OLD.id
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'Its seed decides which units report and which choose; it never changes.';
    END;
    $$ LANGUAGE plpgsql
    """,
    "DROP TRIGGER IF EXISTS evaluation_heldoutsplit_kept ON evaluation_heldoutsplit",
    """
    CREATE TRIGGER evaluation_heldoutsplit_kept
        BEFORE UPDATE ON evaluation_heldoutsplit
        FOR EACH ROW EXECUTE FUNCTION evaluation_heldoutsplit_kept()
    """,
]
DROP = [
    "DROP TRIGGER IF EXISTS evaluation_heldoutsplit_kept ON evaluation_heldoutsplit",
    "DROP FUNCTION IF EXISTS evaluation_heldoutsplit_kept()",
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
        ("evaluation", "0012_held_out_split"),
    ]

    operations = [migrations.RunPython(_run(CREATE), _run(DROP), elidable=False)]
