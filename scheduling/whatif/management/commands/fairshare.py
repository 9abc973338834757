"""manage.py fairshare --explain TEAM: the derivation of a team's fair shares, step by step."""

from django.core.management.base import BaseCommand, CommandError

from quotas.models import Team
from scheduling.whatif.fairshare import as_text, fair_share_explained


class Command(BaseCommand):
    help = "Explain a team's fair share, step by step, from the engine's own computation."

    def add_arguments(self, parser):
        parser.add_argument("--explain", metavar="TEAM", required=True, help="the team's name")

    def handle(self, *args, **options):
        team = Team.objects.filter(name=options["explain"]).first()
        if team is None:
            raise CommandError(f"no team named {options['explain']!r}")
        self.stdout.write(as_text(team, fair_share_explained(team)))
