"""Time ranges: the presets a manager picks, and the resolution each one reads."""

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.utils import timezone

PRESETS = {"24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30), "90d": timedelta(days=90)}
PRESET_LABELS = {"24h": "24 h", "7d": "7 d", "30d": "30 d", "90d": "90 d", "custom": "Custom"}
DEFAULT_PRESET = "7d"
MAX_CUSTOM_DAYS = 400


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime
    step: str  # "raw" (samples), "hour" or "day" (rollups)
    preset: str

    @property
    def days(self) -> float:
        return (self.end - self.start).total_seconds() / 86400

    @property
    def first_day(self) -> date:
        return timezone.localtime(self.start).date()

    @property
    def last_day(self) -> date:
        """The last calendar day the window touches (inclusive). A preset runs up to now, whose end a page rounds
        down to the last rollup: in the first minutes after midnight that is midnight itself, and today counts."""
        if self.preset in PRESETS:
            return timezone.localtime(self.end).date()
        return timezone.localtime(self.end - timedelta(microseconds=1)).date()

    def day_bounds(self) -> tuple[datetime, datetime]:
        """From the start of the first day to the end of the last: what daily rollups and reports cover."""
        tz = timezone.get_current_timezone()
        return (
            datetime.combine(self.first_day, time.min, tzinfo=tz),
            datetime.combine(self.last_day + timedelta(days=1), time.min, tzinfo=tz),
        )


def step_for(span: timedelta) -> str:
    """Raw samples up to two days, hourly rollups up to 45 days, daily beyond."""
    if span <= timedelta(days=2):
        return "raw"
    if span <= timedelta(days=45):
        return "hour"
    return "day"


def page_window(preset: str, *, start: date | None = None, end: date | None = None, now: datetime | None = None):
    """The window a page shows for a preset (or a custom range): it ends on a whole minute, since the data changes
    only as often as it is sampled, and a window on rollups on the last 5-minute mark, when rollups arrive. Equal
    windows let pages, and the worker that renders their figures ahead, share cached figures."""
    now = (now or timezone.now()).replace(second=0, microsecond=0)
    window = window_for(preset, start=start, end=end, now=now)
    if window.step != "raw" and preset != "custom":
        window = window_for(preset, now=now - timedelta(minutes=now.minute % 5))
    return window


def window_for(preset: str, *, start: date | None = None, end: date | None = None, now: datetime | None = None):
    """The window for a preset, or for a custom range of whole days (end inclusive)."""
    now = now or timezone.now()
    if preset in PRESETS:
        span = PRESETS[preset]
        return Window(start=now - span, end=now, step=step_for(span), preset=preset)
    if preset != "custom" or start is None or end is None:
        raise ValueError("a custom range needs a start and an end date")
    tz = timezone.get_current_timezone()
    begin = datetime.combine(start, time.min, tzinfo=tz)
    finish = datetime.combine(end + timedelta(days=1), time.min, tzinfo=tz)
    return Window(start=begin, end=finish, step=step_for(finish - begin), preset="custom")
