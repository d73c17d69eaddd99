"""GitHub Actions expressions (`${{ ... }}`), the subset landbot's shipped workflows use.

Literals (single-quoted strings with '' for a quote, numbers, true, false, null), context
references (`inputs.x`, `github.x`, `runner.x`, `secrets.X`, `steps.ID.outputs.X`, `env.X`,
`job.x`, also with `['x']`), `!`, `==`, `!=`, `&&`, `||`, parentheses, and the status
functions `success()`, `failure()`, `cancelled()`, `always()`. Semantics follow
https://docs.github.com/en/actions/reference/workflows-and-actions/expressions: `&&` and `||`
return an operand (not a boolean), string comparison ignores case, operands of different
types compare as numbers, a missing property is null, null renders as ''. Anything else
(another function, another context, `<`, a filter `*`) raises `ExpressionError`: the run
fails saying so, never silently.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

CONTEXTS = frozenset({"inputs", "github", "runner", "secrets", "steps", "env", "job"})
_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>-?\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||[!().\[\],])"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*))"
)
_TEMPLATE = re.compile(r"\$\{\{(.*?)\}\}", re.S)


class ExpressionError(ValueError):
    """An expression the simulated runner does not evaluate (or cannot parse)."""


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ExpressionError(
                f"the sim runner cannot parse {text[pos:]!r} in ${{{{ {text.strip()} }}}}"
            )
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def truthy(value: Any) -> bool:
    if value is None or value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0 and not math.isnan(value)
    return bool(value != "")


def _number(value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip()) if value.strip() else 0.0
        except ValueError:
            return math.nan
    return math.nan


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.casefold() == b.casefold()
    if type(a) is type(b) and not isinstance(a, str):
        return bool(a == b)
    return _number(a) == _number(b)


def to_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict | list):
        import json

        return json.dumps(value, indent=2)
    return str(value)


class _Parser:
    def __init__(
        self, text: str, contexts: Mapping[str, Any], status: Callable[[str], bool]
    ) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.contexts = contexts
        self.status = status

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok is None or (value is not None and tok[1] != value):
            want = value or "more"
            raise ExpressionError(f"expected {want!r} in ${{{{ {self.text.strip()} }}}}")
        self.i += 1
        return tok

    def parse(self) -> Any:
        value = self.or_()
        if self.peek() is not None:
            raise ExpressionError(
                f"the sim runner does not evaluate {self.peek()[1]!r} in "  # type: ignore[index]
                f"${{{{ {self.text.strip()} }}}}"
            )
        return value

    def or_(self) -> Any:
        value = self.and_()
        while self.peek() == ("op", "||"):
            self.take()
            right = self.and_()
            value = value if truthy(value) else right
        return value

    def and_(self) -> Any:
        value = self.unary()
        while self.peek() == ("op", "&&"):
            self.take()
            right = self.unary()
            value = right if truthy(value) else value
        return value

    def unary(self) -> Any:
        if self.peek() == ("op", "!"):
            self.take()
            return not truthy(self.unary())
        return self.compare()

    def compare(self) -> Any:
        left = self.primary()
        tok = self.peek()
        if tok in (("op", "=="), ("op", "!=")):
            self.take()
            right = self.primary()
            same = _equal(left, right)
            return same if tok == ("op", "==") else not same
        return left

    def primary(self) -> Any:
        kind, value = self.take()
        if kind == "str":
            return value[1:-1].replace("''", "'")
        if kind == "num":
            number = float(value)
            return int(number) if number.is_integer() else number
        if (kind, value) == ("op", "("):
            inner = self.or_()
            self.take(")")
            return inner
        if kind != "name":
            raise ExpressionError(f"unexpected {value!r} in ${{{{ {self.text.strip()} }}}}")
        if value in ("true", "false"):
            return value == "true"
        if value == "null":
            return None
        if self.peek() == ("op", "("):
            if value not in ("success", "failure", "cancelled", "always"):
                raise ExpressionError(
                    f"the sim runner does not evaluate the function {value}() "
                    f"in ${{{{ {self.text.strip()} }}}}"
                )
            self.take()
            self.take(")")
            return self.status(value)
        if value not in CONTEXTS:
            raise ExpressionError(
                f"the sim runner has no context {value!r} (in ${{{{ {self.text.strip()} }}}})"
            )
        current: Any = self.contexts.get(value, {})
        while self.peek() in (("op", "."), ("op", "[")):
            _, op = self.take()
            if op == ".":
                key = self.take()
                if key[0] != "name":
                    raise ExpressionError(f"bad property in ${{{{ {self.text.strip()} }}}}")
                name = key[1]
            else:
                key = self.take()
                if key[0] != "str":
                    raise ExpressionError(
                        "the sim runner takes only a string index in "
                        f"${{{{ {self.text.strip()} }}}}"
                    )
                name = key[1][1:-1].replace("''", "'")
                self.take("]")
            if isinstance(current, Mapping):
                # Context property names are case-insensitive on GitHub.
                found = next((v for k, v in current.items() if k.lower() == name.lower()), None)
                current = found
            else:
                current = None
        return current


def evaluate(text: str, contexts: Mapping[str, Any], status: Callable[[str], bool]) -> Any:
    """The value of one expression (the inside of `${{ }}` or a bare `if:`)."""
    return _Parser(text, contexts, status).parse()


def interpolate(text: str, contexts: Mapping[str, Any], status: Callable[[str], bool]) -> Any:
    """`text` with each `${{ }}` replaced; a value that is one expression keeps its type."""
    whole = _TEMPLATE.fullmatch(text.strip())
    if whole is not None and text.strip() == text.strip() and text.count("${{") == 1:
        return evaluate(whole.group(1), contexts, status)
    return _TEMPLATE.sub(lambda m: to_text(evaluate(m.group(1), contexts, status)), text)


def condition(text: Any, contexts: Mapping[str, Any], status: Callable[[str], bool]) -> bool:
    """An `if:`: a bare expression or one in `${{ }}`; without a status function, success()."""
    if isinstance(text, bool):
        return text
    source = str(text).strip()
    whole = _TEMPLATE.fullmatch(source)
    if whole is not None:
        source = whole.group(1)
    if not re.search(r"\b(success|failure|cancelled|always)\s*\(", source):
        source = f"success() && ({source})"
    return truthy(evaluate(source, contexts, status))
