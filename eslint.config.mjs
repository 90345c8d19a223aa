// The rules of the house that a machine can check (docs/design.md): layers never import upward, the
// browser code stays browser code, and `vscode` is imported only by the extension. Type-aware lint
// rules are left out on purpose: `tsc` (npm run typecheck) already checks the types.
import importPlugin from 'eslint-plugin-import';
import tseslint from 'typescript-eslint';

/**
 * The layers, lowest first: a folder may import its own layer and those before it, never one after.
 * `protocol` and `tunnel` (the end-to-end tunnel's cryptography) are browser-safe and import nothing of ours.
 */
const LAYERS = [
  ['src/protocol', 'src/tunnel'],
  ['src/platform', 'src/git'],
  ['src/log'],
  ['src/config', 'src/store'],
  ['src/agent'],
  ['src/commands'],
  ['src/transport'],
  // Features that reach people outside a client session (Web Push, webhooks): they use transport/http.
  ['src/channels'],
  ['src/service.ts', 'src/cli.ts', 'src/cli-backup.ts', 'src/cli-loader.ts'],
  ['src/extension'],
];
/** Separate programs: what each may use of the service's layers. */
const PROGRAMS = {
  'src/relay': ['src/protocol', 'src/platform', 'src/log', 'src/relay'],
  'src/web': ['src/protocol', 'src/tunnel', 'src/web'],
};
const ALL = [...LAYERS.flat(), ...Object.keys(PROGRAMS)];

const zones = [];
LAYERS.forEach((layer, index) => {
  const above = LAYERS.slice(index + 1).flat();
  for (const target of layer) {
    const forbidden = [...above, ...Object.keys(PROGRAMS)].filter((from) => from !== target);
    for (const from of forbidden) {
      // The extension hosts the web UI's webview bridge: it may use the browser-safe web modules.
      if (target === 'src/extension' && from === 'src/web') continue;
      zones.push({ target: `./${target}`, from: `./${from}`, message: `${target} is below ${from} (docs/design.md: layers never import upward)` });
    }
  }
  // Within the lowest layer too: protocol and tunnel do not depend on each other.
  if (index === 0) for (const target of layer) for (const from of layer) if (from !== target) zones.push({ target: `./${target}`, from: `./${from}` });
});
for (const [program, allowed] of Object.entries(PROGRAMS)) {
  for (const from of ALL.filter((f) => !allowed.includes(f))) {
    zones.push({ target: `./${program}`, from: `./${from}`, message: `${program} may use only ${allowed.join(', ')}` });
  }
}

/** node:test's focus markers: `test.only`, `describe.only`, `t.test.only`, and `{ only: true }` in a test's options. */
const RUNNERS = '/^(test|it|describe|suite)$/';
const NO_ONLY = [
  { selector: `MemberExpression[object.name=${RUNNERS}][property.name='only']`, message: 'no committed .only: it skips the other tests' },
  { selector: `MemberExpression[object.property.name=${RUNNERS}][property.name='only']`, message: 'no committed .only: it skips the other tests' },
  {
    selector: `CallExpression:matches([callee.name=${RUNNERS}], [callee.property.name=${RUNNERS}]) > ObjectExpression > Property[key.name='only'][value.value=true]`,
    message: 'no committed { only: true }: it skips the other tests',
  },
];

export default [
  { ignores: ['dist/**', 'media/**', 'node_modules/**', '.vscode-test/**', 'test-artifacts/**', '.wrangler/**'] },
  {
    files: ['**/*.ts', '**/*.mts'],
    languageOptions: { parser: tseslint.parser, ecmaVersion: 2022, sourceType: 'module' },
    plugins: { import: importPlugin, '@typescript-eslint': tseslint.plugin },
    settings: { 'import/resolver': { node: { extensions: ['.ts', '.mts', '.js', '.mjs', '.json'] } } },
    rules: {
      'import/no-restricted-paths': ['error', { zones }],
      'import/no-cycle': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      'no-restricted-imports': ['error', { paths: [{ name: 'vscode', message: 'vscode is imported only under src/extension/ (docs/design.md)' }] }],
    },
  },
  { files: ['src/extension/**/*.ts', 'test/**/*.ts'], rules: { 'no-restricted-imports': 'off' } },
  {
    // A committed `.only` makes node:test run that test alone (under --test-only) or warn and run the rest:
    // either way a suite that looks green may have skipped what it should run. Local focus stays local.
    files: ['test/**/*.ts', 'test/**/*.mts', 'test/**/*.mjs'],
    rules: { 'no-restricted-syntax': ['error', ...NO_ONLY] },
  },
  {
    // Browser code: nothing of Node.
    files: ['src/web/**/*.ts', 'src/protocol/**/*.ts', 'src/tunnel/**/*.ts', 'src/relay/worker/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['node:*'], message: 'browser/Worker code: no Node built-ins' }], paths: [{ name: 'vscode' }] }] },
  },
];
