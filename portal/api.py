"""API plumbing shared by every app: errors always come back as JSON with a reason."""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from rest_framework import exceptions
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    """DRF's handler, plus Django validation and integrity errors as 400s instead of 500s."""
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        exc = exceptions.ValidationError(detail)
    elif isinstance(exc, IntegrityError):
        exc = exceptions.ValidationError({"detail": "this conflicts with an existing record"})
    return drf_exception_handler(exc, context)
