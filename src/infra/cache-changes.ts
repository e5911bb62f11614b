/**
 * The channel on which the caches announce every write of their keys (src/lib/cache
 * changeChannel), for the edge's L1 (edge/README.md): the shops' records and the voucher lists.
 * Channels take no key prefix in Redis or ioredis, so the deployment's prefix is written into the name.
 */
export const cacheChangesChannel = (keyPrefix: string): string => `${keyPrefix}cache:changes`;
