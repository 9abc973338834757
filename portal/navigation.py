"""The navigation bar: exactly the pages the user's role may open (quotas.roles decides; the pages check the
same abilities on the server). Entries whose URL name does not exist are left out."""

from django.urls import NoReverseMatch, reverse

from quotas.roles import may

# (label, url name, ability)
ENTRIES = [
    ("Home", "home", "read_jobs"),
    ("Jobs", "jobs:job-list", "read_jobs"),
    ("Submit", "jobs:job-submit", "submit_jobs"),
    ("Teams", "quotas:team-list", "read_teams"),
    ("Usage", "usage:dashboard", "read_usage"),
    ("Reports", "usage:reports", "read_reports"),
    ("Requests", "whatif:request-list", "read_quota_requests"),
    ("What-if", "whatif:replay-list", "read_whatif"),
    ("Alerts", "usage:alerts", "read_alerts"),
    ("Cluster", "quotas:cluster", "read_cluster"),
    ("Policy", "quotas:policy", "read_policy"),
    ("Loop", "jobs:admission-runs", "read_admission_runs"),
    ("Kubernetes", "kube:inventory", "read_kubernetes"),
]


def entries_for(user):
    out = []
    for label, name, ability in ENTRIES:
        if not may(user, ability):
            continue
        try:
            out.append({"label": label, "url": reverse(name), "name": name})
        except NoReverseMatch:
            continue
    return out
