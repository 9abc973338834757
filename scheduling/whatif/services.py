"""What-if replays: create one from a draft, run it (the Celery task calls replay_run), save its draft as the
configuration (through quotas.iac, every change a normal version whose reason names the replay) or throw it
away. Drafts are in the `quotas export` format; a section a draft leaves out stays as it is."""

from __future__ import annotations

import copy
import json
import time
from datetime import timedelta

import yaml
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from quotas import iac
from scheduling.engine import ScenarioError, simulate_scenario
from scheduling.whatif.metrics import movers, recorded_outcomes, simulated_outcomes, team_figures
from scheduling.whatif.models import MAX_WINDOW_DAYS, Replay, ReplayDecision, ReplayStatus
from scheduling.whatif.recorded import read_history
from scheduling.whatif.scenario import build_scenario, current_config, draft_config


def _check_window(days) -> int:
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_WINDOW_DAYS:
        raise ValidationError({"window_days": f"a whole number of days from 1 to {MAX_WINDOW_DAYS}"})
    return days


def draft_parse(text: str) -> dict:
    """YAML or JSON text in the export format -> the draft dict; ValidationError with one line if malformed."""
    try:
        doc = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        raise ValidationError({"draft": f"not valid YAML: {' '.join(str(exc).split())}"}) from None
    if doc is None:
        doc = {}
    try:
        iac.parse(yaml.safe_dump(doc))
    except iac.ConfigError as exc:
        raise ValidationError({"draft": str(exc)}) from None
    return doc


def draft_with_team(*, team_name: str, fields: dict | None = None, allocations: dict | None = None) -> dict:
    """The current configuration with one team's policy fields and/or allocations changed (the allocation
    editor's and the team form's "replay this draft")."""
    teams = copy.deepcopy(iac.export_config()["teams"])
    for team in teams:
        if team["name"] == team_name:
            team.update(fields or {})
            if allocations is not None:
                team["allocations"] = {
                    name: {k: v for k, v in values.items() if v is not None}
                    for name, values in allocations.items()
                    if values
                }
    return {"teams": teams}


def replay_create(*, user, draft: dict, window_days: int, title: str = "", now=None, enqueue=True) -> Replay:
    """Check the draft against the database (the same writes as an apply, rolled back), store it and (unless
    enqueue=False: the caller runs it) queue its run. ValidationError with a one-line reason for a bad draft
    or window."""
    days = _check_window(window_days)
    if not isinstance(draft, dict):
        raise ValidationError({"draft": "expected a mapping in the `quotas export` format"})
    try:
        _, changes = draft_config(draft, user=user)
    except iac.ConfigError as exc:
        raise ValidationError({"draft": str(exc)}) from None
    end = now or timezone.now()
    replay = Replay(
        title=(title or _title(changes))[:200],
        created_by=user if getattr(user, "is_authenticated", False) else None,
        draft=draft,
        base=_as_json(iac.export_config()),
        changes=changes,
        window_days=days,
        window_start=end - timedelta(days=days),
        window_end=end,
    )
    replay.full_clean()
    replay.save()
    if enqueue:
        transaction.on_commit(lambda: _enqueue(replay.pk))
    return replay


def _title(changes: list[str]) -> str:
    if not changes:
        return "the current configuration, replayed"
    return changes[0] + (f" (and {len(changes) - 1} more)" if len(changes) > 1 else "")


def _enqueue(pk: int) -> None:
    from scheduling.whatif.tasks import replay_run_task

    replay_run_task.delay(pk)


def _progress(replay: Replay, pct: int, message: str) -> None:
    replay.progress, replay.message = pct, message
    Replay.objects.filter(pk=replay.pk).update(progress=pct, message=message)


def replay_run(*, replay: Replay) -> Replay:
    """Replay the window under the current configuration (the baseline) and under the draft, beside what
    really happened; store per-team figures and the jobs whose wait changed most."""
    claimed = Replay.objects.filter(pk=replay.pk, status=ReplayStatus.QUEUED).update(
        status=ReplayStatus.RUNNING, started_at=timezone.now()
    )
    if not claimed:  # another worker runs it, or it ran already
        replay.refresh_from_db()
        return replay
    replay.status = ReplayStatus.RUNNING
    t0 = time.perf_counter()
    try:
        results = _compute(replay)
    except (ScenarioError, iac.ConfigError, ValidationError) as exc:
        message = " ".join((exc.messages[0] if isinstance(exc, ValidationError) else str(exc)).split())
        Replay.objects.filter(pk=replay.pk).update(
            status=ReplayStatus.FAILED, message=message[:300], finished_at=timezone.now()
        )
        replay.refresh_from_db()
        return replay
    results["timing"]["total_s"] = round(time.perf_counter() - t0, 3)
    Replay.objects.filter(pk=replay.pk).update(
        status=ReplayStatus.DONE, progress=100, message="done", results=results, finished_at=timezone.now()
    )
    replay.refresh_from_db()
    return replay


