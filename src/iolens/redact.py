"""Redaction of secrets in command lines that iolens itself records (META).

The interposer redacts argv and environment in C before anything reaches the
capture (native/preload/redact.c); this is the same rule set for the command
line that `iolens profile` stores, and tests check the two agree.
"""

from __future__ import annotations

import re

MASK = "***"
_SECRET_WORDS = ("password", "passwd", "secret", "token", "apikey", "api_key", "api-key", "access_key",
                 "access-key", "accesskey", "credential", "private_key", "private-key", "session_key",
                 "authorization", "_key", "-key")
_URL_AUTH = re.compile(r"(://[^/@:\s]*:)[^/@\s]*(@)")


def secret_name(name: str) -> bool:
    low = name.lower()
    return any(w in low for w in _SECRET_WORDS)


def _value(v: str) -> str:
    if "://" not in v:
        return v
    v = _URL_AUTH.sub(lambda m: m.group(1) + MASK + m.group(2), v, count=1)
    if "?" not in v:
        return v
    base, _, query = v.partition("?")
    parts = []
    for item in query.split("&"):
        k, eq, _val = item.partition("=")
        low = k.lower()
        if eq and (secret_name(k) or low.startswith("signature") or low in ("x-amz-signature", "sig")):
            parts.append(f"{k}={MASK}")
        else:
            parts.append(item)
    return base + "?" + "&".join(parts)


def _is_flag(a: str) -> bool:
    return len(a) > 1 and a[0] == "-" and not a[1].isdigit()


def redact_argv(argv: list[str]) -> list[str]:
    out: list[str] = []
    mask_next = False
    for a in argv:
        name, eq, _v = a.partition("=")
        if mask_next:
            out.append(MASK)
            mask_next = False
        elif _is_flag(a) and eq and secret_name(name):
            out.append(f"{name}={MASK}")
        elif not _is_flag(a) and eq and name and secret_name(name) and "/" not in a and len(name) < 64:
            out.append(f"{name}={MASK}")
        else:
            if _is_flag(a) and a.startswith("--") and not eq and secret_name(a):
                mask_next = True
            out.append(_value(a))
    return out
