import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ENV_VARS, RETIRED_ENV_VARS, loadConfig } from '../../src/infra/config.js';
import { README, renderConfigTable, withConfigTable } from '../../scripts/config-table.js';

/** The names loadConfig looks up in its environment, whatever their values. */
function namesRead(env: Record<string, string> = {}): string[] {
  const read = new Set<string>();
  const recording = new Proxy(env, {
    get(target, name, receiver) {
      if (typeof name === 'string') read.add(name);
      return Reflect.get(target, name, receiver) as unknown;
    },
  });
  loadConfig(recording);
  return [...read].sort();
}

describe('configuration: src/infra/config.ts ENV_VARS, loadConfig and the README table agree', () => {
  it('loadConfig reads exactly the listed variables (and the retired ones)', () => {
    const listed = [...ENV_VARS.map((variable) => variable.name), ...Object.keys(RETIRED_ENV_VARS)].sort();
    expect(namesRead()).toEqual(listed);
  });

  it('lists each variable once', () => {
    const names = ENV_VARS.map((variable) => variable.name);
    expect(names.filter((name, index) => names.indexOf(name) !== index)).toEqual([]);
  });

  it.each(ENV_VARS.map((variable) => [variable.name, variable.default] as const))(
    '%s=%j behaves like leaving it unset (the documented default is the real one)',
    (name, value) => {
      expect(loadConfig({ [name]: value })).toEqual(loadConfig({}));
    },
  );

  it('every variable has a meaning of one line', () => {
    for (const variable of ENV_VARS) {
      expect(variable.meaning.trim(), variable.name).not.toBe('');
      expect(variable.meaning, variable.name).not.toMatch(/\n/);
    }
  });

  it('the README table is what npm run docs:config writes', () => {
    const readme = readFileSync(README, 'utf8');
    expect(readme, 'README.md configuration table is stale: run npm run docs:config').toBe(withConfigTable(readme));
    expect(readme).toContain(renderConfigTable());
  });
});
