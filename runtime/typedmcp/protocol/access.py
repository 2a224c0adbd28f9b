"""Who may use what: the scopes (and a predicate) each tool, resource and prompt requires.

A server declares an :class:`AccessPolicy`: :class:`~typedmcp.app.McpApp` builds one from
``scopes=`` and ``allow=`` on its decorators; low-level handlers set it as a class
attribute::

    class Notes(ServerHandlers):
        access_policy = AccessPolicy(
            tools={"add_note": requires("notes:write")},
            resources={"notes://{note_id}": requires("notes:read")},
            prompts={"audit": requires(allow=lambda principal: "admin" in principal.claims.get("roles", ()))},
        )

The policy is judged against the request's principal (what ``BearerAuth.verify``
returned): its ``scopes`` (a :class:`~typedmcp.protocol.origin.Principal`'s, or any
object's ``scopes`` attribute or key; a space-separated string counts too). Without a
principal (stdio, in-process connectors, an HTTP app without ``auth``) nothing is enforced
and nothing is hidden: there is no token to judge.

Over HTTP, a call without a required scope is refused with ``403`` and a
``WWW-Authenticate: Bearer error="insufficient_scope", scope="..."`` challenge before its
handler runs (the step-up flow of the MCP authorization spec); a refusing predicate is a
``403`` without that challenge (no wider token would help). Guarded: ``tools/call``,
``resources/read`` and ``resources/subscribe``, ``prompts/get``, and ``completion/complete``
of a guarded prompt or template. Lists show a caller only what its token may use unless
``hide_unauthorized=False``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger("typedmcp")

#: A predicate on the principal: True lets the request through (claims, roles, tenants).
Allow = Callable[[Any], bool]

#: RFC 6749 section 3.3: a scope token is printable ASCII without space, ``"`` and ``\\``.
_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
_VARIABLE = re.compile(r"\{[^{}]*\}")

#: The list methods whose items the policy filters, and the key of their items.
LIST_ITEMS = {
    "tools/list": ("tools", "tool", "name"),
    "prompts/list": ("prompts", "prompt", "name"),
    "resources/list": ("resources", "resource", "uri"),
    "resources/templates/list": ("resourceTemplates", "resource", "uriTemplate"),
}


@dataclass(frozen=True)
class Requirement:
    """What a caller needs: every scope in ``scopes``, and ``allow(principal)`` true."""

    scopes: frozenset[str] = frozenset()
    allow: Allow | None = None

    def __post_init__(self) -> None:
        for scope in self.scopes:
            if not isinstance(scope, str) or _SCOPE_TOKEN.fullmatch(scope) is None:
                raise ValueError(
                    f"{scope!r} is not an OAuth scope: a scope is one word of printable ASCII "
                    'without spaces, quotes or backslashes (RFC 6749, 3.3), e.g. "notes:read"'
                )
        if self.allow is not None and not callable(self.allow):
            raise TypeError(f"allow= takes a function of the principal, not {self.allow!r}")

    @classmethod
    def of(cls, scopes: Iterable[str] | None, allow: Allow | None) -> Requirement | None:
        """The requirement of a declaration's ``scopes=`` and ``allow=`` (None: neither)."""
        if isinstance(scopes, str):
            raise TypeError(
                f"scopes= takes a list of scopes, not the string {scopes!r}: write scopes=[{scopes!r}]"
            )
        scope_set = frozenset(scopes or ())
        if not scope_set and allow is None:
            return None
        return cls(scope_set, allow)

    def missing(self, principal: Any, granted: frozenset[str] | None = None) -> frozenset[str]:
        """The required scopes ``principal``'s token does not grant (``granted``: its
        scopes, when the caller already has them)."""
        if not self.scopes:
            return frozenset()
        return self.scopes - (granted_scopes(principal) if granted is None else granted)

    def allows(self, principal: Any, granted: frozenset[str] | None = None) -> bool:
        """Whether ``principal`` may use what this guards (scopes and predicate)."""
        if self.scopes and not self.scopes <= (granted_scopes(principal) if granted is None else granted):
            return False
        return self._predicate_allows(principal)

    def _predicate_allows(self, principal: Any) -> bool:
        if self.allow is None:
            return True
        try:
            return bool(self.allow(principal))
        except Exception:  # a failing predicate refuses (fail closed), and says why in the log
            logger.exception("the allow= predicate raised for principal %r; refusing", principal)
            return False


