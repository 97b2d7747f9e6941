/**
 * A TypeDoc plugin for the API reference: a statechart's page shows `StateMachine`, not the type XState infers from
 * its whole config (every event, action, guard and state, tens of kilobytes of one signature). The parts worth
 * reading have their own exported types (`AgentContext`, `AgentMachineEvent`, …) and the chart is drawn in
 * docs/statecharts.md; the inferred config's members are the chart's code, so they are not asked for doc comments.
 */
import { Converter, makeRecursiveVisitor, ReflectionKind } from 'typedoc';

/** @param {import('typedoc').Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    const { project } = context;
    for (const variable of project.getReflectionsByKind(ReflectionKind.Variable)) {
      const type = variable.type;
      if (type?.type !== 'reference' || type.name !== 'StateMachine' || !type.typeArguments) continue;
      const forget = makeRecursiveVisitor({ reflection: (inner) => project.removeReflection(inner.declaration) });
      for (const argument of type.typeArguments) argument.visit(forget);
      type.typeArguments = undefined;
    }
  });
}
