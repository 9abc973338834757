"""API plumbing shared by every app: errors always come back as JSON with a reason, lists come in bounded
pages, and JSON bodies are parsed with a depth limit."""

import json

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError, IntegrityError
from rest_framework import exceptions, parsers
from rest_framework.pagination import LimitOffsetPagination

from scheduling.engine import bounds


def exception_handler(exc, context):
    """DRF's handler, plus Django validation, integrity and range errors as 400s instead of 500s. A database
    error's own text (constraint names, SQL) is never shown: it describes our schema, not the request."""
    # Imported here: DRF's views module reads this module's classes from the settings as it loads.
    from rest_framework.views import exception_handler as drf_exception_handler

    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        exc = exceptions.ValidationError(detail)
    elif isinstance(exc, IntegrityError):
        exc = exceptions.ValidationError({"detail": "this conflicts with an existing record"})
    elif isinstance(exc, DataError):
        exc = exceptions.ValidationError({"detail": "a value is out of the range the portal stores"})
    return drf_exception_handler(exc, context)


class BoundedPagination(LimitOffsetPagination):
    """limit/offset pages of at most bounds.MAX_PAGE_SIZE rows; an offset beyond bounds.MAX_OFFSET is a 400
    (PostgreSQL's bigint would overflow long before, and no list is that long)."""

    max_limit = bounds.MAX_PAGE_SIZE

    def get_offset(self, request):
        offset = super().get_offset(request)
        if offset > bounds.MAX_OFFSET:
            raise exceptions.ValidationError({"offset": f"must be at most {bounds.MAX_OFFSET:,}"})
        return offset


class BoundedJSONParser(parsers.JSONParser):
    """JSON bodies nested deeper than bounds.MAX_JSON_DEPTH are a 400, never a RecursionError."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            data = json.loads(stream.read().decode(encoding))
        except RecursionError:
            raise exceptions.ParseError(f"JSON nested deeper than {bounds.MAX_JSON_DEPTH} levels") from None
        except ValueError as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}") from None
        if bounds.json_depth_exceeds(data):
            raise exceptions.ParseError(f"JSON nested deeper than {bounds.MAX_JSON_DEPTH} levels")
        return data


class RejectUnknownFields:
    """Serializer mixin: a JSON body with a field the serializer does not take is a 400 naming it, instead
    of being silently ignored (a typo such as "node_cuont" would otherwise change nothing and say 200).
    Read-only fields are refused too: they cannot be written. Every input serializer of the API uses it."""

    def to_internal_value(self, data):
        if isinstance(data, dict) and not hasattr(data, "getlist"):  # JSON, not an HTML form's QueryDict
            writable = {name for name, field in self.fields.items() if not field.read_only}
            errors = {
                key: ["this field is read-only"] if key in self.fields else ["unknown field"]
                for key in data
                if key not in writable
            }
            if errors:
                raise exceptions.ValidationError(errors)
        return super().to_internal_value(data)
