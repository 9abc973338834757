from django.core.management.base import BaseCommand

from quotas.demo import demo_load


class Command(BaseCommand):
    help = "Load the demo cluster, teams, allocations, priority classes and users (idempotent)."

    def handle(self, *args, **options):
        result = demo_load()
        self.stdout.write(
            f"demo data: {result['instance_types']} instance types, {result['teams']} teams, "
            f"{len(result['users'])} users (password {result['password']})"
        )
