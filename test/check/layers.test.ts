import { describe, expect, it } from 'vitest';
import { fixture, root, runCli, TOOL_TIMEOUT } from './cli.js';

interface Violation {
  from: string;
  to: string;
  rule: { name: string; severity: string };
  cycle?: { name: string }[];
}

/** Runs dependency-cruiser with the real .dependency-cruiser.cjs over the broken tree, as `npm run check` does. */
async function cruiseFixture(): Promise<Violation[]> {
  const { code, stdout, stderr } = await runCli(
    'dependency-cruiser/bin/dependency-cruise.mjs',
    ['--config', `${root}.dependency-cruiser.cjs`, '--output-type', 'json', '.'],
    fixture('layers'),
  );
  if (!stdout.startsWith('{')) throw new Error(`dependency-cruiser printed no JSON (exit ${code}): ${stderr}`);
  const result = JSON.parse(stdout) as { summary: { violations: Violation[] } };
  return result.summary.violations;
}

// A package shows as its name (`zod`), not as whichever file of it resolution picked.
const target = (to: string) => to.replace(/^.*node_modules\/((@[^/]+\/)?[^/]+)\/.*$/, '$1');
const reported = (violations: Violation[]) => violations.map((v) => `${v.rule.name}: ${v.from} → ${target(v.to)}`);

describe('layer rules (.dependency-cruiser.cjs) against test/check/fixtures/layers', () => {
  it(
    'reports every broken import with the rule it breaks, and nothing else',
    async () => {
      const violations = await cruiseFixture();

      expect(reported(violations).sort()).toEqual(
        [
          // machines/ import only xstate and src/protocol
          'machines-only-xstate-and-protocol: machines/bad-imports-node-fs.ts → fs',
          'machines-only-xstate-and-protocol: machines/bad-imports-runtime-type.ts → src/runtime/agent.ts',
          // src/protocol imports nothing of ours
          'protocol-imports-nothing-of-ours: src/protocol/bad-imports-runtime.ts → src/runtime/agent.ts',
          // src/providers never import zod, src/tools or machines/
          'providers-no-zod-tools-machines: src/providers/bad-imports-machines.ts → machines/helper.ts',
          'providers-no-zod-tools-machines: src/providers/bad-imports-tools.ts → src/tools/tool.ts',
          'providers-no-zod-tools-machines: src/providers/bad-imports-zod.ts → zod',
          // only the entry points import src/runtime (src/index.ts, src/cli, src/inspect/server.ts, examples are allowed)
          'runtime-only-from-entry-points: machines/bad-imports-runtime-type.ts → src/runtime/agent.ts',
          'runtime-only-from-entry-points: src/inspect/bad-panel-imports-runtime.ts → src/runtime/agent.ts',
          'runtime-only-from-entry-points: src/protocol/bad-imports-runtime.ts → src/runtime/agent.ts',
          // src/session sits below the runtime: it imports src/protocol only
          'session-below-runtime: src/session/bad-imports-runtime.ts → src/runtime/agent.ts',
          'runtime-only-from-entry-points: src/session/bad-imports-runtime.ts → src/runtime/agent.ts',
          // no cycles, type-only edges included
          'no-cycles: src/tools/cycle-a.ts → src/tools/cycle-b.ts',
          // each room of src/runtime imports only the rooms below it, and never the runtime's root files
          'runtime-room-budget: src/runtime/budget/bad-imports-env.ts → src/runtime/env/env.ts',
          'runtime-room-schedule: src/runtime/schedule/bad-imports-budget.ts → src/runtime/budget/budget.ts',
          'runtime-room-env: src/runtime/env/bad-imports-step.ts → src/runtime/step/worker.ts',
          'runtime-room-step: src/runtime/step/bad-imports-tree.ts → src/runtime/tree/tree.ts',
          'runtime-room-tree: src/runtime/tree/bad-imports-session.ts → src/runtime/session/session.ts',
          'runtime-room-session: src/runtime/session/bad-imports-agent.ts → src/runtime/agent/agent.ts',
          'runtime-room-agent: src/runtime/agent/bad-imports-root.ts → src/runtime/agent.ts',
          // a folder of src/runtime that is no room of the rules
          'runtime-room-known: src/runtime/misc/bad-unknown-room.ts → src/runtime/budget/budget.ts',
        ].sort(),
      );
      expect(violations.every((v) => v.rule.severity === 'error')).toBe(true);
    },
    TOOL_TIMEOUT,
  );

  it(
    'fails the way `npm run check` runs it (default reporter): non-zero exit, each rule named',
    async () => {
      const { code, stdout } = await runCli(
        'dependency-cruiser/bin/dependency-cruise.mjs',
        ['--config', `${root}.dependency-cruiser.cjs`, '.'],
        fixture('layers'),
      );
      // The err reporter exits with the number of errors.
      expect(code).toBe(20);
      for (const rule of [
        'machines-only-xstate-and-protocol',
        'protocol-imports-nothing-of-ours',
        'providers-no-zod-tools-machines',
        'runtime-only-from-entry-points',
        'session-below-runtime',
        'no-cycles',
        'runtime-room-budget',
        'runtime-room-schedule',
        'runtime-room-env',
        'runtime-room-step',
        'runtime-room-tree',
        'runtime-room-session',
        'runtime-room-agent',
        'runtime-room-known',
      ]) {
        expect(stdout).toContain(`error ${rule}:`);
      }
    },
    TOOL_TIMEOUT,
  );
});
