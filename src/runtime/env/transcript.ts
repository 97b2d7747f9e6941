import { type AssistantContent, jsonCopy, type Message } from '../../protocol/index.js';

/** An agent's history: append-only, owned by the runtime, never copied per transition. */
export class Transcript {
  private readonly log: Message[];

  constructor(initial: readonly Message[] = []) {
    this.log = [...initial];
  }

  get length(): number {
    return this.log.length;
  }

  /** The live log, for requests and readers that must not pay for a copy. Do not mutate it. */
  get messages(): readonly Message[] {
    return this.log;
  }

  append(message: Message): void {
    this.log.push(message);
  }

  /** Every tool-call id the history holds, kept up to date as it grows (the log is only ever appended to). */
  callIds(): ReadonlySet<string> {
    const { ids, log } = this;
    for (; this.scanned < log.length; this.scanned++) {
      const message = log[this.scanned] as Message;
      if (message.role !== 'assistant') continue;
      const { content } = message;
      for (let i = 0; i < content.length; i++) {
        const part = content[i] as AssistantContent;
        if (part.type === 'tool_call') ids.add(part.id);
      }
    }
    return ids;
  }

  private readonly ids = new Set<string>();
  private scanned = 0;

  /**
   * A deep, JSON-safe copy of the messages from `index` on: what callers get (`agent.messages`, a turn's result),
   * so that editing it never edits the history the model sees next.
   */
  since(index = 0): Message[] {
    const out: Message[] = [];
    for (let i = Math.max(0, index); i < this.log.length; i++) out.push(jsonCopy(this.log[i]) as unknown as Message);
    return out;
  }
}
