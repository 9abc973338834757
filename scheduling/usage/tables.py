"""The per-job report as a table: sorted and paged in the database, the run figures computed per page."""

import django_tables2 as tables
from django.db.models import F, OrderBy
from django.db.models.functions import Coalesce
from django.urls import reverse
from django.utils.html import format_html

from scheduling.models import Job
from scheduling.tables import PortalTable
from scheduling.usage import selectors


class JobReportTable(PortalTable):
    noun = "jobs"
    id = tables.TemplateColumn(
        "<a href=\"{% url 'jobs:job-detail' record.pk %}\">{{ record.name }}</a> "
        '<small class="muted">#{{ record.pk }}</small>',
        verbose_name="Job",
    )
    team = tables.Column(accessor="team__name", verbose_name="Team")
    user = tables.Column(accessor="submitted_by__username", verbose_name="User")
    priority = tables.Column(
        accessor="report__priority_class", order_by=("priority_class__weight",), verbose_name="Priority", default="—"
    )
    instance_type = tables.Column(accessor="report__instance_type", default="any")
    accelerators = tables.Column(
        accessor="report__accelerators",
        verbose_name="Accel.",
        order_by=("accelerators",),
        attrs={"td": {"class": "num"}},
    )
    state = tables.TemplateColumn('<span class="state state-{{ record.state }}">{{ record.state }}</span>')
    submitted_at = tables.DateTimeColumn(format="j M H:i", verbose_name="Submitted")
    started_at = tables.DateTimeColumn(format="j M H:i", verbose_name="Started", default="—")
    finished_at = tables.DateTimeColumn(format="j M H:i", verbose_name="Ended", default="—")
    wait = tables.TemplateColumn(
        "{% if value is not None %}{{ value }} min{% else %}—{% endif %}",
        accessor="report__wait_minutes",
        attrs={"td": {"class": "num"}},
    )
    run = tables.TemplateColumn(
        "{{ value }} min", accessor="report__run_minutes", orderable=False, attrs={"td": {"class": "num"}}
    )
    hours = tables.Column(
        accessor="report__accelerator_hours", verbose_name="Accel.-h", orderable=False, attrs={"td": {"class": "num"}}
    )
    preemption_count = tables.Column(verbose_name="Preempted", attrs={"td": {"class": "num"}})

    class Meta(PortalTable.Meta):
        model = Job
        fields = ()
        sequence = (
            "id",
            "team",
            "user",
            "priority",
            "instance_type",
            "accelerators",
            "state",
            "submitted_at",
            "started_at",
            "finished_at",
            "wait",
            "run",
            "hours",
            "preemption_count",
        )
        order_by = ("-submitted_at",)
        attrs = {"class": "striped report compact-table", "data-testid": "jobs"}
        row_attrs = {"data-job": lambda record: record.pk}
        empty_text = "No jobs were submitted in this range."

    def order_instance_type(self, queryset, is_descending):
        """By the instance type the job ran on, else the one it asked for (what the column shows)."""
        named = queryset.annotate(type_name=Coalesce("assigned_instance_type__name", "instance_type__name"))
        return named.order_by(OrderBy(F("type_name"), descending=is_descending), "-id"), True

    def order_wait(self, queryset, is_descending):
        """By submission to admission; jobs never admitted last either way, as the column shows them as —."""
        wait = F("admitted_at") - F("submitted_at")
        order = OrderBy(wait, descending=is_descending, nulls_last=True)
        return queryset.order_by(order, "-id"), True

    def attach_reports(self):
        """Compute the report figures (run time from the events) for the jobs on the current page at once."""
        records = [row.record for row in self.paginated_rows]
        for record, row in zip(records, selectors.job_report_rows(records), strict=True):
            record.report = row
        return self


NUM = {"td": {"class": "num"}, "th": {"class": "num"}}


class Figure(tables.Column):
    """A right-aligned number formatted in Python: a TemplateColumn compiles its template again for every cell,
    which made a page of these tables cost 0.3 s. `figure` marks the cell for the reconcile tests
    (data-n="<team>:<resource>:<figure>"); None shows as —."""

    def __init__(self, *args, places: int = 1, suffix: str = "", figure: str = "", **kwargs):
        kwargs.setdefault("attrs", NUM)
        kwargs.setdefault("default", "—")
        super().__init__(*args, **kwargs)
        self.places, self.suffix, self.figure = places, suffix, figure

    def render(self, value, record):
        text = f"{value:.{self.places}f}{self.suffix}" if isinstance(value, float) else f"{value}{self.suffix}"
        if self.figure:
            key = f"{record['team']}:{record['resource']}:{self.figure}"
            return format_html('<span data-n="{}">{}</span>', key, text)
        return text


