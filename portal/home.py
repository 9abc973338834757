"""Selectors for the home pages: what each role sees first."""

from datetime import timedelta
from urllib.parse import urlencode

from django.db.models import Count, Sum
from django.urls import reverse
from django.utils import timezone

from quotas.models import InstanceType, NodeGroup, Team, User
from scheduling.models import AdmissionRun, Job, JobEvent, JobState
from scheduling.usage.selectors import utilization_now


def cluster_capacity():
    """Per instance type: nodes and total accelerators, vCPUs and memory."""
    rows = []
    types = InstanceType.objects.annotate(nodes=Sum("node_groups__node_count")).order_by("name")
    for it in types:
        nodes = it.nodes or 0
        rows.append(
            {
                "instance_type": it,
                "nodes": nodes,
                "accelerators": nodes * it.accelerators,
                "vcpus": nodes * it.vcpus,
                "memory_gib": nodes * it.memory_gib,
            }
        )
    return rows


def job_counts(queryset):
    """Jobs per state now; "preempted" is a state jobs pass through on their way back to the queue, so its
    tile counts the preemptions of the last 24 hours instead."""
    counts = dict(queryset.values_list("state").annotate(n=Count("id")).order_by())
    out = {state: counts.get(state, 0) for state in JobState.values if state != JobState.PREEMPTED}
    since = timezone.now() - timedelta(hours=24)
    out["preempted (24 h)"] = JobEvent.objects.filter(
        job__in=queryset, to_state=JobState.PREEMPTED, at__gte=since
    ).count()
    return out


def job_tiles(counts: dict) -> list[dict]:
    """The job-count tiles, each linking to the jobs it counts (the preemption tile to the usage page's
    preemption chart over the same 24 hours)."""
    jobs = reverse("jobs:job-list")
    tiles = []
    for label, n in counts.items():
        if label in JobState.values:
            url = f"{jobs}?{urlencode({'state': label, 'mine': 'false'})}"
        else:
            url = f"{reverse('usage:dashboard')}?range=24h#chart-preemptions"
        tiles.append({"label": label, "n": n, "url": url, "key": label.split(" ")[0]})
    return tiles


def _jobs(queryset) -> dict:
    counts = job_counts(queryset)
    return {"job_counts": counts, "job_tiles": job_tiles(counts)}


def admin_home():
    return {
        "capacity": cluster_capacity(),
        "node_groups": NodeGroup.objects.count(),
        "teams": Team.objects.annotate(member_count=Count("members", distinct=True)).order_by("name"),
        "users_by_role": dict(User.objects.values_list("role").annotate(n=Count("id")).order_by()),
        **_jobs(Job.objects.all()),
        "recent_runs": AdmissionRun.objects.all()[:5],
    }


def manager_home():
    return {
        "utilization": utilization_now(),
        "capacity": cluster_capacity(),
        # distinct: two joins in one query multiply each other (members x jobs) without it
        "teams": Team.objects.annotate(
            member_count=Count("members", distinct=True), job_count=Count("jobs", distinct=True)
        ).order_by("name"),
        **_jobs(Job.objects.all()),
    }


def scientist_home(user):
    teams = Team.objects.visible_to(user).order_by("name")
    jobs = Job.objects.visible_to(user).select_related("team", "instance_type", "assigned_instance_type")
    return {
        "teams": teams,
        "my_jobs": jobs.filter(submitted_by=user)[:10],
        **_jobs(jobs),
    }
