"""`manage.py simulate SCENARIO.json`: run a scenario through the engine and print the result as JSON."""

import json

from django.core.management.base import BaseCommand, CommandError

from scheduling.engine import ScenarioError, simulate_scenario
from scheduling.engine.scenario import load


class Command(BaseCommand):
    help = "Simulate a scenario file (../shared/spec/scenario-format.md) and print the outcome as JSON."
    # Pure computation: no database, no secret, so no system checks either.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("scenario", help="path to a scenario JSON file")
        parser.add_argument("--indent", type=int, default=None, help="pretty-print with this indent")

    def handle(self, *args, **options):
        try:
            result = simulate_scenario(load(options["scenario"]))
        except ScenarioError as err:
            raise CommandError(str(err), returncode=2) from None
        except RecursionError:
            raise CommandError("scenario is nested too deeply", returncode=2) from None
        except UnicodeDecodeError as err:
            raise CommandError(
                f"{options['scenario']}: not UTF-8 text (byte {err.start}: {err.reason})", returncode=2
            ) from None
        self.stdout.write(json.dumps(result, indent=options["indent"]))
