/**
 * Terminal colours for the examples, only where they help: on a terminal, and not when NO_COLOR is set. Piped
 * output (a log file, CI, `| less`) gets plain text instead of escape codes.
 */
const colour = process.stdout.isTTY === true && !process.env.NO_COLOR;

const paint =
  (code: number) =>
  (text: string): string =>
    colour ? `\x1b[${code}m${text}\x1b[0m` : text;

export const dim = paint(2);
export const green = paint(32);
export const yellow = paint(33);
