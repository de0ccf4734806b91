#!/usr/bin/env bash
# Builds the Docker image the Docker executor's tests run, without any registry: a root filesystem assembled from
# this machine (the pinned Node 24 binary and the shared libraries it needs, /bin/sh for FlashBoot's env wrapper),
# the worker SDK source and examples/echo-ts, imported with `docker import`. Prints the image tag.
# The tag carries a hash of the inputs, so an image that is already there is reused and a changed SDK is rebuilt.
#
#   scripts/docker-test-image.sh            build (when missing) and print the tag
set -euo pipefail
cd "$(dirname "$0")/.."

node_bin="$(readlink -f node_modules/node/bin/node 2>/dev/null || true)"
[ -x "$node_bin" ] || node_bin="$(readlink -f "$(command -v node)")"
sh_bin="$(readlink -f /bin/sh)"
inputs=(src/sdk/worker/*.ts examples/echo-ts/worker.ts)
hash="$( (sha256sum "${inputs[@]}" "$0"; "$node_bin" --version; sha256sum "$sh_bin") | sha256sum | cut -c1-12)"
tag="wharf-test-worker:$hash"
if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "$tag"
  exit 0
fi

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/local/bin" "$root/bin" "$root/tmp" "$root/etc" "$root/app/src/sdk/worker" "$root/app/examples/echo-ts"
chmod 1777 "$root/tmp"
cp "$node_bin" "$root/usr/local/bin/node"
cp "$sh_bin" "$root/bin/sh"
# Every library the two binaries load, at the path the dynamic loader looks for it.
for lib in $( (ldd "$node_bin"; ldd "$sh_bin") | grep -oE '/[^ ]+' | sort -u); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
cp src/sdk/worker/*.ts "$root/app/src/sdk/worker/"
cp examples/echo-ts/worker.ts "$root/app/examples/echo-ts/"
echo '{"type":"module"}' >"$root/app/package.json"

tar -C "$root" -c . | docker import \
  -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
  -c 'WORKDIR /app/examples/echo-ts' \
  -c 'CMD ["node", "worker.ts"]' \
  - "$tag" >/dev/null
echo "$tag"
