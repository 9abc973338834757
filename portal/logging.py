"""Logging filters."""

import logging


class ExpectedForbidden(logging.Filter):
    """A 403 is the portal refusing what a role may not do, not a fault: one line with the reason, no traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403 and record.exc_info:
            reason = str(record.exc_info[1] or "")
            record.msg = record.getMessage() + (f" ({reason})" if reason else "")
            record.args = ()
            record.exc_info = record.exc_text = None
        return True
