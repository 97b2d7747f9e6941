/**
 * An incident as a test: a recorded session (a journal kept as a fixture) runs against the current code; an
 * unchanged build passes, and a deliberate change (a tool renamed, a permission rule flipped) fails with the first
 * divergence named: which agent, turn and step, and what differed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent, defineTool, type Policy, scriptedModel, sessions } from '../../src/index.js';
import { replaySessionAsTest, SessionDivergence } from '../../src/testing/index.js';
import { cleanTempDirs, tempDir } from './helpers.js';

cleanTempDirs();

const lookup = defineTool({
  name: 'lookup',
  description: 'looks a word up',
  schema: z.object({ word: z.string() }),
  execute: ({ word }) => `${word}: a greeting`,
});
const allow: Policy = () => 'allow';

let fixture: string;
beforeAll(async () => {
  const dir = tempDir();
  const manager = sessions({ dir });
  const session = manager.create({ id: 'incident', agentId: 'root' });
  const model = scriptedModel([{ toolCalls: [{ name: 'lookup', args: { word: 'hello' } }] }, { text: 'it greets' }]);
  const agent = createAgent({ model, tools: [lookup], policy: allow, session });
  await agent.prompt('what is hello?');
  await session.idle();
  session.close();
  await agent.stop();
  fixture = readFileSync(join(dir, 'incident.jsonl'), 'utf8');
});

async function divergence(run: Promise<unknown>): Promise<SessionDivergence> {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof SessionDivergence)) throw new Error(`expected a divergence, got ${String(error)}`);
  return error;
}

describe('replaySessionAsTest: a recorded session as a test of the current code', () => {
  it('passes on an unchanged build', async () => {
    const replays = await replaySessionAsTest(fixture, { tools: [lookup], policy: allow });
    expect(replays.map((r) => r.agentId)).toEqual(['root']);
  });

  it('passes when the recorded tool is now only on a subagent profile', async () => {
    const replays = await replaySessionAsTest(fixture, {
      tools: [],
      policy: allow,
      subagents: { profiles: { helper: { tools: [lookup] } } },
    });
    expect(replays.map((r) => r.agentId)).toEqual(['root']);
  });

  it('a tool renamed: the named divergence', async () => {
    const renamed = defineTool({ ...lookup, name: 'define' });
    const error = await divergence(replaySessionAsTest(fixture, { tools: [renamed], policy: allow }));
    expect(error).toMatchObject({ agentId: 'root', turn: 1, step: 1, kind: 'tool' });
    expect(error.message).toMatch(/^agent "root", turn 1, step 1: a different tool was called\n/);
    expect(error.actual).toBe('no tool "lookup" now');
  });

  it('a permission rule flipped: the named divergence', async () => {
    const deny: Policy = () => ({ decision: 'deny', reason: 'not any more' });
    const error = await divergence(replaySessionAsTest(fixture, { tools: [lookup], policy: deny }));
    expect(error).toMatchObject({ agentId: 'root', turn: 1, kind: 'result' });
    expect(error.message).toMatch(/^agent "root", turn 1, step 1: a tool returned a different result\n/);
    expect(error.expected).toContain('"k":"tool_start","name":"lookup"');
    expect(error.actual).toContain('Permission denied: not any more');
  });
});
