import {
  type AssistantMessage,
  type Message,
  type Model,
  ModelError,
  type ModelRequest,
  type ToolCallPart,
  textOf,
  toModelError,
  type UserMessage,
} from '../protocol/index.js';
import { estimateMessage, estimateText } from './tokens.js';

/**
 * Where the verbatim tail starts: the earliest index after `from` whose suffix fits in `keepTokens`, never a tool
 * message (a tail that opened with results would have cut them from their calls). When not even the last
 * exchange fits, the tail is the last safe index. Undefined when there is nothing before a safe index to summarise.
 */
export function chooseCut(messages: readonly Message[], from: number, keepTokens: number): number | undefined {
  let cut: number | undefined;
  let kept = 0;
  for (let i = messages.length - 1; i > from; i--) {
    const message = messages[i] as Message;
    kept += estimateMessage(message);
    if (kept > keepTokens && cut !== undefined) break;
    if (message.role !== 'tool') cut = i;
  }
  return cut;
}

const SUMMARY_SYSTEM = [
  'You are compacting your own working memory. The conversation you are shown will be replaced by the note you',
  'write now, and you will continue the work from that note alone. Write it in the first person ("The user asked',
  'me…", "I ran…"), in the language the conversation is in. Keep, verbatim: every file path, command, URL,',
  'identifier (task ids, agent ids, issue numbers) and number that matters. Cover: what was asked (the user’s',
  'own requirements), what I did and found, what was decided and why, what is still open and what I was about to',
  'do next. No preamble, no closing remarks.',
].join(' ');

export interface SummaryInput {
  model: Model;
  /** The messages the note replaces (a previous note among them, if any), in order. */
  messages: readonly Message[];
  window: number;
  maxTokens: number;
  /** Provider tokens per estimated token (see ContextEngine). */
  scale: number;
  signal: AbortSignal;
}

export interface SummaryOutcome {
  text: string;
  /** Messages left out of the summary call because even shortened they would not fit. */
  dropped: number;
}

/** Tool results are shortened this far, step by step, before older messages are dropped. */
const RESULT_CAPS = [2_000, 200];
/** Then the oldest messages are dropped by these shares. */
const DROP_SHARES = [0.5, 0.75, 0.9];

/**
 * Asks the model for the continuation note. If the call itself would not fit (by estimate, or the provider says
 * so), it falls back in steps: shorter tool results, then dropping the oldest messages by a growing share. The
 * steps are finite, so it never loops; when none fits, the note only says how much was dropped.
 */
export async function summarize(input: SummaryInput): Promise<SummaryOutcome> {
  const budget = input.window - input.maxTokens - (estimateText(SUMMARY_SYSTEM) + 64) * input.scale;
  const attempts: { cap: number; drop: number }[] = [];
  for (const cap of RESULT_CAPS) attempts.push({ cap, drop: 0 });
  for (const share of DROP_SHARES) attempts.push({ cap: RESULT_CAPS[RESULT_CAPS.length - 1] as number, drop: share });
  for (const { cap, drop } of attempts) {
    const dropped = Math.floor(input.messages.length * drop);
    const text = render(input.messages.slice(dropped), cap);
    if (estimateText(text) * input.scale > budget) continue;
    try {
      const note = await ask(input, text);
      return { text: note, dropped };
    } catch (error) {
      if (toModelError(error).code !== 'context_overflow') throw error;
    }
  }
  return { text: '', dropped: input.messages.length };
}

async function ask(input: SummaryInput, transcript: string): Promise<string> {
  const request: ModelRequest = {
    system: SUMMARY_SYSTEM,
    messages: [
      {
        role: 'user',
        content: [
          {
            type: 'text',
            text: `<conversation>\n${transcript}\n</conversation>\n\nWrite the continuation note now.`,
          },
        ],
      },
    ],
    tools: [],
    maxTokens: input.maxTokens,
  };
  let message: AssistantMessage | undefined;
  for await (const event of input.model.stream(request, input.signal)) {
    if (event.type === 'done') message = event.message;
  }
  if (!message) throw new ModelError({ code: 'bad_response', message: 'The summary call ended without an answer' });
  return textOf(message).trim();
}

