import type { Message } from '../protocol/index.js';

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

  since(index: number): Message[] {
    return this.log.slice(index);
  }
}
