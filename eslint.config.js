// ESLint with typescript-eslint's type-checked rules over every TypeScript file of the repository.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'examples/dist/', 'docs/api/', 'bench/results/', 'chaos/results/'] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  tseslint.configs.stylisticTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // `string[]` for simple element types, `Array<...>` for the rest, as the code is written.
      '@typescript-eslint/array-type': ['error', { default: 'array-simple' }],
      // node:test's test() and describe() return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] }] },
      ],
      // A driver's callback error is `unknown`: it is passed on as it came.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      '@typescript-eslint/only-throw-error': ['error', { allowThrowingUnknown: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // An async function that implements a promise-returning port reads better than one that wraps
      // its value in Promise.resolve; a floating or misused promise is still caught by the rules above.
      '@typescript-eslint/require-await': 'off',
      // No-op implementations of an async port (a store with nothing to create, a queue with nothing to close).
      // An empty string in the environment means "not set", as much as a missing variable does.
      '@typescript-eslint/prefer-nullish-coalescing': ['error', { ignorePrimitives: { string: true } }],
      '@typescript-eslint/no-empty-function': ['error', { allow: ['asyncFunctions', 'asyncMethods', 'arrowFunctions'] }],
    },
  },
  // Test doubles implement ports with methods that do nothing.
  { files: ['test/**/*.ts'], rules: { '@typescript-eslint/no-empty-function': ['error', { allow: ['methods', 'asyncFunctions', 'asyncMethods', 'arrowFunctions'] }] } },
  { files: ['**/*.js', '**/*.mjs', '**/*.cjs'], extends: [tseslint.configs.disableTypeChecked] },
  { files: ['**/*.cjs'], languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } } },
  // The bin is plain JavaScript run by Node.
  { files: ['bin/**/*.js'], languageOptions: { globals: { console: 'readonly', process: 'readonly' } } },
  // So is the examples' JavaScript, with the Node globals it uses.
  {
    files: ['examples/**/*.mjs'],
    languageOptions: { globals: { console: 'readonly', process: 'readonly', fetch: 'readonly', AbortSignal: 'readonly', setTimeout: 'readonly' } },
  },
);
