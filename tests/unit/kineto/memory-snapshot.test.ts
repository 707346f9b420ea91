import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { memoryHistory, readMemorySnapshot } from '../../../src/kineto/memory-snapshot.ts';
import { jobBundle } from '../../../src/megatron/job-bundle.ts';
import { jobManifestFile, manifestProjection, readJobManifest } from '../../../src/megatron/job-manifest.ts';
import { memorySnapshotScript, memorySnapshotScriptName } from '../../../src/megatron/memory-snapshot-script.ts';
import { projectStep } from '../../../src/projection/step/cluster-projection.ts';
import { memoryVsProjected, stageOfRank } from '../../../src/projection/studies/memory-vs-projected.ts';
import { runCli } from '../cli/run-cli.ts';
import { twoNodeJobSpec } from './kineto-fixtures.ts';

const MiB = 2 ** 20;
const KiB = 2 ** 10;

/**
 * A pickle in the format torch.cuda.memory._snapshot() returns (torch/cuda/memory.py, its
 * docstring: Segment, Block, Frame, TraceEntry with every documented field, pool ids as tuples,
 * stack frames on every event), written by Python's pickle as torch writes it; then converted by the
 * bundle's script. Times in µs since the epoch (PyTorch ≥ 2.1's time_us).
 */
function convert(events: string, segments: string, rank = 7): unknown {
  const dir = mkdtempSync(join(tmpdir(), 'snapshot-'));
  const script = join(dir, memorySnapshotScriptName);
  writeFileSync(script, memorySnapshotScript);
  const pickle = join(dir, 'snapshot.pickle');
  const make = `
import pickle
frame = [{"filename": "megatron/core/transformer/mlp.py", "line": 120, "name": "forward"}]
def ev(action, addr, size, t):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": 1_700_000_000_000_000 + t,
            "frames": frame, "pool_id": (0, 0)}
def block(addr, size, state):
    return {"address": addr, "size": size, "requested_size": size, "state": state, "frames": frame}
def seg(addr, total, allocated, blocks):
    return {"address": addr, "total_size": total, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
            "allocated_size": allocated, "active_size": allocated, "blocks": blocks}
snap = {"segments": ${segments}, "device_traces": [${events}], "allocator_settings": {}}
with open(${JSON.stringify(pickle)}, "wb") as f:
    pickle.dump(snap, f)
`;
  execFileSync('python3', ['-c', make]);
  const out = join(dir, 'snapshot.json');
  execFileSync('python3', [script, pickle, '--rank', String(rank), '-o', out]);
  return JSON.parse(readFileSync(out, 'utf8'));
}

// One 2 MiB segment; A (1 MiB) and B (512 KiB) allocated, A freed (requested, then completed), C (256 KiB) allocated.
const mib = 1024 * 1024;
const events = `[ev("segment_alloc", 0, 2*${mib}, 0), ev("alloc", 0, ${mib}, 10), ev("alloc", ${mib}, ${mib}//2, 20),
  ev("free_requested", 0, ${mib}, 30), ev("free_completed", 0, ${mib}, 40), ev("alloc", 0, ${mib}//4, 50)]`;
const segments = `[seg(0, 2*${mib}, ${mib}//2 + ${mib}//4, [block(0, ${mib}//4, "active_allocated"), block(${mib}, ${mib}//2, "active_allocated")])]`;

