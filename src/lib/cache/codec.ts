import { createHash, randomBytes } from 'node:crypto';

/**
 * What a cache key holds, as a string:
 * - `{"data":…}`: a value with a real TTL (mutex strategy);
 * - `{"data":…,"expireAt":<epoch ms>}`: a value without TTL that is logically expired after expireAt;
 * - `""`: the null marker (hmdp's): the id was looked up and does not exist; short TTL;
 * - `~inv:<nonce>`: an invalidation tombstone (short TTL): reads treat it as a miss, and a rebuild
 *   that started before the invalidation cannot overwrite it (its compare-and-set fails).
 * Every form is self-describing, so instances running different strategies (a rolling change of
 * strategy) read each other's entries correctly.
 */
export type Entry<V> = { kind: 'absent' } | { kind: 'null' } | { kind: 'value'; data: V; expireAt?: number };

export const NULL_MARKER = '';
const TOMBSTONE_PREFIX = '~inv:';

interface Envelope {
  data: unknown;
  expireAt?: number;
}

export function encodeValue(data: unknown, expireAt?: number): string {
  const envelope: Envelope = expireAt === undefined ? { data } : { data, expireAt };
  const json = JSON.stringify(envelope);
  // JSON.stringify drops `data: undefined` and functions: refuse instead of caching garbage.
  if (json === undefined || !json.startsWith('{"data":')) throw new TypeError('cache values must be JSON-serializable');
  return json;
}

export function decode<V>(raw: string | null): Entry<V> {
  if (raw === null || raw.startsWith(TOMBSTONE_PREFIX)) return { kind: 'absent' };
  if (raw === NULL_MARKER) return { kind: 'null' };
  try {
    const envelope = JSON.parse(raw) as Envelope;
    if (envelope === null || typeof envelope !== 'object' || !('data' in envelope)) return { kind: 'absent' };
    const { expireAt } = envelope;
    return typeof expireAt === 'number' ? { kind: 'value', data: envelope.data as V, expireAt } : { kind: 'value', data: envelope.data as V };
  } catch {
    // Not ours or corrupt: a miss; the rebuild's compare-and-set replaces it.
    return { kind: 'absent' };
  }
}

export const newTombstone = (): string => `${TOMBSTONE_PREFIX}${randomBytes(8).toString('hex')}`;

/** SHA-1 (hex) of what a rebuild saw, the "expected" of its compare-and-set; '' for no key. */
export const fingerprint = (raw: string | null): string => (raw === null ? '' : createHash('sha1').update(raw, 'utf8').digest('hex'));
