"""The role-aware home page, the profile page (API tokens) and a health check."""

from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

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
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
