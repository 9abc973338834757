"""Who may do what, in one place: the pages check it, the navigation shows exactly it.

Each ability names the roles that have it and says, in words a person reads on the 403 page, who does.
What a user may *see* within an ability (their teams only, or every team) is the one visibility rule,
Team.objects.visible_to / Job.objects.visible_to; this module answers only "may this user open it at all".
"""

from django.core.exceptions import PermissionDenied

from quotas.models import Role

ADMIN, MANAGER, SCIENTIST = Role.ADMIN, Role.MANAGER, Role.SCIENTIST
EVERYONE = frozenset({ADMIN, MANAGER, SCIENTIST})

# ability: (roles that have it, why the others do not)
ABILITIES: dict[str, tuple[frozenset, str]] = {
    "read_jobs": (EVERYONE, ""),
    "submit_jobs": (frozenset({ADMIN, SCIENTIST}), "Managers read jobs; data scientists and admins submit them."),
    "read_teams": (EVERYONE, ""),
    "read_cluster": (EVERYONE, ""),
    "read_policy": (EVERYONE, ""),
    "read_usage": (EVERYONE, ""),  # scientists: their own teams
    "read_reports": (EVERYONE, ""),  # scientists: their own teams
    "read_quota_requests": (EVERYONE, ""),  # scientists: their own teams' requests
    "read_whatif": (frozenset({ADMIN, MANAGER}), "What-if replays are for admins and managers."),
    "read_alerts": (frozenset({ADMIN, MANAGER}), "Alerts are set by admins and read by managers."),
    "change_alerts": (frozenset({ADMIN}), "Only admins change alert rules."),
    "read_admission_runs": (frozenset({ADMIN}), "Only admins see the admission loop's runs."),
    "read_kubernetes": (frozenset({ADMIN, MANAGER}), "The Kubernetes pages are for admins and managers."),
    "change_kubernetes": (frozenset({ADMIN}), "Only admins act on the Kubernetes cluster."),
    "change_configuration": (frozenset({ADMIN}), "Only admins change the cluster's configuration."),
    "read_all_teams": (frozenset({ADMIN, MANAGER}), "Admins and managers only."),
}


def role_of(user) -> str | None:
    if user is None or not user.is_authenticated:
        return None
    return ADMIN if user.is_portal_admin else user.role


def may(user, ability: str) -> bool:
    """Whether the user may open what the ability names (a KeyError for an unknown ability: a typo is a bug)."""
    roles, _ = ABILITIES[ability]
    return role_of(user) in roles


def require(user, ability: str, why: str = "") -> None:
    """PermissionDenied, with the reason the 403 page shows, unless the user may."""
    if not may(user, ability):
        raise PermissionDenied(why or ABILITIES[ability][1])
