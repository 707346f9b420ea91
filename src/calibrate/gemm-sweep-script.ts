import { gemmShapeColumns, gemmShapesFile, gemmSweepColumns, gemmSweepFile } from './gemm-sweep.ts';

/** The sweep script's name in the job bundle. */
export const gemmSweepScriptFile = 'gemm_sweep.py';

/**
 * gemm_sweep.py: times every row of gemm-shapes.csv on the current CUDA device with PyTorch and
 * writes gemm-sweep.csv (the columns of gemm-sweep.ts). Per shape: A [batch,M,K] and B [batch,K,N]
 * random in the row's dtype (torch.matmul; fp8 through torch._scaled_mm with unit scales and a
 * bf16 output, as Transformer Engine's fp8 GEMMs write), 10 warm-up calls, then 5 repeats of 20
 * back-to-back calls between two CUDA events; the median repeat / 20 is the row's µs per call, the
 * launch gap included as a training step's stream sees it. A shape the device or PyTorch cannot run
 * is reported on stderr and left out (the projection keeps the model for it).
 */
export function gemmSweepScript(): string {
  return `#!/usr/bin/env python3
# Times the projected job's GEMM shapes (${gemmShapesFile}) on this GPU; writes ${gemmSweepFile}.
# usage: python3 ${gemmSweepScriptFile} [${gemmShapesFile}] [${gemmSweepFile}]
import csv, statistics, sys
import torch

SHAPES = sys.argv[1] if len(sys.argv) > 1 else "${gemmShapesFile}"
OUT = sys.argv[2] if len(sys.argv) > 2 else "${gemmSweepFile}"
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
WARMUP, CALLS, REPEATS = 10, 20, 5


def operands(m, n, k, batch, dtype):
    dev = "cuda"
    if dtype == "fp8":
        a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm needs
        one = torch.ones((), device=dev)
        if batch != 1:
            raise ValueError("batched fp8 GEMMs are not timed")
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    t = DTYPES[dtype]
    shape_a = (m, k) if batch == 1 else (batch, m, k)
    shape_b = (k, n) if batch == 1 else (batch, k, n)
    a = torch.randn(shape_a, device=dev, dtype=t)
    b = torch.randn(shape_b, device=dev, dtype=t)
    return lambda: torch.matmul(a, b)


def time_us(fn):
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    runs = []
    for _ in range(REPEATS):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(CALLS):
            fn()
        end.record()
        torch.cuda.synchronize()
        runs.append(start.elapsed_time(end) * 1e3 / CALLS)
    return statistics.median(runs)


def main():
    device = torch.cuda.get_device_name().replace(",", " ")
    with open(SHAPES, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or list(rows[0].keys()) != ${JSON.stringify([...gemmShapeColumns])}:
        sys.exit(f"{SHAPES}: expected the columns ${gemmShapeColumns.join(',')}")
    with open(OUT, "w", newline="") as f:
        out = csv.writer(f, lineterminator="\\n")
        out.writerow(${JSON.stringify([...gemmSweepColumns])})
        for r in rows:
            m, n, k, batch = (int(r[c]) for c in ("m", "n", "k", "batch"))
            try:
                us = time_us(operands(m, n, k, batch, r["dtype"]))
            except (RuntimeError, ValueError, KeyError) as e:
                print(f"skipped {r['label']} {m}x{n}x{k} x{batch} {r['dtype']}: {e}", file=sys.stderr)
                continue
            tflops = 2 * m * n * k * batch / (us * 1e-6) / 1e12
            out.writerow([r["label"], m, n, k, batch, r["dtype"], f"{us:.3f}", f"{tflops:.1f}", device])
            print(f"{r['label']:>24} {m}x{n}x{k} x{batch} {r['dtype']}: {us:9.2f} us {tflops:7.1f} TFLOP/s")


if __name__ == "__main__":
    main()
`;
}
