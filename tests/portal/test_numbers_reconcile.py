"""Every page's figures, recomputed from the database and compared with what the page shows.

One small world: team-a has GPU and Neuron quota and runs on both, team-b runs within its GPU quota, team-c has
no quota and runs on what it borrows. The loop admits the jobs, a usage sample and its rollups are recorded,
and then each page (home per role, teams, a team, usage, reports, the per-job report, the job list) is read
back through its data-n figures.
"""

import json
from collections import defaultdict
from datetime import timedelta

import pytest
from django.db.models import F, Sum
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from quotas.models import ComputeAllocation, InstanceType, NodeGroup, Role, Team
from scheduling.loop import admission_run
from scheduling.models import Job, JobState
from scheduling.services import JobRequest, job_submit
from scheduling.usage import services as usage_services
from scheduling.usage.models import Granularity, UsageRollup, UsageSample
from tests.conftest import make_user
from tests.numbers import amounts, figures, number


@pytest.fixture
def world(db, p5, team_a, team_b, admin_user, manager_user, scientist, other_scientist):
    trn1 = InstanceType.objects.create(
        name="ml.trn1.32xlarge",
        family="trn1",
        accelerator_kind="AWS Trainium",
        accelerator_resource="neuron",
        accelerators=16,
        vcpus=128,
        memory_gib=512,
    )
    NodeGroup.objects.create(name="trn1-nodes", instance_type=trn1, node_count=1)
    ComputeAllocation.objects.create(team=team_a, instance_type=trn1, accelerators=16)
    team_c = Team.objects.create(name="team-c", namespace="hyperpod-ns-team-c")
    tom = make_user("tom", Role.SCIENTIST, [team_a])
    cleo = make_user("cleo", Role.SCIENTIST, [team_c])

    def submit(user, team, name, **fields):
        values = dict(team=team.name, name=name, image="img", accelerators=1, vcpus=4, memory_gib=32)
        return job_submit(user=user, request=JobRequest(**(values | fields)))

    submit(scientist, team_a, "a-gpu", accelerators=4, instance_type=p5.name)
    submit(tom, team_a, "a-neuron", accelerators=8, instance_type=trn1.name)
    submit(scientist, team_a, "a-big", accelerators=8, pods=2, instance_type=p5.name)  # waits: no room
    submit(other_scientist, team_b, "b-gpu", accelerators=2, instance_type=p5.name)
    submit(cleo, team_c, "c-borrow", accelerators=2, instance_type=p5.name)
    done = submit(scientist, team_a, "a-done", accelerators=1, instance_type=p5.name)
    admission_run(trigger="test")
    Job.objects.filter(pk=done.pk).update(state=JobState.SUCCEEDED, finished_at=timezone.now())
    admission_run(trigger="test")
    # a job submitted just now, after the last 5-minute rollup mark: reports must still count it
    submit(other_scientist, team_b, "b-late", accelerators=1, instance_type=p5.name)
    now = timezone.now()
    usage_services.usage_sample_record(now=now)
    usage_services.usage_rollup_recent(now=now)
    return {"trn1": trn1, "team_c": team_c, "now": now}


def page(client_for, user, url):
    response = client_for(user).get(url)
    assert response.status_code == 200, url
    return figures(response.content)


def state_counts(jobs):
    return {state: jobs.filter(state=state).count() for state in JobState.values if state != JobState.PREEMPTED}


