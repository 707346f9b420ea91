import { expect, test, vi } from 'vitest';
import { runCli } from './run-cli.ts';

vi.setConfig({ testTimeout: 60_000 }); // each test starts Node; seconds on a busy machine

test('scripts/project/live-memory.ts prints rank 0’s classes, peak and the accounting, equal, for one preset at one t', async () => {
  const r = await runCli('scripts/project/live-memory.ts', '--preset', 'llama-gqa', '--tp', '2');
  expect(r.code).toBe(0);
  const lines = r.stdout.trim().split('\n');
  expect(lines[1]).toMatch(
    /^config\s+weights\s+gradients\s+activations\s+workspace made\s+peak\s+peak at op\s+accounting 2P \+ A\s+equal$/,
  );
  expect(lines.slice(2)).toHaveLength(1);
  // Kept activations freed after their last backward reader (docs/memory.md): the peak falls inside
  // backward, at the MLP's SwiGLU backward, below the accounting's 2P + A (everything alive at once).
  expect(lines[2]).toMatch(
    /^llama-gqa t=2\s+1\.85 MiB\s+1\.85 MiB\s+794 KiB\s+\S+ \S+\s+4\.16 MiB\s+35 of 70 \(mlp\.swiglu\.backward\)\s+4\.47 MiB\s+yes$/,
  );
});

test('an unknown preset is refused naming the presets', async () => {
  const r = await runCli('scripts/project/live-memory.ts', '--preset', 'gpt5');
  expect(r.code).toBe(2);
  expect(r.stderr).toMatch(/^unknown preset "gpt5"; presets are classroom, gpt2-layer, llama-gqa\./);
});
