from django.contrib.auth.middleware import LoginRequiredMiddleware as _DjangoLoginRequired


class LoginRequiredMiddleware(_DjangoLoginRequired):
    """Every page needs a login unless its view says otherwise (@login_not_required).

    The API answers for itself (401/403 in JSON from Django REST framework) and /metrics checks its own
    token, so neither is redirected to the login page.
    """

    open_prefixes = ("/api/", "/metrics", "/static/", "/healthz")

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path.startswith(self.open_prefixes):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
