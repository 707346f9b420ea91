// nccl-tests output as people paste it: the results table of `all_reduce_perf`, `all_gather_perf`,
// `reduce_scatter_perf`, `sendrecv_perf`, `alltoall_perf` (and `broadcast_perf`), with or without
// the header lines, in the layouts nccl-tests has printed over the years (src/common.cu there):
//   2019:  size count type time algbw busbw error | time algbw busbw error
//          size count type redop time …           (or root in place of redop: broadcast)
//   2021+: size count type redop root time algbw busbw #wrong | time algbw busbw #wrong
// Lines may carry an MPI prefix ("[1,0]<stdout>:") and the table may sit inside a Markdown fence.
import { quoted } from '../core/quote.ts';

/** The collectives of nccl-tests' binaries, by the binary's name. */
export const ncclTestBinaries = {
  all_reduce_perf: 'allReduce',
  all_gather_perf: 'allGather',
  reduce_scatter_perf: 'reduceScatter',
  sendrecv_perf: 'sendRecv',
  alltoall_perf: 'allToAll',
  broadcast_perf: 'broadcast',
} as const;

/** A collective nccl-tests measures. */
export type NcclTestOp = (typeof ncclTestBinaries)[keyof typeof ncclTestBinaries];

/** One timing: µs per call and the bandwidths nccl-tests derived from it (GB/s). */
export interface NcclTiming {
  readonly timeUs: number;
  readonly algGBps: number;
  readonly busGBps: number;
}

/** One row of the table: S bytes (nccl-tests' size), its element count and type, out-of-place and in-place timings. */
export interface NcclRow {
  readonly bytes: number;
  readonly count: number;
  readonly type: string;
  readonly outOfPlace: NcclTiming;
  /** Absent where the table has one timing group. */
  readonly inPlace?: NcclTiming;
}

/** One run of a binary: which collective, on how many ranks over which hosts, and its rows. */
export interface NcclTestRun {
  readonly op: NcclTestOp;
  /** Ranks in the communicator; undefined when the paste does not say (no Rank lines, no -g/-np). */
  readonly ranks: number | undefined;
  /** Host name per rank, from the "# Rank r … on HOST device d" lines; empty when absent. */
  readonly hosts: readonly string[];
  /** GPU names from the Rank lines ("NVIDIA H100 80GB HBM3"); empty when absent. */
  readonly devices: readonly string[];
  readonly rows: readonly NcclRow[];
  /** "# Avg bus bandwidth : x" when the paste has it, GB/s. */
  readonly avgBusGBps?: number;
  /** 1-based line of the table's first row, for messages. */
  readonly line: number;
}

/** What the text does not say and the caller may: the collective (e.g. from the file name) and the ranks. */
export interface NcclParseHints {
  readonly op?: NcclTestOp;
  readonly ranks?: number;
  /** Named in messages (a file name). */
  readonly source?: string;
}

const binaryPattern = new RegExp(`\\b(${Object.keys(ncclTestBinaries).join('|')})(?:_mpi)?\\b`, 'g');

/** The collective a binary name in `text` names (the last one), or undefined. */
function namedOp(text: string): NcclTestOp | undefined {
  const all = [...text.matchAll(binaryPattern)];
  const last = all.at(-1)?.[1];
  return last === undefined ? undefined : ncclTestBinaries[last as keyof typeof ncclTestBinaries];
}

/**
 * The collective a file name names as a word, with _ or - ("all_gather_perf.log", "h100-all-gather.txt",
 * "sendrecv-2node.txt"), or undefined.
 */
export function opFromFileName(name: string): NcclTestOp | undefined {
  const base = name
    .replace(/^.*[\\/]/, '')
    .toLowerCase()
    .replace(/-/g, '_');
  for (const [bin, op] of Object.entries(ncclTestBinaries))
    if (new RegExp(`(^|[^a-z])${bin.replace(/_perf$/, '')}(_perf)?([^a-z]|$)`).test(base)) return op;
  return undefined;
}

/** A line without an MPI output prefix ("[1,0]<stdout>:"). */
const strip = (line: string): string => line.replace(/^\[\d+,\d+\]<std(?:out|err)>:/, '').trimEnd();

/** Timing columns of one group: time, algbw, busbw, then the error/#wrong column. */
const timingWords = ['time', 'algbw', 'busbw'] as const;

