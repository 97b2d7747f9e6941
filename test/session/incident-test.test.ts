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
const system = 'You answer briefly.';

let fixture: string;
beforeAll(async () => {
  const dir = tempDir();
  const manager = sessions({ dir });
  const session = manager.create({ id: 'incident', agentId: 'root' });
  const model = scriptedModel([{ toolCalls: [{ name: 'lookup', args: { word: 'hello' } }] }, { text: 'it greets' }]);
  const agent = createAgent({ model, system, tools: [lookup], policy: allow, session });
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
    const replays = await replaySessionAsTest(fixture, { tools: [lookup], policy: allow, system });
    expect(replays.map((r) => r.agentId)).toEqual(['root']);
  });

  it('passes when the recorded tool is now only on a subagent profile', async () => {
    const replays = await replaySessionAsTest(fixture, {
      tools: [],
      policy: allow,
      system,
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
    const error = await divergence(replaySessionAsTest(fixture, { tools: [lookup], policy: deny, system }));
    expect(error).toMatchObject({ agentId: 'root', turn: 1, kind: 'result' });
    expect(error.message).toMatch(/^agent "root", turn 1, step 1: a tool returned a different result\n/);
    expect(error.expected).toContain('"k":"tool_start","name":"lookup"');
    expect(error.actual).toContain('Permission denied: not any more');
  });

  it('journals digests of the prompt parts, never their text', () => {
    const start = fixture.split('\n').find((line) => line.includes('"turn_start"')) ?? '';
    expect(JSON.parse(start).p).toMatchObject({ system: expect.any(String), tools: { lookup: expect.any(Object) } });
    expect(fixture).not.toContain('You answer briefly.');
    expect(fixture).not.toContain('looks a word up');
  });

  it('the system prompt changed: the named divergence', async () => {
    const error = await divergence(
      replaySessionAsTest(fixture, { tools: [lookup], policy: allow, system: 'You answer at length.' }),
    );
    expect(error).toMatchObject({ agentId: 'root', turn: 1, step: 0, kind: 'prompt' });
    expect(error.message).toMatch(/^agent "root", turn 1, step 0: a prompt part differs\n {2}recorded: system /);
  });

  it("a tool's description changed: the named divergence", async () => {
    const described = defineTool({ ...lookup, description: 'finds what a word means' });
    const error = await divergence(replaySessionAsTest(fixture, { tools: [described], policy: allow, system }));
    expect(error).toMatchObject({ agentId: 'root', turn: 1, step: 0, kind: 'prompt' });
    expect(error.expected).toMatch(/^tool:lookup description /);
  });

  it("a tool's schema changed: the named divergence", async () => {
    const reshaped = defineTool({ ...lookup, schema: z.object({ word: z.string(), lang: z.string().optional() }) });
    const error = await divergence(replaySessionAsTest(fixture, { tools: [reshaped], policy: allow, system }));
    expect(error).toMatchObject({ agentId: 'root', turn: 1, step: 0, kind: 'prompt' });
    expect(error.expected).toMatch(/^tool:lookup schema /);
    expect(error.actual).toMatch(/^tool:lookup schema /);
    expect(error.actual).not.toBe(error.expected);
  });

  it('a journal written before prompts were digested replays as before', async () => {
    const old = fixture
      .split('\n')
      .map((line) => (line.includes('"turn_start"') ? JSON.stringify({ ...JSON.parse(line), p: undefined }) : line))
      .join('\n');
    expect(old).not.toContain('"p":');
    const replays = await replaySessionAsTest(old, { tools: [lookup], policy: allow, system: 'changed' });
    expect(replays.map((r) => r.agentId)).toEqual(['root']);
  });
});
