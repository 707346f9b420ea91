// npm run device:pack
// What a Linux x86-64 machine with a GPU and no network needs to run `bench:comm -- --node` and
// `bench:gemm -- --node` on its GPU, written into .device/ (git-ignored: a device run carries it;
// the tracked sources travel with the working tree):
//   node.xz              this Node's binary (Node's own builds link only glibc and libstdc++);
//   node_modules.tar.xz  the installed packages those runs load, with everything they depend on:
//                        tsx (runs the TypeScript), comlink, webgpu (Dawn; its linux-x64 build
//                        alone) and vite (bench:gemm loads its WGSL through Vite's SSR loader);
//   gl/*.deb             the Vulkan loader and GL vendor libraries (Debian's amd64 packages), for a
//                        machine whose image has none (skipped, with a warning, where apt-get cannot
//                        fetch them).
// scripts/device/device-bench.sh unpacks them there and runs the benchmarks.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

const out = '.device';
const roots = ['tsx', 'comlink', 'webgpu', 'vite'];
const glPackages = ['libvulkan1', 'libegl1', 'libglvnd0', 'libopengl0', 'libgl1', 'libglx0', 'libgles2'];

function fail(message: string): never {
  process.stderr.write(`device:pack: ${message}\n`);
  process.exit(1);
}

/** Runs a command; fails with its stderr unless `soft`, then returns whether it succeeded. */
function run(cmd: string, args: string[], opts: { cwd?: string; soft?: boolean } = {}): boolean {
  const r = spawnSync(cmd, args, { cwd: opts.cwd, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (r.status === 0) return true;
  const why = r.error ? r.error.message : r.stderr.trim().split('\n').slice(-3).join(' / ');
  if (!opts.soft) fail(`${cmd} ${args.join(' ')} failed: ${why}`);
  process.stderr.write(`device:pack: warning: ${cmd} ${args.slice(0, 3).join(' ')} … failed (${why})\n`);
  return false;
}

/**
 * The top-level packages of node_modules that `names` load at run time: them, their dependencies,
 * and the optional dependencies installed here (npm installs only this platform's), transitively.
 * A package's own nested node_modules travels inside its folder.
 */
function runtimeClosure(names: readonly string[]): string[] {
  const found = new Set<string>();
  const todo = names.map((name) => ({ name, optional: false }));
  for (let next = todo.pop(); next; next = todo.pop()) {
    const { name, optional } = next;
    if (found.has(name)) continue;
    const manifest = join('node_modules', name, 'package.json');
    if (!existsSync(manifest)) {
      if (optional) continue;
      fail(`node_modules/${name} is missing: run npm ci first.`);
    }
    found.add(name);
    const p = JSON.parse(readFileSync(manifest, 'utf8')) as Record<string, Record<string, string> | undefined>;
    for (const d of Object.keys(p.dependencies ?? {})) todo.push({ name: d, optional: false });
    for (const d of Object.keys(p.optionalDependencies ?? {})) todo.push({ name: d, optional: true });
  }
  return [...found].sort();
}

if (process.platform !== 'linux' || process.arch !== 'x64')
  fail(
    `packs for Linux x86-64 (the device machine's) and must run on one; this is ${process.platform}-${process.arch}.`,
  );
const packages = runtimeClosure(roots);
// Dawn's builds for other platforms are most of the webgpu package (≈ 110 of 132 MB).
const otherDawns = readdirSync('node_modules/webgpu/dist')
  .filter((d) => d !== 'linux-x64')
  .map((d) => `--exclude=webgpu/dist/${d}`);

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'gl'), { recursive: true });
run('sh', ['-c', `xz -T0 -6 -c "${process.execPath}" > ${out}/node.xz`]);
run('tar', ['-cJf', join('..', out, 'node_modules.tar.xz'), ...otherDawns, ...packages], { cwd: 'node_modules' });
// The device README's way to fetch amd64 packages without touching this machine's apt state.
const lists = join(out, '.apt-lists');
mkdirSync(join(lists, 'partial'), { recursive: true });
const apt = [
  '-oAPT::Architecture=amd64',
  '-oAPT::Architectures=amd64',
  `-oDir::State::Lists=${join(process.cwd(), lists)}`,
];
if (run('apt-get', [...apt, 'update'], { soft: true }))
  run('apt-get', [...apt, 'download', ...glPackages], { cwd: join(out, 'gl'), soft: true });
rmSync(lists, { recursive: true, force: true });

const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const files = ['node.xz', 'node_modules.tar.xz', ...readdirSync(join(out, 'gl')).map((f) => join('gl', f))];
const total = files.reduce((n, f) => n + statSync(join(out, f)).size, 0);
console.log(`${out}/ (${mib(total)}; a device run carries at most 64 MiB with the working tree):`);
for (const f of files) console.log(`  ${f}  ${mib(statSync(join(out, f)).size)}`);
console.log(`  (node_modules.tar.xz: ${packages.length} packages: ${packages.join(', ')})`);
console.log(
  'Run there: bash scripts/device/device-bench.sh [comm|gemm [their flags]], carrying .device (writes $OUT/bench-comm.* and bench-gemm.* where OUT is set).',
);
