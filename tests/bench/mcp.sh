#!/usr/bin/env bash
# covo as an MCP server, in one run (issue 16's targets): a `sensor_read` round trip over
# `covo mcp` stdio against the same call through the in-process pipeline (p50 <= 1 ms and
# <= 1.5x), the default `tools/list` in o200k tokens (<= 3,000) and `covo mcp`'s idle RSS.
# PROFILE=dev measures a debug build (labelled as such); the default is the release build.
# N=calls (default 2000).
set -euo pipefail
cd "$(dirname "$0")/../.."
profile=${PROFILE:-release}
echo "== build: $profile"
if [ "$profile" = release ]; then
  cargo build --release -p covo-gateway --bin covo >/dev/null
  bin=${CARGO_TARGET_DIR:-$PWD/target}/release/covo
else
  cargo build -p covo-gateway --bin covo >/dev/null
  bin=${CARGO_TARGET_DIR:-$PWD/target}/debug/covo
fi
COVO_BIN=$bin cargo bench -q -p covo-gateway --bench mcp --profile "$profile" -- "${N:-2000}"
cargo test -q -p covo-tests --test integration prompt_budget::the_default_mcp_tools_list_fits_in_3000_tokens \
  -- --nocapture 2>&1 | grep 'MCP tools/list'
