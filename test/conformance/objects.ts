import { agentObject } from '../../src/restate/index.js';
import { brokenConfig, brokenSupervision, mutated } from './mutants.js';
import { configOf, FLAVOURS, supervisionOf } from './script.js';

/** The Restate object of a flavour's roots (script.ts): one per flavour, since supervision is the object's. */
export const objectName = (flavour: string) => `conformance-${flavour}`;

/** The agent objects of every flavour, as a worker serves them (broken as a Restate mutant says: mutants.ts). */
export const conformanceObjects = () =>
  mutated(
    FLAVOURS.map((flavour) =>
      agentObject({
        name: objectName(flavour),
        subagents: true,
        supervision: brokenSupervision('restate', supervisionOf(flavour)),
        agent: (agentId) => brokenConfig('restate', configOf(agentId)),
      }),
    ),
  );
