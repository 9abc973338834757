"""The navigation bar, by role. Entries whose URL name does not exist yet are left out."""

from django.urls import NoReverseMatch, reverse

# (label, url name, who sees it: "all" | "admin" | "reader" (admin+manager))
ENTRIES = [
    ("Home", "home", "all"),
    ("Jobs", "jobs:job-list", "all"),
    ("Submit", "jobs:job-submit", "all"),
    ("Teams", "quotas:team-list", "all"),
    ("Cluster", "quotas:cluster", "reader"),
    ("Policy", "quotas:policy", "reader"),
    ("Usage", "usage:dashboard", "reader"),
    ("Reports", "usage:reports", "reader"),
    ("Requests", "whatif:request-list", "all"),
    ("What-if", "whatif:replay-list", "reader"),
    ("Alerts", "usage:alerts", "admin"),
    ("Loop", "jobs:admission-runs", "admin"),
    ("Kubernetes", "kube:inventory", "admin"),
]


def entries_for(user):
    allowed = {"all"}
    if user.is_portal_admin:
        allowed |= {"admin", "reader"}
    elif user.is_manager:
        allowed |= {"reader"}
    out = []
    for label, name, who in ENTRIES:
        if who not in allowed:
            continue
        try:
            out.append({"label": label, "url": reverse(name), "name": name})
        except NoReverseMatch:
            continue
    return out