def _compute(replay: Replay) -> dict:
    timing = {}
    t = time.perf_counter()
    _progress(replay, 5, "reading the window's jobs and their events")
    history = read_history(replay.window_start, replay.window_end)
    timing["read_s"] = round(time.perf_counter() - t, 3)
    _progress(replay, 15, f"replaying {len(history.jobs)} jobs under the current configuration")
    baseline_config = current_config()
    draft, _ = draft_config(replay.draft)
    outcomes, figures = {}, {}
    for label, config, pct in (("baseline", baseline_config, 55), ("draft", draft, 95)):
        t = time.perf_counter()
        output = simulate_scenario(build_scenario(history, config))
        timing[f"{label}_s"] = round(time.perf_counter() - t, 3)
        outcomes[label] = simulated_outcomes(output)
        figures[label] = team_figures(
            history, outcomes[label], config.quota_accelerators(), config.capacity_accelerators()
        )
        _progress(replay, pct, "replaying under the draft" if label == "baseline" else "comparing")
    outcomes["recorded"] = recorded_outcomes(history)
    figures["recorded"] = team_figures(
        history, outcomes["recorded"], baseline_config.quota_accelerators(), baseline_config.capacity_accelerators()
    )
    names = sorted(set().union(*(f["teams"] for f in figures.values())))
    return {
        "jobs": sum(1 for j in history.jobs if not j.context),
        "context_jobs": sum(1 for j in history.jobs if j.context),
        "left_out": history.left_out,
        "teams": [{"team": n, **{k: figures[k]["teams"].get(n) for k in figures}} for n in names],
        "cluster": {k: figures[k]["cluster"] for k in figures},
        "movers": movers(history, outcomes["recorded"], outcomes["draft"]),
        "movers_vs_baseline": movers(history, outcomes["baseline"], outcomes["draft"]),
        "timing": timing,
    }


def _as_json(doc: dict) -> dict:
    """As the JSONField will give it back (tuples become lists), so comparisons hold."""
    return json.loads(json.dumps(doc))


def _check_open(replay: Replay) -> None:
    if replay.decision != ReplayDecision.OPEN:
        raise ValidationError(f"this replay was already {replay.get_decision_display().lower()}")


@transaction.atomic
def replay_save(*, replay: Replay, user, reason: str = "", url: str = "") -> list[str]:
    """Apply the draft as the configuration: every change a normal version, its reason naming the replay.
    Refused where the configuration changed since the draft was made (applying would undo those changes)."""
    replay = Replay.objects.select_for_update().get(pk=replay.pk)
    _check_open(replay)
    if replay.status != ReplayStatus.DONE:
        raise ValidationError("replay the draft before saving it")
    if _as_json(iac.export_config()) != replay.base:
        raise ValidationError(
            "the configuration changed since this draft was made; saving it would undo those changes. "
            "Replay a fresh draft instead."
        )
    link = f"what-if replay #{replay.pk}" + (f" ({url})" if url else "")
    full_reason = f"{link}: {reason.strip()}" if reason.strip() else f"saved from {link}"
    try:
        plan = iac.apply(yaml.safe_dump(replay.draft, sort_keys=False), user=user, reason=full_reason[:300])
    except iac.ConfigError as exc:
        raise ValidationError(str(exc)) from None
    _decide(replay, ReplayDecision.SAVED, user, reason)
    return plan.lines()


def replay_discard(*, replay: Replay, user, reason: str = "") -> None:
    with transaction.atomic():
        replay = Replay.objects.select_for_update().get(pk=replay.pk)
        _check_open(replay)
        _decide(replay, ReplayDecision.DISCARDED, user, reason)


def _decide(replay: Replay, decision: str, user, reason: str) -> None:
    reason = (reason or "").strip()[: Replay._meta.get_field("decision_reason").max_length]
    replay.decision = decision
    replay.decided_by = user
    replay.decided_at = timezone.now()
    replay.decision_reason = reason.strip()
    replay.save(update_fields=["decision", "decided_by", "decided_at", "decision_reason"])
