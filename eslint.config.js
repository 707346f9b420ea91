// ESLint (flat config): typescript-eslint's recommended rules plus the ones that catch real defects
// here. Formatting is Biome's and Prettier's job (`npm run format:check`, in npm test), not ESLint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'test-results/', 'tests/fixtures/', '.stryker-tmp/'] },
  js.configs.recommended,
  // Plain JavaScript runs in Node: its globals.
  {
    files: ['**/*.{js,mjs,cjs}'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
  ...tseslint.configs.recommended,
  // CommonJS files (the dependency-cruiser config) load each other with require().
  { files: ['**/*.cjs'], rules: { '@typescript-eslint/no-require-imports': 'off' } },
  {
    files: ['**/*.ts'],
    // The root is this folder, also while `npm run mutate` keeps a copy of the repository (and its
    // tsconfig.json) in .stryker-tmp/.
    languageOptions: { parserOptions: { tsconfigRootDir: import.meta.dirname } },
    rules: {
      // `any` switches the type checker off; use unknown and narrow.
      '@typescript-eslint/no-explicit-any': 'error',
      // Unused values (dead code or a forgotten use; a leading _ marks one kept on purpose) are the
      // type checker's: tsconfig.json's noUnusedLocals and noUnusedParameters, in `tsc --noEmit`
      // of npm test. This rule repeated that check at 45% of the lint's rule time.
      '@typescript-eslint/no-unused-vars': 'off',
      // Type-only imports are erased (isolatedModules): say so.
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'prefer-const': 'error',
      'no-var': 'error',
      'no-throw-literal': 'error',
      'no-self-compare': 'error',
      'no-unmodified-loop-condition': 'error',
      'no-template-curly-in-string': 'error',
      'no-constant-binary-expression': 'error',
    },
  },
);
