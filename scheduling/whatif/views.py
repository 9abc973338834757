"""Pages for deciding with evidence. Visibility: a team's fair share follows Team.objects.visible_to (another
team's page is a 404)."""

from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from quotas.models import Team
from scheduling.whatif.fairshare import fair_share_explained


@require_GET
def team_fair_share(request, pk):
    team = get_object_or_404(Team.objects.visible_to(request.user), pk=pk)
    return render(request, "whatif/fair_share.html", {"team": team, "derivations": fair_share_explained(team)})
