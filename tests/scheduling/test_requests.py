"""Requesting jobs: good requests through form, API and command; bad ones get clear errors and create nothing."""

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from scheduling.models import Job, JobEvent, JobState

pytestmark = pytest.mark.django_db

GOOD = dict(team="team-a", name="llama-ft", image="pytorch:2", accelerators=2, vcpus=16, memory_gib=128, pods=1)

# name, changes, field with the error, words in the message
BAD = [
    ("no resources", dict(accelerators=0, vcpus=0, memory_gib=0), "__all__", "ask for some resources"),
    ("too many accelerators per pod", dict(instance_type="ml.p5.48xlarge", accelerators=9), "__all__", "more than"),
    ("no type has that many", dict(accelerators=16), "__all__", "no instance type can hold"),
    ("unknown team", dict(team="nope"), "team", "unknown team"),
    ("another team", dict(team="team-b"), "team", "unknown team"),
    ("unknown instance type", dict(instance_type="ml.x99"), "instance_type", "unknown instance type"),
    ("unknown priority class", dict(priority_class="urgent"), "priority_class", "unknown priority class"),
    ("absurd pods", dict(pods=100000), "pods", "20,000"),
    ("more pods than the cluster", dict(accelerators=8, pods=3), "pods", "more than the whole cluster"),
    ("absurd memory", dict(memory_gib=1e9), "memory_gib", "at most 32,768"),
    ("vcpus beyond every node", dict(vcpus=1e308), "vcpus", "at most 1,024"),
    ("vanishing memory", dict(memory_gib=1e-320), "memory_gib", "at least 0.001"),
    ("vanishing vcpus", dict(vcpus=1e-320), "vcpus", "at least 0.001"),
    ("image with a bidi control", dict(image="pytorch\u202e:2"), "image", "container image reference"),
    ("image with markup", dict(image="<b>x</b>"), "image", "container image reference"),
    ("bad name", dict(name="My Job!"), "name", "Kubernetes name"),
    ("absurd duration", dict(expected_duration_s=10**9), "expected_duration_s", "90 days"),
]


@pytest.fixture
def world(scientist, other_scientist, team_a, team_b, priorities):
    return scientist


def nothing_created():
    return Job.objects.count() == 0 and JobEvent.objects.count() == 0


@pytest.mark.parametrize("case, changes, field, words", BAD, ids=[b[0] for b in BAD])
def test_bad_api_requests_are_400_with_a_reason(case, changes, field, words, world, api_for):
    response = api_for(world).post("/api/jobs/", {**GOOD, **changes}, format="json")
    assert response.status_code == 400, response.content
    body = response.json()
    key = "detail" if field == "__all__" and "detail" in body else field
    messages = " ".join(body.get(key) or body.get("non_field_errors") or body.get("__all__") or [])
    assert words in messages, body
    assert nothing_created()


@pytest.mark.parametrize("case, changes, field, words", BAD, ids=[b[0] for b in BAD])
def test_bad_form_requests_show_errors(case, changes, field, words, world, client_for):
    data = {**GOOD, **changes}
    data["expected_duration"] = str(data.pop("expected_duration_s", "") or "")
    data = {k: ("" if v is None else v) for k, v in data.items()}
    response = client_for(world).post(reverse("jobs:job-submit"), data)
    assert response.status_code == 400
    form = response.context["form"]
    errors = " ".join(sum(form.errors.values(), []))
    assert words in errors or (field in ("team", "instance_type", "priority_class") and "valid choice" in errors), (
        errors
    )
    assert nothing_created()


@pytest.mark.parametrize("case, changes, field, words", BAD, ids=[b[0] for b in BAD])
def test_bad_command_requests_fail_in_one_line(case, changes, field, words, world):
    data = {**GOOD, **changes}
    args = ["jobs", "submit", "--user", world.username, "--team", data["team"], "--name", data["name"]]
    args += ["--image", data["image"], "--accelerators", str(data["accelerators"]), "--vcpus", str(data["vcpus"])]
    args += ["--memory", str(data["memory_gib"]), "--pods", str(data["pods"])]
    for key, flag in (("instance_type", "--instance-type"), ("priority_class", "--priority-class")):
        if data.get(key):
            args += [flag, data[key]]
    if data.get("expected_duration_s"):
        args += ["--duration", str(data["expected_duration_s"])]
    with pytest.raises(CommandError) as error:
        call_command(*args)
    assert words in str(error.value) and "\n" not in str(error.value)
    assert nothing_created()


