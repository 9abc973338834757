"""The team list as a django-tables2 table: every column sorts, numbered pages, a page size (as the job list).

Cells are drawn here with format_html rather than by a template per cell: a TemplateColumn renders each cell with
the request's context processors, which was most of the page's time at 1,000 teams."""

import django_tables2 as tables
from django.template.defaultfilters import floatformat
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from portal.tables import PortalTable

NUM = {"td": {"class": "num"}, "th": {"class": "num"}}


def metric_html(values) -> str:
    """As quotas/_metric.html: each (label, value) of a headline, or a muted 0."""
    if not values:
        return mark_safe('<span class="muted">0</span>')
    shown = ((floatformat(value, "-1"), label) for label, value in values)
    return format_html_join(mark_safe("<br>"), '<span class="metric">{}</span> <small>{}</small>', shown)


def use_html(record) -> str:
    """Per resource: a bar and the percentage of the quota in use, or "no GPU quota"."""
    parts = []
    for u in record.use:
        key = f"{record.name}:use:{u['resource']}"
        if u["pct"] is None:
            parts.append(format_html('<br><small data-n="{}">no {} quota</small>', key, u["label"]))
            continue
        label = f" {u['label']}" if len(record.use) > 1 else ""
        parts.append(
            format_html(
                '<br><progress class="usebar" value="{}" max="100" title="{} % of the {} quota in use"></progress>'
                ' <small data-n="{}">{} %{}</small>',
                min(u["pct"], 100),
                u["pct"],
                u["label"],
                key,
                u["pct"],
                label,
            )  # fmt: skip
        )
    return mark_safe("".join(parts))


class MetricColumn(tables.Column):
    """A standing figure (quota, usage…) summed over instance types; sorts by accelerators, then vCPUs."""

    def __init__(self, metric: str, verbose_name: str, **kwargs):
        super().__init__(
            verbose_name=verbose_name,
            accessor=f"metrics__{metric}",
            order_by=(f"keys__{metric}", "name"),
            attrs=NUM,
            empty_values=(),
            **kwargs,
        )
        self.metric = metric

    def render(self, record, value):
        html = format_html('<span data-n="{}:{}">{}</span>', record.name, self.metric, metric_html(value))
        return html + use_html(record) if self.metric == "usage" else html


class CountColumn(tables.Column):
    def __init__(self, field: str, **kwargs):
        super().__init__(order_by=(field, "name"), attrs=NUM, empty_values=(), **kwargs)
        self.field = field

    def render(self, record, value):
        return format_html('<span data-n="{}:{}">{}</span>', record.name, self.field, value)


class TeamTable(PortalTable):
    noun = "teams"
    name = tables.Column(verbose_name="Team", order_by="name")
    sharing = tables.Column(order_by=("sharing", "name"))
    weight = tables.Column(order_by=("weight", "name"), attrs=NUM)
    quota = MetricColumn("quota", "Quota")
    usage = MetricColumn("usage", "In use")
    borrowed = MetricColumn("borrowed", "Borrowed")
    lent = MetricColumn("lent", "Lent")
    fair_share = MetricColumn("fair_share", "Fair share")
    pending = CountColumn("pending")
    members = CountColumn("members")
    actions = tables.Column(verbose_name="", orderable=False, accessor="team", empty_values=())

    class Meta(PortalTable.Meta):
        sequence = ("name", "sharing", "weight", "quota", "usage", "borrowed", "lent", "fair_share", "pending",
                    "members", "actions")  # fmt: skip
        order_by = ("name",)
        attrs = {"class": "striped glance", "data-testid": "team-table"}
        row_attrs = {"data-team": lambda record: record.name}

    def render_name(self, record):
        url = reverse("quotas:team-detail", args=[record.team.pk])
        html = '<a href="{}"><strong>{}</strong></a><br><small><code>{}</code></small>'
        return format_html(html, url, record.name, record.team.namespace)

    def render_sharing(self, record):
        team = record.team
        html = format_html('<span class="pill pill-{}">{}</span>', team.sharing, team.get_sharing_display())
        if team.borrow_limit_pct is not None and team.sharing == "LendAndBorrow":
            html += format_html("<br><small>borrow ≤ {} %</small>", floatformat(team.borrow_limit_pct, "-1"))
        return html

    def render_weight(self, value):
        return floatformat(value, "-2")

    def render_actions(self, value):
        return format_html(
            '<small><a href="{}">Quota</a><br><a href="{}">Edit</a></small>',
            reverse("quotas:allocations", args=[value.pk]),
            reverse("quotas:team-edit", args=[value.pk]),
        )
