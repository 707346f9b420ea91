// npm run device:pack
// What a Linux x86-64 machine with a GPU and no network needs to run `bench:comm -- --node` on its
// GPU, written into .device/ (git-ignored: a device run carries it, and the tracked sources travel
// with the working tree):
//   node.xz              this Node's binary (Node's own builds link only glibc and libstdc++);
//   node_modules.tar.xz  the packages that run needs: tsx and esbuild (to run the TypeScript),
//                        comlink, and webgpu with its linux-x64 Dawn alone;
//   gl/*.deb             the Vulkan loader and GL vendor libraries (Debian's amd64 packages), for a
//                        machine whose image has none (skipped, with a warning, where apt-get cannot
//                        fetch them).
// scripts/device-bench.sh unpacks them there and runs the benchmark.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

const out = '.device';
const packages = [
  'tsx',
  'esbuild',
  '@esbuild/linux-x64',
  'comlink',
  'webgpu/package.json',
  'webgpu/index.js',
  'webgpu/dist/linux-x64',
];
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

if (process.platform !== 'linux' || process.arch !== 'x64')
  fail(
    `packs for Linux x86-64 (the device machine's) and must run on one; this is ${process.platform}-${process.arch}.`,
  );
for (const p of packages)
  if (!existsSync(join('node_modules', p))) fail(`node_modules/${p} is missing: run npm ci first.`);

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'gl'), { recursive: true });
run('sh', ['-c', `xz -T0 -6 -c "${process.execPath}" > ${out}/node.xz`]);
run('tar', ['-cJf', join('..', out, 'node_modules.tar.xz'), ...packages], { cwd: 'node_modules' });
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

const mib = (f: string): string => `${(statSync(f).size / 2 ** 20).toFixed(1)} MiB`;
const files = ['node.xz', 'node_modules.tar.xz', ...readdirSync(join(out, 'gl')).map((f) => join('gl', f))];
const total = files.reduce((n, f) => n + statSync(join(out, f)).size, 0);
console.log(
  `${out}/ (${(total / 2 ** 20).toFixed(1)} MiB; a device run carries at most 64 MiB with the working tree):`,
);
for (const f of files) console.log(`  ${f}  ${mib(join(out, f))}`);
console.log(
  'Run there: bash scripts/device-bench.sh [bench:comm flags], carrying .device (writes $OUT/bench-comm.txt and .json where OUT is set).',
);
