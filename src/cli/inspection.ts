/**
 * `troupe run --inspect`: the run streamed to the offline inspector, whose page can also answer its questions,
 * steer and interrupt it. `--inspect` alone joins the inspector named by TROUPE_INSPECT (a `troupe inspect` left
 * running, which keeps every run's history) or, without one, serves one for this run; `--inspect=<ws url>` joins
 * that one.
 */
import { connectInspector } from '../index.js';
import type { InspectorConnection } from '../inspect/connect.js';
import { type InspectorServer, startInspectorServer } from '../inspect/server.js';
import { UsageError } from './model-choice.js';

export interface Inspection {
  connection: InspectorConnection;
  /** The page to open, when this run serves its own inspector. */
  pageUrl?: string;
  /** Where the run was sent, when it joined an inspector already running. */
  joined?: string;
  close(): Promise<void>;
}

export async function openInspection(target: true | string, env: NodeJS.ProcessEnv): Promise<Inspection> {
  const url = target === true ? env.TROUPE_INSPECT : target;
  let server: InspectorServer | undefined;
  try {
    if (!url) server = await startInspectorServer();
    const connection = await connectInspector({ url: url ?? server?.connectUrl });
    return {
      connection,
      ...(server ? { pageUrl: server.pageUrl } : { joined: new URL(url ?? '').host }),
      close: async () => {
        await connection.close();
        await server?.close();
      },
    };
  } catch (error) {
    await server?.close();
    throw new UsageError(`--inspect: ${(error as Error).message}`);
  }
}
