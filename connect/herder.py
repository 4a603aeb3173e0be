"""The herder, as Connect calls it: the connectors this worker runs, what each should be doing
(its target state: STARTED, PAUSED, STOPPED) and what it is doing (its status), kept in the
config and status topics and carried out by the Spark runtime.

A connector has one task, task 0 (FileStream connectors never have more): the connector's
Spark query. A paused or stopped connector's query is stopped; Spark has no pause, and
starting the query again from its checkpoint continues where it stopped.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from connect import errors, lag, metrics, plugins, progress
from connect.plugins import Plugin
from connect.queryspec import QuerySpec
from connect.sparkruntime import FAILED, TaskState
from connect.storage import ConnectStore, Loaded

STARTED, PAUSED, STOPPED = "STARTED", "PAUSED", "STOPPED"
TARGET_STATES = {"RUNNING": STARTED, "PAUSED": PAUSED, "STOPPED": STOPPED}  # POST's initial_state
CONNECTOR_STATES = {target: state for state, target in TARGET_STATES.items()}


class Runtime(Protocol):
    def run(self, name: str, plugin: Plugin, config: Mapping[str, str]) -> None: ...
    def halt(self, name: str, forget: bool = False) -> None: ...
    def state(self, name: str) -> TaskState: ...
    def checkpoint(self, name: str) -> Path: ...
    def spec(self, name: str, config: Mapping[str, str]) -> QuerySpec: ...


@dataclass
class Connector:
    config: dict[str, str]
    plugin: Plugin
    target: str = STARTED


class Herder:
    def __init__(self, store: ConnectStore, runtime: Runtime, worker_id: str) -> None:
        self._store = store
        self._runtime = runtime
        self.worker_id = worker_id
        self._connectors: dict[str, Connector] = {}
        self._lock = threading.RLock()

    def resume(self, loaded: Loaded) -> None:
        """Take over what the config topic holds: every connector in its target state."""
        with self._lock:
            for name, config in loaded.configs.items():
                plugin = plugins.find(config.get("connector.class", ""))
                if plugin is None:
                    continue
                connector = Connector(config, plugin, loaded.target_states.get(name, STARTED))
                self._connectors[name] = connector
                self._enter(name, connector)

    # -- reading -------------------------------------------------------------------------
    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._connectors)

    def info(self, name: str) -> dict[str, object]:
        with self._lock:
            connector = self._get(name)
            tasks = [] if connector.target == STOPPED else [{"connector": name, "task": 0}]
            return {
                "name": name,
                "config": dict(connector.config),
                "tasks": tasks,
                "type": connector.plugin.type,
            }

    def config(self, name: str) -> dict[str, str]:
        with self._lock:
            return dict(self._get(name).config)

    def status(self, name: str, restarting: tuple[bool, bool] = (False, False)) -> dict[str, object]:
        """Connect's ConnectorStateInfo; `restarting` shows the connector, the task RESTARTING."""
        with self._lock:
            connector = self._get(name)
            state = "RESTARTING" if restarting[0] else CONNECTOR_STATES[connector.target]
            tasks = [] if connector.target == STOPPED else [self.task_status(name, 0, restarting[1])]
            return {
                "name": name,
                "connector": {"state": state, "worker_id": self.worker_id},
                "tasks": tasks,
                "type": connector.plugin.type,
            }

    def task_status(self, name: str, task: int, restarting: bool = False) -> dict[str, object]:
        with self._lock:
            connector = self._get(name)
            if task != 0 or connector.target == STOPPED:
                raise errors.ConnectError(404, f"Task {name}-{task} not found")
            found = TaskState(PAUSED) if connector.target == PAUSED else self._runtime.state(name)
            if restarting:
                found = TaskState("RESTARTING")
            status: dict[str, object] = {"id": task, "state": found.state, "worker_id": self.worker_id}
            if found.trace:
                status["trace"] = found.trace
            return status

    def tasks(self, name: str) -> list[dict[str, object]]:
        with self._lock:
            connector = self._get(name)
            if connector.target == STOPPED:
                return []
            return [{"id": {"connector": name, "task": 0}, "config": self._task_config(connector)}]

    def topics(self, name: str) -> dict[str, object]:
        with self._lock:
            connector = self._get(name)
            checkpoint = self._runtime.checkpoint(name)
        if connector.plugin.progress:
            used = importlib.import_module(connector.plugin.progress).topics(checkpoint, connector.config)
        elif connector.plugin.type == plugins.SOURCE:
            used = [connector.config["topic"].strip()] if progress.committed_end(checkpoint) else []
        else:
            used = progress.sink_topics(checkpoint)
        return {name: {"topics": used}}

    def offsets(self, name: str) -> dict[str, object]:
        with self._lock:
            connector = self._get(name)
            checkpoint = self._runtime.checkpoint(name)
        if connector.plugin.progress:
            return {
                "offsets": importlib.import_module(connector.plugin.progress).offsets(
                    checkpoint, connector.config
                )
            }
        if connector.plugin.type == plugins.SOURCE:
            return {"offsets": progress.source_offsets(checkpoint, connector.config["file"])}
        return {"offsets": progress.sink_offsets(checkpoint)}

    def metrics(self, name: str) -> dict[str, object]:
        """kctl's `GET /connectors/{name}/metrics`: its task's counts since the worker
        started, its lag and its last error (connect.metrics)."""
        with self._lock:
            connector = self._get(name)
            spec = self._runtime.spec(name, connector.config)
        counts = metrics.REGISTRY.counts(name)
        return metrics.document(
            name,
            connector.plugin.type,
            counts,
            lag.of(connector.plugin.runner, connector.plugin.type == plugins.SINK, spec),
        )

    # -- changing ------------------------------------------------------------------------
    def put(self, name: str, config: Mapping[str, str], target: str | None = None) -> bool:
        """Create the connector or replace its config (restarting its task): whether it is new.
        `target` set: only a new connector is accepted (POST), in that state."""
        plugin = plugins.checked(config)
        with self._lock:
            existing = self._connectors.get(name)
            if existing is not None and target is not None:
                raise errors.already_exists(name)
            connector = Connector(dict(config), plugin, existing.target if existing else target or STARTED)
            self._store.put_config(name, connector.config, self._task_config(connector))
            if existing is None:
                self._store.put_target_state(name, connector.target)
            self._connectors[name] = connector
            self._enter(name, connector)
            return existing is None

    def delete(self, name: str) -> None:
        with self._lock:
            self._get(name)
            self._store.delete(name)
            del self._connectors[name]
            self._runtime.halt(name, forget=True)
            metrics.REGISTRY.forget(name)
            self._store.put_status(f"status-connector-{name}", None)
            self._store.put_status(f"status-task-{name}-0", None)

    def target(self, name: str, target: str) -> None:
        """Pause, resume or stop (idempotent)."""
        with self._lock:
            connector = self._get(name)
            if connector.target == target:
                return
            self._store.put_target_state(name, target)
            connector.target = target
            self._enter(name, connector)

    def reset_offsets(self, name: str) -> None:
        """KIP-875: forget a STOPPED connector's progress (its checkpoint), so it starts over."""
        with self._lock:
            if self._get(name).target != STOPPED:
                raise errors.bad_request(
                    "Connectors must be in the STOPPED state before their offsets can be modified. This "
                    "can be done for the specified connector by issuing a 'PUT' request to the "
                    f"'/connectors/{name}/stop' endpoint"
                )
            self._runtime.halt(name, forget=True)

    def restart(self, name: str, include_tasks: bool, only_failed: bool) -> dict[str, object]:
        """KIP-745: the task restarts if `include_tasks and (not only_failed or it FAILED)`,
        the connector if `not only_failed` (it never fails: it has nothing to run of its own).
        The status, with what restarts shown RESTARTING."""
        with self._lock:
            connector = self._get(name)
            failed = self._runtime.state(name).state == FAILED
            task = include_tasks and (not only_failed or failed) and connector.target == STARTED
            if task:
                self._runtime.run(name, connector.plugin, connector.config)
            return self.status(name, restarting=(not only_failed, task))

    def task_changed(self, name: str, state: TaskState) -> None:
        """The runtime's news of a task: kept in the status topic."""
        with self._lock:
            if name not in self._connectors:
                return
            status = {
                "state": state.state,
                "trace": state.trace,
                "worker_id": self.worker_id,
                "generation": 0,
            }
            self._store.put_status(f"status-task-{name}-0", status)

    # -- helpers -------------------------------------------------------------------------
    def _get(self, name: str) -> Connector:
        connector = self._connectors.get(name)
        if connector is None:
            raise errors.not_found(name)
        return connector

    def _enter(self, name: str, connector: Connector) -> None:
        """Make the runtime do what the target state says, and say so in the status topic."""
        if connector.target == STARTED:
            self._runtime.run(name, connector.plugin, connector.config)
        else:
            self._runtime.halt(name)
        status = {
            "state": CONNECTOR_STATES[connector.target],
            "trace": None,
            "worker_id": self.worker_id,
            "generation": 0,
        }
        self._store.put_status(f"status-connector-{name}", status)

    @staticmethod
    def _task_config(connector: Connector) -> dict[str, str]:
        return {**connector.config, "task.class": connector.plugin.task_class}
