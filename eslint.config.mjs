import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'data/**', 'bench/results/**', 'soak/results/**', 'coverage/**'] },
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
    // The lender portal runs in the browser (React); its build config runs in Node.
    files: ['portal/src/**/*.{ts,tsx}'],
    languageOptions: { globals: { ...globals.browser } },
    rules: {
      // bulletproof-react: a feature never imports another feature; app/ composes them.
      'no-restricted-imports': ['error', { patterns: [{ group: ['../../*/**', '!../../../**'], message: 'Features must not import each other; share through src/components or src/lib, compose in src/app.' }] }],
    },
  },
  {
    // The documentation site's scripts run in the browser (served as files by modules/docs-site).
    files: ['server/src/modules/docs-site/assets/**/*.js'],
    languageOptions: { globals: { ...globals.browser }, sourceType: 'script' },
  },
  {
    // The one place configuration comes from, plus tests and tools that set up child processes.
    files: ['server/src/config/config.ts', 'server/test/**', 'bench/**', 'soak/**', 'vitest.config.ts', 'sdks/node/test/**'],
    rules: { 'no-restricted-properties': 'off' },
  },
);
