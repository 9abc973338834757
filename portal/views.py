"""The role-aware home page, the profile page (API tokens) and a health check."""

import sys

from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template import loader
from django.views.decorators.http import require_http_methods, require_POST

from portal import dependencies
from portal import home as home_selectors
from quotas.models import ApiToken


def home(request):
    user = request.user
    if user.is_portal_admin:
        context, template = home_selectors.admin_home(), "portal/home_admin.html"
    elif user.is_manager:
        context, template = home_selectors.manager_home(), "portal/home_manager.html"
    else:
        context, template = home_selectors.scientist_home(user), "portal/home_scientist.html"
    return render(request, template, context)


@require_http_methods(["GET", "POST"])
def profile(request):
    new_key = None
    if request.method == "POST":
        name = (request.POST.get("name") or "").strip()
        if not name:
            messages.error(request, "Give the token a name, for example the laptop or script that will use it.")
        elif len(name) > 80:
            messages.error(request, "A token name has at most 80 characters.")
        else:
            _, new_key = ApiToken.issue(user=request.user, name=name)
    tokens = request.user.api_tokens.all()
    return render(request, "portal/profile.html", {"tokens": tokens, "new_key": new_key})


@require_POST
def token_revoke(request, pk):
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    token.delete()
    messages.success(request, f"Token “{token.name}” revoked.")
    return redirect("profile")


@login_not_required
def healthz(request):
    """Database, broker, cache and the admission loop's last run, each on its own: 200 when all are well,
    503 otherwise. Unauthenticated (for load balancers and monitors), so it says what, never where or who."""
    report = dependencies.health()
    return JsonResponse(report, status=200 if report["status"] == "ok" else 503)


def server_error(request, *args, **kwargs):
    """handler500: an outage of a dependency is a 503 that says which; anything else a plain 500 page.
    Rendered without the request's context processors, which would query the database again."""
    exc = sys.exc_info()[1]
    reason = dependencies.unavailable(exc) if exc is not None else None
    status = 503 if reason else 500
    if request.path.startswith("/api/"):
        detail = f"Service unavailable: {reason}; try again shortly." if reason else "Server error."
        response = JsonResponse({"detail": detail}, status=status)
    else:
        template = "503.html" if reason else "500.html"
        response = HttpResponse(loader.get_template(template).render({"reason": reason}), status=status)
    if reason:
        response["Retry-After"] = "30"
    return response
