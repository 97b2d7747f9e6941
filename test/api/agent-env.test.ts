/**
 * The shape of an agent's runtime (`AgentEnv`) and of its supervision tree, read by the TypeScript compiler from
 * their source: their collaborators are given at construction, so neither has a callback field that another module
 * plugs in later (a journal, a replay marker, an acknowledgement, the tree's observer), and the env has no field
 * that holds state the agent's machine context already holds (the turn, the step, the current input): the context
 * is the one home of those, read from the snapshot or the event.
 */
import { join } from 'node:path';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
let checker: ts.TypeChecker;
let program: ts.Program;

beforeAll(() => {
  const roots = ['src/runtime/env/env.ts', 'machines/agent/types.ts', 'src/runtime/tree/tree.ts'];
  program = ts.createProgram(
    roots.map((file) => join(root, file)),
    {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      strict: true,
      skipLibCheck: true,
      noEmit: true,
    },
  );
  checker = program.getTypeChecker();
}, 120_000);

/** The declared type of a class or interface exported by `file`. */
function declared(file: string, name: string): ts.Type {
  const source = program.getSourceFile(join(root, file));
  if (!source) throw new Error(`${file} is not in the program`);
  const module = checker.getSymbolAtLocation(source);
  const symbol = module && checker.getExportsOfModule(module).find((s) => s.name === name);
  if (!symbol) throw new Error(`${file} exports no ${name}`);
  return checker.getDeclaredTypeOfSymbol(symbol);
}

interface Field {
  name: string;
  optional: boolean;
  readonly: boolean;
  /** A property (a field, an accessor), not a method. */
  field: boolean;
  callable: boolean;
  /** The name of its type (without `undefined`). */
  type?: string;
}

function fieldsOf(type: ts.Type): Field[] {
  return checker.getPropertiesOfType(type).map((symbol) => {
    const declaration = symbol.valueDeclaration ?? symbol.declarations?.[0];
    const method = declaration !== undefined && ts.isMethodDeclaration(declaration);
    const modifiers = declaration && ts.canHaveModifiers(declaration) ? ts.getModifiers(declaration) : undefined;
    const getterOnly =
      declaration !== undefined &&
      ts.isGetAccessorDeclaration(declaration) &&
      !symbol.declarations?.some((d) => ts.isSetAccessorDeclaration(d));
    const type = checker.getNonNullableType(checker.getTypeOfSymbol(symbol));
    return {
      name: symbol.name,
      optional: (symbol.flags & ts.SymbolFlags.Optional) !== 0,
      readonly: getterOnly || (modifiers?.some((m) => m.kind === ts.SyntaxKind.ReadonlyKeyword) ?? false),
      field: !method,
      callable: type.getCallSignatures().length > 0,
      type: type.getSymbol()?.name,
    };
  });
}

describe('AgentEnv', () => {
  it('has no callback field: its collaborators are given at construction', () => {
    const env = fieldsOf(declared('src/runtime/env/env.ts', 'AgentEnv'));
    expect(env.length).toBeGreaterThan(10);
    expect(env.filter((f) => f.field && f.callable).map((f) => f.name)).toEqual([]);
    expect(env.some((f) => f.name === 'journal' && f.readonly && !f.optional)).toBe(true);
  });

  it('keeps no copy of its machine context: the turn, the step and the current input are the snapshot’s', () => {
    const env = fieldsOf(declared('src/runtime/env/env.ts', 'AgentEnv'));
    const context = fieldsOf(declared('machines/agent/types.ts', 'AgentContext')).map((f) => f.name);
    expect(context).toEqual(expect.arrayContaining(['turn', 'step', 'current', 'queue']));
    const mirrored = new Set([...context, 'currentInputId']);
    // What it shares with the context is read-only: its identity, and what it reads from its actor's snapshot.
    const shared = env.filter((f) => mirrored.has(f.name));
    expect(shared.map((f) => f.name)).toEqual(expect.arrayContaining(['agentId', 'turn', 'step']));
    expect(shared.filter((f) => !f.readonly).map((f) => f.name)).toEqual([]);
  });
});

describe('the supervision tree', () => {
  it('is given its observer at construction: no field holds one that is plugged in later or may be missing', () => {
    for (const [file, name] of [
      ['src/runtime/tree/tree.ts', 'Tree'],
      ['src/runtime/tree/effects.ts', 'TreeEffects'],
    ] as const) {
      const observers = fieldsOf(declared(file, name)).filter((f) => f.type === 'TreeObserver');
      expect(observers.map((f) => [name, f.name, f.readonly, f.optional])).toEqual([[name, 'observer', true, false]]);
    }
    // Every observer answers every call (a tree without a session has `unobserved`): nothing asks whether it can.
    const optional = fieldsOf(declared('src/runtime/tree/observer.ts', 'TreeObserver')).filter((f) => f.optional);
    expect(optional.map((f) => f.name)).toEqual([]);
  });
});
