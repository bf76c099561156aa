#!/bin/sh
# Waits for the Temporal frontend, creates the namespace porch uses and
# registers porch's search attributes in it (each only when missing), so
# workers and `porch run` work on the first try.
set -eu
address=${TEMPORAL_ADDRESS:?set TEMPORAL_ADDRESS to the frontend host:port}
namespace=${TEMPORAL_NAMESPACE:-default}
retention=${TEMPORAL_RETENTION:-168h}
attempts=60

n=0
until temporal operator cluster health --address "$address" >/dev/null 2>&1; do
  n=$((n + 1))
  if [ "$n" -ge "$attempts" ]; then
    echo "setup-namespace: $address is not healthy after $attempts tries: see the temporal service's log" >&2
    exit 1
  fi
  sleep 2
done

if temporal operator namespace describe --address "$address" -n "$namespace" >/dev/null 2>&1; then
  echo "setup-namespace: namespace $namespace exists"
else
  temporal operator namespace create --address "$address" -n "$namespace" --retention "$retention"
  echo "setup-namespace: namespace $namespace created (retention $retention)"
fi

# porch's search attributes (workflows.SearchAttributes; compose_test.go keeps
# this list in step with it).
existing=$(temporal operator search-attribute list --address "$address" -n "$namespace")
for name in PorchCompute PorchExperiment PorchPipeline PorchRun PorchStatus PorchStep PorchStepType PorchUser; do
  if printf '%s\n' "$existing" | grep -qw "$name"; then
    echo "setup-namespace: search attribute $name exists"
  else
    temporal operator search-attribute create --address "$address" -n "$namespace" --name "$name" --type Keyword
    echo "setup-namespace: search attribute $name created"
  fi
done
