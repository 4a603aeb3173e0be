"""`kctl schema register|list|get|versions|check|delete|config|mode`: a schema registry's
subjects through Confluent Schema Registry's REST API (the local cluster's, or any)."""

from __future__ import annotations

import json
import sys
from enum import Enum
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer

from kctl.schema.registryclient import call, client
from kctl.shell import console
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.options import DEFAULT_TIMEOUT, ClusterDir, Json, SchemaRegistryUrl, Timeout

app = typer.Typer(
    help="Register, list, show, check and delete schemas in the schema registry (Confluent's "
    "REST API). Producers and consumers agree on a record format through it: a subject "
    "(`TOPIC-value`, `TOPIC-key`) holds versions of a schema, and each new version must be "
    "compatible with the earlier ones as the subject's level says (BACKWARD by default).",
    no_args_is_help=True,
)


class SchemaType(str, Enum):
    AVRO = "AVRO"
    PROTOBUF = "PROTOBUF"
    JSON = "JSON"


SUFFIX_TYPES = {".avsc": SchemaType.AVRO, ".proto": SchemaType.PROTOBUF, ".json": SchemaType.JSON}

Subject = Annotated[str, typer.Argument(metavar="SUBJECT", help="The subject, e.g. orders-value.")]
SchemaFile = Annotated[
    Path,
    typer.Argument(
        metavar="FILE", help="The schema: a .avsc, .proto or .json file, or - for stdin.", allow_dash=True
    ),
]
TypeOption = Annotated[
    SchemaType | None,
    typer.Option(
        "--type",
        "-t",
        case_sensitive=False,
        show_default=False,
        help="The schema's type. Default: from the file's suffix (.avsc AVRO, .proto PROTOBUF, "
        ".json JSON), else AVRO.",
    ),
]
References = Annotated[
    list[str] | None,
    typer.Option(
        "--reference",
        metavar="NAME=SUBJECT:VERSION",
        show_default=False,
        help="A schema this one uses, as it names it (Avro full name, .proto import, JSON $ref) "
        "and where it is registered (repeatable).",
    ),
]


def _read_schema(file: Path, schema_type: SchemaType | None) -> tuple[str, str]:
    try:
        text = sys.stdin.read() if str(file) == "-" else file.read_text()
    except OSError as exc:
        raise KctlError(f"cannot read {file}: {exc.strerror}", ExitCode.INVALID_INPUT) from None
    chosen = schema_type or SUFFIX_TYPES.get(file.suffix.lower(), SchemaType.AVRO)
    return text, chosen.value


def _references(values: list[str] | None) -> list[dict[str, Any]]:
    parsed = []
    for value in values or []:
        name, _, where = value.partition("=")
        subject, _, version = where.rpartition(":")
        if not (name and subject and version.isdigit()):
            raise KctlError(
                f"invalid reference {value!r}: expected NAME=SUBJECT:VERSION", ExitCode.INVALID_INPUT
            )
        parsed.append({"name": name, "subject": subject, "version": int(version)})
    return parsed


@app.command()
def register(
    subject: Subject,
    file: SchemaFile,
    schema_type: TypeOption = None,
    references: References = None,
    registry: SchemaRegistryUrl = None,
    cluster_dir: ClusterDir = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    json_output: Json = False,
) -> None:
    """Register a schema under a subject: prints its id and version (the existing ones when the
    subject already has this schema). Exit 6 when it is incompatible with the subject's earlier
    versions (the reasons name the fields), 5 when it is not a valid schema."""
    text, kind = _read_schema(file, schema_type)
    refs = _references(references)
    registry_client = client(registry, cluster_dir, timeout)
    schema_id = call(lambda: registry_client.register(subject, text, kind, refs))
    found = call(lambda: registry_client.lookup(subject, text, kind, refs))
    if json_output:
        console.print_json({"subject": subject, "id": schema_id, "version": found["version"]})
    else:
        console.info(f"registered {subject} version {found['version']} with id {schema_id}")


@app.command("list")
def list_subjects(
    deleted: Annotated[bool, typer.Option("--deleted", help="Include soft-deleted subjects.")] = False,
    registry: SchemaRegistryUrl = None,
    cluster_dir: ClusterDir = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    json_output: Json = False,
) -> None:
    """List the subjects with their latest version, its id and its type."""
    registry_client = client(registry, cluster_dir, timeout)
    subjects = call(lambda: registry_client.subjects(deleted))
    rows = [_summary(call(partial(registry_client.version, s, "latest", deleted))) for s in subjects]
    if json_output:
        console.print_json(rows)
    else:
        console.print_table(["subject", "version", "id", "type"], [list(r.values()) for r in rows])


def _summary(version: dict[str, Any]) -> dict[str, Any]:
    return {
        "subject": version["subject"],
        "version": version["version"],
        "id": version["id"],
        "type": version.get("schemaType", "AVRO"),
    }


