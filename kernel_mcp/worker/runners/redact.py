"""Belt and braces: no secret the caller holds leaves through a result.

Candidates cannot read the caller's secrets (allowlisted environment, their own PID namespace, a caller
that is not dumpable); if one did anyway, whatever it printed, raised or returned as text would travel
back inside a result (log tails, exception messages, compile errors) and from there into answers, the
compile cache and snapshots. The runner passes every result through ``Redactor.model`` first: each
occurrence of a secret's value becomes ``[redacted NAME]``.

A secret is the value of an environment variable whose name says it is one (API keys, tokens,
passwords...), at least MIN_LENGTH characters long, plus any value registered with ``remember`` (the
HTTP bearer token given on the command line).
"""
from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
MIN_LENGTH = 8  # shorter values ("1", "true") would redact ordinary words
Model = TypeVar("Model", bound=BaseModel)
_REMEMBERED: dict[str, str] = {}
_REMEMBERING = threading.Lock()  # a batch remembers its lanes' secrets from its worker threads


def remember(value: str, name: str) -> None:
    """A secret that is not in the environment (a token given as an argument)."""
    if value and len(value) >= MIN_LENGTH:
        with _REMEMBERING:
            _REMEMBERED[value] = name


def secrets_in(environ: Mapping[str, str]) -> dict[str, str]:
    """value -> variable name, for each variable that holds a secret, longest first."""
    found = {value: name for name, value in environ.items() if SECRET_NAME.search(name) and len(value) >= MIN_LENGTH}
    with _REMEMBERING:
        found.update(_REMEMBERED)
    return dict(sorted(found.items(), key=lambda item: -len(item[0])))


class Redactor:
    def __init__(self, environ: Mapping[str, str] | None = None):
        self._environ = dict(os.environ if environ is None else environ)

    @property
    def secrets(self) -> dict[str, str]:
        """Read at each use: a value remembered after this runner was made (a batch's secret) counts too."""
        return secrets_in(self._environ)

    def text(self, text: str) -> str:
        for value, name in self.secrets.items():
            if value in text:
                text = text.replace(value, f"[redacted {name}]")
        return text

    def model(self, result: Model) -> Model:
        """``result`` itself when it holds no secret (the usual case, found in its JSON), else a copy with
        every string redacted."""
        if not self.secrets:
            return result
        dumped = result.model_dump_json()
        if not any(value in dumped or json.dumps(value)[1:-1] in dumped for value in self.secrets):
            return result
        return type(result).model_validate(self._walk(result.model_dump()))

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self._walk(k): self._walk(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self._walk(v) for v in value)
        return value
