#!/usr/bin/env bash
# On a Linux x86-64 machine with a GPU and no network, from the repository root, with .device/ made
# by `npm run device:pack` beside the sources: unpacks Node and the packages, brings the Vulkan
# loader where the system has none, and runs `bench:comm -- --node` on the machine's Vulkan adapter.
# Arguments are bench:comm's (default: t = 2, 4, 8 all-reduce, reduce-scatter and all-gather of
# 64 KiB, 1 MiB and 16 MiB, host and GPU data, results new and into out). Output: stdout, and
# $OUT/bench-comm.txt and $OUT/bench-comm.json where OUT is set.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f .device/node.xz ] && [ -f .device/node_modules.tar.xz ] || {
  echo "device-bench: .device/ is missing or incomplete: run npm run device:pack here first, and carry .device." >&2
  exit 1
}
bin=/tmp/tp-device/bin
mkdir -p "$bin"
# python3's lzma and tarfile: the image may have no xz.
python3 - <<'PY'
import lzma, os, shutil, tarfile
with lzma.open('.device/node.xz') as src, open('/tmp/tp-device/bin/node', 'wb') as dst:
    shutil.copyfileobj(src, dst)
os.chmod('/tmp/tp-device/bin/node', 0o755)
if not os.path.isdir('node_modules/tsx'):
    os.makedirs('node_modules', exist_ok=True)
    with tarfile.open('.device/node_modules.tar.xz', 'r:xz') as t:
        t.extractall('node_modules')
PY
export PATH="$bin:$PATH"
if ! ldconfig -p | grep -q 'libvulkan\.so\.1'; then
  if ls .device/gl/*.deb >/dev/null 2>&1 && [ -d /usr/local/nvidia ]; then
    for f in .device/gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
  else
    echo "device-bench: no Vulkan loader on this system; Dawn falls back to Chromium's SwiftShader where installed." >&2
  fi
fi
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && export VK_DRIVER_FILES="${VK_DRIVER_FILES:-$icd}"
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--t 2,4,8 --sizes 64K,1M,16M --ops allReduce,reduceScatter,allGather --device gpu,cpu --results new,out)
node --version
run() { node node_modules/tsx/dist/cli.mjs scripts/bench-comm.ts --node "$@"; }
if [ -n "${OUT:-}" ]; then
  run "${args[@]}" --save "$OUT/bench-comm.json" 2>&1 | tee "$OUT/bench-comm.txt"
else
  run "${args[@]}"
fi
