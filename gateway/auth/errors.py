"""The auth errors: ``DecisionError`` subclasses every wire renders (OpenAI's ``error`` envelope, System
One's ``detail``). Their messages never carry key material: a key is named by its alias or not at all.
"""

from __future__ import annotations

from translators.errors import MODEL, DecisionError, Where


class AuthenticationError(DecisionError):
    """401: no key, or one the gateway does not know."""

    def __init__(self, message: str, code: str = "invalid_api_key"):
        super().__init__(status=401, message=message, loc=None, type="authentication_error", code=code,
                         headers={"WWW-Authenticate": "Bearer"})


class PermissionDenied(DecisionError):
    """403: a known key that may not do this (blocked, expired, not this model, not an admin route)."""

    def __init__(self, message: str, code: str, loc: Where | None = None):
        super().__init__(status=403, message=message, loc=loc, type="permission_error", code=code)


def missing_key() -> AuthenticationError:
    return AuthenticationError("No API key: send it as 'Authorization: Bearer sk-...' (or in x-api-key).",
                               code="missing_api_key")


def unknown_key() -> AuthenticationError:
    return AuthenticationError("Invalid API key: it is unknown to this gateway, or was deleted or regenerated.")


def model_not_allowed(model_group: str, allowed: list[str], team: str | None = None,
                      user: str | None = None) -> PermissionDenied:
    """``team`` (its alias or id) when it is the key's team whose models leave ``model_group`` out;
    ``user`` (its id) when it is the key's user's."""
    listed = ", ".join(allowed[:20]) + (", ..." if len(allowed) > 20 else "")
    if user is not None:
        return PermissionDenied(f"This key's user '{user[:200]}' may not use model '{model_group}'; the user's "
                                f"models: {listed or 'none'}.", code="model_not_allowed", loc=MODEL)
    if team is not None:
        return PermissionDenied(f"This key's team '{team[:200]}' may not use model '{model_group}'; the team's "
                                f"models: {listed or 'none'}.", code="model_not_allowed", loc=MODEL)
    return PermissionDenied(f"This key may not use model '{model_group}'; its models: {listed or 'none'}.",
                            code="model_not_allowed", loc=MODEL)
