#!/usr/bin/env bash
# SPOC_CLIENT_COMMAND wrapper: put this client shard in its own throttled
# cgroup (v1 cpu controller), then become `spoc client-shard`.
set -euo pipefail
cg="$CG_ROOT/c34-shard-$SPOC_CLIENT_SHARD"
echo $$ > "$cg/cgroup.procs"
exec "$SPOC" client-shard
