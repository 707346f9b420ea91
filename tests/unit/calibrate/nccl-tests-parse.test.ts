// The nccl-tests parser on outputs pasted in public threads (tests/fixtures/nccl-tests/README.md).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ringTerms } from '../../../src/calibrate/collective-fit.ts';
import { opFromFileName, parseNcclTests, type NcclTestRun } from '../../../src/calibrate/nccl-tests-parse.ts';

const fixture = (name: string): string => readFileSync(`tests/fixtures/nccl-tests/${name}`, 'utf8');
const parse = (name: string, op = opFromFileName(name)): NcclTestRun[] =>
  parseNcclTests(fixture(name), { source: name, ...(op && { op }) });

/**
 * nccl-tests' own columns, re-derived from size and time: algbw = S/T (GB/s, S in B, T in µs:
 * S/(T·1e3)) and busbw = algbw × the bus factor of doc/PERFORMANCE.md (ringTerms' factor). The
 * tool prints time with 4 significant digits and bandwidths with 2 decimals: 0.1% of the value or
 * 0.011 GB/s absolute covers the rounding. A column read into the wrong field fails this.
 */
function expectColumnsConsistent(run: NcclTestRun): void {
  const f = ringTerms(run.op, run.ranks!).factor;
  for (const r of run.rows)
    for (const t of [r.outOfPlace, r.inPlace]) {
      if (!t || r.bytes === 0) continue;
      const alg = r.bytes / (t.timeUs * 1e3);
      expect(Math.abs(t.algGBps - alg)).toBeLessThanOrEqual(Math.max(0.011, 1e-3 * alg));
      expect(Math.abs(t.busGBps - t.algGBps * f)).toBeLessThanOrEqual(Math.max(0.011, 1e-3 * t.busGBps));
    }
}

describe('parseNcclTests on pasted outputs', () => {
  it('all_gather_perf -g 2 (nccl#1435): the command gives the collective and 2 ranks; 7 rows, both timings', () => {
    const [run] = parse('nccl-1435-all-gather-2gpu.txt');
    expect(run!.op).toBe('allGather');
    expect(run!.ranks).toBe(2);
    expect(run!.hosts).toEqual([]);
    expect(run!.rows).toHaveLength(7);
    expect(run!.rows[0]).toEqual({
      bytes: 16777216,
      count: 4194304,
      type: 'bfloat16',
      outOfPlace: { timeUs: 108.8, algGBps: 154.2, busGBps: 77.1 },
      inPlace: { timeUs: 98.19, algGBps: 170.86, busGBps: 85.43 },
    });
    expect(run!.rows.at(-1)!.bytes).toBe(117440512);
    expectColumnsConsistent(run!);
  });

  it('sendrecv_perf on two hosts (nccl-tests#214): Rank lines give ranks, hosts and devices; in-place #wrong N/A reads', () => {
    const [run] = parse('nccl-tests-214-sendrecv-2node.txt');
    expect(run!.op).toBe('sendRecv');
    expect(run!.ranks).toBe(2);
    expect(run!.hosts).toEqual(['gpu23', 'gpu24']);
    expect(run!.devices).toEqual(['NVIDIA A40', 'NVIDIA A40']);
    expect(run!.rows.map((r) => r.bytes)).toEqual([256, 512, 1024, 2048, 4096]);
    expect(run!.rows[1]!.inPlace!.timeUs).toBe(34.15);
    expect(run!.line).toBe(10);
    expectColumnsConsistent(run!);
  });

  it('mpirun -np 2 … all_reduce_perf -n 10 -g 1 (nccl-tests#232): ranks = np × g, the binary’s -n (iterations) ignored', () => {
    const [run] = parse('nccl-tests-232-all-reduce-2node.txt');
    expect(run!.op).toBe('allReduce');
    expect(run!.ranks).toBe(2);
    expect(run!.rows).toHaveLength(5);
    expectColumnsConsistent(run!);
  });

  it('nccl-tests 2.20 (dgx-spark-playbooks#103): the starting line names the collective; bus ids [000f:01:00]; two hosts', () => {
    const [run] = parse('dgx-spark-103-all-reduce-2node.txt');
    expect(run!.op).toBe('allReduce');
    expect(run!.ranks).toBe(2);
    expect(run!.hosts).toEqual(['spark-d708', 'spark-dbf4']);
    expect(run!.devices).toEqual(['NVIDIA GB10', 'NVIDIA GB10']);
    expect(run!.rows.map((r) => r.outOfPlace.timeUs)).toEqual([35.15, 31.67, 39.56, 67.93]);
    expectColumnsConsistent(run!);
  });

  it('a table alone (nccl-tests#128): the collective from the file name, ranks unknown, zero-byte rows kept', () => {
    const [run] = parse('nccl-tests-128-reduce-scatter-2x4.txt');
    expect(run!.op).toBe('reduceScatter');
    expect(run!.ranks).toBeUndefined();
    expect(run!.rows.filter((r) => r.bytes === 0)).toHaveLength(5);
    expect(run!.rows.at(-1)!.outOfPlace.timeUs).toBe(24.01);
  });

  it('the 2019 layout without redop and root (nccl#340) reads once the collective is named', () => {
    expect(() => parse('nccl-340-old-format.txt')).toThrow(
      /nccl-340-old-format.txt: line 1: which collective is this table\? Paste the command line/,
    );
    // The thread ran the binaries in nccl-tests' order; this table's columns are a 2-rank all-gather's
    // under that era's convention (nccl-tests#45: size is the whole output, count per rank, and
    // algbw = busbw = S/T·(n−1)/n), which the check below confirms row by row.
    const [run] = parseNcclTests(fixture('nccl-340-old-format.txt'), { op: 'allGather', ranks: 2 });
    expect(run!.rows).toHaveLength(12);
    expect(run!.rows[6]!.outOfPlace).toEqual({ timeUs: 120.1, algGBps: 17.46, busGBps: 17.46 });
    expect(run!.avgBusGBps).toBe(6.6972);
    for (const r of run!.rows) {
      expect(r.bytes).toBe(2 * 4 * r.count);
      const alg = (r.bytes / (r.outOfPlace.timeUs * 1e3)) * (1 / 2);
      expect(Math.abs(r.outOfPlace.algGBps - alg)).toBeLessThanOrEqual(Math.max(0.011, 1e-3 * alg));
      expect(r.outOfPlace.busGBps).toBe(r.outOfPlace.algGBps);
    }
  });

  it('rccl-tests broadcast (rccl#2075): the closing line names the collective; the average bus bandwidth is read', () => {
    const [run] = parseNcclTests(fixture('rccl-2075-broadcast.txt'));
    expect(run!.op).toBe('broadcast');
    expect(run!.ranks).toBeUndefined();
    expect(run!.avgBusGBps).toBe(3.41227);
    expect(run!.rows.at(-1)!.outOfPlace.timeUs).toBe(18781);
  });
});

