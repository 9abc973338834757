"""Leave room on each page of the job table (PostgreSQL's fillfactor 70) so that the scheduler's frequent
updates of columns no index covers (the reason why a job waits) are heap-only (HOT): no new index entries,
far less write and vacuum work. Other databases ignore it."""

from django.db import migrations


def set_fillfactor(apps, schema_editor, value=70):
    if schema_editor.connection.vendor == "postgresql":
        table = apps.get_model("scheduling", "Job")._meta.db_table
        schema_editor.execute(f'ALTER TABLE "{table}" SET (fillfactor = {int(value)})')


def reset_fillfactor(apps, schema_editor):
    set_fillfactor(apps, schema_editor, value=100)


class Migration(migrations.Migration):
    dependencies = [("scheduling", "0005_publishedplan")]

    operations = [migrations.RunPython(set_fillfactor, reset_fillfactor)]
