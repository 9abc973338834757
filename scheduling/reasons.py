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

# "job #21", with what may follow it: its name and team as the loop writes them ("job #21 pretrain of vision"),
# or its team as the engine does ("job #21 of vision"). Names are Kubernetes names (lower-case letters, digits,
# '-'), so the pattern cannot run into other words.
_NAME = r"[a-z0-9][a-z0-9-]*"
JOB_REFERENCE = re.compile(rf"\bjob #(?P<pk>\d{{1,18}})(?: (?!of\b){_NAME} of {_NAME}| of {_NAME})?(?P<possessive>'s)?")
# "jobs #12, #13 and #14", "jobs #12, #13, #14 ...", "jobs #1, #2, #3, #4 and 3 more" (reservations).
JOB_LIST = re.compile(r"\bjobs #\d{1,18}(?:(?:, | and )#\d{1,18})*(?: \.\.\.| and \d+ more)?")
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
        wanted = {int(pk) for text in texts if text for pk in re.findall(r"#(\d{1,18})\b", text)}
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
        if not text or self.sees_everything or "#" not in text:
            return text or ""
        self.prime([text])
        text = JOB_LIST.sub(self._list, text)
        return JOB_REFERENCE.sub(self._one, text)

    def _visible(self, pk: str) -> bool:
        return self._job_team.get(int(pk)) in self.visible_teams()

    def _one(self, match) -> str:
        if self._visible(match["pk"]):
            return match[0]
        return "another team's job's" if match["possessive"] else ANONYMOUS

    def _list(self, match) -> str:
        ids = re.findall(r"#(\d+)", match[0])
        shown = [pk for pk in ids if self._visible(pk)]
        if len(shown) == len(ids):
            return match[0]
        hidden = "other teams' jobs" if len(ids) - len(shown) > 1 or "more" in match[0] else ANONYMOUS
        return f"jobs {', '.join('#' + pk for pk in shown)} and {hidden}" if shown else hidden


def present(text: str | None, viewer) -> str:
    """`text` as `viewer` may read it (lists and exports: make one ReasonPresenter and prime it)."""
    return ReasonPresenter(viewer)(text)
