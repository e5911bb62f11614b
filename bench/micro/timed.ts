/** A closed-loop timer for in-process micro-benchmarks (ids, locks). */

/** `loops` loops calling `call(loop)` until `maxCalls` each or `durationMs`; returns the calls made and the time taken. */
export async function timed(
  call: (loop: number) => Promise<unknown>,
  loops: number,
  maxCalls: number,
  durationMs = Infinity,
): Promise<{ ops: number; ms: number }> {
  const start = performance.now();
  const end = start + durationMs;
  let ops = 0;
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      for (let i = 0; i < maxCalls && performance.now() < end; i++) {
        await call(loop);
        ops++;
      }
    }),
  );
  return { ops, ms: performance.now() - start };
}
