import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'data/**', 'bench/results/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Only server/src/config/config.ts reads process.env.' }],
      eqeqeq: ['error', 'smart'],
    },
  },
  {
    // The one place configuration comes from, plus tests and tools that set up child processes.
    files: ['server/src/config/config.ts', 'server/test/**', 'bench/**', 'vitest.config.ts', 'sdks/node/test/**'],
    rules: { 'no-restricted-properties': 'off' },
  },
);
