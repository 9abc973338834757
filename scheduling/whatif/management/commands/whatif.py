"""manage.py whatif [DRAFT.yaml] --days N: replay the last N days under a draft and print the per-team
comparison with what really happened. Without a draft it replays the current configuration. The replay is
stored like the page's (listed under What-if, shareable by its address)."""

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from scheduling.whatif import services
from scheduling.whatif.models import ReplayStatus
from scheduling.whatif.selectors import comparison_rows
from scheduling.whatif.templatetags.whatif_extras import measure, signed_measure


class Command(BaseCommand):
    help = "Replay the last N days of jobs under a draft configuration and compare with what happened."

    def add_arguments(self, parser):
        parser.add_argument("draft", nargs="?", help="a YAML file in the `quotas export` format (optional)")
        parser.add_argument("--days", type=int, default=7, help="the window: the last N days (default 7)")
        parser.add_argument("--title", default="", help="a title for the stored replay")

    def handle(self, *args, **options):
        text = ""
        if options["draft"]:
            try:
                text = Path(options["draft"]).read_text()
            except OSError as exc:
                raise CommandError(f"cannot read {options['draft']}: {exc.strerror}") from None
        try:
            draft = services.draft_parse(text)
            replay = services.replay_create(
                user=None, draft=draft, window_days=options["days"], title=options["title"], enqueue=False
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        replay = services.replay_run(replay=replay)
        if replay.status != ReplayStatus.DONE:
            raise CommandError(f"replay #{replay.pk} failed: {replay.message}")
        self.stdout.write(self.report(replay))

    def report(self, replay) -> str:
        r = replay.results
        lines = [f"What-if replay #{replay.pk}: {replay.title}"]
        lines += [f"  {c}" for c in replay.changes] or ["  (no change: the current configuration)"]
        lines.append(
            f"Window: {replay.window_start:%Y-%m-%d %H:%M} to {replay.window_end:%Y-%m-%d %H:%M}, {r['jobs']} jobs"
            f" (+{r['context_jobs']} running at its start), replayed in {r['timing']['total_s']} s"
        )
        header = f"{'team':<18} {'measure':<32} {'happened':>12} {'draft':>12} {'change':>12} {'replayed now':>12}"
        lines += ["", header, "-" * len(header)]
        for row in comparison_rows(r):
            for i, c in enumerate(row["cells"]):
                lines.append(
                    f"{row['team'] if i == 0 else '':<18} {c['label']:<32} {measure(c['recorded'], c['unit']):>12} "
                    f"{measure(c['draft'], c['unit']):>12} {signed_measure(c['change'], c['unit']):>12} "
                    f"{measure(c['baseline'], c['unit']):>12}"
                )
        if r["movers"]:
            lines += ["", "Jobs whose wait changed most:"]
            for m in r["movers"][:10]:
                lines.append(
                    f"  #{m['job']} {m['name']} ({m['team']}): {measure(m['before_s'], 'duration')} -> "
                    f"{measure(m['after_s'], 'duration')}"
                )
        return "\n".join(lines)