/** Where each field sits in a data row's tokens. */
interface Layout {
  readonly lead: number;
  readonly groups: readonly number[];
}

/** The layout of the table from its column-name line ("size count type redop root time algbw busbw #wrong …"). */
function headerLayout(words: readonly string[]): Layout | undefined {
  if (words[0] !== 'size' || words[1] !== 'count' || words[2] !== 'type') return undefined;
  const groups: number[] = [];
  for (let i = 0; i < words.length; i++) if (words[i] === 'time' && words[i + 1] === 'algbw') groups.push(i);
  return groups.length ? { lead: groups[0]!, groups } : undefined;
}

/** The layout guessed from one data row when no column-name line was pasted: 3 lead columns, then 0–2 of redop/root. */
function rowLayout(tokens: readonly string[]): Layout | undefined {
  for (const lead of [5, 4, 3]) {
    const rest = tokens.length - lead;
    if (rest === 8 || rest === 4) return { lead, groups: rest === 8 ? [lead, lead + 4] : [lead] };
  }
  return undefined;
}

/** A data row: size, count and one of NCCL's type names (ncclDataType_t as nccl-tests prints it). */
const dataRow = /^\s*\d+\s+\d+\s+(u?int(8|32|64)|half|float|double|bfloat16|f8e4m3|f8e5m2|char|int)\s/;

const isNumber = (t: string): boolean => /^-?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(t);

/** A data row's tokens under `layout`, or a message saying what is wrong with it. */
function readRow(tokens: readonly string[], layout: Layout): NcclRow | string {
  const [size, count, type] = tokens as [string, string, string];
  if (!/^\d+$/.test(size) || !/^\d+$/.test(count)) return `size and count must be whole numbers, got ${size} ${count}`;
  const timing = (at: number): NcclTiming | string => {
    const [t, a, b] = timingWords.map((_, k) => tokens[at + k]);
    if (![t, a, b].every((x) => x !== undefined && isNumber(x)))
      return `time, algbw and busbw must be numbers, got ${[t, a, b].join(' ')}`;
    return { timeUs: Number(t), algGBps: Number(a), busGBps: Number(b) };
  };
  const out = timing(layout.groups[0]!);
  if (typeof out === 'string') return out;
  const second = layout.groups[1];
  const inPlace = second === undefined ? undefined : timing(second);
  if (typeof inPlace === 'string') return inPlace;
  return { bytes: Number(size), count: Number(count), type, outOfPlace: out, ...(inPlace && { inPlace }) };
}

/**
 * Ranks from a pasted command: the launcher's processes (mpirun `-np N`/`-n N`, srun `--nodes` ×
 * `--ntasks-per-node`; one without a launcher) times the binary's `-g` (GPUs per thread) and `-t`
 * (threads); undefined when a launcher's process count is not in the line.
 */
function ranksFromCommand(text: string): number | undefined {
  const once = new RegExp(binaryPattern.source);
  const cmd = text.split('\n').find((l) => once.test(l) && !l.trimStart().startsWith('#'));
  if (!cmd) return undefined;
  const at = once.exec(cmd)!.index;
  const launcher = cmd.slice(0, at);
  const args = cmd.slice(at);
  const flag = (s: string, re: RegExp): number | undefined => {
    const m = re.exec(s);
    return m ? Number(m[1]) : undefined;
  };
  const g = flag(args, /\s(?:-g|--ngpus)[ =](\d+)/) ?? 1;
  const t = flag(args, /\s(?:-t|--nthreads)[ =](\d+)/) ?? 1;
  const np = flag(launcher, /\s(?:-np|-n|--np)[ =](\d+)/);
  const nodes = flag(launcher, /\s(?:--nodes|-N)[ =](\d+)/);
  const perNode = flag(launcher, /\s--ntasks-per-node[ =](\d+)/);
  const procs = np ?? (nodes !== undefined && perNode !== undefined ? nodes * perNode : undefined);
  if (procs !== undefined) return procs * g * t;
  return /\b(mpirun|srun|mpiexec)\b/.test(launcher) ? undefined : g * t;
}

