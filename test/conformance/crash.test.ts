import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { until } from '../helpers/until.js';
import { expectValidHistory, notificationsOf } from '../restate/fixtures/histories.js';
import { restateWithKills } from './crash-host.js';
import { type Host, hostsWith } from './hosts.js';
import { resetLog, toolTexts } from './script.js';

// The scenarios that a host must survive a crash in: on Restate the worker is killed (SIGKILL) at the moment the
// scenario chooses and another takes its place; embedded, nothing dies, and the same assertions hold. What ran is
// read from the tools' log, which outlives a worker: every call that finished ran once, whatever the kills.

const hosts = hostsWith(restateWithKills, 'restate, its worker killed', 'embedded (no process to kill: parity only)');

const plain = (text: string) => text.replace(/(task_id|agent_id)="[^"]*"/g, '$1="…"');

describe.each(hosts)('%s', (_name, start) => {
  let host: Host;
  beforeAll(async () => {
    host = await start();
  }, 90_000);
  afterAll(() => host?.close());
  beforeEach(resetLog);

  /** Resolves once the tools' log has `line`. */
  const executed = (line: string) =>
    until(
      async () => host.executed(),
      (lines) => lines.includes(line),
    );
  const finished = (prefix: string) =>
    host
      .executed()
      .filter((line) => line.startsWith('ran ') && line.includes(prefix))
      .sort();

  it('killed during a slow call: the turn goes on, and each finished call ran once', async () => {
    const turn = await host.send('kill-1', '#slowcount k1');
    await executed('start slow k1');
    await host.crash();
    expect(await turn.outcome).toMatchObject({
      stopReason: 'completed',
      text: 'saw 3 results: counted 0, slow k1 done, counted 2',
    });
    expect(finished('')).toEqual(['ran count 0', 'ran count 2', 'ran slow k1']);
    expectValidHistory(await host.history('kill-1'));
  }, 60_000);

  it("killed while a foreground batch runs: the batch's results are the same", async () => {
    const turn = await host.send(
      'kill-2',
      `#swarm ${JSON.stringify({ tasks: [{ prompt: 'slow f1' }, { prompt: 'count f2' }] })}`,
    );
    await executed('start slow f1');
    await host.crash();
    expect((await turn.outcome).text).toBe('joined');
    expect(plain(toolTexts(await host.history('kill-2'))[0] ?? '')).toBe(
      '<result task_id="…" agent_id="…" status="completed">did f1 slowly</result>\n' +
        '<result task_id="…" agent_id="…" status="completed">did f2</result>',
    );
    expect(finished('f')).toEqual(['ran count f2', 'ran slow f1']);
  }, 60_000);

  it('killed while background children run: each result reaches the root exactly once', async () => {
    await host.prompt('kill-3', '#background ["slow b1", "slow b2"]');
    await executed('start slow b1');
    await executed('start slow b2');
    await host.crash();
    const history = await until(
      () => host.history('kill-3'),
      (h) => notificationsOf(h).length >= 2 && h.at(-1)?.role === 'assistant',
    );
    expect(notificationsOf(history).map(plain).sort()).toEqual([
      '<notification task_id="…" agent_id="…" status="completed">did b1 slowly</notification>',
      '<notification task_id="…" agent_id="…" status="completed">did b2 slowly</notification>',
    ]);
    // A prompt after them: nothing more was on its way.
    await host.prompt('kill-3', 'anything else?');
    expect(notificationsOf(await host.history('kill-3'))).toHaveLength(2);
    expect(finished('slow b')).toEqual(['ran slow b1', 'ran slow b2']);
  }, 60_000);

  it("killed during a oneForAll restart's backoff: the batch restarts each task once and ends once", async () => {
    const swarm = { strategy: 'oneForAll', tasks: [{ prompt: 'hold a5' }, { prompt: 'trip b5 start_block_a5' }] };
    const turn = await host.send('slowre-5', `#swarm ${JSON.stringify(swarm)}`);
    // b5 failed and a5's run was cancelled with it: both wait out the 3 s backoff, during which the worker dies.
    await executed('aborted block a5');
    await host.crash();
    expect(await turn.outcome).toMatchObject({ stopReason: 'completed', text: 'joined' });
    const history = await host.history('slowre-5');
    expectValidHistory(history);
    expect(toolTexts(history).map(plain)).toEqual([
      '<result task_id="…" agent_id="…" status="completed">did a5 again</result>\n' +
        '<result task_id="…" agent_id="…" status="completed">recovered b5</result>',
    ]);
    const lines = host.executed();
    expect(lines.filter((line) => line.startsWith('rerun ')).sort()).toEqual(['rerun a5', 'rerun b5']);
    expect(lines.filter((line) => line === 'asked trip b5' || line === 'start block a5')).toEqual([
      'start block a5',
      'asked trip b5',
    ]);
  }, 60_000);

  it('killed while a call waits for approval: the answer given afterwards runs it once', async () => {
    const turn = await host.send('kill-4', '#deploy k4');
    const asked = await host.approval('kill-4', 'deploy');
    await host.crash();
    expect(await asked.answer(true)).toBe(true);
    expect((await turn.outcome).text).toBe('deploy answered: deployed k4');
    expect(finished('deploy')).toEqual(['ran deploy k4']);
  }, 60_000);
});
