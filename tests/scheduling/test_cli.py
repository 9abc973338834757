"""The console client against a live portal, with a real token."""

import pytest

from quotas.models import ApiToken
from scheduling import cli
from scheduling.models import Job, JobState

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_console_client_submits_lists_shows_and_cancels(scientist, other_scientist, team_a, live_server, capsys):
    _, token = ApiToken.issue(user=scientist, name="laptop")
    base = ["--url", live_server.url, "--token", token]
    cli.main(base + ["submit", "--team", "team-a", "--name", "cli-run", "--image", "pytorch:2", "--vcpus", "4",
                     "--duration", "1h30m"])  # fmt: skip
    job = Job.objects.get(name="cli-run")
    assert job.expected_duration_s == 5400 and job.submitted_by == scientist
    assert f"submitted job #{job.pk}" in capsys.readouterr().out
    cli.main(base + ["list"])
    assert "cli-run" in capsys.readouterr().out
    cli.main(base + ["show", str(job.pk)])
    assert "submitted by sam" in capsys.readouterr().out
    cli.main(base + ["cancel", str(job.pk)])
    assert Job.objects.get(pk=job.pk).state == JobState.CANCELLED

    _, other_token = ApiToken.issue(user=other_scientist, name="other")
    with pytest.raises(SystemExit, match="error 404"):
        cli.main(["--url", live_server.url, "--token", other_token, "show", str(job.pk)])
    with pytest.raises(SystemExit, match="error 400: __all__: ask for some resources|error 400: .*resources"):
        cli.main(base + ["submit", "--team", "team-a", "--name", "nothing", "--image", "x"])
