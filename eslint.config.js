// Type-aware lint for every package's sources and tests (docs/architecture.md): no floating promises,
// no misused promises. Tests are held to the same rules as the code they test.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'eslint.config.js', '**/vitest.config.ts', 'vitest.shared.ts'] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        // Each package's tsconfig.json covers src and test; tsconfig.build.json builds src only.
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // vitest types its asymmetric matchers (expect.any, expect.stringMatching, …) as `any`.
    files: ['**/test/**/*.ts', 'test/*.ts'],
    rules: { '@typescript-eslint/no-unsafe-assignment': 'off' },
  },
);
