"""The team list: what each role sees, at a glance, in a fixed number of queries."""

import pytest
from django.urls import reverse

from quotas import services
from quotas.models import ComputeAllocation, Team
from tests.numbers import figures


def test_scientist_sees_only_their_teams(client_for, scientist, team_b):
    html = client_for(scientist).get(reverse("quotas:team-list")).content.decode()
    assert 'data-team="team-a"' in html and 'data-team="team-b"' not in html
    assert "New team" not in html


def test_glance_shows_quota_in_accelerators(client_for, manager_user, team_a, team_b):
    html = client_for(manager_user).get(reverse("quotas:team-list")).content.decode()
    row = html.split('data-team="team-a"')[1].split("</tr>")[0]
    assert '<span class="metric">8</span> <small>GPU</small>' in row
    assert "Kueue YAML" in html


def _more_teams(n, p5):
    for i in range(n):
        team = Team.objects.create(name=f"extra-{i}", namespace=f"hyperpod-ns-extra-{i}")
        ComputeAllocation.objects.create(team=team, instance_type=p5, accelerators=1)


# Session, user, teams with member counts, then the standing the scheduler published: the newest publication,
# whether it is current (the oldest job event it does not reflect, the configuration fingerprint) and the teams'
# standing in it. Without a current one (none yet, or stale) the page asks the engine for the standing of one
# snapshot of the whole cluster and publishes it for the pages after it. The same for 2 teams and for 10.
TEAM_LIST_QUERIES = 7
TEAM_LIST_QUERIES_COMPUTING = 21


@pytest.mark.parametrize("extra", [0, 8])
def test_team_list_query_budget(client_for, admin_user, team_a, team_b, p5, extra, django_assert_num_queries):
    _more_teams(extra, p5)
    client = client_for(admin_user)
    with django_assert_num_queries(TEAM_LIST_QUERIES_COMPUTING):
        response = client.get(reverse("quotas:team-list"))
    assert response.status_code == 200
    with django_assert_num_queries(TEAM_LIST_QUERIES):
        again = client.get(reverse("quotas:team-list"))
    assert figures(again.content) == figures(response.content)  # the same figures, read from the publication


def test_team_form_creates_and_validates(client_for, admin_user, scientist):
    client = client_for(admin_user)
    data = {"name": "nlp", "namespace": "hyperpod-ns-nlp", "cohort": "default", "fair_share_weight": "2",
            "sharing": "LendAndBorrow", "borrow_limit_pct": "50", "preempt_team_tasks": "LowerPriority",
            "members": [scientist.pk], "reason": "new group"}  # fmt: skip
    response = client.post(reverse("quotas:team-create"), data)
    team = Team.objects.get(name="nlp")
    assert response["Location"] == reverse("quotas:allocations", args=[team.pk])
    assert list(team.members.all()) == [scientist]
    bad_cases = [
        ({"namespace": "NLP_ns"}, "namespace"),
        ({"fair_share_weight": "-1"}, "fair_share_weight"),
        ({"name": "nlp", "namespace": "other"}, "name"),
        ({"borrow_limit_pct": "-3"}, "borrow_limit_pct"),
        ({"fair_share_weight": "heavy"}, "fair_share_weight"),
    ]
    for bad, field in bad_cases:
        response = client.post(reverse("quotas:team-create"), {**data, "name": "nlp2", **bad})
        assert response.status_code == 200
        assert response.context["form"].errors.get(field), (bad, response.context["form"].errors)
    assert Team.objects.filter(name__startswith="nlp").count() == 1
    services.team_update(team=team, user=admin_user, fair_share_weight=3)


def shown_teams(response) -> list[str]:
    import re

    return re.findall(r'<tr [^>]*data-team="([^"]+)"', response.content.decode())


def test_team_list_pages_are_numbered_and_sized(client_for, manager_user, team_a, team_b, p5):
    _more_teams(58, p5)  # 60 teams
    client = client_for(manager_user)
    first = client.get(reverse("quotas:team-list"))
    assert len(shown_teams(first)) == 50 and figures(first.content)["teams:count"] == "60"
    assert len(shown_teams(client.get(reverse("quotas:team-list") + "?page=2"))) == 10
    assert len(shown_teams(client.get(reverse("quotas:team-list") + "?per_page=25"))) == 25


@pytest.mark.parametrize("sort", ["name", "-name", "quota", "-quota", "pending", "-members", "weight"])
def test_team_list_sorts_by_every_column(client_for, manager_user, team_a, team_b, p5, sort):
    _more_teams(6, p5)
    ComputeAllocation.objects.filter(team=team_a).update(accelerators=16)
    client = client_for(manager_user)
    shown = shown_teams(client.get(reverse("quotas:team-list") + f"?sort={sort}"))
    teams = {t.name: t for t in Team.objects.prefetch_related("allocations", "members")}
    key = {
        "name": lambda t: t.name,
        "quota": lambda t: (sum(a.accelerators or 0 for a in t.allocations.all()), t.name),
        "pending": lambda t: (0, t.name),
        "members": lambda t: (t.members.count(), t.name),
        "weight": lambda t: (t.fair_share_weight, t.name),
    }[sort.lstrip("-")]
    assert shown == sorted(teams, key=lambda name: key(teams[name]), reverse=sort.startswith("-"))
    assert client.get(reverse("quotas:team-list") + "?sort=password").status_code == 200  # unknown: ignored
