import { agentObject } from '../../src/restate/index.js';
import { configOf, FLAVOURS, supervisionOf } from './script.js';

/** The Restate object of a flavour's roots (script.ts): one per flavour, since supervision is the object's. */
export const objectName = (flavour: string) => `conformance-${flavour}`;

/** The agent objects of every flavour, as a worker serves them. */
export const conformanceObjects = () =>
  FLAVOURS.map((flavour) =>
    agentObject({
      name: objectName(flavour),
      subagents: true,
      supervision: supervisionOf(flavour),
      agent: (agentId) => configOf(agentId),
    }),
  );
