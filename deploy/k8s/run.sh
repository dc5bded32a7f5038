#!/usr/bin/env bash
# A sharded hookbench run on the cluster of the current kubectl context (docs/scale.md):
#
#   deploy/k8s/run.sh [statefulset|cnpg]
#
# 1. removes the previous run's receivers, database and Jobs (each run needs an empty database;
#    the reports volume is kept), 2. creates the webhook secret once, 3. sets the run's name and
#    the shards' common start time (now + LEAD seconds, default 120: time for Postgres and the
#    receivers to come up), 4. applies the overlay, 5. waits for the shards and the merge, prints
#    the merged table, and copies the report to ./reports/k8s-RUN/ through a short-lived pod.
# The image (IMAGE, default hookbench:local) must be in the cluster: `kind load docker-image`.
set -euo pipefail
cd "$(dirname "$0")"
overlay=${1:-statefulset}
lead=${LEAD:-120}
image=${IMAGE:-hookbench:local}
[ -d "overlays/$overlay" ] || { echo "run.sh: no overlay '$overlay' (statefulset or cnpg)" >&2; exit 2; }
run=k8s-$(date -u +%Y%m%dT%H%M%SZ)
start_at=$(date -u -d "+${lead} seconds" +%Y-%m-%dT%H:%M:%SZ)

echo "run.sh: removing the previous run (the reports volume stays)"
kubectl delete job hookbench-shards hookbench-merge --ignore-not-found
kubectl delete deployment hookbench-receiver --ignore-not-found
kubectl delete statefulset hookbench-pg --ignore-not-found
kubectl delete pvc data-hookbench-pg-0 --ignore-not-found
kubectl delete clusters.postgresql.cnpg.io hookbench-pg --ignore-not-found 2>/dev/null || true

if ! kubectl get secret hookbench-webhook >/dev/null 2>&1; then
  kubectl create secret generic hookbench-webhook \
    --from-literal=HOOKBENCH_SECRET="whsec_$(head -c 24 /dev/urandom | base64)"
fi
kubectl create configmap hookbench-start --from-literal=START_AT="$start_at" --from-literal=RUN="$run" \
  --dry-run=client -o yaml | kubectl apply -f -
echo "run.sh: run $run, shards start at $start_at"
kubectl apply -k "overlays/$overlay"

# Waits until Job $1 completes or fails; fails with it.
finished() {
  local state
  while true; do
    state=$(kubectl get job "$1" -o jsonpath='{.status.conditions[*].type}')
    case "$state" in
      *Complete*) return 0 ;;
      *Failed*) echo "run.sh: job $1 failed; kubectl logs job/$1 says why" >&2; return 1 ;;
    esac
    sleep 5
  done
}
finished hookbench-shards
merged=0
finished hookbench-merge || merged=$?
kubectl logs job/hookbench-merge

overrides=$(cat <<JSON
{"spec":{"containers":[{"name":"fetch","image":"$image","command":["sleep","600"],
 "volumeMounts":[{"name":"reports","mountPath":"/reports"}]}],
 "volumes":[{"name":"reports","persistentVolumeClaim":{"claimName":"hookbench-reports"}}]}}
JSON
)
kubectl run hookbench-fetch --image="$image" --restart=Never --overrides="$overrides"
kubectl wait --for=condition=Ready pod/hookbench-fetch --timeout=5m
mkdir -p ../../reports
kubectl cp "hookbench-fetch:/reports/$run" "../../reports/$run"
kubectl delete pod hookbench-fetch --wait=false
echo "run.sh: report in reports/$run/merged/"
exit "$merged"
