"""A job's reason as one reader may see it: references to jobs the reader may not see are anonymised.

The admission loop stores reasons in full ("preempted by job #21 vision-pretrain of vision to reclaim
quota..."), so admins and managers read every detail. Everyone else reads them through `present()`, used by
every output path (job pages, the job list and its CSV, the API, the per-job report): a job of a team the
reader is not in becomes "another team's job". Team names follow the teams' own rule (Team.objects.visible_to):
a scientist does not see the other teams, so neither their names nor their jobs' names and ids are shown.
"""

from __future__ import annotations

import re

from quotas.models import Team
from scheduling.models import Job

# "job #21", optionally followed by its name and team as the loop writes them ("job #21 pretrain of vision").
# Names are Kubernetes names (lower-case letters, digits, '-'), so the pattern cannot run into other words.
JOB_REFERENCE = re.compile(r"\bjob #(?P<pk>\d{1,18})(?: (?P<name>[a-z0-9][a-z0-9-]*) of (?P<team>[a-z0-9][a-z0-9-]*))?")
ANONYMOUS = "another team's job"


class ReasonPresenter:
    """Presents reasons for one reader; remembers which jobs it has looked up (one query per new batch)."""

    def __init__(self, viewer):
        self.viewer = viewer
        self.sees_everything = bool(viewer and viewer.is_authenticated and viewer.sees_all_teams)
        self._team_ids: set[int] | None = None
        self._job_team: dict[int, int | None] = {}

    def prime(self, texts) -> None:
        """Look up every job the texts name at once (for lists and exports)."""
        if self.sees_everything:
            return
        wanted = {int(m["pk"]) for text in texts if text for m in JOB_REFERENCE.finditer(text)}
        wanted -= set(self._job_team)
        if wanted:
            found = dict(Job.objects.filter(pk__in=wanted).values_list("pk", "team_id"))
            self._job_team.update({pk: found.get(pk) for pk in wanted})

    def visible_teams(self) -> set[int]:
        if self._team_ids is None:
            self._team_ids = (
                set(Team.objects.visible_to(self.viewer).values_list("pk", flat=True)) if self.viewer else set()
            )
        return self._team_ids

    def __call__(self, text: str | None) -> str:
        if not text or self.sees_everything or "job #" not in text:
            return text or ""
        self.prime([text])
        teams = self.visible_teams()
        return JOB_REFERENCE.sub(lambda m: m[0] if self._job_team.get(int(m["pk"])) in teams else ANONYMOUS, text)


def present(text: str | None, viewer) -> str:
    """`text` as `viewer` may read it (lists and exports: make one ReasonPresenter and prime it)."""
    return ReasonPresenter(viewer)(text)
