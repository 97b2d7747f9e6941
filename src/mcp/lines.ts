/**
 * Newline-delimited messages from a byte stream, each at most `max` bytes. A longer line is not kept: it is
 * skipped to its end with only its first and last bytes remembered, so that the reply it was can still be
 * answered (its request id sits at one end: `{"jsonrpc":"2.0","id":…` or `…,"id":7}`). The SDK's own buffer
 * throws from inside the stream's data handler instead, which ends the process.
 */
const EDGE = 256;

export interface Oversized {
  /** Its length in bytes. */
  bytes: number;
  /** The request id the line answers, when one of its ends says. */
  id: string | number | undefined;
}

export class LineReader {
  private chunks: Buffer[] = [];
  private size = 0;
  private skipped: { head: Buffer; tail: Buffer; bytes: number } | undefined;

  constructor(
    private readonly max: number,
    private readonly onLine: (line: string) => void,
    private readonly onOversized: (line: Oversized) => void,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(10, start);
      this.take(newline === -1 ? chunk.subarray(start) : chunk.subarray(start, newline));
      if (newline === -1) return;
      this.endLine();
      start = newline + 1;
    }
  }

  clear(): void {
    this.chunks = [];
    this.size = 0;
    this.skipped = undefined;
  }

  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    const skipped = this.skipped;
    if (skipped) {
      skipped.bytes += piece.length;
      skipped.tail = lastBytes(skipped.tail, piece);
      return;
    }
    if (this.size + piece.length <= this.max) {
      this.chunks.push(piece);
      this.size += piece.length;
      return;
    }
    const all = [...this.chunks, piece];
    const head = Buffer.from(Buffer.concat(edge(all)).subarray(0, EDGE));
    const tail = Buffer.concat(edge(all.reverse()).reverse());
    this.skipped = {
      head,
      tail: Buffer.from(tail.subarray(Math.max(0, tail.length - EDGE))),
      bytes: this.size + piece.length,
    };
    this.chunks = [];
    this.size = 0;
  }

  private endLine(): void {
    const skipped = this.skipped;
    if (skipped) {
      this.skipped = undefined;
      this.onOversized({ bytes: skipped.bytes, id: idAtEnds(skipped.head.toString(), skipped.tail.toString()) });
      return;
    }
    if (this.size === 0) return;
    const line = Buffer.concat(this.chunks, this.size).toString('utf8').replace(/\r$/, '');
    this.chunks = [];
    this.size = 0;
    if (line.trim() !== '') this.onLine(line);
  }
}

/** The first pieces that hold EDGE bytes. */
function edge(pieces: Buffer[]): Buffer[] {
  const out: Buffer[] = [];
  let bytes = 0;
  for (const piece of pieces) {
    out.push(piece);
    bytes += piece.length;
    if (bytes >= EDGE) break;
  }
  return out;
}

function lastBytes(tail: Buffer, piece: Buffer): Buffer {
  if (piece.length >= EDGE) return Buffer.from(piece.subarray(piece.length - EDGE));
  const both = Buffer.concat([tail, piece]);
  return both.length > EDGE ? both.subarray(both.length - EDGE) : both;
}

const ID = String.raw`("(?:[^"\\]|\\.)*"|-?\d+)`;
const ID_FIRST = new RegExp(String.raw`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*${ID}`);
const ID_LAST = new RegExp(String.raw`"id"\s*:\s*${ID}\s*\}\s*$`);

function idAtEnds(head: string, tail: string): string | number | undefined {
  const found = ID_FIRST.exec(head)?.[1] ?? ID_LAST.exec(tail)?.[1];
  if (found === undefined) return undefined;
  try {
    return JSON.parse(found) as string | number;
  } catch {
    return undefined;
  }
}