describe('PyTorch memory snapshots (torch.cuda.memory._snapshot format)', () => {
  test('the bundle script converts a real-format pickle; allocated and reserved over the events, peaks and the cache at the peak', () => {
    const json = convert(events, segments);
    const s = readMemorySnapshot(json, 'snapshot.json');
    expect(s.rank).toBe(7);
    const h = memoryHistory(s);
    expect(h.timed).toBe(true);
    expect(h.at).toEqual([0, 0.01, 0.02, 0.03, 0.04, 0.05]);
    expect(h.allocated).toEqual([0, MiB, 1.5 * MiB, 1.5 * MiB, 0.5 * MiB, 0.75 * MiB]);
    expect(h.reserved).toEqual([2, 2, 2, 2, 2, 2].map((x) => x * MiB));
    expect([h.startAllocated, h.startReserved]).toEqual([0, 0]);
    expect(h.peakAllocated).toBe(1.5 * MiB);
    expect(h.peakReserved).toBe(2 * MiB);
    // The peak of reserved is first reached by the segment's own allocation, before any tensor.
    expect(h.cachedAtPeakReserved).toBe(2 * MiB);
  });

  test('a history that starts mid-run (the ring buffer dropped the oldest events) gets its start level from the segments', () => {
    // The first kept event frees 256 KiB allocated before the history begins; 768 KiB stay allocated at the end.
    const late = `[ev("free_requested", 4096, 256*1024, 0), ev("free_completed", 4096, 256*1024, 5), ev("alloc", 0, 512*1024, 9)]`;
    const h = memoryHistory(readMemorySnapshot(convert(late, segments), 'late.json'));
    expect(h.startAllocated).toBe(512 * KiB);
    expect(h.allocated).toEqual([512 * KiB, 256 * KiB, 768 * KiB]);
    expect(h.peakAllocated).toBe(768 * KiB);
    expect(h.startReserved).toBe(2 * MiB);
  });

  test('bad input is named with what to do', () => {
    expect(() => readMemorySnapshot({ traceEvents: [] }, 'rank-0.json')).toThrow(
      /rank-0\.json: not a PyTorch memory snapshot .*memory_snapshot_json\.py/,
    );
    expect(() => readMemorySnapshot({ segments: [], device_traces: [[]] }, 's.json')).toThrow(
      /s\.json: the snapshot has no allocator history .*--record-memory-history/,
    );
    expect(() =>
      readMemorySnapshot({ segments: [], device_traces: [[{ action: 'resize', size: 1 }]] }, 's.json'),
    ).toThrow(/device_traces\[0\]\[0\]: unknown action "resize"/);
    expect(() =>
      readMemorySnapshot({ segments: [{ total_size: -1, allocated_size: 0 }], device_traces: [[]] }, 's.json'),
    ).toThrow(/segments\[0\]: "total_size" must be a byte count ≥ 0, got -1/);
    // Segments empty but the history frees what it never allocated: the two are of different moments.
    const s = readMemorySnapshot(
      { segments: [], device_traces: [[{ action: 'alloc', size: 10, stream: 0 }]] },
      'x.json',
    );
    expect(() => memoryHistory(s)).toThrow(/x\.json: the events free more than .*-10 B allocated/);
  });

  test('the script refuses a pickle that is not a snapshot, naming it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'snapshot-'));
    const script = join(dir, memorySnapshotScriptName);
    writeFileSync(script, memorySnapshotScript);
    const pickle = join(dir, 'other.pickle');
    execFileSync('python3', ['-c', `import pickle; pickle.dump([1, 2], open(${JSON.stringify(pickle)}, "wb"))`]);
    expect(() => execFileSync('python3', [script, pickle], { stdio: 'pipe' })).toThrow(
      /other\.pickle: not a torch\.cuda\.memory\._snapshot\(\) pickle/,
    );
  });

  test("beside the projection: the rank's stage, the classes predicted, the peaks measured, the unmodelled lines; and through npm run trace", async () => {
    // The two-node job of the Kineto tests (16 GPUs); its last rank wrote the snapshot, as Megatron does.
    const manifestText = jobBundle(twoNodeJobSpec).find((f) => f.path === jobManifestFile)!.text;
    const manifest = readJobManifest(manifestText, jobManifestFile);
    const { parsed, system } = manifestProjection(manifest);
    const projection = await projectStep(parsed.setup, { system, dtype: parsed.dtype });
    const gpus = manifest.nodes * manifest.gpusPerNode;
    expect(stageOfRank(gpus - 1, gpus, 1)).toBe(0);
    expect(stageOfRank(11, 16, 4)).toBe(2);
    expect(() => stageOfRank(16, 16, 4)).toThrow(/rank 16 is not one of the job's 16 ranks/);
    const json = convert(events, segments, gpus - 1);
    const h = memoryHistory(readMemorySnapshot(json, 'snapshot.json'));
    const c = memoryVsProjected(h, projection, gpus - 1, gpus);
    const peak = c.lines.find((l) => l.what === 'peak allocated')!;
    expect(peak.predictedBytes).toBe(projection.stageMemory[0]!.peakBytes);
    expect(peak.measuredBytes).toBe(1.5 * MiB);
    expect(c.ratio).toBeCloseTo((1.5 * MiB) / projection.stageMemory[0]!.peakBytes, 12);
    // The classes add up to the projected peak; the cache line is measured only.
    const classes = c.lines.filter((l) => l.note === 'at the projected peak');
    expect(classes.reduce((a, l) => a + l.predictedBytes!, 0)).toBeCloseTo(peak.predictedBytes!, 0);
    expect(c.lines.find((l) => l.what.startsWith('allocator cache'))).toMatchObject({ measuredBytes: 2 * MiB });
    expect(c.lines.find((l) => l.what.startsWith('CUDA context'))?.measuredBytes).toBeUndefined();

    const dir = mkdtempSync(join(tmpdir(), 'snapshot-cli-'));
    writeFileSync(join(dir, 'snapshot.json'), JSON.stringify(json));
    writeFileSync(join(dir, jobManifestFile), manifestText);
    const r = await runCli('scripts/trace/trace.ts', '--memory', join(dir, 'snapshot.json'), '--job', dir);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/\(rank 15\): 6 allocator events over 0\.1 ms, device 0/);
    expect(r.stdout).toMatch(/rank 15 holds pipeline stage 0; measured peak allocated \/ projected peak = /);
    expect(r.stdout).toMatch(/^peak allocated\s+\S+ \S+\s+1\.5 MiB/m);
    const bad = await runCli('scripts/trace/trace.ts', '--memory', join(dir, jobManifestFile));
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/not a PyTorch memory snapshot/);
  }, 60_000);
});
