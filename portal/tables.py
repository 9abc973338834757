"""The lists' common ground as django-tables2: sortable columns, numbered pages and a page size read from the
query string, and the template every list renders with (jobs, admission runs, reports, teams)."""

import django_tables2 as tables
from django_tables2 import RequestConfig

PAGE_SIZES = (25, 50, 100, 200)
DEFAULT_PAGE_SIZE = 50


def page_size(request) -> int:
    """The page size asked for, if it is one of PAGE_SIZES (anything else: the default)."""
    try:
        size = int(request.GET.get("per_page", DEFAULT_PAGE_SIZE))
    except ValueError:
        return DEFAULT_PAGE_SIZE
    return size if size in PAGE_SIZES else DEFAULT_PAGE_SIZE


def configure(request, table: tables.Table) -> tables.Table:
    """Sorting and pagination from the query string (an unknown sort column is ignored, a page past the end
    shows the last page)."""
    RequestConfig(request, paginate={"per_page": page_size(request), "orphans": 0}).configure(table)
    table.page_sizes = PAGE_SIZES
    return table


class PortalTable(tables.Table):
    noun = "rows"

    class Meta:
        template_name = "tables/table.html"
        attrs = {"class": "striped"}
        # RequestConfig would take any ?per_page=N as given; configure() reads it through page_size() instead.
        per_page_field = "per_page_unchecked"
