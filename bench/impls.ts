import type { Model } from '../src/protocol/index.js';
import type { AnyTool } from '../src/tools/index.js';
import type { PiResult } from './baselines/pi-agent.js';

/**
 * Each row's code is imported by that row only: a child process measures one implementation, and its peak RSS
 * must not include another's modules (the peer harness loads one peer per process too). Troupe's row imports the
 * package's root entry, as a program and the peer harness do. The baselines are small and share the scripted model
 * with every row, so they are imported statically.
 */
export const troupe = () => import('../src/index.js');

/** pi-agent-core, loaded on first use; its tools (typebox parameters) are made once per process. */
export function piRunner(
  tools: readonly AnyTool[],
): () => Promise<(model: Model, prompt: string) => Promise<PiResult>> {
  let runner: ((model: Model, prompt: string) => Promise<PiResult>) | undefined;
  return async () => {
    if (!runner) {
      const { piLoop, piTools } = await import('./baselines/pi-agent.js');
      const agentTools = piTools(tools);
      runner = (model, prompt) => piLoop(model, agentTools, prompt);
    }
    return runner;
  };
}
