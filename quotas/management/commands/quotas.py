"""manage.py quotas export | apply FILE [--dry-run] | kueue"""

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from quotas import iac
from quotas.kueue import kueue_yaml


class Command(BaseCommand):
    help = "The cluster configuration as code: export it as YAML, apply a YAML file, or render Kueue objects."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("export", help="write the whole configuration as YAML to standard output")
        apply = sub.add_parser("apply", help="make the cluster match a YAML file (atomically)")
        apply.add_argument("file", help="the YAML file, or - for standard input")
        apply.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
        apply.add_argument("--reason", default=None, help='recorded in the history (default "applied from <file>")')
        sub.add_parser("kueue", help="write the configuration as Kueue objects (multi-document YAML)")

    def handle(self, *args, action, **options):
        if action == "export":
            self.stdout.write(iac.export_yaml(), ending="")
        elif action == "kueue":
            self.stdout.write(kueue_yaml(), ending="")
        else:
            self.apply(options["file"], dry_run=options["dry_run"], reason=options["reason"])

    def apply(self, file, *, dry_run, reason):
        if file == "-":
            text, name = sys.stdin.read(), "standard input"
        else:
            try:
                text, name = Path(file).read_text(), Path(file).name
            except OSError as exc:
                raise CommandError(f"cannot read {file}: {exc.strerror}") from None
        try:
            plan = iac.apply(text, dry_run=dry_run, reason=reason or f"applied from {name}")
        except iac.ConfigError as exc:
            raise CommandError(f"{name}: {exc}") from None
        for line in plan.lines():
            self.stdout.write(line)
        if dry_run and plan.changes:
            self.stdout.write("Dry run: nothing was changed.")
        elif plan.changes:
            self.stdout.write(self.style.SUCCESS("Applied."))
