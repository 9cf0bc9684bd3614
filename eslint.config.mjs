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
    // What every create, poll and webhook delivery runs. On Node 20 (V8 11) an object literal with a
    // property or a second spread after a spread (`{ ...a, b }`) gets a hidden class of its own on
    // every call: about a microsecond per property, megamorphic reads downstream and maps for the
    // GC (docs/performance.md, "objects built by spreading"). Here such objects are written out or
    // merged with Object.assign; `{ ...a }` alone and `{ b, ...a }` are fine.
    files: [
      'server/src/modules/decisions/{decisions.service,decision.presenter,bnpl-request,bnpl.routes,auto-loan.routes}.ts',
      'server/src/modules/{engine,offers,idempotency}/**/*.ts',
      'server/src/modules/events/outbox.ts',
      'server/src/modules/webhooks/{delivery-worker,sender,fan-out}.ts',
      'server/src/db/{group-commit,statements,sqlite-writer-thread,wal-sync}.ts',
      'server/src/http/{state-change,durable-responses}.ts',
    ],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: 'ObjectExpression > SpreadElement ~ Property', message: 'A property after a spread gives every object its own hidden class on Node 20: write the object out, or merge with Object.assign (docs/performance.md, "objects built by spreading").' },
        { selector: 'ObjectExpression > SpreadElement ~ SpreadElement', message: 'A second spread gives every object its own hidden class on Node 20: merge with Object.assign (docs/performance.md, "objects built by spreading").' },
      ],
    },
  },
  {
    // The one place configuration comes from, plus tests and tools that set up child processes.
    files: ['server/src/config/config.ts', 'server/test/**', 'bench/**', 'soak/**', 'vitest.config.ts', 'sdks/node/test/**'],
    rules: { 'no-restricted-properties': 'off' },
  },
);
