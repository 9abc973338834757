"""The loop's batched writers (one statement per batch, one array per column on PostgreSQL): every value
lands on its own row, typed as the column is, and a conditional write skips the rows that moved on."""

from django.utils import timezone

from scheduling.loop import JobChange, _update_reasons, insert_events, update_jobs
from scheduling.models import Job, JobEvent, JobState
from scheduling.snapshot import load_rows


def test_update_jobs_writes_each_rows_own_values_of_every_type(scientist, team_a, p5, submit):
    jobs = [submit(scientist, team_a, name=f"j{i}") for i in range(5)]
    now = timezone.now()
    changes = [
        JobChange(pk=job.pk, state=JobState.ADMITTED, reason=f"reason {i} 'quoted', {{braced}}", admitted_at=now,
                  assigned_instance_type_id=p5.pk if i % 2 else None, placement=[i, i + 1] if i % 2 else None,
                  borrowed=i == 3)
        for i, job in enumerate(jobs)
    ]  # fmt: skip
    update_jobs(changes, ["state", "reason", "admitted_at", "assigned_instance_type", "placement", "borrowed"])
    got = {j.pk: j for j in Job.objects.filter(pk__in=[job.pk for job in jobs])}
    for i, job in enumerate(jobs):
        row = got[job.pk]
        assert row.state == JobState.ADMITTED and row.admitted_at == now
        assert row.reason == f"reason {i} 'quoted', {{braced}}"
        assert row.assigned_instance_type_id == (p5.pk if i % 2 else None)
        assert row.placement == ([i, i + 1] if i % 2 else None)
        assert row.borrowed is (i == 3)


def test_reasons_are_written_only_to_jobs_still_queued(scientist, team_a, submit):
    waiting, admitted = submit(scientist, team_a, name="waiting"), submit(scientist, team_a, name="admitted")
    rows = {str(row.pk): row for row in load_rows((JobState.PENDING,))}
    # the job was admitted by someone else after the rows were read: its reason is not the pass's to write
    Job.objects.filter(pk=admitted.pk).update(state=JobState.ADMITTED, reason="admitted by another run")
    _update_reasons({str(waiting.pk): "waits for room", str(admitted.pk): "waits for room"}, rows, skip=set())
    assert Job.objects.get(pk=waiting.pk).reason == "waits for room"
    assert Job.objects.get(pk=admitted.pk).reason == "admitted by another run"


def test_inserted_events_get_their_own_ids_in_order(scientist, team_a, submit):
    jobs = [submit(scientist, team_a, name=f"e{i}") for i in range(4)]
    at = timezone.now()
    events = [
        JobEvent(job_id=job.pk, at=at, from_state=JobState.PENDING, to_state=JobState.ADMITTED, reason=f"event {i}")
        for i, job in enumerate(jobs)
    ]
    insert_events(events)
    for i, event in enumerate(events):
        stored = JobEvent.objects.get(pk=event.pk)
        assert (stored.job_id, stored.reason, stored.at, stored.to_state) == (jobs[i].pk, f"event {i}", at, "admitted")
