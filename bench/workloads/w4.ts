import type { AgentEvent } from '../../src/protocol/index.js';
import { naiveLoop } from '../baselines/naive-xstate.js';
import { plainLoop, toolTable } from '../baselines/plain-loop.js';
import { drainModel, streamingModel, streamingText } from '../fixtures.js';
import { troupe } from '../impls.js';
import { check, timed, type Workload } from '../workload.js';

const NO_TOOLS = toolTable([]);

interface StreamSize {
  deltas: number;
  chars: number;
}

const texts = new Map<string, string>();
function textFor({ deltas, chars }: StreamSize): string {
  const key = `${deltas}x${chars}`;
  let text = texts.get(key);
  if (text === undefined) {
    text = streamingText(deltas, chars);
    texts.set(key, text);
  }
  return text;
}

/** Collects deltas as a UI would: counts them and keeps the text. */
class DeltaSink {
  deltas = 0;
  private readonly parts: string[] = [];

  add(delta: string): void {
    this.deltas++;
    this.parts.push(delta);
  }

  check(size: StreamSize, expected: string, merged = false): void {
    const text = this.parts.join('');
    check(text.length === expected.length, `expected ${expected.length} characters, got ${text.length}`);
    check(text === expected, 'the streamed text differs from the model text');
    if (!merged) check(this.deltas === size.deltas, `expected ${size.deltas} deltas, got ${this.deltas}`);
  }
}

export const W4: Workload<StreamSize> = {
  id: 'W4',
  title: 'streaming',
  unit: 'deltas/s',
  better: 'higher',
  sizes: { full: { deltas: 50_000, chars: 4 }, smoke: { deltas: 50, chars: 4 } },
  describe: ({ deltas, chars }) => `one model call streaming ${deltas} text deltas of ${chars} characters; latency 0`,
  figure: (run, { deltas }) => deltas / (run.ms / 1000),
  runs: { warmup: 2, measured: 9 },
  targets: [
    { impl: 'troupe.on', baseline: 'plain', bound: 'min', ratio: 0.4 },
    { impl: 'troupe.stream', baseline: 'plain', bound: 'min', ratio: 0.4 },
  ],
  labels: { 'troupe.on': "Troupe, agent.on('message_update')", 'troupe.stream': 'Troupe, agent.stream()' },
  notes: ({ impl, facts }) =>
    impl === 'troupe.stream' && facts.events !== undefined
      ? [
          `all characters arrived in order in ${facts.events} message_update events (the stream merges ` +
            'consecutive deltas only when its reader falls behind).',
        ]
      : [],
  impls: {
    async 'troupe.on'(size) {
      const { createAgent } = await troupe();
      const expected = textFor(size);
      const agent = createAgent({ model: streamingModel(expected, size.chars) });
      const sink = new DeltaSink();
      agent.on('message_update', (event) => {
        if (event.delta.type === 'text') sink.add(event.delta.delta);
      });
      const { ms, cpuMs, value: result } = await timed(() => agent.prompt('go'));
      await agent.stop();
      check(result.stopReason === 'completed', `expected stopReason completed, got ${result.stopReason}`);
      sink.check(size, expected);
      return { ms, cpuMs };
    },
    async 'troupe.stream'(size) {
      const { createAgent } = await troupe();
      const expected = textFor(size);
      const agent = createAgent({ model: streamingModel(expected, size.chars) });
      const sink = new DeltaSink();
      let last: AgentEvent | undefined;
      const { ms, cpuMs } = await timed(async () => {
        for await (const event of agent.stream('go')) {
          if (event.type === 'message_update' && event.delta.type === 'text') sink.add(event.delta.delta);
          last = event;
        }
      });
      await agent.stop();
      check(last?.type === 'turn_end' && last.stopReason === 'completed', 'expected the stream to end with turn_end');
      // The stream may merge consecutive deltas when its reader falls behind (bounded buffering): every
      // character must arrive, in order; how many events carried them is reported.
      sink.check(size, expected, true);
      return { ms, cpuMs, facts: { events: sink.deltas } };
    },
    async plain(size) {
      const expected = textFor(size);
      const sink = new DeltaSink();
      const options = { maxSteps: 1, onTextDelta: (delta: string) => sink.add(delta) };
      const { ms, cpuMs } = await timed(() => plainLoop(streamingModel(expected, size.chars), NO_TOOLS, 'go', options));
      sink.check(size, expected);
      return { ms, cpuMs };
    },
    async naive(size) {
      const expected = textFor(size);
      const sink = new DeltaSink();
      const options = { maxSteps: 1, onTextDelta: (delta: string) => sink.add(delta) };
      const { ms, cpuMs } = await timed(() => naiveLoop(streamingModel(expected, size.chars), NO_TOOLS, 'go', options));
      sink.check(size, expected);
      return { ms, cpuMs };
    },
    async model(size) {
      const expected = textFor(size);
      const { ms, cpuMs, value: events } = await timed(() => drainModel(streamingModel(expected, size.chars)));
      check(events === size.deltas + 1, `expected ${size.deltas + 1} model events, got ${events}`);
      return { ms, cpuMs };
    },
  },
};
