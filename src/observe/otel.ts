import { createRequire } from 'node:module';
import type * as Otel from '@opentelemetry/api';
import type { Attributes, Span, SpanStatusCode, Tracer } from '@opentelemetry/api';
import { type AgentEvent, type AgentEventOf, redactSecrets } from '../protocol/index.js';
import { loadPeer } from '../protocol/peers.js';

/** Anything with Troupe's event bus: an agent (traced with its subtree) or a supervisor (its whole tree). */
export interface EventSource {
  on(type: '*', listener: (event: AgentEvent) => void, options?: { subtree?: boolean }): () => void;
}

export interface TraceOptions {
  /** Default: `trace.getTracer('troupe')` from the global provider the application registered. */
  tracer?: Tracer;
  /**
   * Record message and tool-argument contents on spans (default false: they may hold what a trace should not).
   * Every secret the process knows is cut out of them either way.
   */
  recordContent?: boolean;
}

/** `SpanStatusCode.ERROR`, a value of the OpenTelemetry specification (the enum itself is in the optional peer). */
const STATUS_ERROR = 2 as SpanStatusCode;

const SUBAGENT_TOOLS = new Set(['agent', 'swarm']);

/** The spans open for one agent. */
interface AgentSpans {
  run?: Span;
  turn?: Span;
  step?: Span;
  model?: Span;
  /** Where this agent's next run hangs: the parent's tool call that started it. */
  parent?: Span;
  /** This agent's latest `agent` / `swarm` call of the current step, for the children it starts. */
  lastSubagentCall?: Span;
}

/**
 * OpenTelemetry traces from the event bus: a span per run (`invoke_agent`), turn, step, model call (`chat`) and tool
 * call (`execute_tool`), with the GenAI semantic-convention attributes (operation, provider, models, tokens, finish
 * reasons, tool name and call id). A subagent's run is a child of the parent's tool call that started it, so a root
 * run and everything below it is one trace. Opt-in: nothing is traced until this is called; returns the function
 * that stops it (spans still open are ended then).
 */
