"""The team list as a django-tables2 table: every column sorts, numbered pages, a page size (as the job list)."""

import django_tables2 as tables

from portal.tables import PortalTable

NUM = {"td": {"class": "num"}, "th": {"class": "num"}}


def metric_column(metric: str, verbose_name: str, template: str = "quotas/cells/team_metric.html"):
    """A standing figure (quota, usage…) summed over instance types; sorts by accelerators, then vCPUs."""
    return tables.TemplateColumn(
        template_name=template,
        verbose_name=verbose_name,
        accessor=f"metrics__{metric}",
        order_by=(f"keys__{metric}", "name"),
        extra_context={"metric": metric},
        attrs=NUM,
    )


class TeamTable(PortalTable):
    noun = "teams"
    name = tables.TemplateColumn(template_name="quotas/cells/team_name.html", verbose_name="Team", order_by="name")
    sharing = tables.TemplateColumn(template_name="quotas/cells/team_sharing.html", order_by=("sharing", "name"))
    weight = tables.TemplateColumn('{{ value|floatformat:"-2" }}', order_by=("weight", "name"), attrs=NUM)
    quota = metric_column("quota", "Quota")
    usage = metric_column("usage", "In use", template="quotas/cells/team_usage.html")
    borrowed = metric_column("borrowed", "Borrowed")
    lent = metric_column("lent", "Lent")
    fair_share = metric_column("fair_share", "Fair share")
    pending = tables.TemplateColumn(
        '<span data-n="{{ record.name }}:pending">{{ value }}</span>', order_by=("pending", "name"), attrs=NUM
    )
    members = tables.TemplateColumn(
        '<span data-n="{{ record.name }}:members">{{ value }}</span>', order_by=("members", "name"), attrs=NUM
    )
    actions = tables.TemplateColumn(
        template_name="quotas/cells/team_actions.html", verbose_name="", orderable=False, accessor="team"
    )

    class Meta(PortalTable.Meta):
        sequence = ("name", "sharing", "weight", "quota", "usage", "borrowed", "lent", "fair_share", "pending",
                    "members", "actions")  # fmt: skip
        order_by = ("name",)
        attrs = {"class": "striped glance", "data-testid": "team-table"}
        row_attrs = {"data-team": lambda record: record["name"]}
