"""The five options that say which cluster a command talks to and how (-b, --dir, --timeout,
-X, -F), declared once for every such command.

Typer builds a command's options from its function's parameters and has no dependencies, so
`@connection_options()` stands in for one: the command declares a single `options:
ConnectionOptions` parameter where the five go, and the decorator shows Typer the five
parameters in its place, then hands the command the values gathered in one ConnectionOptions.
The options keep their names, help, order and position, so `--help` and the man pages read as
if each command declared them itself. kctl.kafka.client.connect resolves them.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kctl.shell.options import DEFAULT_TIMEOUT, Bootstrap, ClusterDir, CommandConfig, Settings, Timeout

Result = TypeVar("Result")


@dataclass(frozen=True)
class ConnectionOptions:
    """What the user said about the connection, not yet resolved (no cluster is looked up)."""

    bootstrap: str | None = None  # -b
    cluster_dir: Path | None = None  # --dir
    timeout: float = DEFAULT_TIMEOUT  # --timeout, seconds
    settings: tuple[str, ...] = ()  # -X KEY=VALUE, as given
    command_config: Path | None = None  # -F


# A command's options when none of the five is given: the default of its `options` parameter.
NO_CONNECTION_OPTIONS = ConnectionOptions()

# The five as the command line shows them, in ConnectionOptions' order.
_DECLARED = {
    "bootstrap": (Bootstrap, None),
    "cluster_dir": (ClusterDir, None),
    "timeout": (Timeout, DEFAULT_TIMEOUT),
    "settings": (Settings, None),
    "command_config": (CommandConfig, None),
}


def connection_options(
    timeout: Any = Timeout,
) -> Callable[[Callable[..., Result]], Callable[..., Result]]:
    """A decorator for a command with an `options: ConnectionOptions` parameter: Typer sees the
    five options there instead. `timeout` is the --timeout option's declaration, for a command
    whose timeout means more (kctl.shell.options.DeliveryTimeout)."""

    def decorate(command: Callable[..., Result]) -> Callable[..., Result]:
        declared = {**_DECLARED, "timeout": (timeout, DEFAULT_TIMEOUT)}
        signature = inspect.signature(command, eval_str=True)
        name = _options_parameter(command, signature)

        @functools.wraps(command)
        def gathering(*args: Any, **kwargs: Any) -> Result:
            given = {option: kwargs.pop(option) for option in declared}
            kwargs[name] = ConnectionOptions(**{**given, "settings": tuple(given["settings"] or ())})
            return command(*args, **kwargs)

        # Typer reads the signature, and the annotations for parameters it has no option for.
        shown = _spliced(signature, name, declared)
        gathering.__signature__ = shown  # type: ignore[attr-defined]
        gathering.__annotations__ = {p.name: p.annotation for p in shown.parameters.values()} | {
            "return": shown.return_annotation
        }
        return gathering

    return decorate


def _spliced(
    signature: inspect.Signature, name: str, declared: dict[str, tuple[Any, Any]]
) -> inspect.Signature:
    """`signature` with the declared options in place of parameter `name`."""
    kind = signature.parameters[name].kind
    parameters: list[inspect.Parameter] = []
    for parameter in signature.parameters.values():
        if parameter.name != name:
            parameters.append(parameter)
            continue
        parameters += [
            inspect.Parameter(option, kind, annotation=annotation, default=default)
            for option, (annotation, default) in declared.items()
        ]
    return signature.replace(parameters=parameters)


def _options_parameter(command: Callable[..., Any], signature: inspect.Signature) -> str:
    found = [p.name for p in signature.parameters.values() if p.annotation is ConnectionOptions]
    if len(found) != 1:
        raise TypeError(f"{command.__qualname__} needs one ConnectionOptions parameter, has {len(found)}")
    return found[0]
