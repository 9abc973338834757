from django.core.management.base import BaseCommand, CommandError

from quotas.demo import demo_load
from scheduling.demo_history import DAYS, TRACE, history_load
from scheduling.models import Job


class Command(BaseCommand):
    help = (
        "Load the demo cluster, teams, allocations, priority classes and users (idempotent), and, on a database "
        "without jobs, give it a past: DAYS days of the Philly trace replayed through the engine's simulator."
    )

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=DAYS, help=f"days of history (default {DAYS}; 0: none)")
        parser.add_argument("--no-history", action="store_true", help="only the configuration and users")
        parser.add_argument("--trace", default=str(TRACE), help="a trace CSV: timestamp,duration,num_gpus,cluster")

    def handle(self, *args, days, no_history, trace, **options):
        if not 0 <= days <= 90:
            raise CommandError("--days must be between 0 and 90")
        result = demo_load()
        self.stdout.write(
            f"demo data: {result['instance_types']} instance types, {result['teams']} teams, "
            f"{len(result['users'])} users (password {result['password']})"
        )
        if no_history or days == 0:
            return
        existing = Job.objects.count()
        if existing:
            self.stdout.write(f"demo history: kept the {existing} jobs already here (it loads into an empty database)")
            return
        try:
            h = history_load(days=days, trace=trace)
        except (OSError, KeyError, ValueError) as exc:
            raise CommandError(f"could not read the trace {trace}: {exc}") from exc
        self.stdout.write(
            f"demo history: {h['days']} days replayed through the engine in {h['simulate_s']} s: {h['jobs']} jobs "
            f"({h['running']} running, {h['pending']} waiting now), {h['events']} events, {h['preemptions']} "
            f"preemptions, {h['samples']} usage samples, {h['hourly']} hourly and {h['daily']} daily rollups; "
            f"written in {h['write_s']} s, rolled up in {h['rollup_s']} s, {h['total_s']} s in all"
        )
