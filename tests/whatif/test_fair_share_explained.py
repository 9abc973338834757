"""The fair share explained on the team page, in the API and from a terminal: it ends on the number the team
page shows (scheduling.status.team_statuses), and it follows the one visibility rule."""

import pytest
from django.core.management import call_command
from django.urls import reverse

from scheduling.status import team_statuses

ROLES = ["anonymous", "other", "scientist", "manager", "admin"]
TEAM_READ = {"anonymous": 302, "other": 404, "scientist": 200, "manager": 200, "admin": 200}
API_READ = {"anonymous": 401, "other": 404, "scientist": 200, "manager": 200, "admin": 200}


@pytest.fixture
def busy(users, team_a, team_b, submit):
    """team-a asks for far more than its 8 GPUs; team-b for a little: team-a's fair share borrows."""
    for i in range(4):
        submit(users["scientist"], team_a, name=f"a{i}", accelerators=4, vcpus=8, memory_gib=64)
    submit(users["other"], team_b, name="b0", accelerators=2, vcpus=8, memory_gib=64)
    return team_a


@pytest.fixture
def submit():
    from scheduling.services import JobRequest, job_submit

    def do(user, team, name, **fields):
        values = dict(team=team.name, name=name, image="pytorch:2", accelerators=1, vcpus=4, memory_gib=32)
        values.update(fields)
        return job_submit(user=user, request=JobRequest(**values))

    return do


@pytest.mark.parametrize("role", ROLES)
def test_page_and_api_for_every_role(client_for, api_for, users, busy, role):
    user = None if role == "anonymous" else users[role]
    page = client_for(user).get(reverse("whatif:team-fair-share", args=[busy.pk]))
    assert page.status_code == TEAM_READ[role]
    api = api_for(user).get(f"/api/teams/{busy.pk}/fair-share/")
    assert api.status_code == API_READ[role]


def test_derivation_ends_on_the_number_the_team_page_shows(api_for, client_for, users, busy):
    shown = team_statuses()["team-a"].fair_share["ml.p5.48xlarge"]
    body = api_for(users["manager"]).get(f"/api/teams/{busy.pk}/fair-share/").json()
    cells = {(d["instance_type"], d["resource"]): d for d in body["derivations"]}
    assert set(cells) == {("ml.p5.48xlarge", r) for r in ("gpu", "cpu", "memory")}
    gpu = cells[("ml.p5.48xlarge", "gpu")]
    assert gpu["fair_share"] == pytest.approx(shown["gpu"]) and shown["gpu"] > 8  # it borrows team-b's idle part
    assert gpu["steps"][-1]["text"] == f"Fair share of team-a on ml.p5.48xlarge: {shown['gpu']:g} GPUs."
    kinds = [s["kind"] for s in gpu["steps"]]
    assert kinds[0] == "nominal" and "pool" in kinds and "cap" in kinds and kinds[-1] == "result"
    page = client_for(users["scientist"]).get(reverse("quotas:team-detail", args=[busy.pk]))
    assert reverse("whatif:team-fair-share", args=[busy.pk]) in page.content.decode()


def test_command_prints_the_derivation(busy, capsys):
    call_command("fairshare", "--explain", "team-a")
    out = capsys.readouterr().out
    assert "ml.p5.48xlarge · gpu" in out and "pools" in out and "Fair share of team-a on ml.p5.48xlarge" in out


def test_command_unknown_team_is_one_line(db):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no team named 'nope'"):
        call_command("fairshare", "--explain", "nope")


def test_a_scientist_sees_other_teams_unnamed(api_for, users, busy):
    body = api_for(users["scientist"]).get(f"/api/teams/{busy.pk}/fair-share/").json()
    text = str(body)
    assert "team-b" not in text and "another team (A)" in text
    assert "team-b" in str(api_for(users["manager"]).get(f"/api/teams/{busy.pk}/fair-share/").json())
