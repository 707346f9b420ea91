// npx tsx scripts/trace/kineto-synth.ts OUT.json[.gz] [--events N] [--rank R]
// Writes a synthetic PyTorch profiler (Kineto) trace of about N events in Kineto's layout, for
// measuring how the import copes with large files: per layer a CPU op with its args, a CUDA
// launch, and (alternately) a GEMM kernel or an NCCL all-reduce that half overlaps the next GEMM.
import { createWriteStream } from 'node:fs';
import { parseArgs } from 'node:util';
import { createGzip } from 'node:zlib';

const { values, positionals } = parseArgs({
  options: { events: { type: 'string', default: '1000000' }, rank: { type: 'string', default: '0' } },
  allowPositionals: true,
});
const out = positionals[0];
const events = Number(values.events);
const rank = Number(values.rank);
if (!out || !(events > 0)) {
  process.stderr.write('usage: npx tsx scripts/trace/kineto-synth.ts OUT.json[.gz] [--events N] [--rank R]\n');
  process.exit(2);
}
const file = createWriteStream(out);
const sink = out.endsWith('.gz') ? createGzip() : null;
if (sink) sink.pipe(file);
const target = sink ?? file;
let pending = '';
const write = async (s: string): Promise<void> => {
  pending += s;
  if (pending.length < 1 << 20) return;
  const ok = target.write(pending);
  pending = '';
  if (!ok) await new Promise<void>((r) => target.once('drain', () => r()));
};

await write(
  `{\n  "schemaVersion": 1,\n  "deviceProperties": [{"id": ${rank}, "name": "NVIDIA H100 80GB HBM3", "numSms": 132}],\n` +
    `  "distributedInfo": {"backend": "nccl", "rank": ${rank}, "world_size": 8, "pg_count": 0, "pg_config": [], "nccl_version": "2.21.5"},\n` +
    `  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": 1759300000000000000,\n  "traceEvents": [`,
);
const gemm =
  'sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas';
const nccl = 'ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)';
let t = 1_000_000;
for (let i = 0, n = 0; n < events; i++, n += 3) {
  const ts = (x: number) => x.toFixed(3);
  const isComm = i % 2 === 1;
  await write(
    `${n ? ',' : ''}\n  {\n    "ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 4242, "tid": 4242,\n    "ts": ${ts(t)}, "dur": 20.000,\n` +
      `    "args": {"External id": ${i}, "Ev Idx": ${i}, "Input Dims": [[4096, 4096], [4096, 2048]], "Input type": ["c10::BFloat16", "c10::BFloat16"], "Input Strides": [[4096, 1], [2048, 1]]}\n  },` +
      `\n  {\n    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242,\n    "ts": ${ts(t + 5)}, "dur": 4.000,\n    "args": {"External id": ${i}, "cbid": 211, "correlation": ${i}}\n  },` +
      `\n  {\n    "ph": "X", "cat": "kernel", "name": "${isComm ? nccl : gemm}", "pid": ${rank}, "tid": ${isComm ? 20 : 7},\n    "ts": ${ts(isComm ? t - 50 : t)}, "dur": 100.000,\n` +
      `    "args": {"External id": ${i}, "queued": 0, "device": ${rank}, "context": 1, "stream": ${isComm ? 20 : 7}, "correlation": ${i}, "registers per thread": 168, "grid": [132, 1, 1], "block": [384, 1, 1]` +
      `${isComm ? ', "Collective name": "allreduce", "In msg nelems": 1048576, "Out msg nelems": 1048576, "Group size": 8, "dtype": "BFloat16"' : ''}}\n  }`,
  );
  if (!isComm) t += 100;
}
await write('\n  ],\n  "traceName": "synthetic"\n}\n');
target.end(pending);
await new Promise<void>((r) => file.once('finish', () => r()));
