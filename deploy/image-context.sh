#!/usr/bin/env bash
# Prepare the build context of deploy/Containerfile.scratch: an image with no base (and so
# no image registry), holding the armada binary given (debug info stripped) and the shared
# libraries it loads, as `ldd` lists them.
#   deploy/image-context.sh target/debug/armada /tmp/armada-image
#   podman build -f deploy/Containerfile.scratch -t localhost/armada /tmp/armada-image
set -euo pipefail
bin="${1:?usage: image-context.sh ARMADA_BINARY DIR}"
dir="${2:?usage: image-context.sh ARMADA_BINARY DIR}"
rootfs="$dir/rootfs"
rm -rf "$rootfs"
mkdir -p "$rootfs/usr/local/bin" "$rootfs/data" "$rootfs/tmp"
chmod 1777 "$rootfs/tmp"
objcopy --strip-debug "$bin" "$rootfs/usr/local/bin/armada"
for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
done
cp "$(dirname "$0")/Containerfile.scratch" "$dir/Containerfile"
