// The job bundle's allocator-history recording: Megatron-LM's flags and the script that turns the
// snapshot pickle into the JSON src/kineto/memory-snapshot.ts reads.

/**
 * Flags that record PyTorch's CUDA allocator history and dump it (core_v0.19.0:
 * megatron/training/config/common_config.py:56-59 record_memory_history, memory_snapshot_path;
 * utils/utils.py start_memory_history_recording keeps the last 100,000 events with their stacks;
 * training.py:2817-2822 pickles torch.cuda.memory._snapshot() on the last rank at every
 * log-interval iteration and on the first).
 */
export const memoryHistoryArgs = (snapshotPath: string): string[] => [
  '--record-memory-history',
  '--memory-snapshot-path',
  snapshotPath,
];

/** The converter's file name in the bundle. */
export const memorySnapshotScriptName = 'memory_snapshot_json.py';

/** The JSON launch.sh writes for global rank `rank` (the trace view takes a dropped file of this name as a snapshot). */
export const memorySnapshotFile = (rank: number | string): string => `memory-rank-${rank}.json`;
/** Matches memorySnapshotFile's names. */
export const memorySnapshotFilePattern = /^memory-rank-\d+\.json$/;

/**
 * memory_snapshot_json.py: the snapshot pickle (plain dicts, lists and numbers: Python's standard
 * library reads it, torch is not needed) → JSON with the snapshot's own field names, stack frames
 * left out (they make the file 10–100× larger and nothing here reads them), and the rank that wrote it.
 */
export const memorySnapshotScript = `#!/usr/bin/env python3
"""Write a PyTorch CUDA memory snapshot as JSON for the playground's trace view and \`npm run trace -- --memory\`.

The snapshot is the pickle of torch.cuda.memory._snapshot() that Megatron-LM writes with
--record-memory-history to --memory-snapshot-path (on the last rank). The JSON keeps the snapshot's
own field names (segments, device_traces) without the stack frames, plus the rank that wrote it.

usage: python3 ${memorySnapshotScriptName} SNAPSHOT.pickle [--rank R] [-o OUT.json]
"""
import argparse
import json
import pickle
import sys

SEGMENT_KEYS = ("address", "total_size", "allocated_size", "active_size", "stream", "segment_type")
EVENT_KEYS = ("action", "addr", "size", "stream", "time_us")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot", help="the pickle Megatron-LM wrote (--memory-snapshot-path)")
    parser.add_argument("--rank", type=int, help="the global rank that wrote it (Megatron: the last rank)")
    parser.add_argument("-o", "--output", help="the JSON file to write (default: standard output)")
    args = parser.parse_args()
    with open(args.snapshot, "rb") as f:
        snap = pickle.load(f)
    if not isinstance(snap, dict) or "segments" not in snap or "device_traces" not in snap:
        sys.exit(f"{args.snapshot}: not a torch.cuda.memory._snapshot() pickle (it has no segments and device_traces)")
    out = {
        "rank": args.rank,
        "segments": [{k: s[k] for k in SEGMENT_KEYS if k in s} for s in snap["segments"]],
        "device_traces": [[{k: e[k] for k in EVENT_KEYS if k in e} for e in trace] for trace in snap["device_traces"]],
    }
    if args.output:
        with open(args.output, "w") as f:
            json.dump(out, f)
    else:
        json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
`;
