import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  collectInstructions,
  instructionDirs,
  projectInstructions,
  SystemPromptParts,
} from '../../src/context/index.js';
import { type AgentEvent, createAgent, defineTool, scriptedModel } from '../../src/index.js';
import { loadSkills, skillsIndex } from '../../src/tools/index.js';
import { record, resultText, toolResults } from '../agent/helpers.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-prompt-test-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('a system prompt from parts', () => {
  it('joins static parts once, evaluates functions once per turn, and keeps the same string while nothing changed', async () => {
    let calls = 0;
    let mood = 'calm';
    const warnings: string[] = [];
    const prompt = new SystemPromptParts(['You are terse.', () => (calls++, `Mood: ${mood}`), () => undefined], (m) =>
      warnings.push(m),
    );
    expect(prompt.isStale(1)).toBe(true);
    const first = prompt.refresh('a', 1);
    expect(first).toBe('You are terse.\n\nMood: calm');
    expect(prompt.isStale(1)).toBe(false);
    const again = prompt.refresh('a', 2);
    expect(again).toBe(first);
    mood = 'busy';
    expect(prompt.refresh('a', 3)).toBe('You are terse.\n\nMood: busy');
    expect(calls).toBe(3);
    expect(new SystemPromptParts('plain', () => {}).isStale(1)).toBe(false);
    expect(() => new SystemPromptParts([42 as never], () => {})).toThrow(/string or a function/);
  });

  it('awaits async parts; a part that throws keeps its last text and says so', async () => {
    let fail = false;
    const warnings: string[] = [];
    const prompt = new SystemPromptParts(
      [
        async () => 'from disk',
        () => {
          if (fail) throw new Error('no listing');
          return 'listing v1';
        },
      ],
      (m) => warnings.push(m),
    );
    expect(await prompt.refresh('a', 1)).toBe('from disk\n\nlisting v1');
    fail = true;
    expect(await prompt.refresh('a', 2)).toBe('from disk\n\nlisting v1');
    expect(warnings).toEqual(['system part 2 failed, its last text is kept: no listing']);
  });

  it('through an agent: parts are evaluated at the start of each turn, the same text turn after turn', async () => {
    const seen: number[] = [];
    const model = scriptedModel((_, i) => (i === 0 ? { toolCalls: [{ name: 'noop' }] } : { text: `answer ${i}` }));
    const noop = defineTool({ name: 'noop', description: 'nothing', schema: z.object({}), execute: () => 'ok' });
    let branch = 'main';
    const agent = createAgent({
      model,
      tools: [noop],
      system: ['Be brief.', ({ turn }) => (seen.push(turn), `Branch: ${branch}`)],
    });
    await agent.prompt('one');
    await agent.prompt('two');
    branch = 'feature';
    await agent.prompt('three');
    // Once per turn, not per step: turn 1 had two model calls.
    expect(seen).toEqual([1, 2, 3]);
    const systems = model.requests.map((r) => r.system);
    expect(systems[0]).toBe('Be brief.\n\nBranch: main');
    expect(systems[1]).toBe(systems[0]);
    expect(systems[2]).toBe(systems[0]);
    expect(systems[3]).toBe('Be brief.\n\nBranch: feature');
    await agent.stop();
  });

  it('is re-sent whole after a compaction, never summarised', async () => {
    const big = 'word '.repeat(500);
    const model = scriptedModel((request) =>
      request.system?.startsWith('You are compacting')
        ? { text: 'I was answering questions.' }
        : { text: `answer ${big}` },
    );
    const rules = 'Project rule: never touch the migrations folder.';
    const agent = createAgent({ model, system: [rules, () => 'Today is Tuesday.'], context: { contextWindow: 4_000 } });
    const events = record(agent);
    for (let i = 0; i < 8; i++) await agent.prompt(`question ${i} ${big}`);
    expect(events.some((e) => e.type === 'compaction_end')).toBe(true);
    const last = model.requests.filter((r) => !r.system?.startsWith('You are compacting')).at(-1);
    expect(last?.system).toBe(`${rules}\n\nToday is Tuesday.`);
    // The summary call never saw the system prompt as something to summarise.
    const summaryCalls = model.requests.filter((r) => r.system?.startsWith('You are compacting'));
    expect(summaryCalls.length).toBeGreaterThan(0);
    for (const call of summaryCalls) expect(JSON.stringify(call.messages)).not.toContain('migrations');
    await agent.stop();
  });
});

