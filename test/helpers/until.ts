/**
 * Polls `read` until `done` holds, and returns the last reading either way, so that the test's own assertion says
 * what was seen. For what follows an event a test cannot observe (a worker's state, another process, a log line):
 * at most `tries` readings, `everyMs` apart; the default (30 s) is generous for a loaded CI machine.
 */
export async function until<T>(
  read: () => T | Promise<T>,
  done: (value: T) => boolean,
  { everyMs = 25, tries = 1_200 }: { everyMs?: number; tries?: number } = {},
): Promise<T> {
  let value = await read();
  for (let i = 1; i < tries && !done(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, everyMs));
    value = await read();
  }
  return value;
}

/** Polls `condition` as {@link until} does, and throws, naming `what`, when it never held. */
export async function waitUntil(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  if (!(await until(condition, (held) => held))) throw new Error(`gave up waiting for ${what}`);
}