/** The conversation as plain text for the summary call: any provider takes it, whatever the history holds. */
export function render(messages: readonly Message[], resultCap: number): string {
  const lines: string[] = [];
  for (const message of messages) {
    if (message.role === 'user') {
      const who = message.source && message.source !== 'prompt' ? `user (${message.source})` : 'user';
      lines.push(`[${who}] ${userText(message)}`);
    } else if (message.role === 'assistant') {
      const text = textOf(message);
      if (text) lines.push(`[me] ${text}`);
      for (const part of message.content) {
        if (part.type === 'tool_call') lines.push(`[me → ${part.name}] ${JSON.stringify(part.arguments)}`);
      }
    } else {
      for (const part of message.content) {
        let text = part.content.map((item) => (item.type === 'text' ? item.text : '[image]')).join('\n');
        if (text.length > resultCap) text = `${text.slice(0, resultCap)}… [${text.length - resultCap} more characters]`;
        lines.push(`[${part.toolName} ${part.isError ? 'error' : 'result'}] ${text}`);
      }
    }
  }
  return lines.join('\n');
}

function userText(message: UserMessage): string {
  return message.content.map((part) => (part.type === 'text' ? part.text : '[image]')).join('\n');
}

const PATH =
  /(?:~|\.{1,2})?(?:\/[\w.@+-]+)+\/?|\b[\w.-]+\/[\w./@+-]*[\w-]\.[A-Za-z0-9]{1,8}\b|\b[\w-]+\.(?:ts|tsx|js|mjs|cjs|json|md|py|rs|go|java|rb|sh|yml|yaml|toml|css|html|sql|txt|csv)\b/g;

/**
 * Facts taken from the summarised messages mechanically, so that no summary can lose them: the files and paths
 * they name, the last tool calls, and background tasks started there whose notification has not arrived.
 */
export function keptFacts(messages: readonly Message[], laterNotifications: string): string {
  const paths = new Set<string>();
  const calls: ToolCallPart[] = [];
  const background = new Map<string, string>();
  let notifications = laterNotifications;
  for (const message of messages) {
    if (message.role === 'assistant') {
      for (const part of message.content) {
        if (part.type !== 'tool_call') continue;
        calls.push(part);
        collectPaths(JSON.stringify(part.arguments), paths);
      }
    } else if (message.role === 'user') {
      const text = userText(message);
      if (message.source === 'notification') notifications += text;
      else if (message.source !== 'compaction') collectPaths(text, paths);
    } else {
      for (const part of message.content) {
        const text = part.content.map((item) => (item.type === 'text' ? item.text : '')).join('\n');
        if (/^(agent|swarm)$/.test(part.toolName) && /background/i.test(text)) {
          for (const match of text.matchAll(/task_id="([^"]+)"/g)) background.set(match[1] as string, part.toolName);
        }
      }
    }
  }
  const sections: string[] = [];
  const pathList = [...paths].slice(-40);
  if (pathList.length > 0) sections.push(`Files and paths in play: ${pathList.join(', ')}`);
  const lastCalls = calls.slice(-8).map((call) => `${call.name} ${clip(JSON.stringify(call.arguments), 200)}`);
  if (lastCalls.length > 0)
    sections.push(`My last tool calls before this note:\n${lastCalls.map((c) => `- ${c}`).join('\n')}`);
  const open = [...background.keys()].filter((id) => !notifications.includes(`task_id="${id}"`));
  if (open.length > 0) {
    sections.push(
      `Background tasks I started that have not reported yet (their notifications will arrive as messages): ${open
        .map((id) => `task_id="${id}"`)
        .join(', ')}`,
    );
  }
  return sections.join('\n\n');
}

function collectPaths(text: string, into: Set<string>): void {
  for (const match of text.matchAll(PATH)) {
    const path = match[0];
    if (path.length > 2 && path.length < 200 && !/^\/+$/.test(path)) {
      into.delete(path);
      into.add(path);
    }
  }
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** The message that stands for the summarised ones in what is sent. */
export function compactionNote(summary: string, facts: string, summarized: number, dropped: number): UserMessage {
  const parts = [
    `[${summarized} earlier messages of this conversation were compacted to fit the context window. This is the note I wrote to myself to continue from.]`,
  ];
  if (summary) parts.push(summary);
  if (dropped > 0) parts.push(`[${dropped} of the oldest messages were too long to summarise and were left out.]`);
  if (facts) parts.push(facts);
  return { role: 'user', source: 'compaction', content: [{ type: 'text', text: parts.join('\n\n') }] };
}
