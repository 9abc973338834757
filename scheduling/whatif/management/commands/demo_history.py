"""manage.py demo_history --days 30: fill the weeks before the demo's first job with simulated history (the
Philly sample run through the engine's simulator), with usage samples and rollups, so that what-if replays
and right-sizing advice have something to read on a fresh demo. For demo databases only."""

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Min
from django.utils import timezone

from quotas.models import Team
from scheduling.models import Job
from scheduling.whatif.synthetic import record_simulated_history


class Command(BaseCommand):
    help = "Write simulated history (jobs, events, usage) for the N days before the first job. Demo data only."

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=30)
        parser.add_argument("--repeat", type=int, default=1, help="lay the trace sample N times over the window")

    def handle(self, *args, **options):
        days = options["days"]
        if not 3 <= days <= 90 or not 1 <= options["repeat"] <= 5:
            raise CommandError("--days from 3 to 90, --repeat from 1 to 5")
        if not Team.objects.exists():
            raise CommandError("no teams: load the demo first (manage.py demo_load)")
        first = Job.objects.aggregate(m=Min("submitted_at"))["m"]
        if Job.objects.filter(name__startswith="philly-r").exists():
            raise CommandError("simulated history is already here")
        end = (first or timezone.now()).replace(microsecond=0)
        info = record_simulated_history(days=days, end=end, repeat=options["repeat"], closed=True, usage=True)
        self.stdout.write(
            f"{info['jobs']} jobs from {info['start']:%Y-%m-%d %H:%M} to {info['end']:%Y-%m-%d %H:%M}, "
            f"{info['samples']} usage samples with their rollups"
        )
