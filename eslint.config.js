// ESLint flat config (eslint 10, typescript-eslint 8). `npm run lint` runs `eslint .`.
//
// - Every file: @eslint/js recommended.
// - TypeScript in src/, test/ and bench/: typescript-eslint's strictTypeChecked and
//   stylisticTypeChecked, with type information from the TypeScript project service.
//   tsconfig.json covers src/, test/ and bench/ (tsconfig.build.json emits src/ only).
// - Plain JavaScript (this file, scripts): recommended rules, Node globals, no types.
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

const root = dirname(fileURLToPath(import.meta.url));

const nodeGlobals = {
  process: 'readonly',
  console: 'readonly',
  Buffer: 'readonly',
  URL: 'readonly',
  setTimeout: 'readonly',
  clearTimeout: 'readonly',
  setInterval: 'readonly',
  clearInterval: 'readonly',
  setImmediate: 'readonly',
};

export default defineConfig(
  globalIgnores(['dist/', 'node_modules/', 'coverage/', 'data/', '.tmp/']),
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },
  js.configs.recommended,
  {
    rules: {
      // Renderers escape and refuse control characters on purpose (YAML, data URLs,
      // systemd units), so regular expressions naming them are expected here.
      'no-control-regex': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: { ecmaVersion: 2023, sourceType: 'module', globals: nodeGlobals },
  },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.strictTypeChecked, tseslint.configs.stylisticTypeChecked],
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: root,
      },
    },
    rules: {
      // Numbers, booleans and the like in template literals are fine and common in
      // messages; objects and nullish values stay errors.
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true, allowNullish: false, allowAny: false, allowRegExp: true },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // With noUncheckedIndexedAccess, `match[1]!` after a successful RegExp match is the
      // idiom; banning `!` only pushes code to worse casts.
      '@typescript-eslint/no-non-null-assertion': 'off',
      // `() => assert.equal(...)` and similar one-liners are clear enough.
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      // `type` and `interface` are both used on purpose (unions vs. extendable shapes).
      '@typescript-eslint/consistent-type-definitions': 'off',
      // `while (true)` with a break inside is fine.
      '@typescript-eslint/no-unnecessary-condition': ['error', { allowConstantLoopConditions: true }],
    },
  },
  {
    // Tests: node:test's describe/it return promises that the runner itself awaits.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-floating-promises': 'off',
      // Tests read parsed JSON (response bodies, outputs) and assert on it directly.
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
    },
  },
);
