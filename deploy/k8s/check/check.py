"""Checks deploy/k8s's built manifests offline, beyond their schemas: each document from
`kubectl kustomize` (read on stdin) that kubernetes-validate has no schema for is held to one of
ours (a CloudNativePG Cluster to cnpg-cluster.schema.json), any other unknown kind fails; the
shards' Indexed Job runs exactly SHARDS pods at once (completions = parallelism = SHARDS in the
hookbench-run ConfigMap), so that no shard is missing or late by design; and every ConfigMap or
Secret a pod reads is in the build or is one the docs say who makes (run.sh, the user, or
CloudNativePG when the build has its Cluster), so that no pod waits for a name nobody creates.

    kubectl kustomize deploy/k8s/overlays/cnpg | python3 deploy/k8s/check/check.py
"""

import json
import pathlib
import sys

import jsonschema
import yaml

HERE = pathlib.Path(__file__).parent
OURS = {("postgresql.cnpg.io/v1", "Cluster"): HERE / "cnpg-cluster.schema.json"}
CORE = ("v1", "apps/v1", "batch/v1")
# Made outside the build, and by whom (docs/scale.md).
MADE_ELSEWHERE = {
    ("ConfigMap", "hookbench-start"): "run.sh",
    ("Secret", "hookbench-webhook"): "run.sh",
    ("Secret", "hookbench-observe"): "the user (overlays/audit)",
}


def references(doc):
    """(kind, name) of every ConfigMap and Secret a pod template of `doc` needs. A reference
    marked `optional: true` (the shard key: sealing is the user's choice) needs nothing."""
    spec = doc.get("spec", {}).get("template", {}).get("spec", {})
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        for env in c.get("env", []):
            source = env.get("valueFrom", {})
            if any(ref.get("optional") for ref in source.values() if isinstance(ref, dict)):
                continue
            if "configMapKeyRef" in source:
                yield ("ConfigMap", source["configMapKeyRef"]["name"])
            if "secretKeyRef" in source:
                yield ("Secret", source["secretKeyRef"]["name"])


def main() -> int:
    docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
    failures = []
    for doc in docs:
        key = (doc.get("apiVersion"), doc.get("kind"))
        if key in OURS:
            schema = json.loads(OURS[key].read_text())
            for error in jsonschema.Draft202012Validator(schema).iter_errors(doc):
                path = "/".join(str(p) for p in error.absolute_path)
                failures.append(f"{key[1]} {doc['metadata'].get('name')}: {path}: {error.message}")
        elif key[0] not in CORE:
            failures.append(f"{key[1]} ({key[0]}): no schema to check it against")
    run = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("hookbench-run"))
    shards = int(run["data"]["SHARDS"])
    job = next(d for d in docs if d["kind"] == "Job" and d["metadata"]["name"] == "hookbench-shards")
    spec = job["spec"]
    if spec.get("completionMode") != "Indexed":
        failures.append("Job hookbench-shards: completionMode must be Indexed (each pod reads its index)")
    if (spec.get("completions"), spec.get("parallelism")) != (shards, shards):
        failures.append(
            f"Job hookbench-shards: completions {spec.get('completions')} and parallelism "
            f"{spec.get('parallelism')} must both equal SHARDS={shards}"
        )
    built = {(d["kind"], d["metadata"]["name"]) for d in docs}
    elsewhere = dict(MADE_ELSEWHERE)
    if any(d.get("kind") == "Cluster" for d in docs):
        elsewhere[("Secret", "hookbench-pg-app")] = "CloudNativePG"
    for doc in docs:
        for ref in sorted(set(references(doc))):
            if ref not in built and ref not in elsewhere:
                failures.append(f"{doc['kind']} {doc['metadata']['name']} reads {ref[0]} {ref[1]}, which nothing makes")
    for f in failures:
        print(f"deploy/k8s: {f}", file=sys.stderr)
    print(f"deploy/k8s: {len(docs)} resources checked, {len(failures)} problem(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
