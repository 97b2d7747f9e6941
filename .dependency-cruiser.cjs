// The layer rules of docs/architecture/layers.md ("Dependency direction"), as code.
// `npm run check` runs `depcruise .` with this file; test/check/layers.test.ts runs the same command
// against small broken trees under test/check/fixtures/layers and expects each rule below to fire.
// Paths are relative to the directory depcruise runs in (the repo root, or a fixture root).

/** Our own code: anything in these top-level folders. */
const OURS = '^(src|machines|examples|test|bench|scripts)/';

/**
 * The rooms of src/runtime, lowest first, each with the rooms below it that it may import. A room never imports one
 * above it or a file at the runtime's root (the entry points: the barrel, createSupervisor, sessions(), replays).
 */
const ROOMS = {
  budget: { job: 'limits and spend accounts', below: [] },
  schedule: { job: 'schedules and their book', below: [] },
  env: { job: "an agent's environment and what it is built from", below: ['budget'] },
  step: { job: 'the model and tool workers and the turn they run in', below: ['env', 'budget'] },
  tree: { job: 'the supervision tree', below: ['step', 'env', 'budget'] },
  session: { job: 'journals: recording, restoring, replaying', below: ['tree', 'step', 'env', 'budget', 'schedule'] },
  agent: { job: 'the Agent handle and its machines', below: ['session', 'tree', 'step', 'env', 'budget', 'schedule'] },
};

const roomRules = Object.entries(ROOMS).map(([room, { job, below }]) => ({
  name: `runtime-room-${room}`,
  comment:
    `src/runtime/${room}/ (${job}) may import, of the runtime, only itself` +
    (below.length > 0 ? ` and the rooms below it: ${below.join(', ')}.` : '.'),
  severity: 'error',
  from: { path: `^src/runtime/${room}/` },
  to: { path: '^src/runtime/', pathNot: `^src/runtime/(${[room, ...below].join('|')})/` },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...roomRules,
    {
      name: 'runtime-room-known',
      comment:
        'Every folder of src/runtime is a room with a place in ROOMS above (and in CONTRIBUTING.md): a new folder ' +
        'says which rooms it may import before it imports anything.',
      severity: 'error',
      from: { path: '^src/runtime/[^/]+/', pathNot: `^src/runtime/(${Object.keys(ROOMS).join('|')})/` },
      to: {},
    },
    {
      name: 'machines-only-xstate-and-protocol',
      comment:
        'machines/ are pure statecharts: they may import xstate, src/protocol and each other, and nothing else ' +
        '(no node: built-ins, no SDKs, no zod, no runtime). Effects are provided by src/runtime with machine.provide().',
      severity: 'error',
      from: { path: '^machines/' },
      to: { pathNot: ['^machines/', '^src/protocol/', '(^|/)node_modules/xstate/'] },
    },
    {
      name: 'protocol-imports-nothing-of-ours',
      comment: 'src/protocol holds the types every layer may import; it depends on no other layer.',
      severity: 'error',
      from: { path: '^src/protocol/' },
      to: { path: OURS, pathNot: '^src/protocol/' },
    },
    {
      name: 'providers-no-zod-tools-machines',
      comment:
        'Providers take JSON Schema and messages and give back ModelEvents: they never import zod, src/tools or machines/.',
      severity: 'error',
      from: { path: '^src/providers/' },
      to: { path: ['(^|/)node_modules/zod/', '^src/tools/', '^machines/'] },
    },
    {
      name: 'session-below-runtime',
      comment:
        'src/session (journal records, stores) is a layer below src/runtime: it may import src/protocol and ' +
        'nothing else of ours, so a store can be used, tested and replaced without the agent runtime.',
      severity: 'error',
      from: { path: '^src/session/' },
      to: { path: OURS, pathNot: ['^src/session/', '^src/protocol/'] },
    },
    {
      name: 'context-below-runtime',
      comment:
        'src/context (projection, token counts, compaction) works on protocol messages and requests: it never imports ' +
        'machines/ or src/runtime (the runtime calls it; machines only name the compactor actor).',
      severity: 'error',
      from: { path: '^src/context/' },
      to: { path: ['^machines/', '^src/runtime/'] },
    },
    {
      name: 'runtime-only-from-entry-points',
      comment:
        "src/runtime joins machines to effects; only src/index.ts, src/host, src/testing, src/cli, src/inspect's server " +
        '(src/inspect/server.ts or src/inspect/server/**), examples, test and bench may import it.',
      severity: 'error',
      from: {
        pathNot: [
          '^src/runtime/',
          '^src/index\\.ts$',
          '^src/host/',
          '^src/testing/',
          '^src/cli/',
          '^src/inspect/server(\\.ts$|/)',
          '^examples/',
          '^test/',
          '^bench/',
        ],
      },
      to: { path: '^src/runtime/' },
    },
    {
      name: 'no-cycles',
      comment: 'No import cycles, type-only imports included: a cycle means two modules are one layer in disguise.',
      severity: 'error',
      from: { path: OURS },
      to: { circular: true },
    },
  ],
  options: {
    // Type-only imports count: a machine that imports a type from src/runtime is still coupled to it.
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    // The broken fixture trees are checked on their own by test/check/layers.test.ts, never as part of the real tree.
    exclude: { path: ['^(dist|coverage|scratch|docs)/', '^test/check/fixtures/'] },
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
