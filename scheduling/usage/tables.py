"""The per-job report as a table: sorted and paged in the database, the run figures computed per page."""

import django_tables2 as tables
from django.db.models import F, OrderBy
from django.db.models.functions import Coalesce

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


class TopJobsTable(PortalTable):
    """The jobs that used the most accelerator-hours in the range (rows from top_jobs.top_jobs, sorted here)."""

    noun = "top jobs"
    rank = tables.Column(verbose_name="#", attrs=NUM)
    job_id = tables.TemplateColumn(
        "<a href=\"{% url 'jobs:job-detail' record.job_id %}\">{{ record.name }}</a> "
        '<small class="muted">#{{ record.job_id }}</small>',
        verbose_name="Job",
        order_by=("name", "job_id"),
    )
    team = tables.Column(verbose_name="Team")
    user = tables.Column(verbose_name="User")
    instance_type = tables.Column(verbose_name="Instance type", default="any")
    accelerators = tables.Column(verbose_name="Accel.", attrs=NUM)
    accelerator_hours = tables.TemplateColumn(
        '<span data-n="top:{{ record.job_id }}:hours">{{ value|floatformat:2 }}</span>', verbose_name="Accel.-h",
        attrs=NUM,
    )  # fmt: skip
    wait_minutes = tables.TemplateColumn(
        "{% if value is not None %}{{ value }} min{% else %}—{% endif %}", verbose_name="Wait", attrs=NUM
    )
    state = tables.TemplateColumn('<span class="state state-{{ value }}">{{ value }}</span>')

    class Meta(PortalTable.Meta):
        attrs = {"class": "striped report compact-table", "data-testid": "top-jobs"}
        row_attrs = {"data-job": lambda record: record["job_id"]}
        empty_text = "No job used accelerators in this range."


def _figure(key: str, value: str = "{{ value|floatformat:1 }}") -> str:
    """A cell whose figure the reconcile tests read back (data-n="<team>:<resource>:<key>")."""
    return f'<span data-n="{{{{ record.team }}}}:{{{{ record.resource }}}}:{key}">{value}</span>'


PERCENT = "{% if value is not None %}{{ value }}%{% else %}—{% endif %}"


class TeamTotalsTable(PortalTable):
    """The summary per team over the range (rows from selectors.team_totals), sorted here."""

    noun = "teams"
    team = tables.TemplateColumn("<a href=\"{% url 'usage:team' record.team %}\">{{ record.team }}</a>")
    unit = tables.Column(verbose_name="Unit", order_by=("resource",))
    used = tables.TemplateColumn(_figure("used"), verbose_name="Hours used", attrs=NUM)
    within = tables.TemplateColumn(_figure("within"), verbose_name="Within quota", attrs=NUM)
    borrowed = tables.TemplateColumn(_figure("borrowed"), verbose_name="Borrowed", attrs=NUM)
    quota = tables.TemplateColumn(_figure("quota"), verbose_name="Quota hours", attrs=NUM)
    utilization_pct = tables.TemplateColumn(
        '{% if value is not None %}<span class="util"><span class="bar" style="width: '
        '{% if value > 100 %}100{% else %}{{ value|floatformat:0 }}{% endif %}%"></span>{{ value }}%</span>'
        "{% else %}—{% endif %}",
        verbose_name="Quota used",
        attrs=NUM,
    )
    idle = tables.TemplateColumn("{{ value|floatformat:1 }}", verbose_name="Idle quota hours", attrs=NUM)
    jobs = tables.TemplateColumn(_figure("jobs", "{{ value }}"), verbose_name="Jobs", attrs=NUM)
    preemptions = tables.TemplateColumn(_figure("preemptions", "{{ value }}"), verbose_name="Preemptions", attrs=NUM)

    class Meta(PortalTable.Meta):
        attrs = {"class": "striped report compact-table", "data-testid": "team-totals"}
        empty_text = "No usage in this range."


class SummaryTable(PortalTable):
    """The summary per team and instance type over the range (rows from selectors.usage_summary), sorted here."""

    noun = "rows"
    team = tables.Column()
    instance_type = tables.Column(verbose_name="Instance type", default="—")
    accelerator_hours = tables.TemplateColumn("{{ value|floatformat:1 }}", verbose_name="Accel.-hours", attrs=NUM)
    within_quota_accelerator_hours = tables.TemplateColumn(
        "{{ value|floatformat:1 }}", verbose_name="Within quota", attrs=NUM
    )
    borrowed_accelerator_hours = tables.TemplateColumn("{{ value|floatformat:1 }}", verbose_name="Borrowed", attrs=NUM)
    quota_utilization_pct = tables.TemplateColumn(PERCENT, verbose_name="Quota used", attrs=NUM)
    idle_quota_accelerator_hours = tables.TemplateColumn(
        "{{ value|floatformat:1 }}", verbose_name="Idle quota h", attrs=NUM
    )
    vcpu_hours = tables.TemplateColumn("{{ value|floatformat:0 }}", verbose_name="vCPU-hours", attrs=NUM)
    jobs_started = tables.Column(verbose_name="Jobs", attrs=NUM)
    avg_wait_minutes = tables.TemplateColumn(
        "{% if value is not None %}{{ value }} min{% else %}—{% endif %}", verbose_name="Avg wait", attrs=NUM
    )
    preemptions = tables.Column(verbose_name="Preempt.", attrs=NUM)

    class Meta(PortalTable.Meta):
        attrs = {"class": "striped report compact-table", "data-testid": "summary"}
        empty_text = "No usage in this range."
