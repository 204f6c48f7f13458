"""writ's exceptions: one class per exit-code category of the `writ` CLI (cli.md)."""


class Error(Exception):
    """A writ call failed.

    category   the CLI's exit-code category: "not_found", "usage", "refused",
               "transport", "validation" or "retention"
    exit_code  the exit code `writ` would have returned (1..6)
    code       the library's own error code ("malformed", "io", "timeout", ...)
    outcome    for Sender.send: the writ.Outcome as far as the delivery got, or None
    """

    category = "transport"
    exit_code = 4

    def __init__(self, message, code=None, outcome=None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.outcome = outcome


class NotFoundError(Error, LookupError):
    category, exit_code = "not_found", 1


class UsageError(Error, ValueError):
    """Bad arguments or malformed input (a bad rule name, a bundle that does not parse)."""

    category, exit_code = "usage", 2


class RefusedError(Error):
    """The receiver refused (auth, space, conflicting id, oversize, a failed processing step)."""

    category, exit_code = "refused", 3


class TransportError(Error):
    category, exit_code = "transport", 4


class ValidationError(Error):
    """A digest or length mismatch, or a receipt that does not verify."""

    category, exit_code = "validation", 5


class RetentionError(Error):
    category, exit_code = "retention", 6


# The library's error codes (writ::ErrorCodeName) onto the CLI's categories, as
# tools/writ/command.cc maps them onto exit codes; any other code is a transport failure.
_BY_CODE = {
    "not found": NotFoundError,
    "invalid argument": UsageError,
    "malformed": UsageError,
    "io": UsageError,  # a local file or directory given cannot be read, written or created
    "refused": RefusedError,
    "transport": TransportError,
    "timeout": TransportError,
    "cancelled": TransportError,
    "validation": ValidationError,
    "retention": RetentionError,
}


def error_for(code, message, outcome=None):
    """The exception for a failed call's (code, message)."""
    return _BY_CODE.get(code, TransportError)(message, code=code, outcome=outcome)


def checked(answer):
    """The value of a _writ answer (code, message, value); raises for any code but "ok"."""
    code, message, value = answer
    if code != "ok":
        raise error_for(code, message)
    return value