class ShownHours(Figure):
    """A team's hours as its story prints them (selectors.hours_shown): the table and the sentence beside it
    show one rounded figure."""

    def render(self, value, record):
        key = f"{record['team']}:{record['resource']}:{self.figure}"
        return format_html('<span data-n="{}">{}</span>', key, record["shown"][self.figure])


class TopJobsTable(PortalTable):
    """The jobs that used the most accelerator-hours in the range (rows from top_jobs.top_jobs, sorted here)."""

    noun = "top jobs"
    rank = tables.Column(verbose_name="#", attrs=NUM)
    job_id = tables.Column(verbose_name="Job", order_by=("name", "job_id"))
    team = tables.Column(verbose_name="Team")
    user = tables.Column(verbose_name="User")
    instance_type = tables.Column(verbose_name="Instance type", default="any")
    accelerators = tables.Column(verbose_name="Accel.", attrs=NUM)
    accelerator_hours = tables.Column(verbose_name="Accel.-h", attrs=NUM)
    wait_minutes = Figure(verbose_name="Wait", suffix=" min")
    state = tables.Column()

    class Meta(PortalTable.Meta):
        attrs = {"class": "striped report compact-table", "data-testid": "top-jobs"}
        row_attrs = {"data-job": lambda record: record["job_id"]}
        empty_text = "No job used accelerators in this range."

    def render_job_id(self, record):
        url = reverse("jobs:job-detail", args=[record["job_id"]])
        pk = record["job_id"]
        return format_html('<a href="{}">{}</a> <small class="muted">#{}</small>', url, record["name"], pk)

    def render_accelerator_hours(self, value, record):
        return format_html('<span data-n="top:{}:hours">{}</span>', record["job_id"], f"{value:.2f}")

    def render_state(self, value):
        return format_html('<span class="state state-{}">{}</span>', value, value)


class TeamTotalsTable(PortalTable):
    """The summary per team over the range (rows from selectors.team_totals), sorted here."""

    noun = "teams"
    team = tables.Column()
    unit = tables.Column(verbose_name="Unit", order_by=("resource",))
    used = ShownHours(verbose_name="Hours used", figure="used")
    within = ShownHours(verbose_name="Within quota", figure="within")
    borrowed = ShownHours(verbose_name="Borrowed", figure="borrowed")
    quota = Figure(verbose_name="Quota hours", figure="quota")
    utilization_pct = Figure(verbose_name="Quota used")
    idle = Figure(verbose_name="Idle quota hours")
    jobs = Figure(verbose_name="Jobs", figure="jobs")
    preemptions = Figure(verbose_name="Preemptions", figure="preemptions")

    class Meta(PortalTable.Meta):
        attrs = {"class": "striped report compact-table", "data-testid": "team-totals"}
        empty_text = "No usage in this range."

    def render_team(self, value):
        return format_html('<a href="{}">{}</a>', reverse("usage:team", args=[value]), value)

    def render_utilization_pct(self, value):
        width = f"{min(value, 100):.0f}"
        return format_html('<span class="util"><span class="bar" style="width: {}%"></span>{}%</span>', width, value)


class SummaryTable(PortalTable):
    """The summary per team and instance type over the range (rows from selectors.usage_summary), sorted here."""

    noun = "rows"
    team = tables.Column()
    instance_type = tables.Column(verbose_name="Instance type", default="—")
    accelerator_hours = Figure(verbose_name="Accel.-hours")
    within_quota_accelerator_hours = Figure(verbose_name="Within quota")
    borrowed_accelerator_hours = Figure(verbose_name="Borrowed")
    quota_utilization_pct = Figure(verbose_name="Quota used", suffix="%")
    idle_quota_accelerator_hours = Figure(verbose_name="Idle quota h")
    vcpu_hours = Figure(verbose_name="vCPU-hours", places=0)
    jobs_started = Figure(verbose_name="Jobs")
    avg_wait_minutes = Figure(verbose_name="Avg wait", suffix=" min")
    preemptions = Figure(verbose_name="Preempt.")

    class Meta(PortalTable.Meta):
        attrs = {"class": "striped report compact-table", "data-testid": "summary"}
        empty_text = "No usage in this range."
