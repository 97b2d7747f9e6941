import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CANCELLED_TEXT,
  type FinishedAgents,
  finishAgent,
  INTERRUPTED_TEXT,
  JOINED_TEXT,
  notificationDelivery,
  resumeRefused,
  taskEnd,
} from '../../src/protocol/index.js';

// What a cancel and a notification decide is written once, in src/protocol/supervision.ts, and both hosts decide by
// it: the embedded supervisor's machines and runtime, and the Restate host (through `troupe/host`). The scenarios
// (this folder) show that the hosts agree; this shows where the decision lives.

const root = join(import.meta.dirname, '../..');
const source = (path: string) => readFileSync(join(root, path), 'utf8');
/** The names a module imports from any module whose path ends with one of `from`. */
const imported = (path: string, from: string[]) =>
  [...source(path).matchAll(/import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*'([^']+)'/g)]
    .filter(([, , module]) => from.some((end) => module?.endsWith(end)))
    .flatMap(([, names]) => (names ?? '').split(',').map((name) => name.trim().replace(/^type\s+/, '')));
const PROTOCOL = ['protocol/index.js'];
const HOST = ['host/index.js'];

describe('a task ended from outside', () => {
  it('reports the same status and hand-off on every host, by why it was ended', () => {
    expect(taskEnd('joined')).toEqual({ status: 'cancelled', text: JOINED_TEXT });
    expect(taskEnd('cancelled')).toEqual({ status: 'cancelled', text: CANCELLED_TEXT });
    expect(taskEnd('interrupted')).toEqual({ status: 'interrupted', text: INTERRUPTED_TEXT });
    expect(taskEnd('stopped')).toEqual({ status: 'interrupted', text: INTERRUPTED_TEXT });
  });

  it.each([
    ['machines/supervisor/batch/chart.ts', PROTOCOL],
    ['machines/supervisor/batch/setup.ts', PROTOCOL],
    ['src/runtime/tree/effects.ts', PROTOCOL],
    ['src/restate/swarm.ts', HOST],
    ['src/restate/task-book.ts', HOST],
  ])('%s decides it with taskEnd', (path, from) => {
    expect(imported(path, from)).toContain('taskEnd');
  });

  it('is spelled nowhere else on Restate', () => {
    for (const path of ['swarm.ts', 'task-book.ts', 'subagents.ts', 'subagent-tasks.ts', 'agent-object.ts']) {
      const text = source(`src/restate/${path}`);
      expect(text, path).not.toMatch(/CANCELLED_TEXT|INTERRUPTED_TEXT|JOINED_TEXT/);
      expect(text, path).not.toMatch(/status: '(cancelled|interrupted)'/);
    }
  });
});

describe('a notification', () => {
  it('joins a running turn, wakes an idle agent that wakes for it, or waits for its next turn', () => {
    expect(notificationDelivery({ running: true, wakes: true })).toBe('step');
    expect(notificationDelivery({ running: true, wakes: false })).toBe('step');
    expect(notificationDelivery({ running: false, wakes: true })).toBe('wake');
    expect(notificationDelivery({ running: false, wakes: false })).toBe('hold');
  });

  it.each([
    ['machines/agent/guards.ts', PROTOCOL],
    ['src/runtime/agent/agent.ts', PROTOCOL],
    ['src/restate/subagent-tasks.ts', HOST],
  ])('%s decides where it goes with notificationDelivery', (path, from) => {
    expect(imported(path, from)).toContain('notificationDelivery');
  });

  it("is delivered into a hosted turn by the agent's own decision, never by reading its actor", () => {
    for (const path of ['agent-object.ts', 'control.ts', 'subagent-tasks.ts']) {
      expect(source(`src/restate/${path}`), path).not.toMatch(/\.actor\b|getSnapshot\(/);
    }
    expect(source('src/restate/agent-object.ts')).toMatch(/\.delivery\(\) !== 'step'/);
  });
});

describe('what a parent keeps of its finished subagents', () => {
  const limits = { keepFinished: 1, keepHistory: 2 };
  const none: FinishedAgents = { kept: [], archived: [] };
  const finish = (ids: string[]) => ids.reduce((agents, id) => finishAgent(agents, id, true, limits).after, none);

  it('keeps the last keepFinished alive and the last keepHistory let go; the rest is forgotten', () => {
    const agents = finish(['a', 'b', 'c']);
    expect(agents).toEqual({ kept: ['c'], archived: ['a', 'b'] });
    expect(finishAgent(agents, 'd', true, limits)).toEqual({
      after: { kept: ['d'], archived: ['b', 'c'] },
      released: ['c'],
      forgotten: ['a'],
    });
    // A cancelled child is stopped with its task: archived at once.
    expect(finishAgent(agents, 'x', false, limits).after).toEqual({ kept: ['c'], archived: ['b', 'x'] });
    expect(finishAgent(agents, 'x', false, limits).forgotten).toEqual(['a']);
  });

  it.each([
    ['src/runtime/tree/kept.ts', PROTOCOL, 'keepIn'],
    ['src/runtime/tree/history-archive.ts', PROTOCOL, 'keepIn'],
    ['src/runtime/tree/tree.ts', PROTOCOL, 'resumeRefused'],
    ['src/restate/finished-agents.ts', HOST, 'finishAgent'],
    ['src/restate/subagents.ts', HOST, 'resumeRefused'],
  ])('%s decides it with %s', (path, from, name) => {
    expect(imported(path, from)).toContain(name);
  });

  it('refuses a resume with the same texts on every host', () => {
    expect(resumeRefused('a/b', 'unknown')).toBe('No finished subagent "a/b" is known (it may be too old to resume)');
    for (const path of ['src/runtime/tree/tree.ts', 'src/restate/subagents.ts']) {
      expect(source(path), path).not.toMatch(/too old to resume|is not one of your subagents/);
    }
  });
});

describe("a failed task's batch", () => {
  it.each([
    ['machines/supervisor/batch/setup.ts', PROTOCOL],
    ['src/restate/swarm.ts', HOST],
  ])('%s decides who restarts, resumes, stops or escalates with failureVerdict', (path, from) => {
    expect(imported(path, from)).toContain('failureVerdict');
  });

  it.each([
    ['machines/supervisor/batch/chart.ts', PROTOCOL],
    ['src/restate/swarm.ts', HOST],
  ])('%s ends the tasks an escalation stops with escalatedEnd', (path, from) => {
    expect(imported(path, from)).toContain('escalatedEnd');
  });

  it.each([
    ['src/runtime/tree/effects.ts', PROTOCOL],
    ['src/restate/subagents.ts', HOST],
  ])("%s ends the owner's turn with escalationError", (path, from) => {
    expect(imported(path, from)).toContain('escalationError');
  });

  it.each([
    ['src/runtime/tree/effects.ts', PROTOCOL],
    ['src/restate/agent-object.ts', HOST],
  ])('%s classes a failed turn with failureClassOf', (path, from) => {
    expect(imported(path, from)).toContain('failureClassOf');
  });
});
