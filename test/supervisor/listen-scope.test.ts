import { describe, expect, it } from 'vitest';
import { type AgentEvent, createAgent, createSupervisor } from '../../src/index.js';
import { emptyUsage } from '../../src/protocol/index.js';
import { EventBus } from '../../src/runtime/env/bus.js';
import { TreeRegistry } from '../../src/runtime/tree/registry.js';
import { TreeUsage } from '../../src/runtime/tree/usage.js';
import { router } from './helpers.js';

/** Each agent whose first prompt is `A` or `B` starts one subagent (`a-child` / `b-child`), then answers. */
const family = () =>
  router(({ prompt, answers }) => {
    if ((prompt === 'A' || prompt === 'B') && answers === 0) {
      return { toolCalls: [{ name: 'agent', args: { prompt: `${prompt.toLowerCase()}-child` } }] };
    }
    return { text: `${prompt} done` };
  });

/** The agent ids of the turn ends a listener heard, in order. */
function turnEnds(on: (type: 'turn_end', listener: (event: AgentEvent) => void) => () => void): string[] {
  const heard: string[] = [];
  on('turn_end', (event) => heard.push(event.agentId));
  return heard;
}

describe('agent.on hears this agent; the subtree only when asked', () => {
  it("two agents of one supervisor: each hears its own turns, never its sibling's; the supervisor hears all", async () => {
    const supervisor = createSupervisor({ model: family() });
    const a = supervisor.agent({ id: 'a' });
    const b = supervisor.agent({ id: 'b' });
    const aHeard = turnEnds((type, fn) => a.on(type, fn));
    const bHeard = turnEnds((type, fn) => b.on(type, fn));
    const aTree = turnEnds((type, fn) => a.on(type, fn, { subtree: true }));
    const all = turnEnds((type, fn) => supervisor.on(type, fn));
    await Promise.all([a.prompt('A'), b.prompt('B')]);
    expect(aHeard).toEqual(['a']);
    expect(bHeard).toEqual(['b']);
    // a's subtree: a and the subagent a started (whose turn ends first), not b nor b's subagent.
    expect(aTree).toHaveLength(2);
    expect(aTree[1]).toBe('a');
    const aChild = aTree[0] as string;
    expect(supervisor.get(aChild)?.messages[0]).toMatchObject({ content: [{ type: 'text', text: 'a-child' }] });
    // The supervisor: all four turns, b's subagent's too.
    expect(all).toHaveLength(4);
    expect(new Set(all).size).toBe(4);
    expect(all).toEqual(expect.arrayContaining(['a', 'b', aChild]));
    await supervisor.stop();
  });

  it('a root agent with subagents hears its own events; with { subtree: true } every level below it', async () => {
    const model = router(({ prompt, answers }) => {
      if (prompt === 'ROOT' && answers === 0) return { toolCalls: [{ name: 'agent', args: { prompt: 'mid' } }] };
      if (prompt === 'mid' && answers === 0) return { toolCalls: [{ name: 'agent', args: { prompt: 'leaf' } }] };
      return { text: `${prompt} done` };
    });
    const root = createAgent({ model, id: 'root', subagents: {} });
    const own = turnEnds((type, fn) => root.on(type, fn));
    const ownAll: AgentEvent[] = [];
    root.on('*', (event) => ownAll.push(event));
    const subtree = turnEnds((type, fn) => root.on(type, fn, { subtree: true }));
    await root.prompt('ROOT');
    expect(own).toEqual(['root']);
    expect(ownAll.length).toBeGreaterThan(0);
    expect(ownAll.every((event) => event.agentId === 'root')).toBe(true);
    // What its own listener hears of its subagents is its own bookkeeping of them.
    expect(ownAll.filter((event) => event.type === 'subagent_start')).toHaveLength(1);
    expect(subtree).toHaveLength(3);
    expect(subtree.at(-1)).toBe('root');
    await root.stop();
  });

  it("a subagent's handle hears that subagent, and with { subtree: true } its own subagents", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const model = router(async ({ prompt, answers }) => {
      if (prompt === 'ROOT' && answers === 0) return { toolCalls: [{ name: 'agent', args: { prompt: 'mid' } }] };
      if (prompt === 'mid' && answers === 0) {
        await gate;
        return { toolCalls: [{ name: 'agent', args: { prompt: 'leaf' } }] };
      }
      return { text: `${prompt} done` };
    });
    const root = createAgent({ model, id: 'root', subagents: { keepFinished: 4 } });
    const started = new Promise<string>((resolve) => root.on('subagent_start', (event) => resolve(event.childId)));
    const done = root.prompt('ROOT');
    const midId = await started;
    const mid = root.subagent(midId);
    expect(mid).toBeDefined();
    const midOwn = turnEnds((type, fn) => mid?.on(type, fn) ?? (() => {}));
    const midTree = turnEnds((type, fn) => mid?.on(type, fn, { subtree: true }) ?? (() => {}));
    release();
    await done;
    expect(midOwn).toEqual([midId]);
    expect(midTree).toHaveLength(2);
    expect(midTree).not.toContain('root');
    expect(midTree.at(-1)).toBe(midId);
    await root.stop();
  });
});

describe('the bus keeps one agent’s listeners by agent', () => {
  it('delivers to an agent’s listeners only its events, after the bus-wide ones, and forgets them when they go', () => {
    const bus = new EventBus();
    const order: string[] = [];
    const offA = bus.on('turn_start', (event) => order.push(`a:${event.agentId}`), 'a');
    bus.on('turn_start', (event) => order.push(`all:${event.agentId}`));
    expect(bus.wants('turn_end')).toBe(false);
    const offEnd = bus.on('turn_end', () => order.push('a:end'), 'a');
    expect(bus.wants('turn_end')).toBe(true);
    bus.publish({ agentId: 'a', turn: 1, step: 0 }, { type: 'turn_start', inputId: 'i1' });
    bus.publish({ agentId: 'b', turn: 1, step: 0 }, { type: 'turn_start', inputId: 'i2' });
    expect(order).toEqual(['all:a', 'a:a', 'all:b']);
    offEnd();
    offEnd();
    expect(bus.wants('turn_end')).toBe(false);
    offA();
    bus.publish({ agentId: 'a', turn: 2, step: 0 }, { type: 'turn_start', inputId: 'i3' });
    expect(order).toEqual(['all:a', 'a:a', 'all:b', 'all:a']);
    // Nobody listens to b's deltas: the delta is not even built.
    bus.publishDelta({ agentId: 'b', turn: 1, step: 1 }, { type: 'text', delta: 'x' });
    bus.on('message_update', (event) => order.push(`b:${event.type}`), 'b');
    bus.publishDelta({ agentId: 'b', turn: 1, step: 1 }, { type: 'text', delta: 'x' });
    bus.publishDelta({ agentId: 'a', turn: 1, step: 1 }, { type: 'text', delta: 'y' });
    expect(order.at(-1)).toBe('b:message_update');
    expect(order).toHaveLength(5);
  });
});

describe('the tree counts usage without a bus event per model answer', () => {
  it('wants no usage event of its agents, and still adds each answer to its total', () => {
    const bus = new EventBus();
    const usage = new TreeUsage(bus, new TreeRegistry(bus));
    // Nobody listens: an agent builds no usage event for its answers.
    expect(bus.wants('usage')).toBe(false);
    const answer = { ...emptyUsage(), input: 3, output: 2 };
    bus.countUsage?.('a', answer);
    bus.countUsage?.('b', answer);
    expect(usage.total).toMatchObject({ input: 6, output: 4 });
  });
});
