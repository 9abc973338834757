from django.utils import timezone
from rest_framework import authentication, exceptions

from quotas.models import ApiToken


class ApiTokenAuthentication(authentication.TokenAuthentication):
    """`Authorization: Token <key>` with the personal tokens of quotas.ApiToken (stored hashed)."""

    keyword = "Token"

    def authenticate_credentials(self, key):
        token = ApiToken.objects.authenticate(key)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token
