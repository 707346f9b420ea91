// A rank's worker thread in Node (scripts/device/node-ranks.ts starts it): plain JavaScript, so that Node
// can start it, loading the TypeScript worker module named in workerData through tsx.
import { workerData } from 'node:worker_threads';
import { tsImport } from 'tsx/esm/api';

await tsImport(workerData.entry, import.meta.url);
