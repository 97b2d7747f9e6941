import { describe, expect, it } from 'vitest';
import { hostedAgent } from '../../src/host/index.js';
import { createAgent, type Message, type ModelRequest, scriptedModel } from '../../src/index.js';
import { notificationMessage } from '../../src/protocol/index.js';

// The seam a host that delivers background results itself (troupe/restate's `notify`) opens an agent's turn with:
// the machine's NOTIFY, so the message is stored as a notification, the agent's wakeOnNotification holds, and a
// turn it opens is awaited like a prompt's.

const note = notificationMessage('t1', 'root/t1', 'completed', 'the answer is 42');
const userTexts = (messages: readonly Message[]) =>
  messages.flatMap((m) =>
    m.role === 'user' ? [`${m.source}: ${m.content.map((p) => ('text' in p ? p.text : '')).join('')}`] : [],
  );

function recording() {
  const requests: ModelRequest[] = [];
  const model = scriptedModel((request) => {
    requests.push(request);
    return { text: `answer ${requests.length}` };
  });
  return { requests, model };
}

describe('hostedAgent(agent).notify', () => {
  it('opens a turn on an idle agent that wakes, stored as a notification, and returns its result', async () => {
    const { requests, model } = recording();
    const agent = createAgent({ model });
    const turn = hostedAgent(agent).notify([note]);
    expect(turn).toBeDefined();
    const result = await turn;
    expect(result).toMatchObject({ stopReason: 'completed', text: 'answer 1' });
    expect(result?.messages[0]).toEqual(note);
    expect(agent.messages[0]).toEqual(note);
    expect(userTexts(requests[0]?.messages ?? [])).toEqual([
      `notification: ${note.content[0]?.type === 'text' ? note.content[0].text : ''}`,
    ]);
    await agent.stop();
  });

  it.each([
    ['on an idle agent that does not wake', { wakeOnNotification: false }, {}],
    ['with wake: false even on an agent that wakes', {}, { wake: false }],
  ] as const)(
    'opens no turn %s: the notification joins the next turn at its first step',
    async (_, config, options) => {
      const { requests, model } = recording();
      const agent = createAgent({ model, ...config });
      expect(hostedAgent(agent).notify([note], options)).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(requests).toHaveLength(0);
      expect(agent.messages).toEqual([]);
      const next = await agent.prompt('what now?');
      // The prompt opens the turn, the notification joins its first step boundary: one model call sees both.
      expect(requests).toHaveLength(1);
      expect(userTexts(next.messages)).toEqual([
        'prompt: what now?',
        expect.stringMatching(/^notification: <notification /),
      ]);
      expect(next.messages[1]).toEqual(note);
      await agent.stop();
    },
  );

  it('joins a running turn at its next step boundary, opening no turn of its own', async () => {
    const { requests, model } = recording();
    const agent = createAgent({ model });
    const running = agent.prompt('hello');
    expect(hostedAgent(agent).notify([note])).toBeUndefined();
    const result = await running;
    expect(userTexts(result.messages)).toEqual(['prompt: hello', expect.stringMatching(/^notification: /)]);
    expect(requests).toHaveLength(2);
    await agent.stop();
  });
});

// Its twin for a steer that opens a hosted turn (troupe/restate's `steered` fallback and follow-ups): the message is
// stored as `agent.steer()` stores it, and the turn it opens is awaited like a prompt's.
describe('hostedAgent(agent).steer', () => {
  it('opens a turn on an idle agent, stored as a steer, and returns its result', async () => {
    const { requests, model } = recording();
    const agent = createAgent({ model });
    const result = await hostedAgent(agent).steer('hello');
    expect(result).toMatchObject({ stopReason: 'completed', text: 'answer 1' });
    expect(userTexts(result?.messages ?? [])).toEqual(['steer: hello']);
    expect(userTexts(agent.messages)).toEqual(['steer: hello']);
    expect(requests).toHaveLength(1);
    await agent.stop();
  });

  it('joins a running turn at its next step boundary, opening no turn of its own', async () => {
    const { requests, model } = recording();
    const agent = createAgent({ model });
    const running = agent.prompt('hello');
    expect(hostedAgent(agent).steer('also tea')).toBeUndefined();
    const result = await running;
    expect(userTexts(result.messages)).toEqual(['prompt: hello', 'steer: also tea']);
    expect(requests).toHaveLength(2);
    await agent.stop();
  });
});