def requires(*scopes: str, allow: Allow | None = None) -> Requirement:
    """A :class:`Requirement`: ``requires("notes:write")``, ``requires(allow=is_admin)``."""
    requirement = Requirement.of(scopes, allow)
    if requirement is None:
        raise ValueError('requires() needs a scope or allow=: requires("notes:read")')
    return requirement


def granted_scopes(principal: Any) -> frozenset[str]:
    """The scopes a principal's token grants: its ``scopes`` attribute (or key), a
    collection or a space-separated string; none when it has neither."""
    scopes = principal.get("scopes") if isinstance(principal, Mapping) else getattr(principal, "scopes", None)
    if isinstance(scopes, frozenset):  # a Principal's (the common case): as it is
        return scopes
    if isinstance(scopes, str):
        return frozenset(scopes.split())
    if isinstance(scopes, Iterable):
        return frozenset(str(scope) for scope in scopes)
    return frozenset()


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused: ``what`` it asked for (``tool 'add_note'``), the scopes
    required and those missing; ``missing`` empty means the predicate refused."""

    what: str
    required: frozenset[str]
    missing: frozenset[str]

    @property
    def message(self) -> str:
        """The error message a client reads."""
        if self.missing:
            needs = " ".join(sorted(self.missing))
            return (
                f"Forbidden: {self.what} needs scope {needs}, which this access token does not "
                "grant; authorize again asking for it"
            )
        return f"Forbidden: the server's policy does not allow this caller to use {self.what}"

    def challenge(self, metadata_url: str) -> str | None:
        """The ``WWW-Authenticate`` value of the 403 (RFC 6750 ``insufficient_scope``,
        naming every scope the request needs); None when no wider token would help."""
        if not self.missing:
            return None
        scope = " ".join(sorted(self.required))
        return f'Bearer error="insufficient_scope", scope="{scope}", resource_metadata="{metadata_url}"'

    @property
    def data(self) -> dict[str, Any]:
        """The JSON-RPC error's ``data``."""
        return {"requiredScopes": sorted(self.required), "missingScopes": sorted(self.missing)}


