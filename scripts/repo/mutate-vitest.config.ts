import type { TestProjectConfiguration } from 'vitest/config';
import base from '../../vitest.config.ts';

/** The project's Vitest configuration with the `unit` project alone (Node, no browser): what Stryker runs per mutant. */
const isUnit = (p: TestProjectConfiguration): boolean =>
  typeof p === 'object' && 'test' in p && p.test?.name === 'unit';

export default { ...base, test: { ...base.test, projects: (base.test?.projects ?? []).filter(isUnit) } };
