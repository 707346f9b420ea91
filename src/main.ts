import { describeAdapter } from './kernels/adapter.ts';

const line = document.querySelector<HTMLParagraphElement>('#adapter')!;
describeAdapter().then(
  (text) => (line.textContent = text),
  (err: unknown) => (line.textContent = String(err instanceof Error ? err.message : err)),
);
