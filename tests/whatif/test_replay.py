"""What-if replays. Recorded history is built by running the engine's simulator onto the database (as if the
admission loop had lived through it); replaying that window under the unchanged configuration must reproduce
it, and a changed draft must move the figures the way the change says."""

import pytest
from django.core.management import call_command
from django.urls import reverse

from quotas.demo import demo_load
from quotas.models import ConfigVersion, NodeGroup, Team, User
from scheduling.whatif import services
from scheduling.whatif.models import Replay, ReplayDecision, ReplayStatus
from scheduling.whatif.synthetic import record_simulated_history

# Tolerances of "reproduces the recorded outcome": the replay reads back what the simulator wrote, to the
# millisecond, so figures agree to within rounding.
WAIT_TOLERANCE_S = 1.0
HOURS_TOLERANCE = 0.01  # accelerator-hours
PCT_TOLERANCE = 0.01  # percentage points


@pytest.fixture
def history(db):
    demo_load()
    return record_simulated_history(days=2, stride=8)


@pytest.fixture
def admin(history):
    return User.objects.get(username="admin")


def _run(admin, history, draft):
    replay = services.replay_create(user=admin, draft=draft, window_days=2, now=history["end"], enqueue=False)
    return services.replay_run(replay=replay)


def test_an_unchanged_draft_reproduces_what_happened(admin, history):
    replay = _run(admin, history, {})
    assert replay.status == ReplayStatus.DONE, replay.message
    results = replay.results
    assert results["jobs"] == history["jobs"] == 375
    assert replay.changes == []
    busy = 0
    for row in results["teams"]:
        recorded, draft = row["recorded"], row["draft"]
        assert draft["jobs"] == recorded["jobs"]
        for key in ("avg_wait_s", "p95_wait_s"):
            assert draft[key] == pytest.approx(recorded[key], abs=WAIT_TOLERANCE_S), (row["team"], key)
        for key in ("hours_within_quota", "hours_borrowed"):
            assert draft[key] == pytest.approx(recorded[key], abs=HOURS_TOLERANCE), (row["team"], key)
        assert draft["preemptions"] == recorded["preemptions"]
        assert draft["still_waiting"] == recorded["still_waiting"]
        if recorded["utilization_pct"] is not None:
            assert draft["utilization_pct"] == pytest.approx(recorded["utilization_pct"], abs=PCT_TOLERANCE)
        busy += recorded["avg_wait_s"] > 60 or recorded["preemptions"] > 0
    assert busy, "the history has queues or preemptions to reproduce, not an idle cluster"
    assert results["movers"] == []