describe('parseNcclTests variants and bad input', () => {
  const header = [
    '# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0',
    '#  Rank  0 Group  0 Pid   1 on   host-a device  0 [0x8d] NVIDIA H100 80GB HBM3',
    '#  Rank  1 Group  0 Pid   2 on   host-a device  1 [0x91] NVIDIA H100 80GB HBM3',
    '#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong',
  ];
  const row =
    '           8             2     float     sum      -1    10.00    0.00    0.00      0    10.00    0.00    0.00      0';

  it('strips MPI prefixes ([1,0]<stdout>:) and reads a fenced, indented paste', () => {
    const text = ['all_reduce_perf_mpi -b 8 -e 16', ...header, row].map((l) => `[1,0]<stdout>:${l}`).join('\n');
    const [run] = parseNcclTests(`\`\`\`\n${text}\n\`\`\``);
    expect(run!.op).toBe('allReduce');
    expect(run!.ranks).toBe(2);
    expect(run!.hosts).toEqual(['host-a', 'host-a']);
  });

  it('cuts a log of two binaries into two runs, each named by its own command', () => {
    const text = ['./all_gather_perf -g 2', ...header, row, './reduce_scatter_perf -g 2', ...header, row].join('\n');
    expect(parseNcclTests(text).map((r) => r.op)).toEqual(['allGather', 'reduceScatter']);
  });

  it('names the line and the field of a row that does not read', () => {
    const bad = row.replace('10.00    0.00    0.00      0    10.00', 'abc    0.00    0.00      0    10.00');
    expect(() => parseNcclTests(['./all_reduce_perf -g 2', ...header, bad].join('\n'), { source: 'x.log' })).toThrow(
      /x.log: line 6: time, algbw and busbw must be numbers, got abc 0.00 0.00/,
    );
  });

  it('says what to paste when there is no table, and what went wrong when every process ran alone', () => {
    expect(() => parseNcclTests('NCCL INFO Bootstrap : Using eth0', { source: 'empty.txt' })).toThrow(
      /empty.txt: no nccl-tests table found: paste the output of all_reduce_perf/,
    );
    // nccl-tests#107's shape: two headers, rank 0 on each host, one table.
    const lone = [header[0], header[0], header[1], header[1]!.replace('host-a', 'host-b'), header[3], row].join('\n');
    expect(() => parseNcclTests(`./all_reduce_perf -g 1\n${lone}`)).toThrow(
      /repeat rank 0: every process ran alone .* make MPI=1/,
    );
  });

  it('reads the collective from file names with _ or -', () => {
    expect(opFromFileName('logs/all_reduce_perf.log')).toBe('allReduce');
    expect(opFromFileName('h100-all-gather-8.txt')).toBe('allGather');
    expect(opFromFileName('alltoall.out')).toBe('allToAll');
    expect(opFromFileName('notes.txt')).toBeUndefined();
  });
});