def running_by_team() -> dict[str, dict[str, float]]:
    """Accelerators that running jobs hold, per team and resource (gpu / neuron), from the jobs themselves."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for job in Job.objects.filter(state__in=(JobState.ADMITTED, JobState.RUNNING)).select_related(
        "team", "assigned_instance_type"
    ):
        out[job.team.name][job.assigned_instance_type.accelerator_resource] += job.accelerators * job.pods
    return out


def quota_by_team() -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for alloc in ComputeAllocation.objects.select_related("team", "instance_type"):
        out[alloc.team.name][alloc.instance_type.accelerator_resource] += alloc.accelerators or 0
    return out


@pytest.mark.parametrize("role", ["admin", "manager", "scientist"])
def test_home_tiles_and_team_rows_match_the_database(world, users, client_for, role):
    user = users[role]
    shown = page(client_for, user, "/")
    jobs = Job.objects.visible_to(user)
    for state, n in state_counts(jobs).items():
        assert number(shown[f"jobs:{state}"]) == n, state
    if role != "scientist":
        for team in Team.objects.all():
            assert number(shown[f"{team.name}:members"]) == team.members.count(), team.name
    if role == "manager":  # members and jobs side by side, each counted on its own (no members x jobs)
        for team in Team.objects.all():
            assert number(shown[f"{team.name}:jobs"]) == Job.objects.filter(team=team).count(), team.name
        assert number(shown["team-a:members"]) == 2 and number(shown["team-a:jobs"]) == 4


def test_team_list_shows_quota_use_and_percent_per_resource(world, manager_user, client_for):
    shown = page(client_for, manager_user, "/teams/")
    running, quota = running_by_team(), quota_by_team()
    labels = {"gpu": "GPU", "neuron": "Neuron"}
    for team in Team.objects.all():
        q = {labels[r]: v for r, v in quota[team.name].items() if v}
        u = {labels[r]: v for r, v in running[team.name].items() if v}
        assert amounts(shown[f"{team.name}:quota"]) == q if q else shown[f"{team.name}:quota"] == "0"
        if u:
            assert amounts(shown[f"{team.name}:usage"]) == u
        for resource in ("gpu", "neuron"):
            key = f"{team.name}:use:{resource}"
            if not (quota[team.name].get(resource) or running[team.name].get(resource)):
                assert key not in shown
            elif quota[team.name].get(resource):
                pct = round(100 * running[team.name].get(resource, 0) / quota[team.name][resource])
                assert number(shown[key]) == pct
            else:
                assert shown[key].startswith("no GPU quota")
    # GPUs and Neuron devices apart: team-a uses 4 of 8 GPUs (50 %) and 8 of 16 Neuron devices (50 %)
    assert number(shown["team-a:use:gpu"]) == 50 and number(shown["team-a:use:neuron"]) == 50
    assert shown["team-c:use:gpu"].startswith("no GPU quota")  # not "100 %"


def test_team_page_standing_matches_jobs_and_allocations(world, scientist, team_a, p5, client_for):
    shown = page(client_for, scientist, f"/teams/{team_a.pk}/")
    assert number(shown[f"{p5.name}:GPU:quota"]) == 8
    assert number(shown[f"{p5.name}:GPU:usage"]) == running_by_team()["team-a"]["gpu"] == 4
    assert number(shown["ml.trn1.32xlarge:Neuron:usage"]) == 8
    waiting = Job.objects.filter(team=team_a, state__in=(JobState.PENDING, JobState.PREEMPTED)).count()
    assert number(shown["pending"]) == waiting == 1


def embedded_figure(html: str, element_id: str) -> dict:
    return json.loads(html.split(f'<script id="{element_id}" type="application/json">')[1].split("</script>")[0])


def latest_by_resource(team: str | None) -> dict[str, dict[str, float]]:
    """The latest sample summed per accelerator resource (GPUs apart from Neuron devices), from the samples."""
    samples = UsageSample.objects.filter(at=UsageSample.objects.latest("at").at)
    if team:
        samples = samples.filter(team__name=team)
    rows = samples.values(resource=F("instance_type__accelerator_resource")).annotate(
        **{m: Sum(f"{m}_acc") for m in ("used", "quota", "borrowed", "lent", "pending")}
    )
    return {row.pop("resource"): row for row in rows}


@pytest.mark.parametrize("team", [None, "team-a", "team-b", "team-c"])
def test_usage_tiles_are_the_latest_sample_per_resource(world, manager_user, client_for, team):
    url = f"/usage/teams/{team}/" if team else "/usage/"
    shown = page(client_for, manager_user, url)
    latest, running = latest_by_resource(team), running_by_team()
    for resource, sums in latest.items():
        if not any(sums.values()):
            continue  # a resource the team neither holds nor uses has no tiles
        for measure in ("used", "quota", "borrowed", "lent", "pending"):
            tile = "now" if measure == "used" else measure
            assert number(shown[f"tile:{resource}:{tile}"]) == pytest.approx(sums[measure], abs=0.05), measure
        pct = shown[f"tile:{resource}:pct"]
        if sums["quota"]:
            assert number(pct) == round(100 * sums["used"] / sums["quota"])
        else:
            assert pct == "—"  # no quota: what is used is all borrowed, not "100 %"
        teams = [team] if team else list(running)
        assert sums["used"] == sum(running[t].get(resource, 0) for t in teams)  # the sample is what runs
    # GPUs and Neuron devices apart: team-a runs 4 + 1 GPUs (one finished) and 8 Neuron devices, never "12"
    if team in (None, "team-a"):
        assert number(shown["tile:neuron:now"]) == 8 and number(shown["tile:neuron:quota"]) == 16
    if team == "team-a":
        assert number(shown["tile:gpu:now"]) == 4 and number(shown["tile:gpu:pct"]) == 50
    if team == "team-b":
        assert "tile:neuron:now" not in shown  # team-b has no Neuron quota and uses none


@pytest.mark.parametrize("team", [None, "team-a"])
def test_usage_charts_are_the_rollups_per_resource(world, manager_user, client_for, team):
    """Each accelerator resource's chart, recomputed from the hourly rollups over the chart's own range."""
    # the 7-day chart ends at the last rollup mark: an hour's rollup is charted once that hour has a mark
    UsageRollup.objects.filter(granularity=Granularity.HOUR).update(bucket=F("bucket") - timedelta(hours=1))
    url = f"/usage/teams/{team}/" if team else "/usage/"
    html = client_for(manager_user).get(url).content.decode()
    for resource in ("gpu", "neuron"):
        fig = embedded_figure(html, f"fig-usage-{resource}")
        start, end = fig["layout"]["xaxis"]["range"]
        rows = UsageRollup.objects.filter(
            granularity=Granularity.HOUR,
            bucket__gte=parse_datetime(start).replace(minute=0),
            bucket__lt=parse_datetime(end),
            instance_type__accelerator_resource=resource,
        )
        if team:
            rows = rows.filter(team__name=team)
        per_bucket = {
            r["bucket"]: r
            for r in rows.values("bucket").annotate(
                **{m: Sum(f"{m}_acc") for m in ("used", "borrowed", "lent", "quota")}
            )
        }
        traces = {t["name"]: t for t in fig["data"]}
        x = [parse_datetime(v) for v in next(iter(traces.values()))["x"]]
        assert x == sorted(per_bucket) and x, resource
        expect = {m: [round(per_bucket[t][m], 3) for t in x] for m in ("used", "borrowed", "lent", "quota")}
        if team:
            stacked = [w + b for w, b in zip(traces["within quota"]["y"], traces["borrowed"]["y"], strict=True)]
            assert stacked == pytest.approx(expect["used"])
            assert traces["borrowed"]["y"] == expect["borrowed"]
            assert traces["lent to others"]["y"] == expect["lent"]
            assert traces["quota"]["y"] == expect["quota"]
        else:
            teams = [t for name, t in traces.items() if name not in ("installed capacity", "borrowed (all teams)")]
            stacked = [sum(values) for values in zip(*(t["y"] for t in teams), strict=True)]
            assert stacked == pytest.approx(expect["used"])
            assert traces["borrowed (all teams)"]["y"] == expect["borrowed"]
            capacity = sum(
                g.node_count * g.instance_type.accelerators
                for g in NodeGroup.objects.filter(instance_type__accelerator_resource=resource)
            )
            assert traces["installed capacity"]["y"][0] == capacity
    assert fig["layout"]["yaxis"]["title"]["text"] == "Neuron devices"


def test_reports_add_up_to_the_daily_rollups_and_the_jobs(world, manager_user, client_for):
    shown = page(client_for, manager_user, "/reports/?range=7d")
    start = timezone.localtime(world["now"] - timedelta(days=7)).replace(hour=0, minute=0, second=0, microsecond=0)
    days = UsageRollup.objects.filter(granularity=Granularity.DAY, bucket__gte=start)
    for team in ("team-a", "team-b", "team-c"):
        jobs = 0
        for resource in ("gpu", "neuron"):  # GPU-hours and Neuron device-hours apart, never added together
            hours = days.filter(team__name=team, instance_type__accelerator_resource=resource).aggregate(
                used=Sum("acc_hours"), borrowed=Sum("borrowed_acc_hours"), quota=Sum("quota_acc_hours")
            )
            if hours["used"] is None:
                assert f"{team}:{resource}:used" not in shown
                continue
            assert number(shown[f"{team}:{resource}:used"]) == pytest.approx(hours["used"], abs=0.05)
            assert number(shown[f"{team}:{resource}:borrowed"]) == pytest.approx(hours["borrowed"], abs=0.05)
            assert number(shown[f"{team}:{resource}:quota"]) == pytest.approx(hours["quota"], abs=0.05)
            jobs += number(shown[f"{team}:{resource}:jobs"])
            if hours["used"] >= 0.05:
                story = {k: number(shown[f"{team}:{resource}:story:{k}"]) for k in ("used", "within", "borrowed")}
                assert story["within"] + story["borrowed"] == pytest.approx(story["used"], abs=1e-9)
        assert jobs == Job.objects.filter(team__name=team, admitted_at__gte=start).count()
    assert "team-a:neuron:used" in shown and "team-b:neuron:used" not in shown


@pytest.mark.parametrize("url", ["/reports/jobs/", "/reports/jobs/?range=30d"])
def test_per_job_report_and_csv_count_every_job_up_to_now(world, manager_user, client_for, url):
    shown = page(client_for, manager_user, url)
    total = Job.objects.filter(submitted_at__gte=world["now"] - timedelta(days=7)).count()
    assert number(shown["jobs:count"]) == total == Job.objects.count()
    csv = client_for(manager_user).get(url.replace("/jobs/", "/jobs.csv"))
    lines = b"".join(csv.streaming_content).decode().strip().splitlines()
    assert len(lines) - 1 == total
    assert any(",b-late," in line for line in lines)


@pytest.mark.parametrize("role", ["manager", "scientist"])
def test_job_list_counts_what_the_role_sees(world, users, client_for, role):
    user = users[role]
    shown = page(client_for, user, "/jobs/?mine=false")
    assert number(shown["jobs:count"]) == Job.objects.visible_to(user).count()
    if role == "scientist":
        mine = page(client_for, user, "/jobs/")
        assert number(mine["jobs:count"]) == Job.objects.filter(submitted_by=user).count()


def test_an_instance_type_without_accelerators_says_so_once(world, scientist, client_for):
    InstanceType.objects.create(name="ml.c5.2xlarge", family="c5", accelerators=0, vcpus=8, memory_gib=16)
    html = client_for(scientist).get("/jobs/submit/").content.decode()
    assert "ml.c5.2xlarge · no accelerators, 8 vCPUs" in html and "0 no accelerators" not in html


def borrowed_by_team() -> dict[str, dict[str, float]]:
    """What each team borrows now per resource, from the database: its running accelerators beyond its
    allocation, per instance type."""
    held: dict[tuple, float] = defaultdict(float)
    for job in Job.objects.filter(state__in=(JobState.ADMITTED, JobState.RUNNING)).select_related(
        "team", "assigned_instance_type"
    ):
        held[job.team.name, job.assigned_instance_type] += job.accelerators * job.pods
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for (team, it), used in held.items():
        alloc = ComputeAllocation.objects.filter(team__name=team, instance_type=it).first()
        out[team][it.accelerator_resource] += max(0, used - ((alloc and alloc.accelerators) or 0))
    return out


def test_job_borrowing_badges_add_up_to_what_each_team_borrows_now(world, manager_user, team_a, p5, client_for):
    """A job admitted on borrowed quota whose team has since got quota borrows nothing now; a job admitted
    within quota borrows once its team's quota shrinks below what it runs. The job list's badges, summed per
    team, are the team list's borrowed figure and the database's."""
    team_c = world["team_c"]
    assert Job.objects.get(name="c-borrow").borrowed and not Job.objects.get(name="a-gpu").borrowed
    ComputeAllocation.objects.create(team=team_c, instance_type=p5, accelerators=2)
    ComputeAllocation.objects.filter(team=team_a, instance_type=p5).update(accelerators=2)
    jobs = page(client_for, manager_user, "/jobs/?mine=false")
    teams = page(client_for, manager_user, "/teams/")
    badges: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    labels = {"gpu": "GPU", "neuron": "Neuron"}
    for job in Job.objects.select_related("team", "assigned_instance_type"):
        key = f"job:{job.pk}:borrows"
        if key in jobs:
            assert job.state in (JobState.ADMITTED, JobState.RUNNING)
            badges[job.team.name][job.assigned_instance_type.accelerator_resource] += number(jobs[key])
    borrowed = borrowed_by_team()
    for team in Team.objects.all():
        expect = {r: v for r, v in borrowed[team.name].items() if v}
        assert {r: v for r, v in badges[team.name].items()} == expect, team.name
        if expect:
            assert amounts(teams[f"{team.name}:borrowed"]) == {labels[r]: v for r, v in expect.items()}
    assert badges["team-a"] == {"gpu": 2} and not badges["team-c"]
    a_gpu = Job.objects.get(name="a-gpu")
    assert jobs[f"job:{a_gpu.pk}:borrows"] == "borrows 2 of 4 GPU"


@pytest.mark.parametrize("team, span", [(None, "7d"), ("team-a", "7d"), (None, "30d"), ("team-a", "30d")])
def test_usage_peak_is_the_busiest_sample_never_below_now(world, manager_user, team_a, p5, client_for, team, span):
    """The 7- and 30-day tiles (hourly and daily averages charted): the peak is the highest per-tick total of
    the samples in the range, recomputed from them; so it is never below "now" (the latest sample) nor below
    any average the chart shows."""
    # the hour of now averaged with an idle half of it, and a busier moment two days ago in an hour averaging 10
    UsageRollup.objects.filter(granularity=Granularity.HOUR).update(used_acc=F("used_acc") / 2)
    busy = world["now"] - timedelta(days=2)
    UsageSample.objects.create(at=busy, team=team_a, instance_type=p5, used_acc=20)
    UsageSample.objects.create(at=busy + timedelta(minutes=1), team=team_a, instance_type=p5, used_acc=0)
    UsageRollup.objects.create(
        granularity=Granularity.HOUR,
        bucket=busy.replace(minute=0, second=0, microsecond=0),
        team=team_a,
        instance_type=p5,
        used_acc=10,
        max_used_acc=20,
    )
    UsageRollup.objects.create(
        granularity=Granularity.DAY,
        bucket=timezone.localtime(busy).replace(hour=0, minute=0, second=0, microsecond=0),
        team=team_a,
        instance_type=p5,
        used_acc=1,
        max_used_acc=20,
    )
    url = f"/usage/teams/{team}/?range={span}" if team else f"/usage/?range={span}"
    response = client_for(manager_user).get(url)
    shown, html = figures(response.content), response.content.decode()
    for resource in ("gpu", "neuron"):
        samples = UsageSample.objects.filter(
            at__gte=world["now"] - timedelta(days=int(span[:-1])), instance_type__accelerator_resource=resource
        )
        if team:
            samples = samples.filter(team__name=team)
        ticks = defaultdict(float)
        for at, used in samples.values_list("at", "used_acc"):
            ticks[at] += used
        peak, now = number(shown[f"tile:{resource}:peak"]), number(shown[f"tile:{resource}:now"])
        assert peak == pytest.approx(max(ticks.values()), abs=0.05), resource
        assert peak >= now
        fig = embedded_figure(html, f"fig-usage-{resource}")
        traces = [t for t in fig["data"] if t["name"] not in ("installed capacity", "quota", "lent to others")]
        traces = [t for t in traces if t["name"] != "borrowed (all teams)"]
        if team:
            charted = [w + b for w, b in zip(traces[0]["y"], traces[1]["y"], strict=True)]
        else:
            charted = [sum(values) for values in zip(*(t["y"] for t in traces), strict=True)]
        assert all(peak >= v - 1e-9 for v in charted)
    assert number(shown["tile:gpu:peak"]) == 20  # the moment two days ago, not the halved hour of now


def test_report_story_and_team_table_print_the_same_rounded_hours(world, manager_user, team_b, p5, client_for):
    """team-b used 1.04 GPU-hours, 0.06 borrowed: the story and the table beside it print one figure each
    (1, 0.9 from its quota, 0.1 borrowed), which adds up as printed and matches the daily rollups."""
    days = UsageRollup.objects.filter(granularity=Granularity.DAY, team=team_b, instance_type=p5)
    keep = days.order_by("bucket").last()
    days.exclude(pk=keep.pk).delete()
    days.update(acc_hours=1.04, borrowed_acc_hours=0.06, quota_acc_hours=10)
    shown = page(client_for, manager_user, "/reports/?range=7d")
    for k in ("used", "within", "borrowed"):
        assert shown[f"team-b:gpu:story:{k}"] == shown[f"team-b:gpu:{k}"], k
    assert number(shown["team-b:gpu:used"]) == pytest.approx(1.04, abs=0.05)
    assert number(shown["team-b:gpu:borrowed"]) == pytest.approx(0.06, abs=0.05)
    assert number(shown["team-b:gpu:within"]) + number(shown["team-b:gpu:borrowed"]) == number(shown["team-b:gpu:used"])
    for team in ("team-a", "team-c"):  # every team's story and table row agree
        for k in ("used", "within", "borrowed"):
            if f"{team}:gpu:story:{k}" in shown:
                assert shown[f"{team}:gpu:story:{k}"] == shown[f"{team}:gpu:{k}"], (team, k)


@pytest.mark.parametrize("url", ["/", "/jobs/?mine=false"])
def test_a_jobs_reason_is_shown_whole_with_its_numbers(world, scientist, client_for, url):
    """The "Why" column, on a scientist's home page and in the job list, says the whole reason as the reader
    may read it (the numbers come last and were cut off), equal to the job's reason in the database."""
    from scheduling.reasons import present

    waiting = Job.objects.get(name="a-big")
    reason = (
        "Waiting: team-a uses 12 of its 8-GPU quota on ml.p5.48xlarge and cohort default has 0 idle GPUs "
        "to lend; it needs 16 GPUs (2 x 8)"
    )
    Job.objects.filter(pk=waiting.pk).update(reason=reason)
    shown = page(client_for, scientist, url)
    for job in Job.objects.visible_to(scientist):
        key = f"why:{job.pk}"
        if key in shown:
            assert shown[key] == " ".join(present(job.reason, scientist).split()), job.name
    assert shown[f"why:{waiting.pk}"].endswith("it needs 16 GPUs (2 x 8)")


def test_manager_home_shows_utilization_now_per_resource(world, manager_user, client_for):
    """ "Utilization at a glance": accelerators in use now against the installed ones, GPUs apart from Neuron
    devices, recomputed from the latest sample and the node groups, and equal to the usage page's "now"."""
    shown = page(client_for, manager_user, "/")
    usage = page(client_for, manager_user, "/usage/")
    latest = latest_by_resource(None)
    for resource in ("gpu", "neuron"):
        capacity = sum(
            g.node_count * g.instance_type.accelerators
            for g in NodeGroup.objects.filter(instance_type__accelerator_resource=resource)
        )
        used = latest[resource]["used"]
        assert number(shown[f"util:{resource}:now"]) == used == number(usage[f"tile:{resource}:now"])
        assert number(shown[f"util:{resource}:capacity"]) == capacity
        assert number(shown[f"util:{resource}:pct"]) == round(100 * used / capacity)
    assert number(shown["util:neuron:now"]) == 8 and number(shown["util:neuron:capacity"]) == 16
