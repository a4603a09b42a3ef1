#!/usr/bin/env bash
# Builds and checks the Debian packages (README, "Install on a Raspberry Pi"):
# - covo_<version>-1_arm64.deb from the aarch64 musl build and covo_<version>-1_armhf.deb from
#   the ARMv6 musl build (every 32-bit Raspberry Pi OS, Pi Zero and Pi 1 included), both static
#   and made by tests/cross/build.sh;
# - covo-peer_<version>-1_amd64.deb from `cargo build --release -p covo-peer`, and
#   covo-peer_<version>-1_arm64.deb from its static aarch64 musl build
#   (`tests/cross/build.sh peer-aarch64`). PEER_PROFILE picks another profile for both: CI checks
#   the peer's packaging with `dev` (amd64, the tests' build) and `pkg-check` (arm64), which skip
#   the fat-LTO release builds.
# Each is checked: `dpkg-deb -c` holds what the package promises (the binary, boards/, the
# example /etc/covo/covo.toml as a conffile, the systemd unit, postinst creating the covo user in
# i2c spi gpio dialout), `lintian` reports no error, and `systemd-analyze verify` accepts the
# unit against the package's own files. The .deb files land in $CARGO_TARGET_DIR/debian.
#
# Needs: cargo install cargo-deb; apt-get install -y lintian (systemd-analyze comes with systemd).
# `PACKAGES="arm64 armhf peer peer-arm64"` (the default) picks which to build.
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "package: $*" >&2; exit 1; }
command -v cargo-deb >/dev/null || fail "cargo-deb is missing: cargo install cargo-deb --locked"
command -v lintian >/dev/null || fail "lintian is missing: apt-get install -y lintian"
command -v systemd-analyze >/dev/null || fail "systemd-analyze is missing: apt-get install -y systemd"
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
out=$target_dir/debian
mkdir -p "$out"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)

check() { # deb unit binary_path
  local deb=$1 unit=$2 bin=$3 contents root
  contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
  for want in "./usr/bin/$bin" "./usr/lib/systemd/system/$unit"; do
    grep -qx "$want" <<<"$contents" || fail "$deb lacks $want"
  done
  if [ "$bin" = covo ]; then
    for want in ./etc/covo/covo.toml ./usr/share/covo/boards/rpi3.toml ./usr/share/covo/boards/rpi4.toml ./usr/share/covo/boards/rpi5.toml \
                ./usr/share/covo/boards/rpi-zero2w.toml ./usr/share/doc/covo/config.md; do
      grep -qx "$want" <<<"$contents" || fail "$deb lacks $want"
    done
    grep -qx /etc/covo/covo.toml <<<"$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)" \
      || fail "$deb does not mark /etc/covo/covo.toml as a conffile"
    local postinst; postinst=$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./postinst)
    { grep -q 'adduser --quiet --system --group' <<<"$postinst" && grep -q '"covo gateway" covo$' <<<"$postinst"; } \
      || fail "$deb's postinst creates no covo user"
    grep -q 'for g in i2c spi gpio dialout' <<<"$postinst" || fail "$deb's postinst does not add covo to i2c spi gpio dialout"
    grep -q 'deb-systemd-helper' <<<"$postinst" || fail "$deb's postinst does not register the unit"
  else
    grep -qx ./etc/covo/covo-peer.toml <<<"$contents" || fail "$deb lacks ./etc/covo/covo-peer.toml"
    grep -qx /etc/covo/covo-peer.toml <<<"$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)" \
      || fail "$deb does not mark /etc/covo/covo-peer.toml as a conffile"
  fi
  # Errors fail; warnings are printed. Suppressed: no-manual-page (`covo --help` is the
  # manual) and no-changelog (the history is git's; there is no Debian changelog to drift).
  lintian --fail-on error --suppress-tags no-manual-page,no-changelog "$deb" >&2 \
    || fail "lintian found errors in $deb"
  root=$(mktemp -d)
  dpkg-deb -x "$deb" "$root"
  # Verified against this machine's systemd units, with ExecStart pointing at the package's
  # own binary (verify checks that the command exists and is executable).
  mkdir "$root/verify"
  sed "s|/usr/bin/|$root/usr/bin/|g" "$root/usr/lib/systemd/system/$unit" >"$root/verify/$unit"
  # It exits 0 on unknown keys and bad values ("…, ignoring"), so any output is a failure.
  local said; said=$(systemd-analyze verify "$root/verify/$unit" 2>&1) || fail "systemd-analyze verify rejects $unit: $said"
  [ -z "$said" ] || fail "systemd-analyze verify complains about $unit: $said"
  rm -rf "$root"
  echo "package: $(basename "$deb") ok ($(stat -c %s "$deb") bytes, $(wc -l <<<"$contents") entries)"
}

for p in ${PACKAGES:-arm64 armhf peer peer-arm64}; do
  case $p in
    arm64)
      bin=$(bash tests/cross/build.sh aarch64 | tail -n 1)
      # cargo-deb finds the binary under $CARGO_TARGET_DIR/<triple>/<profile>; it is stripped.
      CARGO_TARGET_DIR=$target_dir/cross cargo deb -p covo-gateway --no-build --no-strip --profile edge \
        --target aarch64-unknown-linux-musl --output "$out/covo_${version}-1_arm64.deb" >&2
      check "$out/covo_${version}-1_arm64.deb" covo.service covo ;;
    armhf)
      bin=$(bash tests/cross/build.sh armv6 | tail -n 1)
      CARGO_TARGET_DIR=$target_dir/cross cargo deb -p covo-gateway --no-build --no-strip --profile edge \
        --target arm-unknown-linux-musleabihf --output "$out/covo_${version}-1_armhf.deb" >&2
      check "$out/covo_${version}-1_armhf.deb" covo.service covo ;;
    peer)
      # PEER_PROFILE=dev packages a debug build (a quick check of the packaging alone).
      cargo build --profile "${PEER_PROFILE:-release}" -p covo-peer >&2
      cargo deb -p covo-peer --no-build --profile "${PEER_PROFILE:-release}" --output "$out/covo-peer_${version}-1_amd64.deb" >&2
      check "$out/covo-peer_${version}-1_amd64.deb" covo-peer.service covo-peer ;;
    peer-arm64)
      bin=$(bash tests/cross/build.sh peer-aarch64 | tail -n 1)
      # Stripped by its profile (release, pkg-check) or not at all: the host's strip cannot
      # read an arm64 binary.
      CARGO_TARGET_DIR=$target_dir/cross cargo deb -p covo-peer --variant arm64 --no-build --no-strip \
        --profile "${PEER_PROFILE:-release}" --target aarch64-unknown-linux-musl \
        --output "$out/covo-peer_${version}-1_arm64.deb" >&2
      check "$out/covo-peer_${version}-1_arm64.deb" covo-peer.service covo-peer ;;
    *) fail "unknown package $p (arm64, armhf, peer or peer-arm64)" ;;
  esac
done
