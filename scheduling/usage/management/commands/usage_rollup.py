"""Rebuild the hourly and daily usage rollups over a range of days (after an outage or a late import)."""

from datetime import date, datetime, time, timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from scheduling.usage.models import Granularity
from scheduling.usage.services import usage_rollup


def parse_day(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise CommandError(f"“{value}” is not a date: use YYYY-MM-DD") from exc


class Command(BaseCommand):
    help = "Recompute hourly rollups from raw samples and daily rollups from the hourly ones, for whole days."

    def add_arguments(self, parser):
        parser.add_argument("--since", required=True, help="first day, YYYY-MM-DD")
        parser.add_argument("--until", help="last day (inclusive), YYYY-MM-DD; default today")

    def handle(self, *args, since, until=None, **options):
        first = parse_day(since)
        last = parse_day(until) if until else timezone.localdate()
        if first > last:
            raise CommandError("--since must not be after --until")
        tz = timezone.get_current_timezone()
        start = datetime.combine(first, time.min, tzinfo=tz)
        end = datetime.combine(last + timedelta(days=1), time.min, tzinfo=tz)
        hours = usage_rollup(granularity=Granularity.HOUR, start=start, end=end)
        days = usage_rollup(granularity=Granularity.DAY, start=start, end=end)
        self.stdout.write(f"rolled up {hours} hourly and {days} daily buckets from {first} to {last}")