def test_removing_nodes_makes_waits_longer(admin, history):
    draft = {
        "node_groups": [
            {"name": g.name, "instance_type": g.instance_type.name, "node_count": max(1, g.node_count // 4)}
            for g in NodeGroup.objects.select_related("instance_type")
        ]
    }
    replay = _run(admin, history, draft)
    assert replay.status == ReplayStatus.DONE, replay.message
    cluster = replay.results["cluster"]
    assert cluster["draft"]["avg_wait_s"] > cluster["recorded"]["avg_wait_s"] + 60
    assert replay.results["movers"][0]["change_s"] > 0  # the biggest change: a job that now waits longer
    assert any("node_count" in line for line in replay.changes)


def test_save_writes_a_normal_version_naming_the_replay(admin, history):
    draft = services.draft_with_team(team_name="research", fields={"fair_share_weight": 3.0})
    replay = _run(admin, history, draft)
    services.replay_save(replay=replay, user=admin, reason="research deserves more", url="/whatif/replays/1/")
    version = ConfigVersion.objects.filter(team__name="research").order_by("-number").first()
    assert version.changes == ["fair-share weight: 0 → 3"]
    assert ConfigVersion.objects.exclude(team__name="research").count() == 0  # one team changed, one version
    assert version.reason.startswith(f"what-if replay #{replay.pk}") and "research deserves more" in version.reason
    assert version.author == admin
    assert Team.objects.get(name="research").fair_share_weight == 3.0
    replay.refresh_from_db()
    assert replay.decision == ReplayDecision.SAVED and replay.decided_by == admin
    with pytest.raises(services.ValidationError, match="already saved"):
        services.replay_discard(replay=replay, user=admin)


def test_a_stale_draft_is_refused_and_nothing_changes(admin, history):
    replay = _run(admin, history, services.draft_with_team(team_name="vision", fields={"fair_share_weight": 9.0}))
    from quotas import services as quota_services

    quota_services.team_update(team=Team.objects.get(name="speech"), user=admin, fair_share_weight=5)
    with pytest.raises(services.ValidationError, match="configuration changed"):
        services.replay_save(replay=replay, user=admin)
    assert Team.objects.get(name="vision").fair_share_weight == 2.0
    services.replay_discard(replay=replay, user=admin, reason="stale")
    assert Replay.objects.get(pk=replay.pk).decision == ReplayDecision.DISCARDED


def test_a_bad_draft_is_a_clear_error(admin, history):
    with pytest.raises(services.ValidationError) as err:
        services.replay_create(user=admin, draft={"teams": [{"name": "x"}]}, window_days=7)
    assert "missing namespace" in str(err.value)
    with pytest.raises(services.ValidationError, match="from 1 to 90"):
        services.replay_create(user=admin, draft={}, window_days=0)
    assert Replay.objects.count() == 0


def test_command_prints_the_comparison(history, capsys, tmp_path):
    draft = tmp_path / "draft.yaml"
    draft.write_text("cluster_policy:\n  task_prioritization: task-ranking\n  idle_compute: fcfs\n")
    call_command("whatif", str(draft), "--days", "2")
    out = capsys.readouterr().out
    assert "task prioritization" in out and "Average wait" in out and "vision" in out
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="cannot read"):
        call_command("whatif", str(tmp_path / "missing.yaml"))


ROLES = ["anonymous", "scientist", "manager", "admin"]


@pytest.fixture
def role_users(history):
    return {
        "anonymous": None,
        "scientist": User.objects.get(username="sam"),
        "manager": User.objects.get(username="manager"),
        "admin": User.objects.get(username="admin"),
    }


def test_pages_and_api_for_every_role(client_for, api_for, role_users, admin, history):
    replay = _run(admin, history, {})
    for role in ROLES:
        _check_role(client_for, api_for, replay, role, role_users[role])


def _check_role(client_for, api_for, replay, role, user):
    read = {"anonymous": 302, "scientist": 403, "manager": 200, "admin": 200}[role]
    for name, args in (("whatif:replay-list", []), ("whatif:replay-detail", [replay.pk])):
        assert client_for(user).get(reverse(name, args=args)).status_code == read
    assert client_for(user).get(reverse("whatif:replay-new")).status_code == {"manager": 403}.get(role, read)
    api = api_for(user)
    expected = {"anonymous": 401, "scientist": 403, "manager": 200, "admin": 200}[role]
    assert api.get(f"/api/whatif/replays/{replay.pk}/").status_code == expected
    created = api.post("/api/whatif/replays/", {"draft": {}, "window_days": 2}, format="json")
    assert created.status_code == {"manager": 403, "admin": 201}.get(role, expected)
    discard = api.post(f"/api/whatif/replays/{replay.pk}/discard/", {"reason": "no"}, format="json")
    assert discard.status_code == {"manager": 403, "admin": 200}.get(role, expected)
    replay.refresh_from_db()
    assert (replay.decision == ReplayDecision.DISCARDED) == (role == "admin"), role


def test_api_bad_draft_is_a_400(api_for, admin, history):
    response = api_for(admin).post("/api/whatif/replays/", {"draft": "teams: [", "window_days": 7}, format="json")
    assert response.status_code == 400 and "not valid YAML" in str(response.json())
    response = api_for(admin).post("/api/whatif/replays/", {"draft": {}, "window_days": 91}, format="json")
    assert response.status_code == 400


def test_the_page_shows_the_comparison_and_reconciles(client_for, admin, history):
    replay = _run(admin, history, {})
    page = client_for(admin).get(reverse("whatif:replay-detail", args=[replay.pk])).content.decode()
    assert 'data-testid="comparison"' in page and "Save the draft" in page
    for row in replay.results["teams"]:
        assert f'data-team="{row["team"]}"' in page


def test_allocation_editor_replays_its_draft(client_for, admin, history):
    team = Team.objects.get(name="research")
    it = team.allocations.select_related("instance_type").first().instance_type
    response = client_for(admin).post(
        reverse("whatif:replay-from-allocations", args=[team.pk]),
        {f"t{it.pk}-accelerators": "16", f"t{it.pk}-accelerators_src": "set", "window_days": "2"},
    )
    replay = Replay.objects.get()
    assert response.status_code == 302 and response["Location"] == replay.get_absolute_url()
    assert any("research" in line for line in replay.changes)
    assert Team.objects.get(name="research").allocations.get(instance_type=it).accelerators != 16  # not saved


def test_team_form_replays_its_draft(client_for, admin, history):
    team = Team.objects.get(name="vision")
    data = {
        "name": "vision",
        "namespace": team.namespace,
        "cohort": "default",
        "fair_share_weight": "5",
        "sharing": "LendAndBorrow",
        "borrow_limit_pct": "",
        "preempt_team_tasks": "Never",
        "window_days": "2",
    }
    response = client_for(admin).post(reverse("whatif:replay-from-team", args=[team.pk]), data)
    replay = Replay.objects.get()
    assert response["Location"] == replay.get_absolute_url()
    assert any("fair-share weight: 2 → 5" in line for line in replay.changes)
    assert Team.objects.get(name="vision").fair_share_weight == 2.0  # a draft, not saved


def test_recorded_figures_reconcile_with_the_jobs_and_events(admin, history):
    """Recomputed here from the rows, independently of the replay's code: job counts per team, and the
    accelerator-hours of every run (admitted until preempted or finished) summing to the cluster's figure."""
    from collections import Counter

    from scheduling.models import Job, JobEvent

    replay = _run(admin, history, {})
    teams = {row["team"]: row["recorded"] for row in replay.results["teams"]}
    submitted = Counter(Job.objects.filter(submitted_at__gte=history["start"]).values_list("team__name", flat=True))
    assert {name: figures["jobs"] for name, figures in teams.items() if figures["jobs"]} == dict(submitted)

    sizes = {j.pk: j.accelerators * j.pods for j in Job.objects.all()}
    hours, started = 0.0, {}
    for job_id, at, to_state in JobEvent.objects.order_by("at", "pk").values_list("job_id", "at", "to_state"):
        if to_state == "admitted":
            started[job_id] = at
        elif to_state in ("preempted", "succeeded") and job_id in started:
            hours += sizes[job_id] * (at - started.pop(job_id)).total_seconds() / 3600
    hours += sum(sizes[j] * (history["end"] - at).total_seconds() / 3600 for j, at in started.items())
    cluster = replay.results["cluster"]["recorded"]
    assert cluster["hours_within_quota"] + cluster["hours_borrowed"] == pytest.approx(hours, rel=1e-6)
    assert sum(t["hours_within_quota"] + t["hours_borrowed"] for t in teams.values()) == pytest.approx(hours, rel=1e-6)
    assert cluster["preemptions"] == JobEvent.objects.filter(to_state="preempted").count()


@pytest.mark.parametrize("role", ["scientist", "manager"])
def test_only_admins_start_replays_from_the_forms(client_for, role_users, history, role):
    user = role_users[role]
    team = Team.objects.get(name="vision")
    for name, args in (("whatif:replay-from-allocations", [team.pk]), ("whatif:replay-from-team", [team.pk]),
                       ("whatif:replay-from-policy", []), ("whatif:replay-new", [])):  # fmt: skip
        response = client_for(user).post(reverse(name, args=args), {"window_days": "2", "draft": ""})
        assert response.status_code == 403, name
    assert Replay.objects.count() == 0
