#!/bin/sh
# The foreign engine: spoc sim serve standing in for vLLM, with the cost
# model SPOC_FOREIGN_ARGS names (e.g. "--gpu H100-SXM" or "--throttle 0:0.5"),
# which the plan's configuration does not know. SPOC_BIN is the spoc binary.
model=$1 port=$2
shift 2
# shellcheck disable=SC2086
exec "${SPOC_BIN:-spoc}" sim serve --vllm-faithful "$model" --port "$port" $SPOC_FOREIGN_ARGS "$@"
