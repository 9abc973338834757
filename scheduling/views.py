"""Job pages: the list (filters, CSV, cancel), the request form with the team's standing, the job page with
its timeline and live status, and the admission loop's recent runs for admins."""

import csv

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from quotas import roles
from quotas.models import Team
from scheduling import selectors, services
from scheduling.filters import JobFilter
from scheduling.forms import JobForm, format_duration
from scheduling.models import ACTIVE_STATES
from scheduling.reasons import ReasonPresenter
from scheduling.tables import AdmissionRunTable, JobTable, configure

CSV_COLUMNS = [
    ("id", lambda j: j.pk),
    ("name", lambda j: j.name),
    ("team", lambda j: j.team.name),
    ("user", lambda j: j.submitted_by.username),
    ("state", lambda j: j.state),
    ("reason", lambda j: j.reason),
    ("instance_type", lambda j: j.instance_type.name if j.instance_type_id else "any"),
    ("assigned_instance_type", lambda j: j.assigned_instance_type.name if j.assigned_instance_type_id else ""),
    ("accelerators_per_pod", lambda j: j.accelerators),
    ("vcpus_per_pod", lambda j: j.vcpus),
    ("memory_gib_per_pod", lambda j: j.memory_gib),
    ("pods", lambda j: j.pods),
    ("priority_class", lambda j: j.priority_class.name if j.priority_class_id else ""),
    ("admitted_on_borrowed_quota", lambda j: j.borrowed),  # how it was admitted, not what it borrows now
    ("preemptions", lambda j: j.preemption_count),
    ("submitted_at", lambda j: j.submitted_at.isoformat()),
    ("admitted_at", lambda j: j.admitted_at.isoformat() if j.admitted_at else ""),
    ("started_at", lambda j: j.started_at.isoformat() if j.started_at else ""),
    ("finished_at", lambda j: j.finished_at.isoformat() if j.finished_at else ""),
]


class _Echo:
    def write(self, value):
        return value


def _filtered(request):
    data = request.GET.copy()
    if not data and not request.user.sees_all_teams:
        data["mine"] = "true"  # a scientist starts on their own jobs, like squeue --me
    return JobFilter(data, queryset=selectors.job_list(request.user), request=request)


def job_list(request):
    jobs = _filtered(request)
    if request.GET.get("export") == "csv":
        return _csv(jobs.qs, request.user)
    table = configure(request, JobTable(jobs.qs if jobs.is_valid() else jobs.queryset.none()))
    shown = [row.record for row in table.page.object_list] if hasattr(table, "page") else []
    borrowing = selectors.borrowing_now({job.team.name for job in shown if job.state in ACTIVE_STATES})
    for job in shown:
        job.borrowing_now = borrowing.get(job.pk)
    query = request.GET.copy()
    query.pop("page", None)
    context = {"filter": jobs, "table": table, "query": query.urlencode()}
    template = "scheduling/_job_table.html" if request.htmx else "scheduling/job_list.html"
    return render(request, template, context)


def _csv(queryset, viewer):
    writer = csv.writer(_Echo())
    present = ReasonPresenter(viewer)  # other teams' jobs named in a reason are anonymised for this reader
    columns = [(name, (lambda j: present(j.reason)) if name == "reason" else value) for name, value in CSV_COLUMNS]

    def rows():
        yield writer.writerow([name for name, _ in columns])
        for job in selectors.newest_first_in_chunks(queryset):
            yield writer.writerow([value(job) for _, value in columns])

    response = StreamingHttpResponse(rows(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="jobs-{timezone.now():%Y%m%d-%H%M}.csv"'
    return response


def job_submit(request):
    roles.require(request.user, "submit_jobs")
    initial = {}
    clone_of = None
    if request.GET.get("clone"):
        clone_of = selectors.job_detail(request.user, request.GET["clone"])
        if clone_of is None:
            raise Http404("no such job")
        initial = {
            **services.job_request_from(clone_of).__dict__,
            "expected_duration": format_duration(clone_of.expected_duration_s),
        }
    form = JobForm(request.POST or None, user=request.user, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            job = services.job_submit(user=request.user, request=form.to_request(), cloned_from=clone_of)
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            messages.success(request, f"Job #{job.pk} {job.name} submitted to {job.team.name}'s queue.")
            return redirect("jobs:job-detail", pk=job.pk)
    teams = Team.objects.visible_to(request.user) if request.user.is_portal_admin else request.user.teams.all()
    data = form.data if form.is_bound else {**{k: f.initial for k, f in form.fields.items()}, **initial}
    size_defaults = services.size_defaults(
        user=request.user,
        team=data.get("team") or next(iter(form.fields["team"].choices), ("", ""))[0],
        instance_type=data.get("instance_type") or "",
        accelerators=data.get("accelerators"),
    )
    _show_defaults(form, size_defaults)
    context = {
        "form": form,
        "panels": selectors.team_panels(teams.order_by("name")),
        "clone_of": clone_of,
        "size_defaults": size_defaults,
    }
    return render(request, "scheduling/job_submit.html", context, status=400 if form.errors else 200)


def job_size_defaults(request):
    """htmx: the vCPUs and memory a blank field takes, as the user types the accelerators."""
    roles.require(request.user, "submit_jobs")
    g = request.GET
    found = services.size_defaults(
        user=request.user,
        team=g.get("team", ""),
        instance_type=g.get("instance_type", ""),
        accelerators=g.get("accelerators"),
    )
    return render(request, "scheduling/_size_defaults.html", {"found": found})


def _show_defaults(form: JobForm, found) -> None:
    """The proportional defaults appear in the vCPU and memory fields themselves (as placeholders) while they
    are blank, so the user sees what a blank field takes and may type over it; as the accelerators change,
    static/js/size-defaults.js copies the fragment's figures into the placeholders (never into a value)."""
    for name, value in (("vcpus", found[0] if found else None), ("memory_gib", found[1] if found else None)):
        form.fields[name].widget.attrs["placeholder"] = "" if value is None else f"{value:g}"


def _job_or_404(request, pk):
    job = selectors.job_detail(request.user, pk)
    if job is None:
        raise Http404("no such job")
    return job


def _status_context(request, job):
    plan = selectors.job_plan(job)
    return {
        "job": job,
        "events": selectors.job_events(job),
        "place": plan.place,
        "estimate": plan.estimate,
        "expected_end": selectors.expected_end(job),
        "can_change": services.can_change(request.user, job),
    }


def job_detail(request, pk):
    job = _job_or_404(request, pk)
    return render(request, "scheduling/job_detail.html", _status_context(request, job))


def job_status(request, pk):
    """The live part of the job page, polled by htmx while the job is not finished."""
    job = _job_or_404(request, pk)
    return render(request, "scheduling/_job_status.html", _status_context(request, job))


@require_POST
def job_cancel(request, pk):
    try:
        job = services.job_cancel(user=request.user, pk=pk)
    except services.JobNotFound as exc:
        raise Http404("no such job") from exc
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect(_safe_next(request))
    messages.success(request, f"Job #{job.pk} {job.name} cancelled.")
    return redirect(_safe_next(request))


def _safe_next(request) -> str:
    """Where to go after a POST: the `next` the form gave when it is a path on this site, else the job list."""
    target = request.POST.get("next") or ""
    safe = target.startswith("/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return target if safe else reverse("jobs:job-list")


def admission_runs(request):
    roles.require(request.user, "read_admission_runs")
    summary = selectors.admission_run_summary()
    table = configure(request, AdmissionRunTable(selectors.admission_runs(None)))
    context = {"table": table, **summary}
    return render(request, "scheduling/admission_runs.html", context)