@dataclass
class AccessPolicy:
    """The :class:`Requirement` of each tool and prompt (by name) and resource (by URI, or
    by RFC 6570 level-1 template: ``notes://{note_id}`` guards every URI it matches).
    ``hide_unauthorized``: leave out of the lists what the caller's token may not use.
    ``implied_scopes``: broader scopes and the narrower ones each implies
    (``{"notes:admin": ["notes:read", "notes:write"]}``), followed transitively: a token
    granting a broader scope may use what needs a narrower one (2026-07-28 asks servers to
    treat broader scopes as implying narrower ones; which scope is broader is the
    authorization server's vocabulary, so it is declared here)."""

    tools: dict[str, Requirement] = field(default_factory=dict)
    resources: dict[str, Requirement] = field(default_factory=dict)
    prompts: dict[str, Requirement] = field(default_factory=dict)
    hide_unauthorized: bool = True
    implied_scopes: Mapping[str, Iterable[str]] = field(default_factory=dict)
    _templates: dict[str, re.Pattern[str]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __bool__(self) -> bool:
        return bool(self.tools or self.resources or self.prompts)

    def granted(self, principal: Any) -> frozenset[str]:
        """The scopes ``principal``'s token grants, with every scope they imply."""
        granted = granted_scopes(principal)
        if not self.implied_scopes:
            return granted
        closure, pending = set(granted), list(granted)
        while pending:
            for narrower in self.implied_scopes.get(pending.pop(), ()):
                if narrower not in closure:
                    closure.add(narrower)
                    pending.append(narrower)
        return frozenset(closure)

    def resource_requirement(self, uri: str) -> tuple[str, Requirement] | None:
        """The requirement guarding ``uri`` (its own, else its template's) and that key."""
        found = self.resources.get(uri)
        if found is not None:
            return uri, found
        for key, requirement in self.resources.items():
            if "{" in key and self._template(key).fullmatch(uri) is not None:
                return key, requirement
        return None

    def _template(self, template: str) -> re.Pattern[str]:
        pattern = self._templates.get(template)
        if pattern is None:
            parts, position = [], 0
            for found in _VARIABLE.finditer(template):
                parts += [re.escape(template[position : found.start()]), "[^/]+"]
                position = found.end()
            pattern = self._templates[template] = re.compile("".join(parts) + re.escape(template[position:]))
        return pattern

    def requirement(self, method: Any, params: Any) -> tuple[str, Requirement] | None:
        """What a request asks for (described) and its requirement; None: unguarded."""
        if not isinstance(params, Mapping):
            return None
        if method == "tools/call":
            return _named("tool", self.tools, params.get("name"))
        if method == "prompts/get":
            return _named("prompt", self.prompts, params.get("name"))
        if method in ("resources/read", "resources/subscribe"):
            uri = params.get("uri")
            found = self.resource_requirement(uri) if isinstance(uri, str) else None
            return (f"resource {uri!r}", found[1]) if found else None
        if method == "completion/complete":
            ref = params.get("ref")
            if isinstance(ref, Mapping) and ref.get("type") == "ref/prompt":
                return _named("prompt", self.prompts, ref.get("name"))
            uri = ref.get("uri") if isinstance(ref, Mapping) else None
            found = self.resource_requirement(uri) if isinstance(uri, str) else None
            return (f"resource template {uri!r}", found[1]) if found else None
        return None

    def refusal(self, method: Any, params: Any, principal: Any) -> Refusal | None:
        """Why ``principal`` may not make this request; None when it may (or when there
        is no principal: nothing is enforced without authentication)."""
        if principal is None:
            return None
        found = self.requirement(method, params)
        if found is None:
            return None
        what, requirement = found
        missing = requirement.missing(principal, self.granted(principal))
        if missing or not requirement._predicate_allows(principal):
            return Refusal(what, requirement.scopes, missing)
        return None

    def visible(self, method: str, result: dict[str, Any], principal: Any) -> dict[str, Any]:
        """A list result (wire form) without the items ``principal`` may not use."""
        if principal is None or not self.hide_unauthorized or method not in LIST_ITEMS:
            return result
        key, kind, id_key = LIST_ITEMS[method]
        items = result.get(key)
        if not isinstance(items, list):
            return result
        granted = self.granted(principal)
        kept = [item for item in items if self._item_allowed(kind, item, id_key, principal, granted)]
        return result if len(kept) == len(items) else {**result, key: kept}

    def _item_allowed(self, kind: str, item: Any, id_key: str, principal: Any, granted: frozenset[str]) -> bool:
        ident = item.get(id_key) if isinstance(item, dict) else None  # (wire data: dicts)
        if not isinstance(ident, str):
            return True
        table = self.tools if kind == "tool" else self.prompts
        if kind == "resource":
            found = self.resource_requirement(ident)
            requirement = found[1] if found else None
        else:
            requirement = table.get(ident)
        return requirement is None or requirement.allows(principal, granted)


def _named(kind: str, table: Mapping[str, Requirement], name: Any) -> tuple[str, Requirement] | None:
    requirement = table.get(name) if isinstance(name, str) else None
    return (f"{kind} {name!r}", requirement) if requirement is not None else None


def access_policy_of(handlers: object) -> AccessPolicy | None:
    """The handlers' ``access_policy`` (None: they declare none, or an empty one)."""
    policy = getattr(handlers, "access_policy", None)
    if policy is None:
        return None
    if not isinstance(policy, AccessPolicy):
        raise TypeError(
            f"{type(handlers).__name__}.access_policy must be an AccessPolicy, not "
            f"{type(policy).__name__}: access_policy = AccessPolicy(tools={{'name': requires('scope')}})"
        )
    return policy
