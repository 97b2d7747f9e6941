/** What a function part of the system prompt is given when it is evaluated (at the start of each turn). */
export interface SystemPartContext {
  agentId: string;
  turn: number;
  /** Reports a problem worth a person's attention (a file past its size budget) as a `context_warning` event. */
  warn(message: string): void;
}

/**
 * A piece of the system prompt: static text, or a function evaluated at the start of each turn (the date, the
 * working directory, a listing, live state). A function that returns nothing (`undefined`, `''`) leaves its part out.
 */
export type SystemPart = string | ((context: SystemPartContext) => string | undefined | Promise<string | undefined>);

/** An agent's `system`: one string, or parts joined by blank lines in their order. */
export type SystemPrompt = string | readonly SystemPart[];

const SEPARATOR = '\n\n';

/**
 * An agent's system prompt, made from parts at the start of each turn. A prompt of static parts is joined once;
 * function parts are evaluated once per turn, and the text is rebuilt only when one of them changed, so a prompt
 * whose text did not change is the same string turn after turn (and a provider's prompt cache stays warm: the
 * functions should return the same text for the same state). A part that throws keeps its last good text, and the
 * failure is reported as a warning.
 */
export class SystemPromptParts {
  private readonly parts: readonly SystemPart[];
  private readonly values: (string | undefined)[];
  private readonly dynamic: boolean;
  private text: string | undefined;
  private turn = Number.NaN;

  constructor(
    prompt: SystemPrompt | undefined,
    private readonly warn: (message: string) => void,
  ) {
    this.parts = prompt === undefined ? [] : typeof prompt === 'string' ? [prompt] : [...prompt];
    for (const part of this.parts) {
      if (typeof part !== 'string' && typeof part !== 'function') {
        throw new TypeError(`system: each part must be a string or a function, not ${describe(part)}`);
      }
    }
    this.values = this.parts.map((part) => (typeof part === 'string' ? part : undefined));
    this.dynamic = this.parts.some((part) => typeof part === 'function');
    this.text = join(this.values);
    this.fixed = join(this.parts.map((part) => (typeof part === 'string' ? part : '(function)')));
  }

  /** The prompt's text for the turn being prepared (the last one made). */
  get current(): string | undefined {
    return this.text;
  }

  /**
   * The parts the code sets, with each function part as a placeholder (its text is the agent's state, not code):
   * what a replay compares with its recording.
   */
  readonly fixed: string | undefined;

  /** True when `refresh` must run before the first request of `turn`. */
  isStale(turn: number): boolean {
    return this.dynamic && turn !== this.turn;
  }

  /**
   * Evaluates the function parts for `turn`: synchronously when every part answers at once, else a promise. The
   * returned text is the same string as before when nothing changed.
   */
  refresh(agentId: string, turn: number): string | undefined | Promise<string | undefined> {
    this.turn = turn;
    const context: SystemPartContext = { agentId, turn, warn: this.warn };
    let pending: Promise<void>[] | undefined;
    let changed = false;
    for (let i = 0; i < this.parts.length; i++) {
      const part = this.parts[i];
      if (typeof part !== 'function') continue;
      const take = (value: unknown) => {
        const text = typeof value === 'string' && value !== '' ? value : undefined;
        if (text !== this.values[i]) {
          this.values[i] = text;
          changed = true;
        }
      };
      const fail = (error: unknown) =>
        this.warn(`system part ${i + 1} failed, its last text is kept: ${message(error)}`);
      try {
        const value = part(context);
        if (isThenable(value)) {
          pending ??= [];
          pending.push(Promise.resolve(value).then(take, fail));
        } else take(value);
      } catch (error) {
        fail(error);
      }
    }
    const finish = () => {
      if (changed) this.text = join(this.values);
      return this.text;
    };
    return pending ? Promise.all(pending).then(finish) : finish();
  }
}

function join(values: readonly (string | undefined)[]): string | undefined {
  let text: string | undefined;
  for (const value of values)
    if (value !== undefined && value !== '') text = text === undefined ? value : text + SEPARATOR + value;
  return text;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

function message(error: unknown): string {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return 'an unprintable value';
  }
}

function describe(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}
