import { describe, expect, it } from 'vitest';
import { ModelError } from '../../src/index.js';
import { classifyError } from '../../src/providers/index.js';
import { lazyClient, strictSchema } from '../../src/providers/shared.js';

describe('strictSchema (OpenAI strict mode)', () => {
  it('closes objects whose properties are all required, nested ones and $defs included', () => {
    const schema = {
      type: 'object',
      properties: {
        tags: { type: 'array', items: { type: 'object', properties: { k: { type: 'string' } }, required: ['k'] } },
        mode: { enum: ['a', 'b'], default: 'a' },
        ref: { $ref: '#/$defs/point' },
      },
      required: ['tags', 'mode', 'ref'],
      $defs: { point: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] } },
    };
    expect(strictSchema(schema)).toEqual({
      type: 'object',
      properties: {
        tags: {
          type: 'array',
          items: {
            type: 'object',
            properties: { k: { type: 'string' } },
            required: ['k'],
            additionalProperties: false,
          },
        },
        mode: { enum: ['a', 'b'], default: 'a' },
        ref: { $ref: '#/$defs/point' },
      },
      required: ['tags', 'mode', 'ref'],
      $defs: {
        point: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'], additionalProperties: false },
      },
      additionalProperties: false,
    });
    expect(strictSchema({ type: 'object' })).toEqual({
      type: 'object',
      additionalProperties: false,
      properties: {},
      required: [],
    });
  });

  it('has no strict version for optional fields, open objects or unsupported keywords', () => {
    expect(strictSchema({ type: 'object', properties: { a: { type: 'string' } } })).toBeUndefined();
    expect(strictSchema({ type: 'object', properties: {}, additionalProperties: true })).toBeUndefined();
    expect(strictSchema({ type: 'object', properties: {}, additionalProperties: { type: 'string' } })).toBeUndefined();
    expect(strictSchema({ type: 'object', properties: {}, patternProperties: { '^x': {} } })).toBeUndefined();
    expect(
      strictSchema({
        type: 'object',
        properties: { a: { anyOf: [{ type: 'string' }, { not: { type: 'null' } }] } },
        required: ['a'],
      }),
    ).toBeUndefined();
    expect(strictSchema({ type: 'object', properties: [] as never })).toBeUndefined();
    // Property names are not keywords.
    expect(strictSchema({ type: 'object', properties: { not: { type: 'string' } }, required: ['not'] })).toBeDefined();
  });
});

describe('classifyError', () => {
  const ctx = { provider: 'p', label: 'P' };

  it('keeps ModelErrors, and an aborted signal wins', () => {
    const error = new ModelError({ code: 'rate_limit', message: 'x' });
    expect(classifyError(ctx, error)).toBe(error);
    const controller = new AbortController();
    controller.abort();
    expect(classifyError(ctx, new Error('whatever'), controller.signal).code).toBe('aborted');
  });

  it('a body cut mid-read is network_error; unparsable data is bad_response; the rest unknown', () => {
    expect(classifyError(ctx, new TypeError('terminated'))).toMatchObject({ code: 'network_error', retryable: true });
    expect(classifyError(ctx, new SyntaxError('Unexpected token'))).toMatchObject({
      code: 'bad_response',
      retryable: false,
    });
    expect(classifyError(ctx, new Error('odd'))).toMatchObject({ code: 'unknown', message: 'P: odd' });
    expect(classifyError(ctx, 'a string')).toMatchObject({ code: 'unknown', message: 'P: a string' });
  });
});

describe('lazyClient', () => {
  const peer = { name: 'openai', feature: 'openai()' } as const;
  it('makes the client on the first call and shares it; a given client is used as it is', async () => {
    let made = 0;
    const get = lazyClient<{ n: number }>(peer, undefined, async () => ({ n: ++made }));
    expect(made).toBe(0);
    const [a, b] = await Promise.all([get(), get()]);
    expect(a).toBe(b);
    expect(made).toBe(1);
    const given = { n: 0 };
    const none = lazyClient(peer, given, async () => ({ n: -1 }));
    expect(await none()).toBe(given);
  });

  it('a make that throws at once (no API key) fails that call only', async () => {
    let key: string | undefined;
    const get = lazyClient(peer, undefined, () => {
      if (!key) throw new Error('no key');
      return Promise.resolve({ key });
    });
    expect(() => get()).toThrow('no key');
    key = 'k';
    expect(await get()).toEqual({ key: 'k' });
  });
});
