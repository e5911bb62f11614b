// ESLint (flat config): typescript-eslint with type information for the server, tests, bench and
// scripts (tsconfig.json) and for the Vue front end (web/tsconfig.json), eslint-plugin-vue for the
// .vue files, and eslint-config-prettier last so that no rule argues with Prettier about layout.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier/flat';
import { defineConfig, globalIgnores } from 'eslint/config';
import vue from 'eslint-plugin-vue';
import globals from 'globals';
import tseslint from 'typescript-eslint';
import vueParser from 'vue-eslint-parser';

export default defineConfig(
  globalIgnores(['**/dist/', 'coverage/', 'test-results/', '.topology/', 'data/', 'docs/']),

  js.configs.recommended,
  tseslint.configs.strictTypeChecked,
  vue.configs['flat/recommended'],

  {
    languageOptions: {
      ecmaVersion: 'latest',
      sourceType: 'module',
      globals: globals.node,
      parserOptions: {
        // Each file is checked with the nearest tsconfig.json: the root one for src, test, bench,
        // scripts/*.ts and vitest.config.ts; web/tsconfig.json for web/src and web/vite.config.ts.
        // The build scripts (.mjs) and this file are in no tsconfig and get the default project.
        projectService: { allowDefaultProject: ['eslint.config.js', 'scripts/*.mjs'] },
        tsconfigRootDir: import.meta.dirname,
        extraFileExtensions: ['.vue'],
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A promise nobody awaits loses its rejection: a Redis or MySQL error would vanish (or end
      // the process as an unhandled rejection). `void promise` says that it is meant. (Both rules
      // are in the preset; they are spelled out here because this project depends on them.)
      '@typescript-eslint/no-floating-promises': ['error', { ignoreVoid: true }],
      // An async function where a void callback is expected (an event handler, forEach, a timer,
      // a Vue @click) loses its rejection the same way.
      '@typescript-eslint/no-misused-promises': 'error',
      // Numbers, bigints, booleans and regexps in template strings are how this code builds Redis
      // keys, log lines and messages; the strict preset forbids even numbers. `undefined`, `null`,
      // objects and `any` stay forbidden: they print "undefined" or "[object Object]".
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true, allowRegExp: true, allowNullish: false, allowAny: false },
      ],
      // Off: its "fixes" would delete real guards. TypeScript narrows a field or a variable that
      // an await or a callback changes as if nothing could change it (`if (!this.running) break`
      // after an await in the order worker, a `let x: T | null` set inside a closure), and the
      // code checks Redis replies, JSON.parse results and cast values whose declared types are
      // narrower than what can arrive.
      '@typescript-eslint/no-unnecessary-condition': 'off',
      // Off: an arrow shorthand whose body is a void call (`() => clearInterval(timer)`), or
      // `return done()` in a void function, is a matter of layout, not of correctness.
      '@typescript-eslint/no-confusing-void-expression': 'off',
      // Off: with noUncheckedIndexedAccess every `array[i]` is `T | undefined`; after a bounds
      // check (or a lookup of a key just set) `array[i]!` is the idiom, in src as in tests.
      '@typescript-eslint/no-non-null-assertion': 'off',
      // Off: Fastify plugins are `async (app) => { app.get(...) }` without an await by contract,
      // and async methods that implement a Promise-returning interface (an SMS sender, a
      // migration provider) need no await; an async function still turns a throw into a rejection.
      '@typescript-eslint/require-await': 'off',
      // Unused bindings are mistakes, except the conventional `_` for a place holder.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },

  // The Vue single-file components: vue-eslint-parser for the template, typescript-eslint's
  // parser for <script lang="ts">, type-checked against web/tsconfig.json.
  {
    files: ['web/**/*.vue'],
    languageOptions: {
      parser: vueParser,
      parserOptions: { parser: tseslint.parser, extraFileExtensions: ['.vue'], sourceType: 'module' },
    },
    // TypeScript (vue-tsc) already reports undefined names, and knows type-only globals that
    // no-undef does not; typescript-eslint switches it off for .ts files the same way.
    rules: { 'no-undef': 'off' },
  },
  {
    files: ['web/src/**'],
    languageOptions: { globals: globals.browser },
  },

  // Tests: Fastify's `response.json()` and parsed bodies are `any` by design and the assertions
  // check their shape, so the no-unsafe-* family only adds noise there.
  {
    files: ['test/**'],
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },

  // The plain-JavaScript build scripts have no types (every parameter is `any`): keep the rules
  // that need none of that (floating promises still count) and drop the no-unsafe-* family.
  {
    files: ['**/*.js', '**/*.mjs'],
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },

  prettier,
);
