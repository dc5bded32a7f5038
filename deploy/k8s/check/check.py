"""Checks deploy/k8s's built manifests offline, beyond their schemas: each document from
`kubectl kustomize` (read on stdin) that kubernetes-validate has no schema for is held to one of
ours (a CloudNativePG Cluster to cnpg-cluster.schema.json), any other unknown kind fails, and the
shards' Indexed Job runs exactly SHARDS pods at once (completions = parallelism = SHARDS in the
hookbench-run ConfigMap), so that no shard is missing or late by design.

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
    for f in failures:
        print(f"deploy/k8s: {f}", file=sys.stderr)
    print(f"deploy/k8s: {len(docs)} resources checked, {len(failures)} problem(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