export function traceAgents(source: EventSource, options: TraceOptions = {}): () => void {
  // An optional peer, required synchronously (its CommonJS build shares the global provider and context keys).
  const { context, trace } = loadPeer('@opentelemetry/api', 'traceAgents()', () =>
    createRequire(import.meta.url)('@opentelemetry/api'),
  ) as typeof Otel;
  const tracer = options.tracer ?? trace.getTracer('troupe');
  const recordContent = options.recordContent ?? false;
  const agents = new Map<string, AgentSpans>();
  const tools = new Map<string, Span>();
  const spansOf = (agentId: string): AgentSpans => {
    let spans = agents.get(agentId);
    if (!spans) {
      spans = {};
      agents.set(agentId, spans);
    }
    return spans;
  };
  const start = (name: string, parent: Span | undefined, time: number, attributes: Attributes): Span => {
    const parentContext = parent ? trace.setSpan(context.active(), parent) : context.active();
    return tracer.startSpan(name, { startTime: time, attributes, root: parent === undefined }, parentContext);
  };

  const onEvent = (event: AgentEvent) => {
    const spans = spansOf(event.agentId);
    switch (event.type) {
      case 'agent_start':
        spans.run = start(`invoke_agent ${event.agentId}`, spans.parent, event.time, {
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.id': event.agentId,
          ...(event.parentId === undefined ? {} : { 'troupe.parent_id': event.parentId }),
        });
        break;
      case 'turn_start':
        spans.turn = start('turn', spans.run, event.time, {
          'troupe.turn': event.turn,
          'troupe.input_id': event.inputId,
        });
        break;
      case 'step_start':
        spans.step = start('step', spans.turn, event.time, { 'troupe.turn': event.turn, 'troupe.step': event.step });
        break;
      case 'message_start':
        spans.model = start('chat', spans.step, event.time, {
          'gen_ai.operation.name': 'chat',
          'troupe.attempt': event.attempt,
        });
        break;
      case 'model_retry':
        spans.model?.addEvent(
          'model_retry',
          { 'error.type': event.error.code, 'troupe.delay_ms': event.delayMs },
          event.time,
        );
        break;
      case 'message_end':
        endModelCall(spans, event, recordContent);
        break;
      case 'tool_execution_start': {
        const span = start(`execute_tool ${event.toolName}`, spans.step, event.time, {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': event.toolName,
          'gen_ai.tool.call.id': event.toolCallId,
          ...(recordContent ? { 'gen_ai.tool.call.arguments': redactSecrets(JSON.stringify(event.args)) } : {}),
        });
        tools.set(`${event.agentId}/${event.toolCallId}`, span);
        if (SUBAGENT_TOOLS.has(event.toolName)) spans.lastSubagentCall = span;
        break;
      }
      case 'tool_execution_end': {
        const key = `${event.agentId}/${event.toolCallId}`;
        const span = tools.get(key);
        if (!span) break;
        tools.delete(key);
        if (event.result.isError) span.setStatus({ code: STATUS_ERROR, message: 'the tool returned an error' });
        span.end(event.time);
        break;
      }
      case 'subagent_start':
        // The child's runs hang under the parent's `agent` / `swarm` call; a child started otherwise, under its step.
        spansOf(event.childId).parent = spans.lastSubagentCall ?? spans.step ?? spans.run;
        break;
      case 'permission_denied':
        spans.step?.addEvent(
          'permission_denied',
          {
            'gen_ai.tool.name': event.toolName,
            'gen_ai.tool.call.id': event.toolCallId,
            ...(event.rule === undefined ? {} : { 'troupe.rule': event.rule }),
          },
          event.time,
        );
        break;
      case 'approval_requested':
        spans.step?.addEvent('approval_requested', { 'gen_ai.tool.name': event.toolName }, event.time);
        break;
      case 'step_end':
        spans.step?.end(event.time);
        spans.step = undefined;
        spans.lastSubagentCall = undefined;
        break;
      case 'turn_end':
        endTurn(spans, event);
        break;
      case 'agent_end':
        spans.run?.end(event.time);
        spans.run = undefined;
        break;
    }
  };
  const off = source.on('*', onEvent, { subtree: true });

  return () => {
    off();
    const now = Date.now();
    for (const span of tools.values()) span.end(now);
    for (const spans of agents.values())
      for (const span of [spans.model, spans.step, spans.turn, spans.run]) span?.end(now);
    tools.clear();
    agents.clear();
  };
}

function endModelCall(spans: AgentSpans, event: AgentEventOf<'message_end'>, recordContent: boolean): void {
  const span = spans.model;
  const { message } = event;
  if (!span || (message.role !== 'assistant' && event.discarded === undefined)) return;
  spans.model = undefined;
  if (message.role === 'assistant') {
    const { usage } = message;
    span.updateName(`chat ${message.model}`);
    span.setAttributes({
      'gen_ai.provider.name': message.provider,
      'gen_ai.request.model': message.model,
      'gen_ai.response.model': message.model,
      'gen_ai.response.finish_reasons': [message.stopReason],
      'gen_ai.usage.input_tokens': usage.input + usage.cacheRead + usage.cacheWrite,
      'gen_ai.usage.output_tokens': usage.output,
      'gen_ai.usage.cache_read.input_tokens': usage.cacheRead,
      'gen_ai.usage.cache_creation.input_tokens': usage.cacheWrite,
    });
    if (recordContent) {
      const text = message.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
      span.setAttribute('gen_ai.output.text', redactSecrets(text));
    }
  }
  if (event.discarded !== undefined) {
    span.setAttribute('troupe.discarded', event.discarded);
    span.setStatus({ code: STATUS_ERROR, message: `the answer was discarded (${event.discarded})` });
  }
  span.end(event.time);
}

function endTurn(spans: AgentSpans, event: AgentEventOf<'turn_end'>): void {
  const span = spans.turn;
  if (!span) return;
  spans.turn = undefined;
  span.setAttributes({
    'troupe.stop_reason': event.stopReason,
    'gen_ai.usage.input_tokens': event.usage.input + event.usage.cacheRead + event.usage.cacheWrite,
    'gen_ai.usage.output_tokens': event.usage.output,
  });
  if (event.error) {
    span.setAttribute('error.type', event.error.code ?? 'error');
    span.setStatus({ code: STATUS_ERROR, message: redactSecrets(event.error.message) });
  }
  span.end(event.time);
}
