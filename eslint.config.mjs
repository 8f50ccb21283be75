// ESLint for the TypeScript: typescript-eslint's recommended rules, tuned to the house style where
// the tree already agrees on something else (named at each rule below). Formatting is Prettier's, not ESLint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['dist/', 'build/', 'build-*/', 'prebuilds/', 'coverage/', 'tmp/', 'svc-data/'],
  },
  // The TypeScript only: the few JavaScript files (the addon's install scripts, the examples) are run by tests.
  { ignores: ['**/*.js', '**/*.cjs', '**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.mts', '**/*.cts'],
    languageOptions: { ecmaVersion: 2023, sourceType: 'module' },
    rules: {
      // A leading underscore marks a value kept for its position or left out on purpose (`{ examples: _examples, ...rest }`).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // Tests read JSON answers of real servers and SDKs whose shapes the test itself asserts.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
