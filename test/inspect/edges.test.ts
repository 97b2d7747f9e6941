/** The inspector's refusals and corner cases: malformed commands, odd machines, closed doors. */
import { request } from 'node:http';
import { describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import { and, assign, createMachine, not, or, setup } from 'xstate';
import { connectInspector, startInspectorServer } from '../../src/index.js';
import { toMermaid, toStudioJSON, transitionList } from '../../src/inspect/export.js';
import { isLoopbackHost, parseCommand } from '../../src/inspect/protocol.js';
import { latch } from '../agent/helpers.js';

describe('page commands', () => {
  const good = { type: 'command', id: 'c1', run: 'r1', sessionId: 'x:1', command: 'DENY', toolCallId: 't1' };
  it('accepts a well-formed approve or deny, with an optional reason', () => {
    expect(parseCommand(JSON.stringify(good))).toEqual(good);
    expect(parseCommand(JSON.stringify({ ...good, reason: 'no' }))?.reason).toBe('no');
  });
  it('accepts the controls, each with the fields it needs', () => {
    const base = { type: 'command', id: 'c2', run: 'r1', sessionId: 'x:1' };
    const ok = [
      { ...base, command: 'STEER', text: 'look again' },
      { ...base, command: 'INTERRUPT' },
      { ...base, command: 'CANCEL_TASK', taskId: 'task_1' },
      { ...base, command: 'CANCEL_BATCH', batchId: 'batch_1' },
      { ...base, command: 'RESUME', text: 'one more thing', agentId: 'default_1' },
    ];
    for (const command of ok) expect(parseCommand(JSON.stringify(command)), command.command).toEqual(command);
    for (const bad of [
      { ...base, command: 'STEER' },
      { ...base, command: 'STEER', text: '   ' },
      { ...base, command: 'STEER', text: 'x'.repeat(20_001) },
      { ...base, command: 'CANCEL_TASK' },
      { ...base, command: 'CANCEL_BATCH', batchId: '' },
      { ...base, command: 'RESUME', text: 'go', agentId: 3 },
      { ...base, command: 'APPROVE' },
    ]) {
      expect(parseCommand(JSON.stringify(bad)), JSON.stringify(bad)).toBeUndefined();
    }
  });

  it('refuses anything else', () => {
    for (const bad of [
      'not json',
      'null',
      '42',
      JSON.stringify({ ...good, type: 'other' }),
      JSON.stringify({ ...good, command: 'STOP' }),
      JSON.stringify({ ...good, run: 'has space' }),
      JSON.stringify({ ...good, id: 'x'.repeat(101) }),
      JSON.stringify({ ...good, id: 7 }),
      JSON.stringify({ ...good, sessionId: 1 }),
      JSON.stringify({ ...good, sessionId: 'x'.repeat(201) }),
      JSON.stringify({ ...good, toolCallId: null }),
      JSON.stringify({ ...good, toolCallId: 'x'.repeat(501) }),
      JSON.stringify({ ...good, reason: 5 }),
      JSON.stringify({ ...good, reason: 'x'.repeat(2001) }),
    ]) {
      expect(parseCommand(bad), bad.slice(0, 60)).toBeUndefined();
    }
  });
  it('knows the loopback names', () => {
    expect(['127.0.0.1', 'localhost', '::1', '[::1]'].every(isLoopbackHost)).toBe(true);
    expect(isLoopbackHost('10.0.0.1')).toBe(false);
  });
});

describe('statechart export of other shapes', () => {
  const machine = setup({
    guards: { ready: () => true },
    actions: { note: () => {} },
  }).createMachine({
    id: 'shapes',
    type: 'parallel',
    states: {
      left: {
        initial: 'a',
        description: 'the left region',
        states: {
          a: {
            on: {
              GO: { target: 'b', guard: 'ready', actions: ['note', assign({})], reenter: true },
              INLINE: { target: 'b', guard: () => true, actions: () => {} },
            },
          },
          b: { type: 'final' },
        },
      },
      right: { on: { PING: { actions: 'note' } }, exit: 'note', entry: [() => {}] },
    },
  });

  it('draws parallel regions, final states, inline guards and actions', () => {
    const mermaid = toMermaid(machine);
    expect(mermaid).toContain('state "left" as shapes_left {');
    expect(mermaid).toContain('shapes_left_b --> [*]');
    expect(mermaid).toContain('shapes_left_a --> shapes_left_b: GO [ready] / note, xstate.assign');
    // An inline function is named after its property (`guard`), or `inline` when it has no name.
    expect(mermaid).toContain('shapes_left_a --> shapes_left_b: INLINE [guard] / actions');
    expect(mermaid).toContain('shapes_right --> shapes_right: PING / note');
    const json = toStudioJSON(machine) as { type: string; states: Record<string, Record<string, unknown>> };
    expect(json.type).toBe('parallel');
    expect(json.states.left?.description).toBe('the left region');
    expect(json.states.right?.exit).toEqual(['note']);
    expect(json.states.right?.entry).toEqual(['inline']);
    const left = json.states.left as { states: Record<string, { on: Record<string, unknown[]> }> };
    const go = left.states.a?.on.GO?.[0];
    expect(go).toEqual({
      target: ['#shapes.left.b'],
      guard: 'ready',
      actions: ['note', 'xstate.assign'],
      reenter: true,
    });
    const list = transitionList(machine);
    expect(list.find((t) => t.event === 'INLINE')?.actions).toEqual(['actions']);
  });

  it('prints a composite guard by its parts and a transition with its action names', () => {
    const composite = setup({
      guards: { a: () => true, b: () => true, c: () => true },
      actions: { note: () => {}, tally: () => {} },
    }).createMachine({
      id: 'g',
      initial: 'x',
      states: {
        x: {
          on: {
            BOTH: { target: 'y', guard: and(['a', 'b']), actions: ['note', 'tally'] },
            EITHER: { target: 'y', guard: or(['a', not('b')]) },
            NESTED: { target: 'y', guard: and(['a', or(['b', 'c'])]), actions: { type: 'note', params: {} } },
            NEITHER: { guard: not(and(['a', 'b'])), actions: 'tally' },
          },
        },
        y: {},
      },
    });
    const mermaid = toMermaid(composite);
    expect(mermaid).toContain('g_x --> g_y: BOTH [a ∧ b] / note, tally');
    expect(mermaid).toContain('g_x --> g_y: EITHER [a ∨ ¬b]\n');
    expect(mermaid).toContain('g_x --> g_y: NESTED [a ∧ (b ∨ c)] / note');
    expect(mermaid).toContain('g_x --> g_x: NEITHER [¬(a ∧ b)] / tally');
    expect(mermaid).not.toContain('[and]');
    const json = toStudioJSON(composite) as { states: { x: { on: Record<string, Array<{ guard?: string }>> } } };
    expect(json.states.x.on.BOTH?.[0]?.guard).toBe('a ∧ b');
    expect(transitionList(composite).map((t) => t.guard)).toEqual(['a ∧ b', 'a ∨ ¬b', 'a ∧ (b ∨ c)', '¬(a ∧ b)']);
  });

  it('leaves out a root transition that stays in place, and draws a targeted one from every top-level state', () => {
    const rooted = createMachine({
      id: 'r',
      initial: 'a',
      on: { RESET: '.a', NOTE: { actions: () => {} } },
      states: { a: { on: { NEXT: 'b' } }, b: {} },
    });
    const mermaid = toMermaid(rooted);
    expect(mermaid).toContain('r_b --> r_a: RESET');
    expect(mermaid).not.toContain('r_a --> r_a: RESET');
    expect(mermaid).not.toContain('NOTE');
  });
});

describe('closed doors', () => {
  function get(port: number, path: string) {
    return new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path, headers: { host: `127.0.0.1:${port}` } }, (res) => {
        let body = '';
        res.on('data', (chunk) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  function raw(port: number, method: string, host: string) {
    return new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method, path: '/', headers: { host } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('refuses other methods, upgrades to another host, and connects only with a ws:// loopback url', async () => {
    const server = await startInspectorServer();
    try {
      expect(await raw(server.port, 'POST', `127.0.0.1:${server.port}`)).toBe(405);
      const refused = latch<number>();
      const ws = new WebSocket(`ws://127.0.0.1:${server.port}/inspect?token=${server.token}`, {
        headers: { host: `attacker.example:${server.port}` },
      });
      ws.once('unexpected-response', (_req, res) => refused.resolve(res.statusCode ?? 0));
      ws.once('error', () => {});
      expect(await refused.promise).toBe(421);
      await expect(connectInspector({ url: `http://127.0.0.1:${server.port}/?token=x` })).rejects.toThrow(/ws:\/\//);
      const saved = process.env.TROUPE_INSPECT;
      delete process.env.TROUPE_INSPECT;
      await expect(connectInspector()).rejects.toThrow(/no url/);
      if (saved !== undefined) process.env.TROUPE_INSPECT = saved;
    } finally {
      await server.close();
    }
    await expect(connectInspector({ url: server.connectUrl })).rejects.toThrow(/Cannot reach/);
  });

  it('keeps frames for pages that open later, drops what is not JSON, and replaces a run’s control channel', async () => {
    const server = await startInspectorServer({ token: 't', maxFrames: 2 });
    const base = `ws://127.0.0.1:${server.port}`;
    const open = (url: string, headers: Record<string, string> = {}) =>
      new Promise<WebSocket>((resolve, reject) => {
        const ws = new WebSocket(url, { headers });
        ws.once('open', () => resolve(ws));
        ws.once('error', reject);
      });
    try {
      const program = await open(`${base}/inspect?token=t`);
      program.send('not json');
      program.send(Buffer.from([1, 2, 3]));
      const first = await open(`${base}/control?token=t&run=r1`);
      const firstClosed = latch<number>();
      first.once('close', (code) => firstClosed.resolve(code));
      const second = await open(`${base}/control?token=t&run=r1`);
      expect(await firstClosed.promise).toBe(4000);
      second.send('garbage');
      second.send(Buffer.from([0]));
      second.send(JSON.stringify({ type: 'ack', id: 'a1', ok: false, error: 'nope' }));
      const origin = { origin: `http://127.0.0.1:${server.port}` };
      // A first page sees the frames live; once the last is there, a later page gets the kept ones replayed.
      const early = await open(`${base}/ui?token=t`, origin);
      const seenLast = latch();
      early.on('message', (data) => {
        const message = JSON.parse(data.toString()) as { type: string; frame?: { n?: number } };
        if (message.type === 'frame' && message.frame?.n === 3) seenLast.resolve();
      });
      for (const n of [1, 2, 3]) program.send(JSON.stringify({ type: '@xstate.event', sessionId: 'x:0', n }));
      await seenLast.promise;
      // Listening from the start: the replay may arrive in the same packet as the handshake.
      const messages: Array<Record<string, unknown>> = [];
      const ack = latch();
      const page = new WebSocket(`${base}/ui?token=t`, { headers: origin });
      page.on('message', (data) => {
        const message = JSON.parse(data.toString()) as Record<string, unknown>;
        messages.push(message);
        if (message.type === 'ack') ack.resolve();
      });
      await new Promise((resolve) => page.once('open', resolve));
      const frames = messages.filter((m) => m.type === 'frame').map((m) => (m.frame as { n: number }).n);
      expect(frames).toEqual([2, 3]);
      // A program cannot answer a command nobody sent; a page's command reaches the run under the server's own id,
      // and its answer comes back to every page, to the sender under the sender's id.
      second.send(JSON.stringify({ type: 'ack', id: 'forged', ok: true }));
      const received = latch<Record<string, unknown>>();
      second.once('message', (data) => received.resolve(JSON.parse(data.toString()) as Record<string, unknown>));
      const command = { type: 'command', id: 'mine-1', run: 'r1', sessionId: 'x:0', command: 'INTERRUPT' };
      page.send(JSON.stringify(command));
      const forwarded = await received.promise;
      expect(forwarded).toMatchObject({ command: 'INTERRUPT', run: 'r1', sessionId: 'x:0' });
      expect(forwarded.id).not.toBe('mine-1');
      const earlyAck = latch<Record<string, unknown>>();
      early.on('message', (data) => {
        const message = JSON.parse(data.toString()) as Record<string, unknown>;
        if (message.type === 'ack') earlyAck.resolve(message);
      });
      second.send(JSON.stringify({ type: 'ack', id: forwarded.id, ok: false, error: 'agent gone', detail: 7 }));
      await ack.promise;
      const acks = messages.filter((m) => m.type === 'ack');
      expect(acks).toEqual([
        { type: 'ack', id: 'mine-1', run: 'r1', ok: false, error: 'agent gone', command, mine: true },
      ]);
      expect(await earlyAck.promise).toEqual({
        type: 'ack',
        id: 'mine-1',
        run: 'r1',
        ok: false,
        error: 'agent gone',
        command,
      });
      // The first paint's replay over HTTP: the kept frames and the answered command, and where the live stream
      // picks up; a page that opens its socket from there gets nothing twice.
      const replay = JSON.parse((await get(server.port, '/frames?token=t')).body) as {
        next: number;
        messages: Array<Record<string, unknown>>;
      };
      expect(replay.messages.map((m) => m.type)).toEqual(['hello', 'frame', 'ack']);
      expect(replay.next).toBe(4);
      expect((await get(server.port, '/frames?token=nope')).status).toBe(403);
      const late: Array<Record<string, unknown>> = [];
      const latePage = new WebSocket(`${base}/ui?token=t&since=${replay.next - 1}`, { headers: origin });
      const lateAck = latch();
      latePage.on('message', (data) => {
        const message = JSON.parse(data.toString()) as Record<string, unknown>;
        late.push(message);
        if (message.type === 'ack') lateAck.resolve();
      });
      await lateAck.promise;
      expect(late.map((m) => m.type)).toEqual(['hello', 'ack']);
      // A command still in flight when its run disconnects is answered for it.
      const again = latch<Record<string, unknown>>();
      second.once('message', () => second.close());
      page.on('message', (data) => {
        const message = JSON.parse(data.toString()) as Record<string, unknown>;
        if (message.type === 'ack' && message.id === 'mine-2') again.resolve(message);
      });
      page.send(JSON.stringify({ ...command, id: 'mine-2' }));
      expect(await again.promise).toMatchObject({ ok: false, error: 'the run disconnected' });
      latePage.close();
      page.send(Buffer.from([1]));
      for (const ws of [program, second, page, early]) ws.close();
    } finally {
      await server.close();
    }
  });

  it('the bin runs a command from its argv', async () => {
    const saved = process.argv;
    const lines: string[] = [];
    const log = console.log;
    console.log = (line: string) => lines.push(line);
    // A command that finished exits with its code (a run may leave a reader or a timer behind): caught here.
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
    try {
      process.argv = ['node', 'troupe', 'help'];
      await import('../../src/cli/index.js');
      await vi.waitFor(() => expect(exit).toHaveBeenCalled());
      expect(exit).toHaveBeenCalledWith(0);
    } finally {
      process.argv = saved;
      console.log = log;
      exit.mockRestore();
    }
    expect(lines[0]).toMatch(/^Usage: troupe <command>/);
  });
});
