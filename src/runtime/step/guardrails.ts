import type { AgentInfo } from '../../permissions/index.js';
import { GuardrailTripped, textOf, toolCallsOf } from '../../protocol/index.js';
import type { Hooks } from '../env/hooks.js';

/** A check: the reason to stop the turn, or nothing to let it go on. May be async (e.g. a moderation call). */
export type Guardrail = (text: string, agent: AgentInfo) => string | undefined | Promise<string | undefined>;

export interface GuardrailOptions {
  /** Checks of each turn's input, before the first model call: a trip means no model call and no tool effect. */
  input?: readonly Guardrail[];
  /** Checks of each final answer (an answer without tool calls), before it joins the history. */
  output?: readonly Guardrail[];
}

/**
 * Input and output guardrails as hooks (`beforeTurn` and `afterModelCall`). A check that returns a reason ends the
 * turn with the stop reason `guardrail_tripped` and a {@link GuardrailTripped} error carrying that reason; a check
 * that throws or times out fails closed like any hook. Combine with other hooks by spreading, or list them.
 */
export function guardrails(options: GuardrailOptions): Hooks {
  const hooks: Hooks = {};
  const input = options.input ?? [];
  const output = options.output ?? [];
  if (input.length > 0) {
    hooks.beforeTurn = async (messages, agent) => {
      const text = messages.map((message) => textOf(message)).join('\n');
      for (const check of input) {
        const reason = await check(text, agent);
        if (reason !== undefined) throw new GuardrailTripped(reason);
      }
    };
  }
  if (output.length > 0) {
    hooks.afterModelCall = async (message, agent) => {
      if (toolCallsOf(message).length > 0) return undefined;
      const text = textOf(message);
      for (const check of output) {
        const reason = await check(text, agent);
        if (reason !== undefined) throw new GuardrailTripped(reason);
      }
      return undefined;
    };
  }
  return hooks;
}
