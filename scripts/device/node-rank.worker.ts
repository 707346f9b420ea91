// A rank worker in Node: the page's RankWorker serving the collectives' programs, its GPUDevice from
// Dawn (the `webgpu` package), its messages on the thread's parentPort.
import { parentPort } from 'node:worker_threads';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { dawnGpu } from './dawn-node.ts';

if (!parentPort)
  throw new Error('node-rank.worker.ts runs only as a worker thread (scripts/device/node-ranks.ts starts it).');
// Dawn's WebGPU globals (GPUBufferUsage, …) first: the rank's modules read them as they load.
const gpu = await dawnGpu();
const { commPrograms } = await import('../../src/ranks/comm-programs.ts');
const { serveRank } = await import('../../src/ranks/serve.ts');
serveRank(commPrograms, { gpu, endpoint: nodeEndpoint(parentPort) });
