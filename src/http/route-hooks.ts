/**
 * A route's hooks of one kind with `hook` added first or last. For onRoute hooks that give each
 * route a hook of its own: Fastify keeps a route's hooks as undefined, one function or an array.
 */
export function withHook<Hook>(hooks: Hook | Hook[] | undefined, hook: NoInfer<Hook>, at: 'first' | 'last'): Hook[] {
  const existing = hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
  return at === 'first' ? [hook, ...existing] : [...existing, hook];
}
