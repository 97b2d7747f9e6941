import type { Message } from '../../src/protocol/index.js';
import type { PiResult } from '../baselines/pi-agent.js';
import { FINAL_TEXT, type ToolCounter } from '../fixtures.js';
import { check } from '../workload.js';

/** What every tool loop answers: Troupe's RunResult and the baselines' LoopResult both have it. */
interface Answer {
  messages: readonly Message[];
  text: string;
}

/** A tool loop ran every call and ended with the final text, with `messages` in its history. */
export function loopCheck(result: Answer, counter: ToolCounter, calls: number, messages: number): void {
  check(counter.calls === calls, `expected ${calls} tool calls executed, got ${counter.calls}`);
  check(result.messages.length === messages, `expected ${messages} messages, got ${result.messages.length}`);
  check(result.text === FINAL_TEXT, `expected the final text "${FINAL_TEXT}", got "${result.text}"`);
}

/** The same for pi-agent-core, whose transcript has one `toolResult` message per call. */
export function piCheck(result: PiResult, counter: ToolCounter, calls: number, steps: number): void {
  check(counter.calls === calls, `expected ${calls} tool calls executed, got ${counter.calls}`);
  const assistants = result.roles.filter((role) => role === 'assistant').length;
  check(assistants === steps + 1, `expected ${steps + 1} assistant messages, got ${assistants}`);
  check(result.resultIds.length === calls, `expected ${calls} tool results, got ${result.resultIds.length}`);
  check(result.text === FINAL_TEXT, `expected the final text "${FINAL_TEXT}", got "${result.text}"`);
}

/** Every subagent of a swarm answered with the final text, and every tool call ran. */
export function swarmCheck(texts: readonly string[], counter: ToolCounter, agents: number, calls: number): void {
  check(texts.length === agents, `expected ${agents} results, got ${texts.length}`);
  const wrong = texts.filter((text) => text !== FINAL_TEXT).length;
  check(wrong === 0, `${wrong} of ${agents} subagent results are missing or wrong`);
  check(counter.calls === calls, `expected ${calls} tool calls executed, got ${counter.calls}`);
}
