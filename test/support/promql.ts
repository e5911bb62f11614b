/** PromQL read by the tests of ops/ (alert rules, dashboard panels). */

const PROMQL_WORDS = new Set(['by', 'without', 'and', 'or', 'unless', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset']);

/** The metric names a PromQL expression reads: identifiers that are not functions, keywords, labels or strings. */
export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // label values
    .replace(/\{[^}]*\}/g, '') // label matchers
    .replace(/\[[^\]]*\]/g, '') // ranges and subqueries
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ''); // label lists
  // A whole identifier and whether a call's parenthesis follows it (then it is a function).
  const words = [...stripped.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?/g)].filter((match) => match[2] === undefined).map((match) => match[1] ?? '');
  return words.filter((name) => !PROMQL_WORDS.has(name));
}