def test_a_good_request_through_each_door(world, api_for, client_for, capsys):
    created = api_for(world).post("/api/jobs/", {**GOOD, "priority_class": "high"}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["state"] == "pending" and created.json()["events"][0]["to_state"] == "pending"
    form = client_for(world).post(reverse("jobs:job-submit"), {**GOOD, "expected_duration": "1h30m"})
    assert form.status_code == 302
    job = Job.objects.get(pk=form["Location"].rstrip("/").split("/")[-1])
    assert job.expected_duration_s == 5400 and job.submitted_by == world
    call_command("jobs", "submit", "--user", world.username, "--team", "team-a", "--name", "cli-job",
                 "--image", "pytorch:2", "--vcpus", "4", "--duration", "45m")  # fmt: skip
    assert "submitted job #" in capsys.readouterr().out
    assert Job.objects.filter(state=JobState.PENDING).count() == 3


def test_managers_may_not_submit_for_teams_they_are_not_in(manager_user, team_a, api_for):
    response = api_for(manager_user).post("/api/jobs/", GOOD, format="json")
    assert response.status_code == 400 and "not a member" in " ".join(response.json()["team"])
    assert nothing_created()


def test_the_form_shows_the_teams_standing(world, client_for):
    response = client_for(world).get(reverse("jobs:job-submit"))
    assert response.status_code == 200
    panels = response.context["panels"]
    assert [p["team"].name for p in panels] == ["team-a"]
    row = panels[0]["rows"][0]
    # team-b lends its idle 4 GPUs and 4 of the 16 are in nobody's quota
    assert row["quota"]["gpu"] == 8 and row["borrowable"]["gpu"] == 8
    assert b"Could borrow now" in response.content


def test_resubmit_prefills_the_form_and_links_the_clone(world, submit, team_a, client_for):
    original = submit(world, team_a, name="first-try", expected_duration_s=600)
    client = client_for(world)
    page = client.get(reverse("jobs:job-submit") + f"?clone={original.pk}")
    assert page.context["form"].initial["name"] == "first-try"
    assert page.context["form"].initial["expected_duration"] == "10m"
    response = client.post(
        reverse("jobs:job-submit") + f"?clone={original.pk}", {**GOOD, "name": "second-try", "expected_duration": ""}
    )
    assert response.status_code == 302
    assert Job.objects.get(name="second-try").cloned_from == original


def test_api_submit_without_vcpus_or_memory_gets_the_proportional_default(world, api_for):
    """1 of a p5.48xlarge's 8 GPUs per pod: 24 of 192 vCPUs and 256 of 2048 GiB, the allocation editor's rule."""
    body = {k: v for k, v in GOOD.items() if k not in ("vcpus", "memory_gib")}
    response = api_for(world).post("/api/jobs/", {**body, "accelerators": 1}, format="json")
    assert response.status_code == 201, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert (job.vcpus, job.memory_gib) == (24, 256)
    given = api_for(world).post("/api/jobs/", {**body, "name": "given", "accelerators": 1, "vcpus": 10}, format="json")
    job = Job.objects.get(pk=given.json()["id"])
    assert (job.vcpus, job.memory_gib) == (10, 256)


def test_the_form_shows_the_defaults_a_blank_field_takes_as_the_accelerators_change(world, client_for):
    client = client_for(world)
    url = reverse("jobs:job-size-defaults")
    body = client.get(url, {"team": "team-a", "accelerators": "2", "instance_type": ""}).content.decode()
    assert 'data-testid="default-vcpus">48<' in body and 'data-testid="default-memory">512<' in body
    body = client.get(url, {"team": "team-a", "accelerators": "x"}).content.decode()
    assert "default-vcpus" not in body  # not a number: nothing to show, no error
    page = client.get(reverse("jobs:job-submit")).content.decode()
    assert 'hx-get="/jobs/submit/size-defaults/"' in page and 'data-testid="size-defaults"' in page


def test_the_defaults_fill_the_blank_vcpu_and_memory_fields(world, client_for):
    """The proportional defaults appear in the fields themselves (placeholders: the page draws them, and the
    fragment carries them for static/js/size-defaults.js as the accelerators change); a count no node of the
    type holds shows none."""
    import re

    client = client_for(world)
    url = reverse("jobs:job-size-defaults")

    def field(body, name):
        return re.search(rf'<input[^>]*name="{name}"[^>]*>', body).group(0)

    body = client.get(url, {"team": "team-a", "accelerators": "2", "instance_type": ""}).content.decode()
    assert 'data-vcpus="48"' in body and 'data-memory="512"' in body
    body = client.get(url, {"team": "team-a", "accelerators": "21", "instance_type": "ml.p5.48xlarge"}).content.decode()
    assert "default-vcpus" not in body and 'data-vcpus=""' in body  # a p5 node has 8 GPUs
    page = client.get(reverse("jobs:job-submit")).content.decode()
    assert 'placeholder="24"' in field(page, "vcpus") and 'placeholder="256"' in field(page, "memory_gib")
    assert "js/size-defaults" in page
