#!/usr/bin/env bash
# Builds the fleet tests' clustered MQTT 5 broker (tests/fleet/broker: rmqtt with raft
# clustering, shared subscriptions and retained messages) and prints the binary's path.
#
# Built once per machine into a cache ($COVO_FLEET_BROKER_CACHE, default
# ~/.cache/covo/fleet-broker-<hash of Cargo.toml, Cargo.lock and src>), so a changed broker is
# rebuilt and an unchanged one is not; about 8 minutes the first time on 2 cores. Needs protoc
# (apt-get install protobuf-compiler) and a C/C++ compiler. Fails loudly.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v protoc >/dev/null || { echo "fleet/broker: protoc is missing (apt-get install protobuf-compiler)" >&2; exit 1; }
hash=$(cat "$here/Cargo.toml" "$here/Cargo.lock" "$here"/src/*.rs | sha256sum | cut -c1-12)
cache=${COVO_FLEET_BROKER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/covo/fleet-broker-$hash}
if [ -x "$cache/covo-fleet-broker" ]; then
  echo "$cache/covo-fleet-broker"
  exit 0
fi
echo "fleet/broker: building the clustered broker (rmqtt); minutes, once per machine" >&2
target=${CARGO_TARGET_DIR:-$here/../../../target}/fleet-broker
cargo build --release --locked --quiet --manifest-path "$here/Cargo.toml" --target-dir "$target" >&2 \
  || { echo "fleet/broker: cargo build failed" >&2; exit 1; }
mkdir -p "$cache.tmp"
cp "$target/release/covo-fleet-broker" "$cache.tmp/"
rm -rf "$cache"
mv "$cache.tmp" "$cache"
echo "$cache/covo-fleet-broker"
