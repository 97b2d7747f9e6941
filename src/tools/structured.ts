import type { z } from 'zod';
import { describeThrown } from './output.js';
import { describeIssues } from './registry.js';

export type StructuredAnswer = { ok: true; value: unknown } | { ok: false; feedback: string };

/**
 * Reads a structured final answer: JSON (a code fence around it is tolerated, as models add one even when told
 * not to) that the schema parses. A failure is worded for the model, which gets it back as feedback.
 */
export function parseStructuredAnswer(text: string, schema: z.ZodType): StructuredAnswer {
  let json: unknown;
  try {
    json = JSON.parse(stripCodeFence(text));
  } catch (error) {
    return {
      ok: false,
      feedback: `Your final answer must be only a JSON object matching the schema, but it is not valid JSON (${describeThrown(error)}). Reply again with the JSON object alone.`,
    };
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return { ok: true, value: parsed.data };
  return {
    ok: false,
    feedback: `Your final answer does not match the schema:\n${describeIssues(parsed.error)}\nReply again with the corrected JSON object alone.`,
  };
}

function stripCodeFence(text: string): string {
  const fenced = /^\s*```(?:json)?\s*([\s\S]*?)\s*```\s*$/.exec(text);
  return fenced?.[1] ?? text.trim();
}