@app.command()
def get(
    subject: Annotated[str | None, typer.Argument(metavar="[SUBJECT]", help="The subject.")] = None,
    version: Annotated[str, typer.Argument(help="A version number, or latest.")] = "latest",
    schema_id: Annotated[
        int | None,
        typer.Option("--id", metavar="ID", show_default=False, help="The schema with this id instead."),
    ] = None,
    registry: SchemaRegistryUrl = None,
    cluster_dir: ClusterDir = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    json_output: Json = False,
) -> None:
    """Print a schema: a subject's version (latest by default) or the schema with an id. The
    text goes to stdout as registered (JSON schemas indented), ready for `kctl schema check`."""
    if (subject is None) == (schema_id is None):
        raise KctlError("give a SUBJECT or --id ID", ExitCode.USAGE)
    registry_client = client(registry, cluster_dir, timeout)
    if schema_id is not None:
        answer = call(lambda: registry_client.schema_by_id(schema_id))
    else:
        assert subject is not None
        answer = call(lambda: registry_client.version(subject, version))
    if json_output:
        console.print_json(answer)
        return
    text = answer["schema"]
    if answer.get("schemaType", "AVRO") != "PROTOBUF":
        try:
            text = json.dumps(json.loads(text), indent=2)
        except ValueError:
            pass
    sys.stdout.write(text.rstrip("\n") + "\n")


@app.command()
def versions(
    subject: Subject,
    registry: SchemaRegistryUrl = None,
    cluster_dir: ClusterDir = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    json_output: Json = False,
) -> None:
    """List a subject's versions with their ids."""
    registry_client = client(registry, cluster_dir, timeout)
    numbers = call(lambda: registry_client.versions(subject))
    rows = [_summary(call(partial(registry_client.version, subject, n))) for n in numbers]
    if json_output:
        console.print_json(rows)
    else:
        console.print_table(["version", "id", "type"], [[r["version"], r["id"], r["type"]] for r in rows])


@app.command()
def check(
    subject: Subject,
    file: SchemaFile,
    version: Annotated[
        str, typer.Option("--version", metavar="VERSION", help="Check against this version, latest, or all.")
    ] = "latest",
    schema_type: TypeOption = None,
    references: References = None,
    registry: SchemaRegistryUrl = None,
    cluster_dir: ClusterDir = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    json_output: Json = False,
) -> None:
    """Would the subject accept this schema? Exit 0 when it is compatible, 6 when not (with the
    reasons). Checked at the subject's compatibility level."""
    text, kind = _read_schema(file, schema_type)
    registry_client = client(registry, cluster_dir, timeout)
    refs = _references(references)
    target = None if version == "all" else version
    answer = call(lambda: registry_client.check(subject, target, text, kind, True, refs))
    if json_output:
        console.print_json(answer)
    elif answer["is_compatible"]:
        console.info(f"compatible with {subject} version {version}")
    if not answer["is_compatible"]:
        reasons = "; ".join(answer.get("messages", []))
        raise KctlError(f"incompatible with {subject} version {version}: {reasons}", ExitCode.CONFLICT)


@app.command()
def delete(
    subject: Subject,
    version: Annotated[
        str | None, typer.Argument(metavar="[VERSION]", help="Only this version (a number or latest).")
    ] = None,
    permanent: Annotated[
        bool,
        typer.Option(
            "--permanent",
            help="Remove for good what was soft-deleted before (ids are freed, records tombstoned).",
        ),
    ] = False,
    registry: SchemaRegistryUrl = None,
    cluster_dir: ClusterDir = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    json_output: Json = False,
) -> None:
    """Delete a subject or one version: softly (still readable by id, so records written with it
    can be read), or --permanent after a soft delete."""
    registry_client = client(registry, cluster_dir, timeout)
    if version is None:
        deleted: list[int] = call(lambda: registry_client.delete_subject(subject, permanent))
    else:
        deleted = [call(lambda: registry_client.delete_version(subject, version, permanent))]
    if json_output:
        console.print_json({"subject": subject, "versions": deleted, "permanent": permanent})
    else:
        how = "permanently deleted" if permanent else "deleted"
        console.info(f"{how} {subject} version(s) {', '.join(map(str, deleted))}")


class Level(str, Enum):
    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"
    NONE = "NONE"


@app.command()
def config(
    subject: Annotated[
        str | None, typer.Argument(metavar="[SUBJECT]", help="The subject; the global level without one.")
    ] = None,
    level: Annotated[
        Level | None,
        typer.Option("--set", case_sensitive=False, show_default=False, help="Set the compatibility level."),
    ] = None,
    unset: Annotated[
        bool, typer.Option("--delete", help="Drop the subject's own level: it follows the global one.")
    ] = False,
    registry: SchemaRegistryUrl = None,
    cluster_dir: ClusterDir = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    json_output: Json = False,
) -> None:
    """Show or set the compatibility level, of a subject or the global one (BACKWARD unless set)."""
    registry_client = client(registry, cluster_dir, timeout)
    if level is not None and unset:
        raise KctlError("--set and --delete exclude each other", ExitCode.USAGE)
    if level is not None:
        call(lambda: registry_client.set_config(level.value, subject))
    elif unset:
        call(lambda: registry_client.delete_config(subject))
    answer = call(lambda: registry_client.config(subject, default_to_global=True))
    current = answer.get("compatibilityLevel") or answer.get("compatibility")
    if json_output:
        console.print_json({"subject": subject, "compatibility": current})
    else:
        print(current)
