"""The one exception the SDK raises for anything the service (or the way to it) refused."""

from typing import Any, Optional

# Codes the contract calls transient: honour Retry-After, else back off.
TRANSIENT_CODES = frozenset({
    "too_many_requests", "rate_limited", "model_loading", "service_unavailable", "timeout",
    "insufficient_memory",
})


class DnaserveError(Exception):
    """An error envelope `{error: {code, message, request_id, details?}}`, or a local failure.

    `code` is the envelope's code (switch on it, never on `message`). Failures that never reached
    the service carry the local codes `connection_error` (unreachable, reset) and
    `invalid_response` (not the contract's JSON, e.g. a 504 from an edge proxy).
    """

    def __init__(self, code: str, message: str, *, status: Optional[int] = None,
                 request_id: Optional[str] = None, details: Any = None,
                 retry_after: Optional[float] = None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.request_id = request_id
        self.details = details
        self.retry_after = retry_after

    @property
    def transient(self) -> bool:
        return self.code in TRANSIENT_CODES or self.code == "connection_error"

    @property
    def validation_errors(self) -> list:
        """`details.errors` of a validation_failed error, read defensively (older releases sent a
        bare list; the splice size cap sends no `errors`)."""
        if isinstance(self.details, list):
            return self.details
        if isinstance(self.details, dict) and isinstance(self.details.get("errors"), list):
            return self.details["errors"]
        return []

    def __repr__(self) -> str:
        return (f"DnaserveError(code={self.code!r}, status={self.status!r}, "
                f"message={self.message!r}, request_id={self.request_id!r})")
