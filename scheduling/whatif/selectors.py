"""Reads for the what-if pages: replays visible to a user, and a replay's figures shaped for a table."""

from scheduling.whatif.models import Replay

# label, key in the figures, unit (for formatting), whether lower is better
MEASURES = [
    ("Average wait", "avg_wait_s", "duration", True),
    ("p95 wait", "p95_wait_s", "duration", True),
    ("Accelerator-hours within quota", "hours_within_quota", "hours", None),
    ("Accelerator-hours borrowed", "hours_borrowed", "hours", None),
    ("Preemptions", "preemptions", "count", True),
    ("Quota used", "utilization_pct", "pct", None),
    ("Still waiting at the end", "still_waiting", "count", True),
]


def replays_visible_to(user):
    """Replays show every team's figures: admins and managers read them, scientists none."""
    if not user.is_authenticated or not user.sees_all_teams:
        return Replay.objects.none()
    return Replay.objects.select_related("created_by", "decided_by")


def comparison_rows(results: dict) -> list[dict]:
    """Per team and measure: recorded, draft, change; plus the baseline (the current configuration replayed),
    which shows how closely the simulator reproduces history."""
    rows = []
    for entry in results.get("teams", []):
        cells = []
        for label, key, unit, lower_better in MEASURES:
            recorded = (entry.get("recorded") or {}).get(key)
            draft = (entry.get("draft") or {}).get(key)
            baseline = (entry.get("baseline") or {}).get(key)
            change = draft - recorded if draft is not None and recorded is not None else None
            better = None
            if change is not None and lower_better is not None and abs(change) > 1e-9:
                better = (change < 0) == lower_better
            cells.append(
                {
                    "label": label,
                    "key": key,
                    "unit": unit,
                    "recorded": recorded,
                    "draft": draft,
                    "baseline": baseline,
                    "change": change,
                    "better": better,
                }
            )
        rows.append({"team": entry["team"], "jobs": (entry.get("draft") or {}).get("jobs", 0), "cells": cells})
    return rows