describe('project instructions (AGENTS.md)', () => {
  it('walks from the home down to the working directory, outer first', () => {
    expect(instructionDirs('/home/u/code/app', '/home/u')).toEqual(['/home/u', '/home/u/code', '/home/u/code/app']);
    expect(instructionDirs('/srv/repo/pkg', '/home/u')).toEqual(['/home/u', '/', '/srv', '/srv/repo', '/srv/repo/pkg']);
    expect(instructionDirs('/home/u', '/home/u')).toEqual(['/home/u']);
  });

  it('collects the files, re-reads an edited one, and warns past the budget once per change', async () => {
    const home = tempDir();
    const app = join(home, 'code', 'app');
    mkdirSync(app, { recursive: true });
    writeFileSync(join(home, 'AGENTS.md'), 'Use British spelling.');
    writeFileSync(join(app, 'AGENTS.md'), 'Run npm test before you finish.');
    expect(collectInstructions({ cwd: app, home }).map((f) => f.text)).toEqual([
      'Use British spelling.',
      'Run npm test before you finish.',
    ]);
    const warnings: string[] = [];
    const part = projectInstructions({ cwd: app, home, maxChars: 60 });
    const context = { agentId: 'a', turn: 1, warn: (m: string) => warnings.push(m) };
    const first = (await part(context)) as string;
    expect(first.indexOf('British')).toBeLessThan(first.indexOf('npm test'));
    expect(first).toContain('<instructions file="AGENTS.md">');
    expect(warnings).toEqual([]);
    expect(await part(context)).toBe(first);
    const inner = join(app, 'AGENTS.md');
    writeFileSync(inner, 'Run npm test before you finish, and npm run check, every single time.');
    utimesSync(inner, new Date(), new Date(Date.now() + 5_000));
    const second = (await part(context)) as string;
    expect(second).toContain('npm run check');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/more than the 60 budget/);
    await part(context);
    expect(warnings).toHaveLength(1);
  });

  it('through an agent: the instructions are in every request and a warning is an event', async () => {
    const home = tempDir();
    writeFileSync(join(home, 'AGENTS.md'), 'x'.repeat(100));
    const model = scriptedModel([{ text: 'ok' }]);
    const agent = createAgent({ model, system: ['Hi.', projectInstructions({ cwd: home, home, maxChars: 10 })] });
    const events = record(agent);
    await agent.prompt('go');
    expect(model.requests[0]?.system).toContain('x'.repeat(100));
    expect(events.filter((e) => e.type === 'context_warning')).toHaveLength(1);
    await agent.stop();
  });
});

describe('skills', () => {
  function skillsDir(): string {
    const dir = tempDir();
    mkdirSync(join(dir, 'release'));
    writeFileSync(
      join(dir, 'release', 'SKILL.md'),
      '---\nname: release\ndescription: "How to cut a release: tags, changelog, npm publish"\n---\n\n# Release\n\n1. Bump the version.\n',
    );
    writeFileSync(join(dir, 'triage.md'), '# Triage incoming issues by label\n\nSteps…');
    writeFileSync(join(dir, 'notes.txt'), 'not a skill');
    return dir;
  }

  it('loads a folder: front matter or the first line describes each', () => {
    const skills = loadSkills(skillsDir());
    expect(skills.map(({ name, description }) => ({ name, description }))).toEqual([
      { name: 'release', description: 'How to cut a release: tags, changelog, npm publish' },
      { name: 'triage', description: 'Triage incoming issues by label' },
    ]);
    expect(skillsIndex(skills)).toContain('- triage: Triage incoming issues by label');
    expect(skillsIndex([])).toBeUndefined();
    expect(() => loadSkills(join(tmpdir(), 'no-such-troupe-dir'))).toThrow(/cannot read the folder/);
  });

  it('through an agent: the index is in the prompt, and the skill tool loads one on demand', async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'skill', args: { name: 'release' } },
          { name: 'skill', args: { name: 'deploy' } },
        ],
      },
      { text: 'released' },
    ]);
    const agent = createAgent({ model, system: 'You maintain a library.', skills: skillsDir() });
    const result = await agent.prompt('cut a release');
    const system = model.requests[0]?.system ?? '';
    expect(system.startsWith('You maintain a library.\n\nSkills:')).toBe(true);
    expect(system).toContain('- release: How to cut a release');
    expect(system).not.toContain('Bump the version');
    expect(model.requests[0]?.tools?.map((t) => t.name)).toEqual(['skill']);
    const [loaded, missing] = toolResults(result.messages);
    expect(resultText(loaded)).toContain('1. Bump the version.');
    expect(missing?.isError).toBe(true);
    expect(resultText(missing)).toContain('Skills: release, triage');
    await agent.stop();

    const listed = createAgent({
      model: scriptedModel([{ text: 'ok' }]),
      skills: [{ name: 'style', description: 'House style', text: 'Short sentences.' }],
    });
    expect(() => createAgent({ model, skills: [{ name: 'bad name', description: '', text: '' }] })).toThrow(
      /usable name/,
    );
    await listed.stop();
  });
});

