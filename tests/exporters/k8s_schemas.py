"""Kubernetes manifests checked offline, as an API server with strict field validation would.

Custom resources (Kueue, Volcano) are checked against their projects' own CRD schemas
(``tests/data/k8s-crds``, see its SOURCES.md) with ``jsonschema``; built-in kinds
(``batch/v1`` Job, ``scheduling.k8s.io/v1`` PriorityClass) against
``kubernetes-validate``'s strict schemas, as its ``validate`` checks them. CRD schemas
leave ``additionalProperties`` open, while the API server drops (or, with strict field
validation, refuses) unknown fields: the check refuses them, so a misspelt field fails
here as it would there. Object names and labels are checked by
Kubernetes' own rules. CEL rules (``x-kubernetes-validations``) are not evaluated.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml
from kubernetes_validate import utils
from referencing import Registry, Resource

CRDS = Path(__file__).resolve().parent.parent / "data" / "k8s-crds"
#: The Kubernetes release whose built-in schemas kubernetes-validate checks against.
KUBERNETES = kubernetes_validate.latest_version()
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_NAMESPACED_NAME_MAX = {"Job": 63}
_QUANTITY = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(([KMGTPE]i)|[numkMGTPE]"
                       r"|[eE][+-]?[0-9]+)?$")


def _quantity_errors(data: Any, path: str = "") -> list[str]:
    """Container limits and requests that are not Kubernetes quantities.

    The built-in schemas type them as strings of format ``quantity``, which
    kubernetes-validate does not check; the API server does.
    """
    errors = []
    if isinstance(data, dict):
        for key, value in data.items():
            if key in ("limits", "requests") and isinstance(value, dict):
                errors += [f"{path}.{key}.{name}: {amount!r} is not a quantity"
                           for name, amount in value.items()
                           if not _QUANTITY.match(str(amount))]
            else:
                errors += _quantity_errors(value, f"{path}.{key}")
    elif isinstance(data, list):
        for k, item in enumerate(data):
            errors += _quantity_errors(item, f"{path}[{k}]")
    return errors


def _closed(schema: Any) -> Any:
    """The schema with unknown fields refused wherever it lists the fields it knows."""
    if isinstance(schema, dict):
        schema = {key: _closed(value) for key, value in schema.items()}
        if ("properties" in schema and "additionalProperties" not in schema
                and not schema.get("x-kubernetes-preserve-unknown-fields")):
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    return schema


@cache
def crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """Each served (apiVersion, kind) of the copied CRDs and its closed schema."""
    schemas = {}
    for path in sorted(CRDS.glob("*/*.yaml")):
        crd = yaml.safe_load(path.read_text())
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            if version.get("served"):
                schemas[(f"{group}/{version['name']}", kind)] = _closed(
                    version["schema"]["openAPIV3Schema"])
    return schemas


def _metadata_errors(manifest: dict[str, Any]) -> list[str]:
    errors = []
    metadata = manifest.get("metadata", {})
    name = metadata.get("name", "")
    limit = _NAMESPACED_NAME_MAX.get(manifest.get("kind", ""), 253)
    if not _DNS_SUBDOMAIN.match(name) or len(name) > limit:
        errors.append(f"metadata.name {name!r} is not a DNS-1123 name of at most {limit}")
    namespace = metadata.get("namespace")
    if namespace is not None and not _DNS_LABEL.match(namespace):
        errors.append(f"metadata.namespace {namespace!r} is not a DNS-1123 label")
    for key, value in metadata.get("labels", {}).items():
        prefix, _, label = key.rpartition("/")
        if (not _LABEL_NAME.match(label) or len(label) > 63
                or (prefix and not _DNS_SUBDOMAIN.match(prefix))):
            errors.append(f"label key {key!r} is not valid")
        if not isinstance(value, str) or not _LABEL_VALUE.match(value) or len(value) > 63:
            errors.append(f"label {key}={value!r}: not a valid label value")
    return errors


def manifest_errors(manifest: dict[str, Any]) -> list[str]:
    """What the API server would refuse in ``manifest``; empty when it takes it."""
    api, kind = manifest.get("apiVersion", ""), manifest.get("kind", "")
    errors = _metadata_errors(manifest) + _quantity_errors(manifest)
    schema = crd_schemas().get((api, kind))
    if schema is not None:
        validator = jsonschema.Draft7Validator(schema)
        errors += [f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
                   for e in validator.iter_errors(manifest)]
        return errors
    builtin = _builtin(api, kind)
    if builtin is None:
        return [*errors, f"no schema for {api} {kind}"]
    errors += [f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
               for e in builtin.iter_errors(manifest)]
    return errors


@cache
def _builtin(api: str, kind: str) -> jsonschema.protocols.Validator | None:
    """kubernetes-validate's strict schema of a built-in kind, as its ``validate`` builds it.

    Built once per kind: ``kubernetes_validate.validate`` reads and resolves the schemas on
    every call (16 ms a manifest), which thousands of manifests notice.
    """
    if "." in api.split("/")[0] and not api.startswith("scheduling.k8s.io/"):
        return None
    version = [v for v in utils.all_versions() if utils.major_minor(v) <= KUBERNETES][-1]
    folder = f"kubernetes-json-schema/v{version}-local-strict"
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api)
    try:
        schema = utils.schema_contents(f"{folder}/{kind.lower()}-{group}.json", KUBERNETES)
    except FileNotFoundError:
        return None
    definitions = utils.schema_contents(f"{folder}/_definitions.json", KUBERNETES)
    registry: Registry = Resource.from_contents(definitions) @ (
        Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


def documents(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    """Every manifest under ``folder`` (multi-document YAML files included), by file."""
    found = []
    for path in sorted(folder.rglob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            found.append((str(path.relative_to(folder)), document))
    return found
