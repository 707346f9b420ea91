// `npm run project -- --topology`: the matrix, the placement and per-link load, as a user runs it.
import { describe, expect, it } from 'vitest';
import { parseProjectArgs } from '../../../scripts/project/project-args.ts';
import { runCli } from './run-cli.ts';

const run = (...args: string[]) => runCli('scripts/project/project.ts', ...args);

describe('project --topology', () => {
  it('takes --placement and --topo-file as implying --topology', () => {
    expect(parseProjectArgs([]).topology).toBe(false);
    const a = parseProjectArgs(['--placement', 'tp-sockets']);
    expect([a.topology, a.placement]).toEqual([true, 'tp-sockets']);
    expect(parseProjectArgs(['--topo-file', 'x.txt']).topoFile).toBe('x.txt');
  });

  it("prints the seeds' box matrix, the TP rings across sockets sharing one link, and the link loads", async () => {
    const r = await run('--topology', '--tp', '2', '--placement', 'tp-sockets');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^GPU0\t X \tPIX\tPHB\tPHB\tSYS\tSYS\tSYS\tSYS/m);
    expect(r.stdout).toMatch(/TP\s+4\s+2\s+GPU0→GPU4 SYS ×4\s+1\.90\s+3/);
    expect(r.stdout).toMatch(/link load per step/);
    expect(r.stdout).toMatch(/^CPU0 → CPU1 \(measured on the box\)\s+7\.60\s+1342\.2/m);
  }, 60_000);

  it('prints the same as JSON: the placed links, the volumes and every link load', async () => {
    const r = await run('--topology', '--json', '--tp', '2', '--placement', 'tp-sockets');
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout) as {
      nodes: number;
      rows: { tp: number; links: { tp: { busGBps: number } }; loads: { link: { id: string } }[] }[];
    };
    expect(j.nodes).toBe(1);
    expect(j.rows[0]!.tp).toBe(2);
    expect(j.rows[0]!.links.tp.busGBps).toBeCloseTo(1.9, 9);
    expect(j.rows[0]!.loads.map((l) => l.link.id)).toContain('n0:smp:0>1');
  }, 60_000);

  it('reads a pasted nvidia-smi topo -m and says what is wrong with a bad one', async () => {
    const ok = await run('--topo-file', 'tests/fixtures/topo/quda-669-pix-pxb-sys.txt', '--tp', '8');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/tests\/fixtures\/topo\/quda-669-pix-pxb-sys\.txt: 8 GPUs, 1 NICs, 2 sockets/);
    const bad = await run('--topo-file', 'package.json', '--tp', '2');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/no header line with a GPU0 column/);
    const wrong = await run('--placement', 'custom:0,1', '--tp', '2');
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/list each of the node's 8 GPUs/);
  }, 180_000); // three CLI runs
});
