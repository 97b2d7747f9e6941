import type { AgentCommand, WorkerReply, WorkerRequest } from '../../../machines/agent/index.js';
import type { AgentEnv } from '../env/env.js';
import { requestModel } from './model-worker.js';
import { ToolResultOutbox } from './tool-result-outbox.js';
import { requestTools } from './tool-worker.js';

/**
 * What the agent's worker (worker.ts) does with a request, and how it stops: methods bound once per worker rather
 * than closures, whose optimised code V8 drops at a collection that finds none of them alive (every agent stopped).
 */
export class WorkerInbox {
  readonly receive = this.handle.bind(this);
  readonly stop = this.abort.bind(this);
  private readonly outbox: ToolResultOutbox;

  constructor(
    private readonly env: AgentEnv,
    private readonly sendBack: (reply: WorkerReply | AgentCommand) => void,
  ) {
    this.outbox = new ToolResultOutbox(env, sendBack);
  }

  private handle(request: WorkerRequest): void {
    if (request.type === 'MODEL_REQUEST') requestModel(this.env, request, this.sendBack, this.outbox);
    else requestTools(this.env, request, this.outbox);
  }

  private abort(): void {
    this.env.abortInFlight();
  }
}
