"""PostgreSQL refuses UPDATE and DELETE of label rows (see annotation/workflow/append_only.py).

A later data migration that must rewrite label rows disables the trigger explicitly around its
work (ALTER TABLE annotation_label DISABLE TRIGGER annotation_label_append_only), in the open.
"""

from django.db import migrations

# One statement per execute: server-side binding refuses several commands in one.
CREATE = [
    """
    CREATE OR REPLACE FUNCTION annotation_label_append_only() RETURNS trigger AS $$
    BEGIN
        IF TG_OP = 'DELETE' AND current_setting('attest.label_delete', true) = 'allowed' THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'label rows are append-only: % of label % refused', TG_OP, OLD.id
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'A correction is a new label row; the history keeps every row.';
    END;
    $$ LANGUAGE plpgsql
    """,
    "DROP TRIGGER IF EXISTS annotation_label_append_only ON annotation_label",
    """
    CREATE TRIGGER annotation_label_append_only
        BEFORE UPDATE OR DELETE ON annotation_label
        FOR EACH ROW EXECUTE FUNCTION annotation_label_append_only()
    """,
]
DROP = [
    "DROP TRIGGER IF EXISTS annotation_label_append_only ON annotation_label",
    "DROP FUNCTION IF EXISTS annotation_label_append_only()",
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
        ("annotation", "0006_criterion_versions"),
    ]

    operations = [migrations.RunPython(_run(CREATE), _run(DROP), elidable=False)]
