"""The fair share explained: the engine's own fair-share computation, run with a trace on the same snapshot
the team pages read (scheduling.status.team_statuses), so the derivation ends on the number shown."""

from dataclasses import dataclass, replace

from django.utils import timezone

from quotas.models import Team
from quotas.selectors import RESOURCE_ORDER
from scheduling import engine
from scheduling.engine.fairshare_trace import trace_fair_share
from scheduling.snapshot import build_snapshot


@dataclass
class Derivation:
    instance_type: str
    resource: str
    fair_share: float
    steps: list  # of engine.fairshare_trace.Line, the last being this team's figure


def fair_share_explained(team: Team, *, user=None, now=None) -> list[Derivation]:
    """Per instance type and resource the team has quota, demand or a fair share on: the steps of the
    computation, in the order the engine took them. Teams of the cohort that `user` may not see are named
    "another team (A)", "(B)"... (their numbers stay: the figure depends on them)."""
    snapshot = build_snapshot(now=now or timezone.now())
    scheduler = engine.build_scheduler(snapshot)
    scheduler.wake_all()
    scheduler.settle(snapshot.now)
    aliases = _aliases(snapshot, user)
    trace = trace_fair_share(scheduler, team.name, aliases)
    quota = next((t.quota for t in snapshot.teams if t.name == team.name), {})
    order = {r: i for i, r in enumerate(RESOURCE_ORDER)}
    out = []
    for (instance_type, resource), note in trace.cells.items():
        steps = [replace(line, team=aliases.get(line.team, line.team)) for line in note.for_team(team.name)]
        figure = steps[-1].value
        wanted = figure > 1e-9 or resource in quota.get(instance_type, {}) or _mentions_demand(note, team.name)
        if wanted and resource in order:
            out.append(Derivation(instance_type, resource, figure, steps))
    out.sort(
        key=lambda d: (
            list(quota).index(d.instance_type) if d.instance_type in quota else 99,
            d.instance_type,
            order[d.resource],
        )
    )
    return out


def _aliases(snapshot, user) -> dict[str, str]:
    if user is None or user.sees_all_teams:
        return {}
    visible = set(Team.objects.visible_to(user).values_list("name", flat=True))
    hidden = [t.name for t in snapshot.teams if t.name not in visible]
    return {name: f"another team ({chr(ord('A') + i % 26)}{i // 26 or ''})" for i, name in enumerate(hidden)}


def _mentions_demand(note, team_name: str) -> bool:
    """Whether the team asks for anything on this cell (its nominal line carries its demand)."""
    return any(line.kind == "nominal" and line.team == team_name and line.value > 1e-9 for line in note.lines)


def as_text(team: Team, derivations: list[Derivation]) -> str:
    if not derivations:
        return f"{team.name} has no quota, demand or fair share on any instance type."
    blocks = []
    for d in derivations:
        lines = [f"{d.instance_type} · {d.resource}"] + [f"  {i}. {s.text}" for i, s in enumerate(d.steps, 1)]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
