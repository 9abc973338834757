"""Lists as django-tables2 tables: sortable columns, numbered pages, a page size, and the same rows the
filters and CSV exports read."""

import django_tables2 as tables

from portal.tables import DEFAULT_PAGE_SIZE, PAGE_SIZES, PortalTable, configure, page_size  # noqa: F401 (re-exported)
from scheduling.models import FINAL_STATES, AdmissionRun, Job


class JobTable(PortalTable):
    noun = "jobs"
    id = tables.Column(
        verbose_name="#",
        linkify=("jobs:job-detail", [tables.A("pk")]),
        attrs={"td": {"class": "num"}, "th": {"class": "num"}},
    )
    name = tables.TemplateColumn(template_name="scheduling/cells/job_name.html", verbose_name="Job")
    team = tables.Column(accessor="team__name", verbose_name="Team")
    user = tables.Column(accessor="submitted_by__username", verbose_name="User")
    state = tables.TemplateColumn(template_name="scheduling/cells/job_state.html")
    reason = tables.TemplateColumn(
        template_name="scheduling/cells/job_reason.html",
        verbose_name="Why",
        orderable=False,
        attrs={"td": {"class": "why"}},
    )
    size = tables.TemplateColumn(
        template_name="scheduling/cells/job_size.html",
        verbose_name="Request",
        order_by=("accelerators", "pods"),
        attrs={"td": {"class": "num"}},
    )
    submitted_at = tables.DateTimeColumn(format="M j, H:i:s", verbose_name="Submitted")
    actions = tables.TemplateColumn(
        template_name="scheduling/cells/job_actions.html",
        verbose_name="",
        orderable=False,
        extra_context={"final_states": FINAL_STATES},
    )

    class Meta(PortalTable.Meta):
        model = Job
        fields = ()
        sequence = ("id", "name", "team", "user", "state", "reason", "size", "submitted_at", "actions")
        order_by = ("-id",)
        attrs = {"class": "striped jobs", "data-testid": "job-table"}
        row_attrs = {"data-job": lambda record: record.pk}
        empty_text = "No jobs match."


class AdmissionRunTable(PortalTable):
    noun = "runs"
    started_at = tables.DateTimeColumn(format="M j H:i:s", verbose_name="Started")
    trigger = tables.Column()
    duration_ms = tables.TemplateColumn(
        "{{ value|floatformat:1 }} ms", verbose_name="Duration", attrs={"td": {"class": "num"}}
    )
    admitted = tables.Column(attrs={"td": {"class": "num"}})
    preempted = tables.Column(attrs={"td": {"class": "num"}})
    pending = tables.Column(verbose_name="Still pending", attrs={"td": {"class": "num"}})
    error = tables.Column(attrs={"td": {"class": "err"}}, default="")

    class Meta(PortalTable.Meta):
        model = AdmissionRun
        fields = ()
        sequence = ("started_at", "trigger", "duration_ms", "admitted", "preempted", "pending", "error")
        order_by = ("-started_at",)
        attrs = {"class": "striped jobs", "data-testid": "runs"}
        empty_text = "No runs yet. The loop runs every few seconds and after every submit, finish and cancel."
