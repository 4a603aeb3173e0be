"""Connector settings as Kafka's ConfigDef declares and checks them, and the answer of
`PUT /connector-plugins/{class}/config/validate` (Connect's ConfigInfos), with Kafka's own
messages, so that a user's Connect tooling reads our verdicts as it reads Connect's."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

# A check of a present value: the reason it is refused, or None.
Check = Callable[[str], str | None]


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: str  # Kafka's ConfigDef.Type: STRING, INT, LIST, CLASS, ...
    documentation: str
    default: str | None = None
    required: bool = False  # no default value (ConfigDef.NO_DEFAULT_VALUE)
    importance: str = "HIGH"
    group: str | None = None
    order: int = -1
    width: str = "NONE"
    display_name: str = ""
    check: Check | None = None

    def errors(self, value: str | None) -> list[str]:
        if value is None:
            missing = f'Missing required configuration "{self.name}" which has no default value.'
            return [missing] if self.required else []
        reason = _type_error(self.type, value) or (self.check(value) if self.check else None)
        return [] if reason is None else [f"Invalid value {value} for configuration {self.name}: {reason}"]

    def definition(self) -> dict[str, object]:
        return {
            "name": self.name,
            "type": self.type,
            "required": self.required,
            "default_value": self.default,
            "importance": self.importance,
            "documentation": self.documentation,
            "group": self.group,
            "order": self.order,
            "width": self.width,
            "display_name": self.display_name or self.name,
            "dependents": [],
        }


def _type_error(kind: str, value: str) -> str | None:
    if kind in ("INT", "SHORT", "LONG"):
        try:
            int(value.strip())
        except ValueError:
            return f"Not a number of type {kind}"
    if kind == "BOOLEAN" and value.strip().lower() not in ("true", "false"):
        return "Expected value to be either true or false"
    return None


def at_least(minimum: int) -> Check:
    def check(value: str) -> str | None:
        return f"Value must be at least {minimum}" if int(value.strip()) < minimum else None

    return check


def one_of(*allowed: str) -> Check:
    def check(value: str) -> str | None:
        return None if value in allowed else f"String must be one of: {', '.join(allowed)}"

    return check


def non_empty(value: str) -> str | None:
    return "String must be non-empty" if not value else None


@dataclass
class Validation:
    """The checked value of every key, plus errors found across keys (a connector's own
    `validate`, e.g. a sink's topics and topics.regex)."""

    keys: list[ConfigKey]
    config: Mapping[str, str]
    extra: dict[str, list[str]] = field(default_factory=dict)

    def errors(self) -> dict[str, list[str]]:
        found = {key.name: key.errors(self.config.get(key.name)) for key in self.keys}
        for name, messages in self.extra.items():
            found[name] = found.get(name, []) + messages
        return {name: messages for name, messages in found.items() if messages}

    def messages(self) -> list[str]:
        return [message for messages in self.errors().values() for message in messages]

    def infos(self, connector_class: str) -> dict[str, object]:
        """Connect's ConfigInfos: every key's definition and value, and the error count."""
        errors = self.errors()
        groups = list(dict.fromkeys(key.group for key in self.keys if key.group))
        configs = [
            {
                "definition": key.definition(),
                "value": {
                    "name": key.name,
                    "value": self.config.get(key.name, key.default),
                    "recommended_values": [],
                    "errors": errors.get(key.name, []),
                    "visible": True,
                },
            }
            for key in self.keys
        ]
        return {
            "name": connector_class,
            "error_count": sum(len(m) for m in errors.values()),
            "groups": groups,
            "configs": configs,
        }
