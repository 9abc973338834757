from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.throttling import SimpleRateThrottle

from quotas.models import ApiToken


class TokenFailureThrottle(SimpleRateThrottle):
    """Failed token attempts per address (rate "token_failures"). Authentication fails before DRF's throttles
    run, so the token check counts its own failures; a locked-out address gets 429 even with a good token."""

    scope = "token_failures"

    def get_cache_key(self, request, view=None):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def locked(self, request) -> float | None:
        """Seconds to wait when the address is over its limit, else None."""
        self.key = self.get_cache_key(request)
        self.history = self.cache.get(self.key, [])
        self.now = self.timer()
        while self.history and self.history[-1] <= self.now - self.duration:
            self.history.pop()
        return self.wait() if len(self.history) >= self.num_requests else None

    def record_failure(self, request) -> None:
        self.locked(request)
        self.history.insert(0, self.now)
        self.cache.set(self.key, self.history, self.duration)


class ApiTokenAuthentication(authentication.TokenAuthentication):
    """`Authorization: Token <key>` with the personal tokens of quotas.ApiToken (stored hashed)."""

    keyword = "Token"

    def authenticate(self, request):
        throttle = TokenFailureThrottle()
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        wait = throttle.locked(request)
        if wait is not None:
            raise exceptions.Throttled(wait, detail="Too many failed token attempts from this address.")
        try:
            return super().authenticate(request)
        except exceptions.AuthenticationFailed:
            throttle.record_failure(request)
            raise

    def authenticate_credentials(self, key):
        token = ApiToken.objects.authenticate(key)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token
