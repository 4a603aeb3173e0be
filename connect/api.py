"""Kafka Connect's REST API (ConnectorsResource, ConnectorPluginsResource, RootResource), with
its status codes and JSON shapes. Handlers are plain functions: FastAPI runs them in threads,
since a change waits until the brokers have it in the config topic."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, FastAPI, Query, Response

from connect import errors, plugins
from connect.herder import PAUSED, STARTED, STOPPED, TARGET_STATES, Herder

JsonBody = Annotated[dict[str, Any], Body()]


def routes(app: FastAPI, herder: Herder, cluster_id: str) -> None:
    @app.get("/")
    def root() -> dict[str, object]:
        return {"version": plugins.KAFKA_VERSION, "commit": "kctl", "kafka_cluster_id": cluster_id}

    @app.get("/connectors")
    def connectors(expand: Annotated[list[str], Query()] = []) -> Any:  # noqa: B006 (FastAPI's default)
        names = herder.names()
        wanted = [e for e in expand if e in ("status", "info")]  # others ignored, as Connect does
        if not wanted:
            return names
        found: dict[str, dict[str, object]] = {}
        for name in names:
            try:
                found[name] = {e: herder.status(name) if e == "status" else herder.info(name) for e in wanted}
            except errors.ConnectError:  # deleted meanwhile: skipped
                continue
        return found

    @app.post("/connectors", status_code=201)
    def create(body: JsonBody, response: Response) -> dict[str, object]:
        config = _strings(body.get("config"))
        name = str(body.get("name") or config.get("name") or "").strip()
        initial = str(body.get("initial_state") or "RUNNING").upper()
        if initial not in TARGET_STATES:
            raise errors.bad_request(f"Invalid initial state {initial}: one of RUNNING, PAUSED, STOPPED")
        if name:
            config["name"] = name
        herder.put(name, config, TARGET_STATES[initial])
        response.headers["Location"] = f"/connectors/{name}"
        return herder.info(name)

    @app.get("/connectors/{name}")
    def info(name: str) -> dict[str, object]:
        return herder.info(name)

    @app.delete("/connectors/{name}", status_code=204)
    def delete(name: str) -> None:
        herder.delete(name)

    @app.get("/connectors/{name}/config")
    def config(name: str) -> dict[str, str]:
        return herder.config(name)

    @app.put("/connectors/{name}/config")
    def put_config(name: str, body: JsonBody, response: Response) -> dict[str, object]:
        given = _strings(body)
        created = herder.put(name, {**given, "name": _same_name(given.get("name"), name)})
        response.status_code = 201 if created else 200
        if created:
            response.headers["Location"] = f"/connectors/{name}"
        return herder.info(name)

    @app.patch("/connectors/{name}/config")
    def patch_config(name: str, body: JsonBody) -> dict[str, object]:
        """KIP-477: the given keys replace the config's, a null value removes one."""
        config = {**herder.config(name), **_strings(body)}
        config = {key: value for key, value in config.items() if body.get(key, "") is not None}
        herder.put(name, {**config, "name": _same_name(config.get("name"), name)})
        return herder.info(name)

    @app.get("/connectors/{name}/status")
    def status(name: str) -> dict[str, object]:
        return herder.status(name)

    @app.get("/connectors/{name}/tasks")
    def tasks(name: str) -> list[dict[str, object]]:
        return herder.tasks(name)

    @app.get("/connectors/{name}/tasks/{task}/status")
    def task_status(name: str, task: int) -> dict[str, object]:
        return herder.task_status(name, task)

    @app.post("/connectors/{name}/tasks/{task}/restart", status_code=204)
    def restart_task(name: str, task: int) -> None:
        herder.task_status(name, task)  # 404 for a task that does not exist
        herder.restart(name, include_tasks=True, only_failed=False)

    @app.put("/connectors/{name}/pause", status_code=202)
    def pause(name: str) -> None:
        herder.target(name, PAUSED)

    @app.put("/connectors/{name}/resume", status_code=202)
    def resume(name: str) -> None:
        herder.target(name, STARTED)

    @app.put("/connectors/{name}/stop", status_code=204)
    def stop(name: str) -> None:
        herder.target(name, STOPPED)

    @app.post("/connectors/{name}/restart")
    def restart(
        name: str,
        response: Response,
        includeTasks: bool = False,
        onlyFailed: bool = False,  # noqa: N803
    ) -> dict[str, object] | None:
        status = herder.restart(name, includeTasks, onlyFailed)
        if not includeTasks and not onlyFailed:
            response.status_code = 204
            return None
        response.status_code = 202
        return status

    @app.get("/connectors/{name}/topics")
    def topics(name: str) -> dict[str, object]:
        return herder.topics(name)

    @app.get("/connectors/{name}/offsets")
    def offsets(name: str) -> dict[str, object]:
        return herder.offsets(name)

    @app.delete("/connectors/{name}/offsets")
    def reset_offsets(name: str) -> dict[str, str]:
        herder.reset_offsets(name)
        return {"message": "The offsets for this connector have been reset successfully"}

    @app.get("/connectors/{name}/metrics")
    def metrics(name: str) -> dict[str, object]:
        """kctl's own, not Connect's: the task's records read and written, errors, records
        skipped and put in the dead letter queue since the worker started, the lag behind
        its source and its last error."""
        return herder.metrics(name)

    @app.get("/connector-plugins")
    def connector_plugins(connectorsOnly: bool = True) -> list[dict[str, str]]:  # noqa: N803
        return plugins.listing(connectorsOnly)

    @app.get("/connector-plugins/{plugin}/config")
    def plugin_config(plugin: str) -> list[dict[str, object]]:
        found = plugins.find(plugin)
        if found is None:
            raise errors.ConnectError(404, f"Unknown plugin {plugin}.")
        return [key.definition() for key in found.validation({}).keys]

    @app.put("/connector-plugins/{plugin}/config/validate")
    def validate(plugin: str, body: JsonBody) -> dict[str, object]:
        included = _strings(body).get("connector.class")
        config = {**_strings(body), "connector.class": plugin}  # as Connect validates it
        found = plugins.of_config(config)
        if included is not None and plugins.find(included) is not found:
            raise errors.bad_request(
                f"Included connector type {included} does not match request type {plugin}"
            )
        return found.validation(config).infos(found.class_name)


def _same_name(given: str | None, name: str) -> str:
    """The URL's name, which a name in the body must repeat."""
    if given is not None and given != name:
        raise errors.bad_request(
            f"Connector name configuration ({given}) doesn't match connector name in the URL ({name})"
        )
    return name


def _strings(config: object) -> dict[str, str]:
    """A config as Connect reads it, a map of strings (JSON numbers and booleans as text)."""
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise errors.bad_request("Connector configuration must be a JSON object")
    return {
        str(key): "true" if value is True else "false" if value is False else str(value)
        for key, value in config.items()
        if value is not None
    }
