#!/usr/bin/env bash
# On a Linux x86-64 machine with a GPU and no network, from the repository root, with .device/ made
# by `npm run device:pack` beside the sources: unpacks Node and the packages, brings the Vulkan
# loader where the system has none, and runs the benchmarks in Node through Dawn on the machine's
# Vulkan adapter.
#   bash scripts/device/device-bench.sh                 both, with the defaults below
#   bash scripts/device/device-bench.sh comm [FLAGS]    bench:comm --node (default flags: t = 2, 4, 8;
#                                                all-reduce, reduce-scatter, all-gather; 64 KiB, 1 MiB,
#                                                16 MiB; host and GPU data; results new and out)
#   bash scripts/device/device-bench.sh gemm [FLAGS]    bench:gemm --node (default: --fresh --all-variants)
# Output: stdout, and $OUT/bench-<name>.txt and .json where OUT is set.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f .device/node.xz ] && [ -f .device/node_modules.tar.xz ] || {
  echo "device-bench: .device/ is missing or incomplete: run npm run device:pack here first, and carry .device." >&2
  exit 1
}
comm=(--t 2,4,8 --sizes 64K,1M,16M --ops allReduce,reduceScatter,allGather --device gpu,cpu --results new,out)
gemm=(--fresh --all-variants)
case "${1:-}" in
  comm | gemm)
    benches=("$1")
    shift
    if [ $# -gt 0 ]; then
      if [ "${benches[0]}" = comm ]; then comm=("$@"); else gemm=("$@"); fi
    fi
    ;;
  '' | both) benches=(comm gemm) ;;
  *)
    echo "device-bench: the first argument is comm, gemm or nothing (both), got \"$1\"." >&2
    exit 2
    ;;
esac
bin=/tmp/tp-device/bin
mkdir -p "$bin"
# python3's lzma and tarfile: the image may have no xz.
python3 - <<'PY'
import lzma, os, shutil, tarfile
with lzma.open('.device/node.xz') as src, open('/tmp/tp-device/bin/node', 'wb') as dst:
    shutil.copyfileobj(src, dst)
os.chmod('/tmp/tp-device/bin/node', 0o755)
# Unpacked once per pack: a stamp names the pack the folder holds.
pack = '.device/node_modules.tar.xz'
stamp, st = 'node_modules/.device-pack', os.stat(pack)
made = f'{st.st_size} {st.st_mtime_ns}'
if not (os.path.exists(stamp) and open(stamp).read() == made):
    os.makedirs('node_modules', exist_ok=True)
    with tarfile.open(pack, 'r:xz') as t:
        t.extractall('node_modules')
    open(stamp, 'w').write(made)
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
node --version

bench() { # name, then its flags
  local name=$1
  shift
  local cmd=(node node_modules/tsx/dist/cli.mjs "scripts/bench/bench-$name.ts" --node "$@")
  if [ -n "${OUT:-}" ]; then
    "${cmd[@]}" --save "$OUT/bench-$name.json" 2>&1 | tee "$OUT/bench-$name.txt"
  else
    "${cmd[@]}"
  fi
}
for name in "${benches[@]}"; do
  if [ "$name" = comm ]; then bench comm "${comm[@]}"; else bench gemm "${gemm[@]}"; fi
done