describe('profiles extend profiles', () => {
  it('system parts of the base come first, tools are joined (same name replaces), the rest is overridden', async () => {
    const tool = (name: string, text: string) =>
      defineTool({ name, description: name, schema: z.object({}), execute: () => text });
    const base = {
      system: 'You work for ACME.',
      tools: [tool('search', 'base search'), tool('read', 'read')],
      maxSteps: 3,
    };
    const reviewer = { extends: base, system: ['You review code.'], tools: [tool('search', 'better search')] };
    const model = scriptedModel([{ toolCalls: [{ name: 'search' }] }, { text: 'ok' }]);
    const agent = createAgent({ model, extends: reviewer, system: 'Be kind.', maxSteps: 5 });
    const result = await agent.prompt('review');
    expect(model.requests[0]?.system).toBe('You work for ACME.\n\nYou review code.\n\nBe kind.');
    expect(model.requests[0]?.tools?.map((t) => t.name)).toEqual(['read', 'search']);
    expect(resultText(toolResults(result.messages)[0])).toBe('better search');
    await agent.stop();
    const loop: { extends?: unknown } = {};
    loop.extends = loop;
    expect(() => createAgent({ model, extends: loop as never })).toThrow(/cycle/);
  });
});

describe('subagent profiles extend profiles by name, or the parent', () => {
  it("a child's system parts come from the base profile first, and a cycle is refused", async () => {
    const { createSupervisor } = await import('../../src/index.js');
    const model = scriptedModel((request) => ({ text: request.system ?? 'no system' }));
    const supervisor = createSupervisor({
      model,
      profiles: {
        careful: { system: 'Check your work.', maxSteps: 4 },
        poet: { extends: 'careful', system: ['Rhyme.', () => 'In English.'] },
      },
    });
    const result = await supervisor.run('a verse', { profile: 'poet' });
    expect(result.text).toBe('Check your work.\n\nRhyme.\n\nIn English.');
    await supervisor.stop();
    expect(() => createSupervisor({ model, profiles: { a: { extends: 'b' }, b: { extends: 'a' } } })).toThrow(
      'Profiles extend each other in a cycle: a → b → a',
    );
    expect(() => createSupervisor({ model, profiles: { a: { extends: 'nope' } } })).toThrow(
      'Profile "a" extends "nope", which is not a profile',
    );
    expect(() => createSupervisor({ model, profiles: { parent: {} } })).toThrow(/cannot be named "parent"/);
  });

  it("a chain that ends in 'parent' builds on the agent that starts the child: its system, tools and settings", async () => {
    const tool = (name: string, text: string) =>
      defineTool({ name, description: name, schema: z.object({}), execute: () => text });
    const childModel = scriptedModel((request) =>
      request.messages.some((m) => m.role === 'tool')
        ? { text: 'checked' }
        : { toolCalls: [{ name: 'search' }, { name: 'lint' }] },
    );
    const model = scriptedModel((request) =>
      request.messages.some((m) => m.role === 'tool')
        ? { text: 'done' }
        : { toolCalls: [{ id: 'spawn', name: 'agent', args: { profile: 'reviewer', prompt: 'review it' } }] },
    );
    const agent = createAgent({
      model,
      system: ['You work for ACME.', () => 'Today is Monday.'],
      tools: [tool('search', 'parent search'), tool('read', 'read')],
      subagents: {
        profiles: {
          careful: { extends: 'parent', system: 'Check your work.', model: childModel, maxSteps: 3 },
          reviewer: { extends: 'careful', system: 'You review code.', tools: [tool('lint', 'lint ok')] },
        },
      },
    });
    const events: AgentEvent[] = [];
    agent.on('*', (event) => events.push(event), { subtree: true });
    const result = await agent.prompt('go');
    expect(result.text).toBe('done');
    // The child's requests went to the base profile's model, with the parent's parts first, then each profile's.
    const first = childModel.requests[0];
    expect(first?.system).toBe('You work for ACME.\n\nToday is Monday.\n\nCheck your work.\n\nYou review code.');
    // The parent's tools (and its subagent tools), plus the profile's own.
    expect(first?.tools?.map((t) => t.name).sort()).toEqual(
      ['agent', 'lint', 'read', 'search', 'swarm', 'task_cancel', 'task_status'].sort(),
    );
    const childResults = events
      .filter((e) => e.type === 'tool_execution_end' && e.agentId !== agent.id)
      .map((e) => (e.type === 'tool_execution_end' ? resultText(e.result) : ''));
    expect(childResults.sort()).toEqual(['lint ok', 'parent search']);
    expect(resultText(toolResults(result.messages)[0])).toContain('checked');
    await agent.stop();
  });
});