/**
 * Every run in `text` (nccl-tests' stdout, whole or pasted in part). Runs are cut at each
 * "# nThread" line; a run's collective is the binary its "Collective test concluded" line or the
 * command before its table names, else `hints.op`; its ranks are its Rank lines, else the
 * command's -np × -g × -t, else `hints.ranks`. Throws naming the line and what to change when a
 * row does not read, no table is found, or the collective is unknown.
 */
export function parseNcclTests(text: string, hints: NcclParseHints = {}): NcclTestRun[] {
  const where = hints.source ? `${hints.source}: ` : '';
  const lines = text.split(/\r?\n/).map(strip);
  const starts = lines.flatMap((l, i) => (/^\s*#?\s*nThread:? /.test(l) ? [i] : []));
  const cuts = starts.length ? starts : [0];
  const runs: NcclTestRun[] = [];
  for (let r = 0; r < cuts.length; r++) {
    const from = r === 0 ? 0 : cuts[r]!;
    const to = cuts[r + 1] ?? lines.length;
    const run = readRun(lines, from, to, hints, where);
    if (run) runs.push(run);
  }
  if (!runs.length)
    throw new Error(
      `${where}no nccl-tests table found: paste the output of all_reduce_perf (or all_gather_perf, reduce_scatter_perf, sendrecv_perf, alltoall_perf) with its "size count type … time algbw busbw" rows.`,
    );
  return runs;
}

function readRun(
  lines: readonly string[],
  from: number,
  to: number,
  hints: NcclParseHints,
  where: string,
): NcclTestRun | undefined {
  let layout: Layout | undefined;
  const rows: NcclRow[] = [];
  const hosts: string[] = [];
  const devices: string[] = [];
  const rankIds: number[] = [];
  let avg: number | undefined;
  let concluded: NcclTestOp | undefined;
  let first = -1;
  for (let i = from; i < to; i++) {
    const line = lines[i]!;
    const body = line.replace(/^\s*#?\s*/, '');
    const rank = /^Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.*)$/.exec(
      body,
    );
    if (rank) {
      rankIds.push(Number(rank[1]));
      hosts.push(rank[2]!);
      devices.push(rank[3]!.trim());
      continue;
    }
    const avgMatch = /^Avg bus bandwidth\s*:\s*(\S+)/.exec(body);
    if (avgMatch) {
      avg = Number(avgMatch[1]);
      continue;
    }
    const done = /Collective test concluded:\s*(\S+)/.exec(body);
    if (done) {
      concluded = namedOp(done[1]!);
      continue;
    }
    const words = body.split(/\s+/);
    const head = headerLayout(words);
    if (head && line.trimStart().startsWith('#')) {
      layout = head;
      continue;
    }
    if (line.trimStart().startsWith('#') || !dataRow.test(line)) continue;
    const tokens = line.trim().split(/\s+/);
    const l = layout ?? rowLayout(tokens);
    if (!l)
      throw new Error(
        `${where}line ${i + 1}: a row of ${tokens.length} columns matches no nccl-tests layout (size count type [redop] [root] then time algbw busbw error, out-of-place and in-place): ${quoted(line.trim(), 80)}`,
      );
    const row = readRow(tokens, l);
    if (typeof row === 'string') throw new Error(`${where}line ${i + 1}: ${row}: ${quoted(line.trim(), 80)}`);
    if (first < 0) first = i + 1;
    rows.push(row);
  }
  if (new Set(rankIds).size < rankIds.length)
    throw new Error(
      `${where}the Rank lines repeat rank ${rankIds.find((x, k) => rankIds.indexOf(x) !== k)}: every process ran alone (nccl-tests built without MPI=1 under mpirun); rebuild with make MPI=1.`,
    );
  if (!rows.length) return undefined;
  // The collective: this run's closing line, else a binary named before its table (the command), else the caller's.
  const before = lines.slice(0, first - 1).join('\n');
  const op = concluded ?? namedOp(before) ?? hints.op;
  if (!op)
    throw new Error(
      `${where}line ${first}: which collective is this table? Paste the command line with it (e.g. ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 8) or name the file after the binary (all_reduce_perf.txt).`,
    );
  const ranks = rankIds.length ? new Set(rankIds).size : (ranksFromCommand(before) ?? hints.ranks);
  return {
    op,
    ranks,
    hosts,
    devices,
    rows,
    ...(avg !== undefined && Number.isFinite(avg) && { avgBusGBps: avg }),
    line: first,
  };
}
