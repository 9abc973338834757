"""manage.py jobs submit|list|show|cancel --user NAME: the job services from a shell, with that user's rights."""

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.http import QueryDict

from quotas.models import User
from scheduling import selectors, services
from scheduling.filters import JobFilter
from scheduling.forms import parse_duration


class _Request:
    """Enough of a request for the FilterSet's visible-team choices."""

    def __init__(self, user):
        self.user = user


def _errors(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return "; ".join(
            f"{field}: {' '.join(msgs)}" if field != "__all__" else " ".join(msgs)
            for field, msgs in exc.message_dict.items()
        )
    return " ".join(exc.messages)


class Command(BaseCommand):
    help = "Submit, list, show and cancel jobs as a given user (their permissions apply)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        submit = sub.add_parser("submit", help="request a job")
        submit.add_argument("--user", required=True)
        submit.add_argument("--team", required=True)
        submit.add_argument("--name", required=True)
        submit.add_argument("--image", required=True)
        submit.add_argument("--instance-type", default=None, help="default: any type the team has quota on")
        submit.add_argument("--accelerators", type=int, default=0, help="per pod")
        submit.add_argument("--vcpus", type=float, default=None, help="per pod (default: proportional share)")
        submit.add_argument("--memory", type=float, default=None, help="GiB per pod (default: proportional share)")
        submit.add_argument("--pods", type=int, default=1)
        submit.add_argument("--priority-class", default=None)
        submit.add_argument("--command", default="")
        submit.add_argument("--duration", default=None, help="expected duration: 45m, 2h, 1h30m or seconds")
        listing = sub.add_parser("list", help="list jobs (newest first)")
        listing.add_argument("--user", required=True)
        listing.add_argument("--team")
        listing.add_argument("--state", action="append", help="repeat for several states")
        listing.add_argument("--mine", action="store_true")
        listing.add_argument("--limit", type=int, default=50)
        listing.add_argument(
            "--start", action="store_true", help="waiting jobs in the scheduler's order with their start times"
        )
        show = sub.add_parser("show", help="one job with its timeline")
        show.add_argument("--user", required=True)
        show.add_argument("job_id")
        cancel = sub.add_parser("cancel", help="cancel a queued or running job")
        cancel.add_argument("--user", required=True)
        cancel.add_argument("job_id")

    def handle(self, *args, action, **options):
        user = User.objects.filter(username=options["user"], is_active=True).first()
        if user is None:
            raise CommandError(f"no active user {options['user']!r}")
        try:
            getattr(self, f"do_{action}")(user, options)
        except ValidationError as exc:
            raise CommandError(_errors(exc)) from exc
        except PermissionDenied as exc:
            raise CommandError(str(exc)) from exc
        except services.JobNotFound as exc:
            raise CommandError(str(exc)) from exc

    def do_submit(self, user, o):
        request = services.JobRequest(
            team=o["team"],
            name=o["name"],
            image=o["image"],
            instance_type=o["instance_type"],
            accelerators=o["accelerators"],
            vcpus=o["vcpus"],
            memory_gib=o["memory"],
            pods=o["pods"],
            priority_class=o["priority_class"],
            command=o["command"],
            expected_duration_s=parse_duration(o["duration"]),
        )
        job = services.job_submit(user=user, request=request)
        self.stdout.write(f"submitted job #{job.pk} {job.name} to {job.team.name} (pending)")

    def do_start(self, user, o):
        fmt = "{:>7}  {:>5}  {:<24} {:<16} {:<9} {:<20} {}"
        self.stdout.write(fmt.format("JOBID", "RANK", "NAME", "TEAM", "KIND", "START", "WHY"))
        for row in selectors.queue_starts(user, limit=o["limit"]):
            job, e = row.job, row.estimate
            at = e.at.strftime("%Y-%m-%d %H:%M:%S") if e.at else "unknown"
            self.stdout.write(fmt.format(job.pk, row.rank, job.name[:24], job.team.name[:16], e.kind, at, e.note))

    def do_list(self, user, o):
        if o.get("start"):
            return self.do_start(user, o)
        data = QueryDict(mutable=True)
        for key in ("team",):
            if o.get(key):
                data[key] = o[key]
        for state in o.get("state") or []:
            data.appendlist("state", state)
        if o.get("mine"):
            data["mine"] = "true"
        jobs = JobFilter(data, queryset=selectors.job_list(user), request=_Request(user))
        if not jobs.is_valid():
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in jobs.errors.items()))
        fmt = "{:>7}  {:<24} {:<16} {:<10} {:<10} {}"
        self.stdout.write(fmt.format("JOBID", "NAME", "TEAM", "USER", "STATE", "REASON"))
        for job in jobs.qs[: o["limit"]]:
            self.stdout.write(
                fmt.format(
                    job.pk,
                    job.name[:24],
                    job.team.name[:16],
                    job.submitted_by.username[:10],
                    job.state,
                    job.reason[:80],
                )
            )

    def do_show(self, user, o):
        job = services.job_for_user(user=user, pk=o["job_id"])
        self.stdout.write(f"job #{job.pk} {job.name}  team {job.team.name}  by {job.submitted_by.username}")
        self.stdout.write(f"state: {job.state}  reason: {job.reason}")
        plan = selectors.job_plan(job)
        place = plan.place
        if place:
            self.stdout.write(
                f"queue: {place.in_team} of {place.team_queued} in team, "
                f"{place.in_cluster} of {place.cluster_queued} in cluster"
            )
        estimate = plan.estimate
        if estimate:
            when = estimate.at.isoformat(timespec="seconds") if estimate.at else "unknown"
            label = "reserved start" if estimate.kind == "reserved" else "estimated start"
            self.stdout.write(f"{label}: {when} ({estimate.note})")
        for event in job.events.all():
            self.stdout.write(
                f"  {event.at:%Y-%m-%d %H:%M:%S}  {event.from_state or '-':>9} -> {event.to_state:<9} {event.reason}"
            )

    def do_cancel(self, user, o):
        job = services.job_cancel(user=user, pk=o["job_id"])
        self.stdout.write(f"cancelled job #{job.pk} {job.name}")
